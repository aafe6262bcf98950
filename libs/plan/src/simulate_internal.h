#pragma once
// Pieces of the simulator shared between simulate.cpp (setup, event loop, Queue model, report)
// and simulate_maxmin.cpp (the max-min fair sharing model).

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace collkit::plan::sim {

/// Allocates arrays of 4 MiB and more on 2 MiB boundaries and asks Linux for transparent huge
/// pages there. The simulator's per-op arrays reach hundreds of MiB for millions of ops, and
/// first-touch page faults otherwise cost as much as the simulation itself (measured: a quarter
/// of a 1024-rank ring's time under a hypervisor). Smaller arrays use the ordinary allocator.
template <class T>
struct BigAllocator {
  using value_type = T;
  static constexpr std::size_t kHuge = std::size_t{2} << 20;
  BigAllocator() = default;
  template <class U>
  BigAllocator(const BigAllocator<U>&) {}
  static bool big(std::size_t n) { return n * sizeof(T) >= 2 * kHuge; }
  static std::size_t rounded(std::size_t n) { return (n * sizeof(T) + kHuge - 1) / kHuge * kHuge; }
  T* allocate(std::size_t n) {
    if (!big(n)) return std::allocator<T>().allocate(n);
    void* p = std::aligned_alloc(kHuge, rounded(n));
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded(n), MADV_HUGEPAGE);  // advice only: failure changes nothing but speed
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    if (!big(n)) return std::allocator<T>().deallocate(p, n);
    std::free(p);
  }
  template <class U>
  bool operator==(const BigAllocator<U>&) const {
    return true;
  }
};

template <class T>
using BigVector = std::vector<T, BigAllocator<T>>;

/// The simulator's pending events, least first by E's operator< (time, then a sequence number
/// that makes every key unique; E has members t, a time >= 0, and seq). With unique keys any
/// correct priority queue pops the same order as the binary std::push_heap / pop_heap this
/// replaced (and the 4-ary heap after it), so the simulation is the same event for event
/// (test_event_queue checks the order against std::priority_queue).
///
/// A radix heap on the 128-bit key (the time's bits, which order as the times do for times >= 0,
/// then seq): bucket b > 0 holds the events whose key first differs from the last one settled at
/// bit b - 1, so the lowest nonempty bucket holds the least event, and settling it moves the
/// others to lower buckets. Pushes append to a bucket and a pop scans one bucket, both in
/// sequence, where sifting a heap of hundreds of thousands of events missed the cache at every
/// level (the largest part of the event loop on 16k-rank trees). An event pushed below the last
/// key settled (the simulator looks at the next event before the ops of this instant have pushed
/// theirs) waits in a small binary heap in front, all of whose events come first.
template <class E>
class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  /// The least event (the queue must not be empty).
  const E& top() {
    if (!early_.empty()) return early_.front();
    settle();
    return min_;
  }
  void push(const E& e) {
    Key k = key(e);
    ++size_;
    if (k < last_) {
      early_.push_back(e);
      std::push_heap(early_.begin(), early_.end(), later);
      return;
    }
    put(e, k);
  }
  /// Removes and returns the least event (the queue must not be empty).
  E pop() {
    --size_;
    if (!early_.empty()) {
      std::pop_heap(early_.begin(), early_.end(), later);
      E out = early_.back();
      early_.pop_back();
      return out;
    }
    settle();
    has_min_ = false;
    return min_;
  }
  /// Empty again, keeping its memory.
  void clear() {
    for (auto& b : buckets_) b.clear();
    early_.clear();
    mask_ = {};
    last_ = {};
    has_min_ = false;
    size_ = 0;
  }

 private:
  struct Key {
    std::uint64_t hi, lo;
    bool operator<(const Key& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
  };
  static constexpr int kBuckets = 129;
  static bool later(const E& a, const E& b) { return b < a; }
  static Key key(const E& e) {
    if (!(e.t >= 0)) throw std::logic_error("simulate: an event before time 0 or at no time");
    // -0 and 0 are one time: both key 0.
    return {e.t == 0 ? 0 : std::bit_cast<std::uint64_t>(static_cast<double>(e.t)), static_cast<std::uint64_t>(e.seq)};
  }
  int bucket(const Key& k) const {
    if (std::uint64_t x = k.hi ^ last_.hi) return 128 - __builtin_clzll(x);
    if (std::uint64_t y = k.lo ^ last_.lo) return 64 - __builtin_clzll(y);
    return 0;
  }
  void put(const E& e, const Key& k) {
    int b = bucket(k);
    buckets_[static_cast<std::size_t>(b)].push_back(e);
    mask_[static_cast<std::size_t>(b) >> 6] |= std::uint64_t{1} << (b & 63);
  }
  // The least event of the buckets into min_; the rest of its bucket to lower ones.
  void settle() {
    if (has_min_) return;
    int b = 0;
    for (std::size_t w = 0; w < mask_.size(); ++w)
      if (mask_[w]) {
        b = static_cast<int>(64 * w) + __builtin_ctzll(mask_[w]);
        break;
      }
    std::vector<E>& v = buckets_[static_cast<std::size_t>(b)];
    std::size_t m = 0;
    for (std::size_t i = 1; i < v.size(); ++i)
      if (v[i] < v[m]) m = i;
    min_ = v[m];
    last_ = key(min_);
    has_min_ = true;
    mask_[static_cast<std::size_t>(b) >> 6] &= ~(std::uint64_t{1} << (b & 63));
    // Every other event of bucket b shares the key's bits above b - 1 with min_: it goes lower.
    for (std::size_t i = 0; i < v.size(); ++i)
      if (i != m) put(v[i], key(v[i]));
    v.clear();
  }

  std::array<std::vector<E>, kBuckets> buckets_;
  std::array<std::uint64_t, 3> mask_{};  // nonempty buckets
  std::vector<E> early_;                 // a binary heap: the events pushed below last_
  Key last_{};                           // the key of the last event settled
  E min_{};                              // that event, while has_min_
  bool has_min_ = false;
  std::size_t size_ = 0;
};

/// A route as the simulator needs it: resources (link directions, or a vertex's local copy
/// engine) with their bandwidth and the latency before each, all indices into Network arrays.
struct Route {
  std::uint32_t first = 0;  ///< into Network::hop_res / hop_lat
  std::uint32_t count = 0;  ///< hops (0: free: same vertex with unknown local bandwidth)
  double latency_us = 0;    ///< sum over hops
  double bottleneck_gbps = 0;
};

/// The resources transfers compete for. Resource ids: 2*link + direction for link directions
/// (topo::Hop::channel()), then 2*num_links + vertex for a vertex's local copy bandwidth.
struct Network {
  std::vector<double> bw_gbps;        ///< per resource
  std::vector<Route> routes;
  std::vector<std::uint32_t> hop_res;  ///< resource of each hop of each route
  std::vector<double> hop_lat_us;      ///< that hop's link latency
  std::vector<std::uint64_t> bytes;    ///< per resource: bytes carried
  std::vector<double> busy_us;         ///< per resource: bytes / bandwidth
};

/// A stretch of a transfer at one rate, in the time its bytes leave the source.
struct Piece {
  double begin, end, rate;
};

/// The Queue model's use of one resource over time: the rate (bytes per microsecond) that the
/// transfers admitted so far take from it, piecewise constant on disjoint segments
/// [begin, end) in time order (0 between them). Segments that ended before the clock are dropped,
/// so a profile holds only what is still ahead.
class alignas(32) Profile {  // two to a cache line, none across two
 public:
  struct Segment {
    double begin, end, rate;
  };
  const std::vector<Segment>& segments() const { return seg_; }
  /// The first segment (index) that ends after t: the one holding t, or the next.
  std::size_t first_after(double t) const;
  /// Adds pieces (disjoint, in time order; source time) moved `shift` later; `now` lets past
  /// segments go. `merged` is scratch (shared by all profiles: one per profile made each
  /// profile 56 bytes rather than 32, and the profiles do not fit in any cache).
  void add(const Piece* p, std::size_t n, double shift, double now, std::vector<Segment>& merged);
  /// Empty again, keeping its memory (a simulation reuses the profiles of the one before).
  void clear() {
    seg_.clear();
    head_ = 0;
  }
  /// Asks the CPU for the segments ahead (a hint: the profiles do not fit in any cache).
  void prefetch() const { __builtin_prefetch(seg_.data() + head_); }

  static double tol(double t) { return 1e-9 * (t > 1 ? t : 1); }

 private:
  std::vector<Segment> seg_;
  std::size_t head_ = 0;  // seg_[0, head_) have ended
};

/// Admits Queue-model transfers, in the order their sends are posted, into the profiles of
/// their hops (the fluid form of first come, first served with backfilling): from its post on,
/// each hop serves the transfer's bytes as they reach it (hop h lambda_h after they leave the
/// source), with what the transfers admitted before it left on that hop, never faster than the
/// route carries a lone transfer (its slowest hop). A transfer moves on all of its hops at once
/// (a hop that has no room holds the ones before it: back-pressure), but where a hop starts at
/// a switch that stores the whole message (`stores`, bit h) the bytes may wait in front of it
/// while the hops before go on. A link that an earlier transfer uses only in part serves the
/// next with the rest; a transfer that ends just as a hop fills up is done, not held behind it.
class Admission {
 public:
  struct Hop {
    Profile* profile;
    double lambda_us;  ///< latency of the hops before this one
    double rate;       ///< capacity, bytes per microsecond
  };
  struct Admitted {
    double left;  ///< the last byte leaves the source (passes the first hop)
    double last;  ///< ... passes the last hop, in the source's time (add the route's latency)
  };
  /// Admits `bytes` over `hops` from `from` on; `now` lets the profiles drop what has ended.
  /// Bit h of `stores` (h < 32): the whole message may wait in front of hop h.
  Admitted admit(const Hop* hops, std::uint32_t n, double from, double bytes, double now, std::uint32_t stores = 0);

 private:
  std::vector<std::vector<Piece>> pieces_;  // per hop, in the source's time
  std::vector<std::size_t> at_;
  std::vector<double> rate_, served_;
  std::vector<Profile::Segment> merged_;  // Profile::add()'s scratch
};

/// Max-min fair sharing of resources among active flows (progressive filling). Time advances
/// only through advance(); rates are recomputed lazily after flows arrive or leave.
class MaxMinSharing {
 public:
  explicit MaxMinSharing(const Network& net);

  bool empty() const { return flows_.empty(); }
  /// Adds a flow of `bytes` (> 0) on `route` at the current time; `tag` comes back when it ends.
  void add(std::uint32_t tag, std::uint32_t route, double bytes);
  /// Absolute time the next flow finishes at the current rates (recomputing them if needed).
  double next_completion();
  /// Moves the clock to `t_us`, draining every flow at its rate.
  void advance(double t_us);
  /// Removes the flows that have finished by now; appends their (tag, route) pairs.
  void take_finished(std::vector<std::uint32_t>& tags, std::vector<std::uint32_t>& routes);

 private:
  struct Flow {
    std::uint32_t tag;
    std::uint32_t route;
    double remaining;  // bytes
    double initial;
    double rate = 0;   // bytes per microsecond
  };
  void recompute();

  const Network& net_;
  std::vector<Flow> flows_;
  double now_us_ = 0;
  bool dirty_ = false;
  // Scratch of recompute(), sized to the resources once.
  std::vector<double> cap_;
  std::vector<std::uint32_t> unfrozen_;
  std::vector<std::uint32_t> version_;
  std::vector<std::uint32_t> slot_;     // resource -> index in touched_
  std::vector<std::uint32_t> touched_;  // resources crossed by some flow
  std::vector<std::uint32_t> begin_;    // per slot: first of its flows in members_
  std::vector<std::uint32_t> fill_;
  std::vector<std::uint32_t> members_;  // flow indices grouped by slot
  std::vector<char> frozen_;
};

}  // namespace collkit::plan::sim
