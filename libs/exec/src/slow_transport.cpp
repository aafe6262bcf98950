// Faults on a host transport and the probe that finds them (slow_transport.h, docs/adapt.md).

#include "slow_transport.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "collkit/core/error.h"

namespace collkit::exec::detail {

SlowTransport::SlowTransport(Transport& inner, int rank, std::vector<double> base_gbps)
    : inner_(inner), rank_(rank), base_gbps_(std::move(base_gbps)), pair_free_(base_gbps_.size(), 0) {}

std::uint32_t SlowTransport::take_handle() {
  if (free_.empty()) return next_++;
  std::uint32_t h = free_.back();
  free_.pop_back();
  return h;
}

std::uint32_t SlowTransport::outer_handle(std::uint32_t inner) {
  if (inner >= inner_to_outer_.size()) {
    inner_to_outer_.resize(inner + 1, 0);
    inner_known_.resize(inner + 1, 0);
  }
  inner_known_[inner] = 1;
  std::uint32_t h = take_handle();
  inner_to_outer_[inner] = h;
  return h;
}

std::uint32_t SlowTransport::post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) {
  double f = inj_.factor(rank_, peer);
  if (f <= 1) return outer_handle(inner_.post_send(peer, channel, data, bytes));
  // Held back by what the extra time of a slower pair would be; messages on the pair queue.
  double now = World::now();
  double base = base_gbps_.at(static_cast<std::size_t>(peer));
  double extra = (f - 1) * static_cast<double>(bytes) / ((base > 0 ? base : 1) * 1e9);
  double& free_at = pair_free_[static_cast<std::size_t>(peer)];
  double release = std::max(now, free_at) + extra;
  free_at = release;
  std::uint32_t h = take_handle();
  held_.push_back({release, h, peer, channel, data, bytes});
  return h;
}

std::uint32_t SlowTransport::post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) {
  return outer_handle(inner_.post_recv(peer, channel, data, bytes));
}

void SlowTransport::poll(std::vector<std::uint32_t>& finished) {
  double now = World::now();
  // Held sends in release order per pair; release what is due (they were queued in order of
  // release per pair, and a pair's later message is never due before its earlier one).
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->release > now) {
      ++it;
      continue;
    }
    std::uint32_t inner = inner_.post_send(it->peer, it->channel, it->data, it->bytes);
    if (inner >= inner_to_outer_.size()) {
      inner_to_outer_.resize(inner + 1, 0);
      inner_known_.resize(inner + 1, 0);
    }
    inner_known_[inner] = 1;
    inner_to_outer_[inner] = it->handle;
    it = held_.erase(it);
  }
  scratch_.clear();
  inner_.poll(scratch_);
  for (std::uint32_t inner : scratch_) {
    if (inner >= inner_known_.size() || !inner_known_[inner]) continue;
    inner_known_[inner] = 0;
    finished.push_back(inner_to_outer_[inner]);
    free_.push_back(inner_to_outer_[inner]);
  }
}

std::uint32_t TimedTransport::post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) {
  std::uint32_t h = inner_->post_send(peer, channel, data, bytes);
  if (h >= sent_.size()) sent_.resize(h + 1);
  sent_[h] = {World::now(), peer, bytes};
  return h;
}

std::uint32_t TimedTransport::post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) {
  std::uint32_t h = inner_->post_recv(peer, channel, data, bytes);
  if (h < sent_.size()) sent_[h].start = -1;  // a handle reused for a receive
  return h;
}

void TimedTransport::poll(std::vector<std::uint32_t>& finished) {
  std::size_t first = finished.size();
  inner_->poll(finished);
  double now = World::now();
  for (std::size_t i = first; i < finished.size(); ++i) {
    std::uint32_t h = finished[i];
    if (h >= sent_.size() || sent_[h].start < 0) continue;
    Sent& s = sent_[h];
    if (s.bytes > 0) {
      double us_per_mib = (now - s.start) * 1e6 / (static_cast<double>(s.bytes) / (1 << 20));
      double& best = best_[static_cast<std::size_t>(s.peer)];
      if (best == 0 || us_per_mib < best) best = us_per_mib;
    }
    s.start = -1;
  }
}

std::vector<double> TimedTransport::take_us_per_mib() {
  std::vector<double> out = best_;
  std::fill(best_.begin(), best_.end(), 0);
  return out;
}

std::vector<double> send_rates_gbps(Transport& t, const World& world, std::uint64_t bytes, double timeout_s) {
  std::vector<std::vector<double>> times = gather_receive_times(world, probe_receives(t, world, bytes, timeout_s), timeout_s);
  const std::vector<double>& from_me = times[static_cast<std::size_t>(world.rank())];
  std::vector<double> rates(from_me.size(), 0);
  for (std::size_t to = 0; to < from_me.size(); ++to)
    if (to != static_cast<std::size_t>(world.rank()) && from_me[to] > 0) rates[to] = static_cast<double>(bytes) / (from_me[to] * 1e3);
  return rates;
}

std::vector<double> probe_receives(Transport& t, const World& world, std::uint64_t bytes, double timeout_s) {
  // Each shift five times, the fastest kept: on a shared machine one round may wait for a rank
  // that was not scheduled, which says nothing about the pair.
  constexpr int kRounds = 5;
  int n = world.size(), me = world.rank();
  std::vector<std::byte> out(bytes, std::byte{1}), in(bytes);
  std::vector<double> times(static_cast<std::size_t>(n), 0);
  std::vector<std::uint32_t> done;
  for (int k = 1; k < n; ++k)
    for (int round = 0; round < kRounds; ++round) {
      int to = (me + k) % n, from = (me - k + n) % n;
      world.barrier(timeout_s, "probing links: shift " + std::to_string(k));
      double start = World::now();
      std::uint32_t r = t.post_recv(from, 0, in.data(), bytes);
      std::uint32_t s = t.post_send(to, 0, out.data(), bytes);
      bool got_r = false, got_s = false;
      double last = World::now();
      while (!(got_r && got_s)) {
        done.clear();
        t.poll(done);
        for (std::uint32_t h : done) {
          if (h == r && !got_r) {
            got_r = true;
            double us = (World::now() - start) * 1e6;
            double& best = times[static_cast<std::size_t>(from)];
            if (best == 0 || us < best) best = us;
          }
          if (h == s) got_s = true;
        }
        World::check_stopped();
        if (!done.empty()) last = World::now();
        if (World::now() - last > timeout_s)
          throw TimeoutError("rank " + std::to_string(me) + ": no progress for " + std::to_string(timeout_s) + " s while probing rank " +
                             std::to_string(from));
      }
    }
  return times;
}

}  // namespace collkit::exec::detail
