#pragma once
// Pieces of the simulator shared between simulate.cpp (setup, event loop, Queue model, report)
// and simulate_maxmin.cpp (the max-min fair sharing model).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
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
/// that makes every key unique): a 4-ary heap. With unique keys any correct priority queue pops
/// the same order as the binary std::push_heap / pop_heap this replaced, so the simulation is
/// the same event for event; four children side by side in memory and half the depth cut the
/// cache misses of sifting, the largest part of the event loop on 16k-rank trees (test_simulate
/// checks the order against std::priority_queue).
template <class E>
class EventQueue {
 public:
  bool empty() const { return v_.empty(); }
  std::size_t size() const { return v_.size(); }
  const E& top() const { return v_.front(); }
  void push(const E& e) {
    std::size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      std::size_t parent = (i - 1) / 4;
      if (!(e < v_[parent])) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = e;
  }
  /// Removes and returns the least event (the queue must not be empty).
  E pop() {
    E out = v_.front();
    E last = v_.back();
    v_.pop_back();
    std::size_t n = v_.size();
    if (n == 0) return out;
    std::size_t i = 0;
    for (;;) {
      std::size_t c = 4 * i + 1;
      if (c >= n) break;
      std::size_t best = c, end = c + 4 < n ? c + 4 : n;
      for (std::size_t k = c + 1; k < end; ++k)
        if (v_[k] < v_[best]) best = k;
      if (!(v_[best] < last)) break;
      if (4 * best + 1 < n) __builtin_prefetch(v_.data() + 4 * best + 1);  // the next level's children
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = last;
    return out;
  }

 private:
  std::vector<E> v_;
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
class Profile {
 public:
  struct Segment {
    double begin, end, rate;
  };
  const std::vector<Segment>& segments() const { return seg_; }
  /// The first segment (index) that ends after t: the one holding t, or the next.
  std::size_t first_after(double t) const;
  /// Adds pieces (disjoint, in time order; source time) moved `shift` later; `now` lets past
  /// segments go.
  void add(const Piece* p, std::size_t n, double shift, double now);
  /// Asks the CPU for the segments ahead (a hint: the profiles do not fit in any cache).
  void prefetch() const { __builtin_prefetch(seg_.data() + head_); }

  static double tol(double t) { return 1e-9 * (t > 1 ? t : 1); }

 private:
  std::vector<Segment> seg_;
  std::size_t head_ = 0;         // seg_[0, head_) have ended
  std::vector<Segment> merged_;  // add()'s scratch
};

/// Admits Queue-model transfers, in the order their sends are posted, into the profiles of
/// their hops (the fluid form of first come, first served with backfilling): from its post on, a
/// transfer takes at every moment the least of what its hops have left once the transfers
/// admitted before it have taken theirs (hop h seeing the bytes lambda_h after they leave the
/// source), until its bytes have left; those rates are then taken from each hop. A link that
/// an earlier transfer uses only in part (held to a slower hop elsewhere) serves the next with
/// the rest; a transfer waits only while some hop has nothing left.
class Admission {
 public:
  struct Hop {
    Profile* profile;
    double lambda_us;  ///< latency of the hops before this one
    double rate;       ///< capacity, bytes per microsecond
  };
  /// Admits `bytes` over `hops` from `from` on; returns when its last byte leaves the source.
  double admit(const Hop* hops, std::uint32_t n, double from, double bytes, double now);

 private:
  std::vector<Piece> pieces_;
  std::vector<std::size_t> at_;
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
