// Max-min fair sharing by progressive filling (Bertsekas & Gallager, Data Networks, 6.5.2):
// raise every unfrozen flow's rate together; the first resource to fill up freezes the flows
// through it at its fair share; repeat with what is left. Each flow ends up with a rate no other
// flow's could be raised at the expense of without lowering a smaller one.
//
// Recomputed from scratch whenever flows arrive or leave (the event loop batches every event at
// one instant before asking for the next completion), in O(H log R) per flow-hop with a lazy heap.

#include <algorithm>
#include <limits>
#include <queue>

#include "simulate_internal.h"

namespace collkit::plan::sim {

namespace {

// Bandwidth in GB/s is 10^3 bytes per microsecond.
constexpr double kBytesPerUsPerGbps = 1e3;

struct Share {
  double share;
  std::uint32_t res;
  std::uint32_t version;
  bool operator>(const Share& o) const { return share != o.share ? share > o.share : res > o.res; }
};

}  // namespace

MaxMinSharing::MaxMinSharing(const Network& net)
    : net_(net),
      cap_(net.bw_gbps.size(), 0.0),
      unfrozen_(net.bw_gbps.size(), 0),
      version_(net.bw_gbps.size(), 0),
      slot_(net.bw_gbps.size(), 0) {}

void MaxMinSharing::add(std::uint32_t tag, std::uint32_t route, double bytes) {
  flows_.push_back({tag, route, bytes, bytes});
  dirty_ = true;
}

void MaxMinSharing::advance(double t_us) {
  double dt = t_us - now_us_;
  if (dt > 0)
    for (Flow& f : flows_) f.remaining -= f.rate * dt;
  now_us_ = std::max(now_us_, t_us);
}

double MaxMinSharing::next_completion() {
  if (dirty_) recompute();
  double best = std::numeric_limits<double>::infinity();
  for (const Flow& f : flows_)
    if (f.rate > 0) best = std::min(best, now_us_ + std::max(0.0, f.remaining) / f.rate);
  return best;
}

void MaxMinSharing::take_finished(std::vector<std::uint32_t>& tags, std::vector<std::uint32_t>& routes) {
  // A flow is done when what is left is rounding noise: a billionth of its size, or less than
  // the clock can still advance by (which would otherwise stall the loop on a zero step).
  double clock_eps = 1e-12 * std::max(1.0, now_us_);
  for (std::size_t i = 0; i < flows_.size();) {
    const Flow& f = flows_[i];
    bool done = f.remaining <= 1e-9 * f.initial || (f.rate > 0 && f.remaining / f.rate <= clock_eps);
    if (!done) {
      ++i;
      continue;
    }
    tags.push_back(f.tag);
    routes.push_back(f.route);
    flows_[i] = flows_.back();
    flows_.pop_back();
    dirty_ = true;
  }
}

void MaxMinSharing::recompute() {
  dirty_ = false;
  // Count the unfrozen flows per resource, give each touched resource a slot, and lay out per
  // slot the flows crossing it (members_[begin_[k] .. begin_[k + 1])).
  touched_.clear();
  for (const Flow& f : flows_) {
    const Route& r = net_.routes[f.route];
    for (std::uint32_t h = r.first; h < r.first + r.count; ++h) {
      std::uint32_t res = net_.hop_res[h];
      if (unfrozen_[res]++ == 0) {
        slot_[res] = static_cast<std::uint32_t>(touched_.size());
        touched_.push_back(res);
        cap_[res] = net_.bw_gbps[res] * kBytesPerUsPerGbps;
      }
    }
  }
  begin_.assign(touched_.size() + 1, 0);
  for (std::size_t k = 0; k < touched_.size(); ++k) begin_[k + 1] = begin_[k] + unfrozen_[touched_[k]];
  members_.assign(begin_.back(), 0);
  fill_.assign(begin_.begin(), begin_.end() - 1);
  for (std::uint32_t i = 0; i < flows_.size(); ++i) {
    const Route& r = net_.routes[flows_[i].route];
    for (std::uint32_t h = r.first; h < r.first + r.count; ++h) members_[fill_[slot_[net_.hop_res[h]]]++] = i;
  }

  std::priority_queue<Share, std::vector<Share>, std::greater<>> heap;
  for (std::uint32_t res : touched_) heap.push({cap_[res] / unfrozen_[res], res, 0});
  frozen_.assign(flows_.size(), 0);
  while (!heap.empty()) {
    Share s = heap.top();
    heap.pop();
    if (s.version != version_[s.res] || unfrozen_[s.res] == 0) continue;
    // Rounding can leave a filled resource a hair below zero; a rate is never negative.
    double share = std::max(0.0, s.share);
    std::uint32_t k = slot_[s.res];
    for (std::uint32_t i = begin_[k]; i < begin_[k + 1]; ++i) {
      std::uint32_t fi = members_[i];
      if (frozen_[fi]) continue;
      frozen_[fi] = 1;
      flows_[fi].rate = share;
      const Route& r = net_.routes[flows_[fi].route];
      for (std::uint32_t h = r.first; h < r.first + r.count; ++h) {
        std::uint32_t q = net_.hop_res[h];
        cap_[q] -= share;
        --unfrozen_[q];
        ++version_[q];
        if (q != s.res && unfrozen_[q] > 0) heap.push({cap_[q] / unfrozen_[q], q, version_[q]});
      }
    }
  }
  for (std::uint32_t res : touched_) {
    unfrozen_[res] = 0;
    version_[res] = 0;
  }
}

}  // namespace collkit::plan::sim
