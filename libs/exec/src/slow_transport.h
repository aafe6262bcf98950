#pragma once
// coll-run --inject on a host transport: a decorator that holds each send on a slowed pair back by
// (factor - 1) x its bytes at the sender's base rate, one message after another per pair, so the
// data arrives late for real; and the probe that times receives from every peer through it.

#include <cstdint>
#include <deque>
#include <vector>

#include "collkit/exec/adapt.h"
#include "collkit/exec/world.h"
#include "program.h"

namespace collkit::exec::detail {

class SlowTransport final : public Transport {
 public:
  /// `base_gbps[peer]`: the rate a message to that peer moves at, unslowed (send_rates_gbps()).
  SlowTransport(Transport& inner, int rank, std::vector<double> base_gbps);
  void set(const Injection& inj) { inj_ = inj; }
  const Injection& injection() const { return inj_; }

  std::uint32_t post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) override;
  std::uint32_t post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) override;
  void poll(std::vector<std::uint32_t>& finished) override;

 private:
  struct Held {
    double release;  // World::now() seconds
    std::uint32_t handle;
    int peer;
    std::uint16_t channel;
    const std::byte* data;
    std::uint64_t bytes;
  };
  std::uint32_t outer_handle(std::uint32_t inner);
  /// A handle of this transport: reused once reported finished (the scheduler indexes by it).
  std::uint32_t take_handle();
  Transport& inner_;
  int rank_;
  std::vector<double> base_gbps_;
  Injection inj_;
  std::vector<double> pair_free_;  // per peer: when the slowed pair is free again
  std::deque<Held> held_;
  std::vector<std::uint32_t> inner_to_outer_;  // by inner handle
  std::vector<char> inner_known_;
  std::uint32_t next_ = 0;
  std::vector<std::uint32_t> free_;  // handles reported finished
  std::vector<std::uint32_t> scratch_;
};

/// coll-run adapt's detection from the running plan: a decorator timing every send from post to
/// finished (the injected hold, the transfer, and the wait for the peer's receive when it came
/// later), per byte, the fastest message per peer kept. A receive's wait says little in a ring,
/// where every rank waits at the pace of the slowest link; a send's time stays with its own link,
/// and its fastest message is the one whose peer was ready and scheduled: on a loaded machine the
/// mean of a fast link's messages is mostly waiting, while every message of a slow link is slow.
class TimedTransport final : public Transport {
 public:
  explicit TimedTransport(int nranks) : best_(static_cast<std::size_t>(nranks), 0) {}
  /// The transport the next sends go through (kept until changed; set before each run).
  void wrap(Transport& inner) { inner_ = &inner; }
  std::uint32_t post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) override;
  std::uint32_t post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) override;
  void poll(std::vector<std::uint32_t>& finished) override;
  /// Per peer, the fastest message to it since the last call in microseconds per MiB (0: nothing
  /// sent), and starts over.
  std::vector<double> take_us_per_mib();

 private:
  struct Sent {
    double start = -1;  // World::now(); -1: not a timed send
    int peer = 0;
    std::uint64_t bytes = 0;
  };
  Transport* inner_ = nullptr;
  std::vector<Sent> sent_;  // by handle
  std::vector<double> best_;  // per peer, us per MiB
};

/// The rate this rank's messages reach every other rank at over `t` (index: the receiver; 0 for
/// itself), in GB/s: a probe of `bytes` per pair, its receive times exchanged (every rank calls it).
std::vector<double> send_rates_gbps(Transport& t, const World& world, std::uint64_t bytes, double timeout_s);

/// This rank's time, in microseconds, to receive `bytes` from every other rank over `t` (index:
/// the sender; 0 for itself): shift by shift (send to rank + k, receive from rank - k), the ranks
/// in step between shifts; each shift five times, the fastest kept.
std::vector<double> probe_receives(Transport& t, const World& world, std::uint64_t bytes, double timeout_s);

}  // namespace collkit::exec::detail
