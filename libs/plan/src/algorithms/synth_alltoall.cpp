// Synthesised AlltoAll (docs/synth.md, "AlltoAll"): the maximum concurrent flow over the routes
// between the ranks (synth/mcf.h) turned into sends. Each block (input block d of rank s, bytes / p)
// is split into m chunks (--pipeline m, default 64); the LP's share of commodity (s, d) relayed
// through rank c becomes a whole number of those chunks (largest remainders), sent s -> c one chunk
// at a time, each forwarded c -> d from the relay's scratch as it arrives; the rest of the block
// goes straight, also chunk by chunk, so that the paths sharing a link take turns. A rank's first
// hops go out on lanes, a channel each (param "lanes": one per peer, or one per link out of the
// rank, whichever the simulator finds faster), each relayed path has a channel for its forwards:
// a rank posts its sends, then its receives, then its forwards (each after its receive), then
// the receives of forwarded chunks, so no wait closes a cycle. The relays are stored in the plan
// (param "relays": "s>c>d:chunks", ';'-separated) with the LP's optimum ("lp_gbps" lambda*,
// "lp_us" = bytes / p over it), so a rank's program needs no topology.
//                                 T ~ (n / p) / lambda*, lambda* the LP's concurrent rate
//
// The registered "synth" is this file's front: AlltoAll here, every other collective to the
// spanning-tree synthesizer (synth.cpp).

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "all.h"
#include "bounds_internal.h"
#include "collkit/core/error.h"
#include "collkit/core/memo.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/routing.h"
#include "common.h"
#include "nic_route.h"
#include "simulate_memo.h"
#include "synth/mcf.h"
#include "synth/routed.h"
#include "synth_read.h"

namespace collkit::plan {

namespace {

using namespace algo;

/// Ranks beyond this: no LP (its pricing grows as p^3 a round; docs/synth.md times it).
constexpr int kMaxRanks = 64;
/// Beyond kMaxRanks, up to this many ranks, the plan of straight routes where those reach the cut
/// bound (routes_at_bound): its lanes are a channel per pair (p (p - 1) <= 65535 at 256 ranks),
/// and it is simulated unfolded (128 ranks: a million sends each of its two or three layouts).
constexpr int kMaxRoutedRanks = 256;
/// Chunks per block: a relayed share is rounded to 1/m of a block.
constexpr int kDefaultChunks = 64;
/// The host share is laid out on one host of at most this many ranks (p (p - 1) channels).
constexpr int kMaxHostRanks = 16;
/// NICs a lane's chunks may be spread over (param lane_nics).
constexpr int kMaxLaneNics = 8;
/// The smallest chunk the default makes: 16 KiB, where one more message costs (at a few us) about
/// what its bytes take on a 25 GB/s NIC.
constexpr std::uint64_t kMinChunkBytes = 16 << 10;

/// Commodity (s, d)'s chunks [first, first + count) of its block, sent through rank via.
struct Hop {
  int s, via, d, first, count;
};

/// The flow LP for the first p ranks of t, memoised per (topology, p, paths): `auto` lays a plan
/// out once per knob value. GLPK is not shared between threads, so one solve runs at a time.
synth::ConcurrentFlow flow_for(const topo::Topology& t, int p, const synth::FlowPaths& also = {}) {
  static std::mutex mu;
  static std::map<std::tuple<std::uint64_t, int, bool, bool>, synth::ConcurrentFlow> memo;
  std::lock_guard lock(mu);
  auto key = std::make_tuple(t.fingerprint(), p, also.every_nic, also.host_paths);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  return memo.emplace(key, synth::max_concurrent_flow(t, p, also)).first->second;
}

std::pair<std::optional<double>, std::string> straight_routes(const topo::Topology& t, int p);

/// The rate every ordered pair of the first p ranks ships at, all at once, over its straight route
/// (each link direction's bandwidth over the pairs crossing it), where that reaches the AlltoAll
/// cut bound (bounds::lower_bound, to 1e-6): no plan of sends can then do better, so the LP's
/// optimum is that rate with nothing relayed, and it need not be solved. nullopt, with `why`,
/// where it falls short or ranks share a vertex. Memoised per (topology, p).
std::optional<double> routes_at_bound(const topo::Topology& t, int p, std::string* why) {
  static Memo<std::pair<std::uint64_t, int>, std::pair<std::optional<double>, std::string>> memo;
  const auto& [rate, reason] = memo.get({t.fingerprint(), p}, [&] { return straight_routes(t, p); });
  if (why && !rate) *why = reason;
  return rate;
}

/// routes_at_bound's answer, made: the rate, or nullopt and why not.
std::pair<std::optional<double>, std::string> straight_routes(const topo::Topology& t, int p) {
  std::optional<double> rate;
  std::string reason;
  std::vector<topo::VertexId> ends;
  for (int r = 0; r < p; ++r) ends.push_back(t.rank_vertex(static_cast<topo::Rank>(r)));
  std::vector<topo::VertexId> sorted = ends;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    reason = "ranks share a vertex";
  } else {
    topo::Router router(t);
    std::vector<std::uint32_t> crossing(2 * t.num_links(), 0);
    bool routed = true;
    for (int a = 0; a < p && routed; ++a) {
      std::vector<topo::Path> paths = router.routes_to(ends[static_cast<std::size_t>(a)], ends);
      for (int b = 0; b < p; ++b) {
        if (b == a) continue;
        const topo::Path& path = paths[static_cast<std::size_t>(b)];
        routed = routed && path.found;
        for (const topo::Hop& h : path.hops) ++crossing[h.channel()];
      }
    }
    double least = std::numeric_limits<double>::infinity();
    for (std::size_t dir = 0; dir < crossing.size(); ++dir)
      if (crossing[dir] > 0) least = std::min(least, t.link(static_cast<topo::LinkId>(dir / 2)).bw_gbps / crossing[dir]);
    // The bound's time for a block of 1 MiB against the routes' at that rate.
    Request req{Collective::AlltoAll, std::uint64_t{1} << 20, p, 0};
    req.bytes *= static_cast<std::uint64_t>(p);
    double bound_us = lower_bound(req, t).bandwidth_us,
           routes_us = static_cast<double>(std::uint64_t{1} << 20) / least * bounds::kUsPerByteGbps;
    if (!routed) reason = "some pair of ranks has no route";
    else if (!std::isfinite(least) || routes_us > bound_us * (1 + 1e-6)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", routes_us / bound_us);
      reason = std::string("the straight routes take ") + buf + " x the cut bound's time";
    } else rate = least;
  }
  return {rate, reason};
}

/// The LP's relayed shares as whole chunks of m: per commodity, the largest remainders of
/// m x share (the straight part included) take the chunks left after rounding down.
std::vector<Hop> round_relays(const std::vector<synth::Relay>& relays, int m) {
  std::vector<Hop> hops;
  for (std::size_t i = 0; i < relays.size();) {
    std::size_t j = i;
    while (j < relays.size() && relays[j].src == relays[i].src && relays[j].dst == relays[i].dst) ++j;
    // Entries i..j-1 are one commodity's relays; the last candidate is the straight part.
    std::vector<double> want;
    double relayed = 0;
    for (std::size_t r = i; r < j; ++r) {
      want.push_back(relays[r].share * m);
      relayed += relays[r].share;
    }
    want.push_back(std::max(0.0, 1 - relayed) * m);
    std::vector<int> got;
    int left = m;
    for (double w : want) {
      got.push_back(static_cast<int>(w));
      left -= got.back();
    }
    std::vector<std::size_t> order(want.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return want[a] - got[a] > want[b] - got[b]; });
    for (std::size_t k = 0; left > 0; k = (k + 1) % order.size(), --left) ++got[order[k]];
    int first = 0;
    for (std::size_t r = i; r < j; ++r) {
      int n = got[r - i];
      if (n > 0) hops.push_back({relays[r].src, relays[r].via, relays[r].dst, first, n});
      first += n;
    }
    i = j;
  }
  return hops;
}

std::string format_hops(const std::vector<Hop>& hops) {
  std::string s;
  for (const Hop& h : hops)
    s += (s.empty() ? "" : ";") + std::to_string(h.s) + ">" + std::to_string(h.via) + ">" + std::to_string(h.d) + ":" +
         std::to_string(h.count);
  return s;
}

/// The "relays" parameter read back and checked: ranks in range and distinct, commodities in
/// order, no commodity relaying more than its m chunks. Chunk ranges follow the order.
std::vector<Hop> parse_hops(const PlanInfo& info, int p, int m) {
  auto it = info.params.find("relays");
  if (it == info.params.end()) throw InputError("synth: plan parameter relays is missing");
  auto bad = [](const std::string& why) { return InputError("synth: plan parameter relays: " + why); };
  const std::string& text = it->second;
  std::vector<Hop> hops;
  const char* c = text.data();
  const char* end = c + text.size();
  while (c < end) {
    int v[4] = {0, 0, 0, 0};
    for (int f = 0; f < 4; ++f) {
      auto [q, ec] = std::from_chars(c, end, v[f]);
      const char sep = f < 2 ? '>' : f == 2 ? ':' : ';';
      if (ec != std::errc() || (q < end && *q != sep) || (q == end && f < 3))
        throw bad("expected s>via>d:chunks at character " + std::to_string(c - text.data()));
      c = q < end ? q + 1 : q;
    }
    Hop h{v[0], v[1], v[2], 0, v[3]};
    auto in_range = [p](int r) { return r >= 0 && r < p; };
    if (!in_range(h.s) || !in_range(h.via) || !in_range(h.d) || h.s == h.via || h.via == h.d || h.s == h.d || h.count < 1)
      throw bad(std::to_string(h.s) + ">" + std::to_string(h.via) + ">" + std::to_string(h.d) + ":" + std::to_string(h.count) +
                " is not three distinct ranks 0.." + std::to_string(p - 1) + " and a positive chunk count");
    if (!hops.empty()) {
      const Hop& b = hops.back();
      if (std::tie(b.s, b.d, b.via) >= std::tie(h.s, h.d, h.via)) throw bad("relays out of order at " + std::to_string(hops.size()));
      if (b.s == h.s && b.d == h.d) h.first = b.first + b.count;
    }
    if (h.first + h.count > m)
      throw bad("commodity " + std::to_string(h.s) + ">" + std::to_string(h.d) + " relays more than its " + std::to_string(m) + " chunks");
    hops.push_back(h);
  }
  return hops;
}

/// The "lanes" parameter read back and checked: per rank a, for each peer a + k (k = 1..p-1), the
/// lane its transfers take, lanes numbered from 0 in the order first used.
std::vector<std::vector<int>> parse_lanes(const PlanInfo& info, int p) {
  auto it = info.params.find("lanes");
  if (it == info.params.end()) throw InputError("synth: plan parameter lanes is missing");
  auto bad = [](const std::string& why) { return InputError("synth: plan parameter lanes: " + why); };
  const std::string& text = it->second;
  std::vector<std::vector<int>> lanes(1);
  const char* c = text.data();
  const char* end = c + text.size();
  while (c < end) {
    int v = 0;
    auto [q, ec] = std::from_chars(c, end, v);
    if (ec != std::errc() || v < 0 ||
        v > static_cast<int>(lanes.back().empty() ? 0 : *std::max_element(lanes.back().begin(), lanes.back().end()) + 1))
      throw bad("expected the next lane number at character " + std::to_string(c - text.data()));
    lanes.back().push_back(v);
    c = q;
    if (c < end && *c == ';') lanes.emplace_back();
    if (c < end && (*c == ',' || *c == ';')) ++c;
  }
  if (lanes.size() != static_cast<std::size_t>(p)) throw bad(std::to_string(lanes.size()) + " ranks, expected " + std::to_string(p));
  for (std::size_t a = 0; a < lanes.size(); ++a)
    if (lanes[a].size() != static_cast<std::size_t>(p - 1))
      throw bad("rank " + std::to_string(a) + " has " + std::to_string(lanes[a].size()) + " peers, expected " + std::to_string(p - 1));
  return lanes;
}

/// Per rank, its peers' lanes (param lanes), numbered in peer order, with their total: a lane per
/// peer, or (by_link) one per link the routes to them leave the rank by (ranks of its own vertex:
/// one more).
std::pair<std::string, int> lanes_of(const topo::Topology& t, int p, bool by_link) {
  topo::Router router(t);
  std::string text;
  int total = 0;
  for (int a = 0; a < p; ++a) {
    std::map<std::size_t, int> lane;
    for (int k = 1; k < p; ++k) {
      std::size_t key = static_cast<std::size_t>(k);
      if (by_link) {
        topo::Path path = router.route_ranks(static_cast<topo::Rank>(a), static_cast<topo::Rank>((a + k) % p));
        key = path.hops.empty() ? 0 : path.hops[0].channel() + 1;
      }
      int l = lane.emplace(key, static_cast<int>(lane.size())).first->second;
      text += (k > 1 ? "," : (a > 0 ? ";" : "")) + std::to_string(l);
    }
    total += static_cast<int>(lane.size());
  }
  return {text, total};
}

/// The NICs out of every host of the first p ranks (sim::NicRoutes numbers them per host): the
/// fewest any of them has, where the ranks are on two hosts or more and every host has more NICs
/// than ranks (a rank's own NIC then leaves others idle; where each rank has one of its own, as
/// on DGX hosts, the others' are theirs), at most kMaxLaneNics; else 1.
int lane_nics(const topo::Topology& t, int p) {
  topo::RouteCache cache(t);
  sim::NicRoutes via(t, cache);
  std::map<std::string, int> ranks_on;
  int k = kMaxLaneNics;
  for (int r = 0; r < p; ++r) {
    topo::VertexId v = t.rank_vertex(static_cast<topo::Rank>(r));
    ++ranks_on[t.vertex(v).host];
    int n = 0;
    while (n < kMaxLaneNics && via.nic_of(v, n)) ++n;
    k = std::min(k, n);
  }
  int most = 0;
  for (const auto& [host, n] : ranks_on) most = std::max(most, n);
  return ranks_on.size() > 1 && k > most ? k : 1;
}

/// Per relay rank, its scratch block for each hop through it (hops' order); and the most any rank holds.
std::pair<std::vector<int>, int> scratch_slots(const std::vector<Hop>& hops, int p) {
  std::vector<int> slot(hops.size()), used(static_cast<std::size_t>(p), 0);
  for (std::size_t i = 0; i < hops.size(); ++i) slot[i] = used[static_cast<std::size_t>(hops[i].via)]++;
  return {slot, used.empty() ? 0 : *std::max_element(used.begin(), used.end())};
}

std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

bool alltoall_supports(const Request& req, const topo::Topology* t, std::string* why) {
  auto no = [&](std::string w) {
    if (why) *why = std::move(w);
    return false;
  };
  if (!t) return no("AlltoAll needs a topology (the flow LP runs over its routes)");
  if (static_cast<std::size_t>(req.nranks) > t->num_ranks()) return no("the topology has fewer ranks");
  if (req.nranks > kMaxRanks) {
    std::string w = "more than " + std::to_string(kMaxRoutedRanks) + " ranks";
    if (req.nranks > kMaxRoutedRanks || !routes_at_bound(*t, req.nranks, &w))
      return no("the AlltoAll flow LP takes at most " + std::to_string(kMaxRanks) + " ranks, beyond (up to " +
                std::to_string(kMaxRoutedRanks) + ") only where the straight routes reach the cut bound, not here: " + w);
  }
  return true;
}

PlanInfo alltoall_layout(const Request& req, const topo::Topology* t, const AlgoOptions& opt) {
  std::string why;
  if (!alltoall_supports(req, t, &why)) throw InputError("synth: " + why);
  int p = req.nranks;
  std::uint64_t block = input_bytes(req) / static_cast<std::uint64_t>(p);
  if (block * static_cast<std::uint64_t>(p) != input_bytes(req) || block % req.elem_bytes != 0)
    throw InputError("synth: AlltoAll of " + std::to_string(req.bytes) + " bytes does not split into " + std::to_string(p) +
                     " blocks of whole elements");
  PlanInfo info;
  info.req = req;
  std::vector<Hop> hops;
  if (p > 1) {
    // The relays come from the LP over the routes; the optimum the plan is held to ("lp_gbps",
    // "lp_us") is the LP over every path its sends may take: the routes, through any NIC of the
    // two hosts, staged through host memory on one host, or relayed through a rank. The layouts
    // below take some of them (lane_nics, host_chunks, relays), none all at once. Where no other
    // path is offered the two LPs are one, solved once.
    // Beyond kMaxRanks no LP: the straight routes, which reach the cut bound (alltoall_supports).
    synth::ConcurrentFlow widest;
    if (p > kMaxRanks) widest.rate_gbps = *routes_at_bound(*t, p, nullptr);
    else widest = flow_for(*t, p, {.every_nic = true, .host_paths = true});
    synth::ConcurrentFlow f = widest.paths == 0 || p > kMaxRanks ? widest : flow_for(*t, p);
    // Rounding is to a chunk of a block; no chunk smaller than an element, and by default none
    // below kMinChunkBytes, where a message's overhead outweighs a finer split.
    auto elems = static_cast<std::int64_t>(block / req.elem_bytes);
    std::int64_t want =
        opt.pipeline > 0 ? opt.pipeline : std::min<std::int64_t>(kDefaultChunks, static_cast<std::int64_t>(block / kMinChunkBytes));
    int m = static_cast<int>(std::clamp<std::int64_t>(want, 1, std::max<std::int64_t>(elems, 1)));
    hops = round_relays(f.relays, m);
    info.params["pipeline"] = std::to_string(m);
    if (p > kMaxRanks) info.params["lp"] = "routes";
    if (std::isfinite(widest.rate_gbps)) {
      info.params["lp_gbps"] = format_number(widest.rate_gbps);
      info.params["lp_us"] = format_number(static_cast<double>(block) / widest.rate_gbps * bounds::kUsPerByteGbps);
    }
    info.in_chunks = info.out_chunks = static_cast<std::uint32_t>(p * m);
    int slots = scratch_slots(hops, p).second;
    info.scratch_chunks = static_cast<std::uint32_t>(slots * m);
    info.scratch_bytes = static_cast<std::uint64_t>(slots) * block;
    info.params["relays"] = format_hops(hops);
    // Lanes: a channel per peer keeps every route busy at once; a lane per link out of the rank
    // takes the peers behind one NIC in turn, which the Queue model packs without the gaps that
    // reservations of many routes through two NICs leave (two DGX hosts: 1.24 -> 1.002 x the LP),
    // but on a torus or DGX-1's PCIe it sends one shift of the ranks at a time, and some links
    // idle (2 x). Both are laid out and the faster under the default simulation kept.
    auto lay = [&](bool by_link) {
      PlanInfo x = info;
      auto [lanes, total] = lanes_of(*t, p, by_link);
      x.params["lanes"] = lanes;
      // A channel per relay path too: forwarding through one shared channel, a relay stalled the
      // chunks of every source behind the one whose chunk had not come yet.
      std::size_t channels = static_cast<std::size_t>(total) + hops.size();
      if (channels > 65535)
        throw InputError("synth: AlltoAll on " + std::to_string(p) + " ranks relaying " + std::to_string(hops.size()) + " paths needs " +
                         std::to_string(channels) + " channels, more than a plan holds (65535)");
      x.channels = static_cast<std::uint16_t>(channels);
      return x;
    };
    // The host share (docs/synth.md "The PCIe path beside NVLink"): on one host, without relays,
    // the last h chunks of every block go straight to their rank staged through host memory, on a
    // channel per (sender, receiver) marked "host", beside the rest on the lanes: the LP's routes
    // keep to NVLink or xGMI, the bound counts PCIe too. h: the host paths' share of the two
    // rates (the stars' over every pair at once, and the LP's), its ceiling, and 0.85, 0.7 and 0.5
    // of it (the stars' links are not all apart from the LP's: dgx-h100 x1, share 7.1 of 64,
    // simulates best at 6); each simulated and kept if faster.
    std::vector<std::pair<int, int>> pairs;
    for (int a = 0; a < p; ++a)
      for (int b = 0; b < p; ++b)
        if (a != b) pairs.emplace_back(a, b);
    double star = hops.empty() && p <= kMaxHostRanks ? synth::host_paths_rate(*t, pairs) : 0;
    PlanInfo per_peer = lay(false), per_link = lay(true);
    bool same_lanes = per_link.params.at("lanes") == per_peer.params.at("lanes");
    int nics = lane_nics(*t, p);
    if (same_lanes && star <= 0 && nics < 2) return per_peer;
    double peer_us = simulated_us(GeneratedPlan(per_peer, *make_synth_front()), *t);
    PlanInfo best = per_peer;
    double best_us = peer_us;
    if (!same_lanes) {
      double link_us = simulated_us(GeneratedPlan(per_link, *make_synth_front()), *t);
      if (link_us < peer_us) best = per_link, best_us = link_us;
    }
    // Across hosts of several NICs each, a lane per peer through each NIC in turn (lane_nics):
    // a rank's traffic to other hosts leaves by its own NIC otherwise, and where each host has
    // one GPU and two NICs (a torus of such hosts) that NIC, not the fabric, binds. Without the
    // LP's relays (which keep a channel each): going both ways round a ring of 4, the lanes of
    // an antipodal pair through the two NICs split over both directions as relays would.
    if (nics > 1 && m >= nics) {
      PlanInfo x = per_peer;
      x.params["lane_nics"] = std::to_string(nics);
      x.params["relays"] = "";
      x.scratch_chunks = 0;
      x.scratch_bytes = 0;
      std::size_t channels = (static_cast<std::size_t>(x.channels) - hops.size()) * static_cast<std::size_t>(nics);
      if (channels <= 65535) {
        x.channels = static_cast<std::uint16_t>(channels);
        for (int n = 0; n < nics; ++n) x.channel_nics.push_back(static_cast<std::int16_t>(n));
        double us = simulated_us(GeneratedPlan(x, *make_synth_front()), *t);
        if (us < best_us) best = x, best_us = us;
      }
    }
    if (star > 0 && std::isfinite(f.rate_gbps) && m > 1) {
      double nearest = m * star / (star + f.rate_gbps);
      std::set<int> shares;
      for (double h : {nearest, std::ceil(nearest), 0.85 * nearest, 0.7 * nearest, 0.5 * nearest})
        if (std::lround(h) > 0 && std::lround(h) < m) shares.insert(static_cast<int>(std::lround(h)));
      PlanInfo base = best;
      for (int h : shares) {
        PlanInfo x = base;
        x.params["host_chunks"] = std::to_string(h);
        x.params["host_gbps"] = format_number(star);
        std::size_t routed = x.channels, channels = routed + static_cast<std::size_t>(p) * static_cast<std::size_t>(p - 1);
        if (channels > 65535) break;
        x.channels = static_cast<std::uint16_t>(channels);
        x.channel_paths.assign(routed, ChannelPath::Route);
        x.channel_paths.resize(channels, ChannelPath::Host);
        double us = simulated_us(GeneratedPlan(x, *make_synth_front()), *t);
        if (us < best_us) best = x, best_us = us;
      }
    }
    return best;
  }
  info.params["pipeline"] = "1";
  info.params["relays"] = "";
  return info;
}

/// Chunks per block (param pipeline), checked against the plan's chunks.
int block_chunks(const PlanInfo& info) {
  int p = info.req.nranks;
  int m = param_int(info, "pipeline", 1);
  if (m < 1 || info.in_chunks != static_cast<std::uint32_t>(p * m) || info.out_chunks != info.in_chunks)
    throw InputError("synth: plan parameter pipeline=" + std::to_string(m) + " does not match " + std::to_string(info.in_chunks) +
                     " input chunks of " + std::to_string(p) + " blocks");
  return m;
}

std::vector<Op> alltoall_program(const PlanInfo& info, int r) {
  int p = info.req.nranks;
  int m = block_chunks(info);
  std::vector<Hop> hops = parse_hops(info, p, m);
  // Not a structured binding: clang 14 (CI's sanitizer pass) cannot capture one in a lambda
  // (P1091, clang 16), and `held` below reads slot.
  const auto slotting = scratch_slots(hops, p);
  const std::vector<int>& slot = slotting.first;
  const int slots = slotting.second;
  if (info.scratch_chunks < static_cast<std::uint32_t>(slots * m))
    throw InputError("synth: " + std::to_string(info.scratch_chunks) + " scratch chunks hold fewer than the " + std::to_string(slots) +
                     " relayed blocks of " + std::to_string(m) + " chunks");
  auto u32 = [](int x) { return static_cast<std::uint32_t>(x); };
  auto mod = [p](int x) { return ((x % p) + p) % p; };
  auto P = static_cast<std::size_t>(p);
  std::vector<Op> ops;
  if (p == 1) {
    ops.push_back(copy(in(0), out(0), info.out_chunks, 0));
    return ops;
  }
  // Where each commodity's straight part starts: after its relayed chunks. The last `host` of
  // every block go through host memory (param host_chunks), on channel host_base + s (p - 1) + the
  // receiver's place among s's peers.
  std::vector<int> straight(P * P, 0);
  for (const Hop& h : hops) straight[static_cast<std::size_t>(h.s) * P + static_cast<std::size_t>(h.d)] += h.count;
  int host = param_int(info, "host_chunks", 0);
  if (host < 0 || host >= m || (host > 0 && !hops.empty()))
    throw InputError("synth: plan parameter host_chunks " + std::to_string(host) + " is not 0 to " + std::to_string(m - 1) +
                     (hops.empty() ? "" : " (0 where chunks are relayed)"));
  // The chunks one channel carries between two ranks, in the order both ends list them: the
  // hops matching `keep`, plus `straight` chunks sent straight (hop index -1), each path's j-th
  // chunk at its progress (j + 1/2) / count, so that every path through the channel advances at
  // its share of the rate and a relay forwards as it receives (one path after another left the
  // links of the later ones idle early and short late).
  struct Item {
    double at;
    int hop, j;
  };
  std::vector<Item> items;
  auto in_order = [&](auto keep, int straight_chunks) -> const std::vector<Item>& {
    items.clear();
    for (std::size_t i = 0; i < hops.size(); ++i)
      if (keep(hops[i]))
        for (int j = 0; j < hops[i].count; ++j) items.push_back({(j + 0.5) / hops[i].count, static_cast<int>(i), j});
    for (int j = 0; j < straight_chunks; ++j) items.push_back({(j + 0.5) / straight_chunks, -1, j});
    std::stable_sort(items.begin(), items.end(), [](const Item& x, const Item& y) { return x.at < y.at; });
    return items;
  };
  auto held = [&](int i, int j) {
    return scratch(u32(slot[static_cast<std::size_t>(i)] * m + hops[static_cast<std::size_t>(i)].first + j));
  };
  // Transfer a -> b from its source on a's lane for b (param lanes: the transfers whose routes
  // leave a over one link share a lane), channel base(a) + lane: a channel carries one rank's
  // chunks out, so no receive waits behind its rank's own sends. On a lane the chunks of every
  // peer are interleaved by progress, and at one progress peer i of its n (by rank) goes at
  // (i - a) mod n, so ranks sending over their own NICs to one host take its ranks in turn, not
  // all the same one first (and on one switch, rank a + 1 + t at turn t: a permutation each turn).
  std::vector<std::vector<int>> lane = parse_lanes(info, p);
  // Param lane_nics = K: each lane is K channels, one through each NIC (channel_nics), the
  // straight chunks of a pair taking them in turn (chunk j on the lane's (j mod K)-th).
  int nics = param_int(info, "lane_nics", 1);
  if (nics < 1 || nics > kMaxLaneNics || (nics > 1 && (!hops.empty() || host > 0)))
    throw InputError("synth: plan parameter lane_nics " + std::to_string(nics) + " is not 1 to " + std::to_string(kMaxLaneNics) +
                     (nics > 1 ? " (1 where chunks are relayed or staged through host memory)" : ""));
  std::vector<int> base(P + 1, 0);
  for (std::size_t a = 0; a < P; ++a) base[a + 1] = base[a] + (1 + *std::max_element(lane[a].begin(), lane[a].end())) * nics;
  auto lane_ch = [&](int a, int l, const Item& it) {
    return static_cast<std::uint16_t>(base[static_cast<std::size_t>(a)] + l * nics + (it.hop < 0 ? it.j % nics : 0));
  };
  std::size_t host_base = static_cast<std::size_t>(base[P]) + hops.size();
  std::size_t need = host_base + (host > 0 ? P * (P - 1) : 0);
  if (need > info.channels)
    throw InputError(std::string("synth: plan parameters lanes") + (host > 0 ? ", relays and host_chunks" : " and relays") + " need " +
                     std::to_string(need) + " channels, the plan has " + std::to_string(info.channels));
  auto host_ch = [&](int s, int d) {
    return static_cast<std::uint16_t>(host_base + static_cast<std::size_t>(s * (p - 1) + (d < s ? d : d - 1)));
  };
  auto lane_of = [&](int a, int b) { return lane[static_cast<std::size_t>(a)][static_cast<std::size_t>(mod(b - a - 1))]; };
  auto forward = [&](int hop) { return static_cast<std::uint16_t>(base[P] + hop); };
  auto straight_from = [&](int s, int d) { return straight[static_cast<std::size_t>(s) * P + static_cast<std::size_t>(d)]; };
  struct Lane {
    double at;
    int rot, b;
    Item it;
  };
  // Source a's chunks on lane l, in its order (only those to `only` when that is >= 0).
  auto lane_items = [&](int a, int l, int only) {
    std::vector<Lane> out;
    std::vector<int> peers;  // the lane's peers by rank; peer i comes at (i - a) mod their number
    for (int b = 0; b < p; ++b)
      if (b != a && lane_of(a, b) == l) peers.push_back(b);
    auto n = static_cast<int>(peers.size());
    for (int i = 0; i < n; ++i) {
      int b = peers[static_cast<std::size_t>(i)];
      if (only >= 0 && b != only) continue;
      for (const Item& it : in_order([&](const Hop& h) { return h.s == a && h.via == b; }, m - host - straight_from(a, b)))
        out.push_back({it.at, ((i - a) % n + n) % n, b, it});
    }
    std::stable_sort(out.begin(), out.end(), [](const Lane& x, const Lane& y) { return x.at != y.at ? x.at < y.at : x.rot < y.rot; });
    return out;
  };
  // 1. Own blocks leave, relayed and straight chunks interleaved; the own block is copied.
  for (int l = 0; l < (base[static_cast<std::size_t>(r) + 1] - base[static_cast<std::size_t>(r)]) / nics; ++l)
    for (const Lane& x : lane_items(r, l, -1)) {
      const Hop* h = x.it.hop < 0 ? nullptr : &hops[static_cast<std::size_t>(x.it.hop)];
      ops.push_back(
          send(x.b, in(u32(h ? h->d * m + h->first + x.it.j : x.b * m + straight_from(r, x.b) + x.it.j)), 1, lane_ch(r, l, x.it)));
    }
  for (int b = 0; b < p && host > 0; ++b)
    for (int j = 0; j < host && b != r; ++j) ops.push_back(send(b, in(u32(b * m + m - host + j)), 1, host_ch(r, b)));
  ops.push_back(copy(in(u32(r * m)), out(u32(r * m)), u32(m), 0));
  // 2. What comes from each source: chunks to relay into scratch, the rest into the output.
  std::vector<std::vector<std::uint32_t>> got(hops.size());
  for (int k = 1; k < p; ++k) {
    int a = mod(r - k), from = straight_from(a, r), l = lane_of(a, r);
    for (const Lane& x : lane_items(a, l, r)) {
      const Item& it = x.it;
      if (it.hop >= 0) got[static_cast<std::size_t>(it.hop)].push_back(u32(static_cast<int>(ops.size())));
      ops.push_back(recv(a, it.hop < 0 ? out(u32(a * m + from + it.j)) : held(it.hop, it.j), 1, lane_ch(a, l, it)));
    }
  }
  for (int a = 0; a < p && host > 0; ++a)
    for (int j = 0; j < host && a != r; ++j) ops.push_back(recv(a, out(u32(a * m + m - host + j)), 1, host_ch(a, r)));
  // 3. Forwards, each after its chunk's arrival, on the path's own channel; 4. the chunks
  // forwarded to this rank.
  for (std::size_t i = 0; i < hops.size(); ++i)
    for (int j = 0; j < hops[i].count && hops[i].via == r; ++j) {
      Op o = send(hops[i].d, held(static_cast<int>(i), j), 1, forward(static_cast<int>(i)));
      o.depend_on(got[i][static_cast<std::size_t>(j)]);
      ops.push_back(o);
    }
  for (std::size_t i = 0; i < hops.size(); ++i)
    for (int j = 0; j < hops[i].count && hops[i].d == r; ++j)
      ops.push_back(recv(hops[i].via, out(u32(hops[i].s * m + hops[i].first + j)), 1, forward(static_cast<int>(i))));
  return ops;
}

/// "synth": AlltoAll by the flow LP, every other collective by the tree synthesizer.
class SynthFront final : public Algorithm {
 public:
  std::string_view name() const override { return trees_->name(); }

  std::string_view formula(Collective c) const override {
    if (c == Collective::AlltoAll)
      return "(n/p)/lambda*: the maximum concurrent flow over the ranks' routes (through any NIC, or host memory), one relay at most";
    return trees_->formula(c);
  }

  std::vector<Knob> knobs(const Request& req, const topo::Topology* t) const override {
    return req.coll == Collective::AlltoAll ? std::vector<Knob>{} : trees_->knobs(req, t);
  }

  bool supports(const Request& req, const topo::Topology* t, std::string* why) const override {
    return req.coll == Collective::AlltoAll ? alltoall_supports(req, t, why) : trees_->supports(req, t, why);
  }

  /// AlltoAll up to kMaxRanks: beyond, the plan of straight routes is simulated unfolded in two or
  /// three layouts (a million sends each at 128 ranks), which `auto` does not spend.
  bool in_auto(const Request& req, const topo::Topology* t, std::string* why) const override {
    if (req.coll != Collective::AlltoAll) return trees_->in_auto(req, t, why);
    if (req.nranks > kMaxRanks) {
      if (why) *why = "auto weighs synth's AlltoAll up to " + std::to_string(kMaxRanks) + " ranks (beyond, --algo synth makes it)";
      return false;
    }
    return alltoall_supports(req, t, why);
  }

  PlanInfo layout(const Request& req, const topo::Topology* t, const AlgoOptions& opt) const override {
    // Its searches lay some plans out more than once (rs-ag's winner is simulated again beside
    // reduce-bcast's): each simulated once (simulate_memo.h; auto's memo, when in force, shared).
    std::optional<sim::TimeMemo> memo;
    if (t) memo.emplace(*t);
    return req.coll == Collective::AlltoAll ? alltoall_layout(req, t, opt) : trees_->layout(req, t, opt);
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    return info.req.coll == Collective::AlltoAll ? alltoall_program(info, rank) : trees_->program(info, rank);
  }

  std::vector<Op> channel_program(const PlanInfo& info, int rank, int channel) const override {
    if (info.req.coll == Collective::AlltoAll) return only_channel(alltoall_program(info, rank), channel);
    return trees_->channel_program(info, rank, channel);
  }

  std::vector<SymmetryAxis> symmetries(const PlanInfo& info) const override {
    return info.req.coll == Collective::AlltoAll ? std::vector<SymmetryAxis>{} : trees_->symmetries(info);
  }

  std::vector<std::vector<int>> channel_images(const PlanInfo& info) const override {
    return info.req.coll == Collective::AlltoAll ? std::vector<std::vector<int>>{} : trees_->channel_images(info);
  }

 private:
  const Algorithm* trees_ = make_synth();
};

}  // namespace

SynthRelays read_synth_relays(const PlanInfo& info) {
  SynthRelays r;
  r.m = block_chunks(info);
  for (const Hop& h : parse_hops(info, info.req.nranks, r.m)) r.relays.push_back({h.s, h.via, h.d, h.count});
  return r;
}

const Algorithm* make_synth_front() {
  static const SynthFront a;
  return &a;
}

}  // namespace collkit::plan
