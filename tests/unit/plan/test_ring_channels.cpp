// Ring channels spread over a host's links (ring_search.h, issue #10 item 4). The rings are read
// back from generated plans (params order<c>, odd channels reversed when bidirectional), so these
// tests check what a plan runs, not an internal list.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "algorithms/common.h"
#include "algorithms/host_rings.h"
#include "algorithms/ring_order.h"
#include "algorithms/ring_search.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/queries.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"

using namespace collkit;
using namespace collkit::plan;

namespace {

// The rings a ring plan runs, in the direction it runs them.
std::vector<std::vector<int>> rings_of(const PlanInfo& info) {
  int channels = std::stoi(info.params.at("channels"));
  bool bidir = info.params.count("bidirectional") && info.params.at("bidirectional") == "1";
  std::vector<std::vector<int>> out;
  for (int c = 0; c < channels; ++c) {
    std::string key = "order" + std::to_string(c);
    auto order = algo::param_order(info, info.params.count(key) ? key : "order", info.req.nranks);
    if (bidir && c % 2 == 1) std::reverse(order.begin(), order.end());
    out.push_back(order);
  }
  return out;
}

std::vector<std::vector<int>> rings(const topo::Topology& t, int channels, Collective coll = Collective::AllReduce, bool bidir = false) {
  Request req{coll, 1 << 20, static_cast<int>(t.num_ranks()), 0};
  return rings_of(algorithm("ring").layout(req, &t, {channels, 0, bidir, {}}));
}

// Ring hops crossing each link direction (Hop::channel()), hops between hosts included.
std::map<std::size_t, int> crossings(const topo::Topology& t, const std::vector<std::vector<int>>& rs) {
  topo::Router router(t);
  std::map<std::size_t, int> count;
  for (const auto& r : rs)
    for (std::size_t i = 0; i < r.size(); ++i)
      for (const topo::Hop& h : router.route_ranks(static_cast<topo::Rank>(r[i]), static_cast<topo::Rank>(r[(i + 1) % r.size()])).hops)
        ++count[h.channel()];
  return count;
}

double max_load(const topo::Topology& t, const std::map<std::size_t, int>& count) {
  double worst = 0;
  for (auto [dir, n] : count) worst = std::max(worst, n / t.link(static_cast<topo::LinkId>(dir / 2)).bw_gbps);
  return worst;
}

int shared_directions(const std::map<std::size_t, int>& count) {
  return static_cast<int>(std::count_if(count.begin(), count.end(), [](auto kv) { return kv.second > 1; }));
}

// What the links force on one host: a ring leaves and enters every rank once per channel, over
// the first (last) link direction of the routes out of (into) it, and k crossings of a link of b
// GB/s are a load of k/b. The least load at which every rank has room for `channels` crossings
// each way (links of one direction pooled) bounds any choice of rings from below.
double forced_load(const topo::Topology& t, int channels) {
  topo::Router router(t);
  auto p = static_cast<topo::Rank>(t.num_ranks());
  std::vector<std::map<std::size_t, double>> out(p), in(p);  // rank -> direction -> GB/s
  for (topo::Rank a = 0; a < p; ++a)
    for (topo::Rank b = 0; b < p; ++b) {
      if (a == b) continue;
      auto hops = router.route_ranks(a, b).hops;
      if (hops.empty()) continue;  // co-located ranks cross no link
      out[a][hops.front().channel()] = t.link(hops.front().link).bw_gbps;
      in[b][hops.back().channel()] = t.link(hops.back().link).bw_gbps;
    }
  double worst = 0;
  for (const auto* side : {&out, &in})
    for (const auto& dirs : *side) {
      std::vector<double> levels;
      for (auto [dir, bw] : dirs)
        for (int k = 1; k <= channels; ++k) levels.push_back(k / bw);
      std::sort(levels.begin(), levels.end());
      for (double level : levels) {
        long room = 0;
        for (auto [dir, bw] : dirs) room += static_cast<long>(std::floor(level * bw * (1 + 1e-9)));
        if (room >= channels) {
          worst = std::max(worst, level);
          break;
        }
      }
    }
  return worst;
}

double simulated_us(const topo::Topology& t, Collective coll, int channels) {
  Request req{coll, std::uint64_t{1} << 30, static_cast<int>(t.num_ranks()), 0};
  return simulate(*generate("ring", req, &t, {channels, 0, false, {}}), t).time_us;
}

}  // namespace

TEST_CASE("ring channels: on meshes and NVSwitch hosts, no link direction carries more than the links force") {
  // The full xGMI mesh takes 7 arc-disjoint directed rings, DGX-1's cube-mesh 6 (3 cycles over
  // its 24 NVLinks, each both ways); an NVSwitch port carries every channel whatever the order.
  int checked = 0;
  for (const char* node : {"mi300x", "dgx1-v100", "dgx-h100", "dgx-a100", "hgx-h200", "gb200-nvl72"}) {
    auto t = testing::preset(node, 1);
    for (int c = 1; c <= 8; ++c) {
      CAPTURE(node);
      CAPTURE(c);
      auto count = crossings(t, rings(t, c));
      CHECK(max_load(t, count) == doctest::Approx(forced_load(t, c)).epsilon(1e-9));
      ++checked;
    }
  }
  CHECK(checked == 48);
}

TEST_CASE("ring channels: counting shared link directions on mi300x and dgx1-v100") {
  auto mi = testing::preset("mi300x", 1);
  for (int c = 1; c <= 7; ++c) {
    CAPTURE(c);
    CHECK(shared_directions(crossings(mi, rings(mi, c))) == 0);
  }
  // The same rings run backwards on odd channels when bidirectional, and are chosen for it.
  CHECK(shared_directions(crossings(mi, rings(mi, 6, Collective::AllReduce, true))) == 0);
  CHECK(shared_directions(crossings(mi, rings(mi, 6, Collective::Broadcast))) == 0);

  // DGX-1: with 6 channels no NVLink direction carries more channels than it has links.
  auto dgx1 = testing::preset("dgx1-v100", 1);
  int over = 0, nvlink = 0;
  for (auto [dir, n] : crossings(dgx1, rings(dgx1, 6))) {
    const topo::Link& l = dgx1.link(static_cast<topo::LinkId>(dir / 2));
    if (l.type != topo::LinkType::NvLink) continue;
    ++nvlink;
    if (n > l.lanes) ++over;
  }
  CHECK(nvlink == 32);  // 16 NVLink pairs both ways: every one in use
  CHECK(over == 0);
}

TEST_CASE("ring channels: mi300x x4 gives each channel its own xGMI directions and NICs") {
  auto t = testing::preset("mi300x", 4, "fat-tree:rails=8");
  auto rs = rings(t, 0);  // the default: one channel per NIC
  REQUIRE(rs.size() == 8);
  auto count = crossings(t, rs);
  int xgmi = 0, nic_ports = 0;
  for (auto [dir, n] : count) {
    const topo::Link& l = t.link(static_cast<topo::LinkId>(dir / 2));
    CAPTURE(t.vertex(l.a).id);
    CAPTURE(t.vertex(l.b).id);
    CHECK(n == 1);
    if (l.type == topo::LinkType::Xgmi) ++xgmi;
    if (t.vertex(l.a).kind == topo::VertexKind::Nic || t.vertex(l.b).kind == topo::VertexKind::Nic) ++nic_ports;
  }
  CHECK(xgmi == 4 * 56);              // 8 channels x 7 in-host hops x 4 hosts: every direction once
  CHECK(nic_ports == 4 * 8 * 2 * 2);  // every NIC's two links, both ways: each GPU's NIC out once, in once

  // Hand reference: 2(p-1) = 62 steps of 1 GiB / (8 channels x 32 slices) each; every channel's
  // slowest hop is its NIC crossing at 50 GB/s, used by that channel alone; latencies hide
  // behind the messages in flight to within 0.1%.
  double ref = 62 * (1073741824.0 / 256) / 50e3;  // 5200.94 us
  double us = simulated_us(t, Collective::AllReduce, 0);
  CHECK(us >= ref);
  CHECK(us <= ref * 1.001);  // 28442.77 us before channels were spread
}

TEST_CASE("ring channels: mi300x x1 AllGather 1 GiB on 6 channels, each xGMI direction to one channel") {
  // 7 steps; each channel's step moves one of 6 x 8 slices, ceil(2^30 / 48) = 22369622 bytes
  // (chunks split at whole bytes), over its own 64 GB/s xGMI link with 0.15 us latency.
  auto t = testing::preset("mi300x", 1);
  Request req{Collective::AllGather, std::uint64_t{1} << 30, 8, 0};
  SimResult r = simulate(*generate("ring", req, &t, {6, 0, false, {}}), t);
  double ref = 7 * (0.15 + 22369622.0 / 64e3);  // 2447.727 us
  CHECK(r.time_us == doctest::Approx(ref).epsilon(1e-6));
  CHECK(r.algbw_gbps == doctest::Approx(1073741824.0 / (ref * 1e3)).epsilon(1e-6));  // 438.67 GB/s
  CHECK(r.algbw_gbps == doctest::Approx(438.67).epsilon(1e-4));
}

TEST_CASE("ring channels: dgx1-v100 AllReduce improves with channels up to its 6 NVLinks per GPU") {
  auto t = testing::preset("dgx1-v100", 1);
  // 14 steps of ceil(2^30 / (8C)) bytes at the rate of each channel's slowest link share, plus
  // the 0.15 us NVLink latency: one channel, or two (the doubled-link cycle one way each), run
  // at 50 GB/s; from three on a channel needs a single 25 GB/s link or half of a doubled one.
  auto ref = [](int c, double gbps) { return 14 * (0.15 + std::ceil(1073741824.0 / (8 * c)) / (gbps * 1e3)); };
  std::vector<double> us;
  for (int c = 1; c <= 6; ++c) us.push_back(simulated_us(t, Collective::AllReduce, c));
  CHECK(us[0] == doctest::Approx(ref(1, 50)).epsilon(1e-6));  // 37583.06 us, every channel count before
  CHECK(us[1] == doctest::Approx(ref(2, 50)).epsilon(1e-6));  // 18792.58 us
  CHECK(us[5] == doctest::Approx(ref(6, 25)).epsilon(1e-6));  // 12529.09 us
  // Three channels of 25 GB/s move less than two of 50 (the share of channels that finish early
  // goes to the others, hence <=): equal shares make 3 a poor count, not a poor choice of rings,
  // as any third ring needs a 25 GB/s link or half of a doubled one.
  CHECK(us[2] <= ref(3, 25));
  CHECK(us[2] < us[0]);
  CHECK(us[3] < us[1] * 1.0001);
  CHECK(us[4] < us[3]);
  CHECK(us[5] < us[4]);
  CHECK(*std::min_element(us.begin(), us.end()) == us[5]);
}

TEST_CASE("ring channels: an NVSwitch host keeps its cycle, walked from each channel's entry") {
  auto t = testing::preset("dgx-h100", 1);
  auto cycle = algo::host_cycles(8, t)[0];
  int checked = 0;
  for (const auto& r : rings(t, 4)) {
    auto at = std::find(cycle.begin(), cycle.end(), r[0]) - cycle.begin();
    std::vector<int> walk(cycle.begin() + at, cycle.end());
    walk.insert(walk.end(), cycle.begin(), cycle.begin() + at);
    CHECK(r == walk);
    ++checked;
  }
  CHECK(checked == 4);
}

TEST_CASE("ring channels: every ring is a permutation crossing each host boundary once, uneven hosts too") {
  int checked = 0;
  auto pcie = testing::preset("pcie-8gpu:gpus=4", 3, "single-switch");
  auto mi = testing::preset("mi300x", 3, "fat-tree:rails=8");
  for (const auto* t : {&pcie, &mi})
    for (int nranks : {static_cast<int>(t->num_ranks()), static_cast<int>(t->num_ranks()) - 2})
      for (int c : {1, 3, 8}) {
        Request req{Collective::AllReduce, 1 << 20, nranks, 0};
        auto rs = ring_orders(req, t, c, c == 3);
        REQUIRE(rs.size() == static_cast<std::size_t>(c));
        for (const auto& r : rs) {
          std::vector<int> sorted = r;
          std::sort(sorted.begin(), sorted.end());
          for (int i = 0; i < nranks; ++i) CHECK(sorted[static_cast<std::size_t>(i)] == i);
          int boundaries = 0;
          for (std::size_t i = 0; i < r.size(); ++i)
            boundaries += t->host_of(static_cast<topo::Rank>(r[i])) != t->host_of(static_cast<topo::Rank>(r[(i + 1) % r.size()]));
          CHECK(boundaries == 3);
          ++checked;
        }
      }
  CHECK(checked == 2 * 2 * 12);
}

TEST_CASE("ring channels: the search honours fixed ends and keeps the base cycle where nothing beats it") {
  // Four ranks on a line a-b-c-d of 10 GB/s links, routes between any two along it.
  algo::HostLinks h;
  const int m = 4;
  h.arc_gbps.assign(6, 10);  // 2i: i -> i+1, 2i+1: i+1 -> i
  h.route.assign(m, std::vector<std::vector<int>>(m));
  h.reachable.assign(m, std::vector<char>(m, 1));
  h.width.assign(m, std::vector<double>(m, 10));
  h.hops.assign(m, std::vector<std::size_t>(m, 0));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      auto si = static_cast<std::size_t>(i), sj = static_cast<std::size_t>(j);
      for (int k = std::min(i, j); k < std::max(i, j); ++k) h.route[si][sj].push_back(2 * k + (i > j ? 1 : 0));
      h.hops[si][sj] = h.route[si][sj].size();
    }
  h.base = {0, 1, 2, 3};
  // One host: every Hamiltonian cycle of a line crosses each link once each way.
  std::vector<algo::ChannelEnds> two{{0, -1, false}, {2, -1, false}};
  auto rs = algo::spread_channels(h, two, true);
  CHECK(rs == std::vector<std::vector<int>>{{0, 1, 2, 3}, {2, 3, 0, 1}});
  CHECK(algo::max_load(h, rs, two, true) == doctest::Approx(2 / 10.0));
  // A path may be held to end where the next host is entered.
  std::vector<algo::ChannelEnds> fixed{{1, 2, false}};
  rs = algo::spread_channels(h, fixed, false);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].front() == 1);
  CHECK(rs[0].back() == 2);
  // Two paths from the ends inwards share no link direction: 0->1->2->3 and 3->2->1->0.
  std::vector<algo::ChannelEnds> ends{{0, -1, false}, {3, -1, false}};
  rs = algo::spread_channels(h, ends, false);
  CHECK(rs == std::vector<std::vector<int>>{{0, 1, 2, 3}, {3, 2, 1, 0}});
  CHECK(algo::max_load(h, rs, ends, false) == doctest::Approx(1 / 10.0));
}

namespace {

// A link between two switches outside every host: a torus router's link to the next router.
bool fabric_link(const topo::Topology& t, std::size_t dir) {
  const topo::Link& l = t.link(static_cast<topo::LinkId>(dir / 2));
  return t.vertex(l.a).host.empty() && t.vertex(l.b).host.empty();
}

// The torus ports a link between routers stands for: its bandwidth over the slowest such link's
// (a dimension of 2 joins its pair by both ports, at twice the rate: coll-topo's torus).
int ports(const topo::Topology& t, topo::LinkId link) {
  double slowest = 0;
  for (const topo::Link& l : t.links())
    if (t.vertex(l.a).host.empty() && t.vertex(l.b).host.empty()) slowest = slowest == 0 ? l.bw_gbps : std::min(slowest, l.bw_gbps);
  return static_cast<int>(std::lround(t.link(link).bw_gbps / slowest));
}

// The most channels a port of a router link direction carries (crossings over its ports, rounded up).
int busiest_fabric(const topo::Topology& t, const std::map<std::size_t, int>& count) {
  int most = 0;
  for (auto [dir, n] : count)
    if (fabric_link(t, dir)) {
      int k = ports(t, static_cast<topo::LinkId>(dir / 2));
      most = std::max(most, (n + k - 1) / k);
    }
  return most;
}

// What a torus forces: a ring leaves every host's router once per channel, through one of its
// ports to other routers, so some port out of the router with the fewest carries at least
// ceil(channels / ports). The ports all have one bandwidth, so crossings per port compare.
int even_share(const topo::Topology& t, int channels) {
  int fewest = 1 << 30;
  for (topo::VertexId v = 0; v < t.num_vertices(); ++v) {
    if (!t.vertex(v).host.empty()) continue;
    int out = 0;
    for (const topo::Adjacent& adj : t.adjacent(v))
      if (t.vertex(adj.peer).host.empty()) out += ports(t, adj.link);
    fewest = std::min(fewest, out);
  }
  return (channels + fewest - 1) / fewest;
}

}  // namespace

TEST_CASE("ring channels: on a torus no router link direction carries more than its even share") {
  // Before, every channel visited the hosts in topology order, so all of them crossed the same
  // router links: 8 of them on the +x links of a 4x4 torus, where 2 is the even share.
  struct Case {
    const char* node;
    int nodes;
    const char* dims;
  };
  int checked = 0;
  for (Case k : {Case{"mi300x", 4, "2x2"}, Case{"mi300x", 16, "4x4"}, Case{"mi300x", 32, "4x4x2"}, Case{"dgx-h100", 16, "4x4"}}) {
    auto t = testing::preset(k.node, k.nodes, std::string("torus:dims=") + k.dims);
    for (int c : {2, 4, 8}) {
      CAPTURE(k.node);
      CAPTURE(k.dims);
      CAPTURE(c);
      for (bool bidir : {false, true})
        CHECK(busiest_fabric(t, crossings(t, rings(t, c, Collective::AllReduce, bidir))) <= even_share(t, c));
      ++checked;
    }
  }
  CHECK(checked == 12);
  // 64 hosts: past the depth-first search, the host cycles come from rotations.
  auto t = testing::preset("mi300x", 64, "torus:dims=4x4x4");
  CHECK(even_share(t, 8) == 2);
  CHECK(busiest_fabric(t, crossings(t, rings(t, 8))) == 2);
}

TEST_CASE("ring channels: mi300x x16 on a 4x4 torus, 8 channels: xGMI, NICs and router links all evenly used") {
  auto t = testing::preset("mi300x", 16, "torus:dims=4x4");
  auto rs = rings(t, 0);  // the default: one channel per NIC
  REQUIRE(rs.size() == 8);
  int xgmi = 0, nic_ports = 0, routers = 0;
  for (auto [dir, n] : crossings(t, rs)) {
    const topo::Link& l = t.link(static_cast<topo::LinkId>(dir / 2));
    CAPTURE(t.vertex(l.a).id);
    CAPTURE(t.vertex(l.b).id);
    if (fabric_link(t, dir)) {
      CHECK(n == 2);
      ++routers;
    } else {
      CHECK(n == 1);
    }
    if (l.type == topo::LinkType::Xgmi) ++xgmi;
    if (t.vertex(l.a).kind == topo::VertexKind::Nic || t.vertex(l.b).kind == topo::VertexKind::Nic) ++nic_ports;
  }
  CHECK(routers == 16 * 4);            // every router link direction, twice each
  CHECK(xgmi == 16 * 56);              // every xGMI direction of every host, once
  CHECK(nic_ports == 16 * 8 * 2 * 2);  // every NIC's two links, both ways, once

  // More channels than NICs: two per NIC and two per xGMI direction, no more.
  int most_nic = 0, most_xgmi = 0;
  for (auto [dir, n] : crossings(t, rings(t, 10))) {
    const topo::Link& l = t.link(static_cast<topo::LinkId>(dir / 2));
    if (l.type == topo::LinkType::Xgmi) most_xgmi = std::max(most_xgmi, n);
    if (t.vertex(l.a).kind == topo::VertexKind::Nic || t.vertex(l.b).kind == topo::VertexKind::Nic) most_nic = std::max(most_nic, n);
  }
  CHECK(most_nic == 2);
  CHECK(most_xgmi == 2);
}

TEST_CASE("ring channels: mi300x x16 on a 4x4 torus, AllGather 1 GiB at the NICs' rate") {
  // Hand reference: 127 steps of 1 GiB / (8 channels x 128 slices) = 1 MiB each. Every channel
  // crosses its own NIC (50 GB/s) out of and into each host, and a router link of 100 GB/s
  // that one other channel shares: 50 GB/s either way. Latencies hide behind the messages in
  // flight to within 1%. Before (all channels on the same router links, 12.5 GB/s each):
  // 10666.61 us.
  auto t = testing::preset("mi300x", 16, "torus:dims=4x4");
  Request req{Collective::AllGather, std::uint64_t{1} << 30, 128, 0};
  double us = simulate(*generate("ring", req, &t, {0, 0, false, {}}), t).time_us;  // 2676.20 us
  double ref = 127 * 1048576.0 / 50e3;                                             // 2663.38 us
  CHECK(us >= ref);
  CHECK(us <= ref * 1.01);
  double bound = lower_bound(req, t).time_us();  // 2516.58 us: 400 GB/s into each host
  CHECK(us < 2 * bound);
}

TEST_CASE("ring channels: hosts stay in topology order on fat-trees and single switches") {
  // There each hop between consecutive hosts stays under one rail leaf; a torus is where
  // channels take host orders of their own.
  int checked = 0;
  auto ft = testing::preset("dgx-h100", 4, "fat-tree:rails=8");
  auto ss = testing::preset("pcie-8gpu:gpus=4", 3, "single-switch");
  // A leaf per host (2 ports: one down, one up): no leaf is shared, but the spine is no host's
  // own, so this is no direct network either.
  auto own_leaves = testing::preset("dgx-h100", 4, "fat-tree:rails=8,leaf_radix=2");
  for (const auto* t : {&ft, &ss, &own_leaves})
    for (int c : {1, 2, 8})
      for (const auto& r : rings(*t, c)) {
        std::vector<std::string> visited;
        for (int rank : r) {
          const std::string& h = t->host_of(static_cast<topo::Rank>(rank));
          if (visited.empty() || visited.back() != h) visited.push_back(h);
        }
        std::vector<std::string> in_order;
        for (const auto& g : topo::ranks_by_host(*t)) in_order.push_back(g.host);
        CHECK(visited == in_order);
        ++checked;
      }
  CHECK(checked == 3 * (1 + 2 + 8));
}

TEST_CASE("ring channels: a torus plan simulates alike folded and unfolded") {
  // Channel pairs on host cycles of their own break the channel rotation a ring in topology
  // order states; Plan::symmetries() states only what still holds, which the fold relies on.
  auto t = testing::preset("mi300x", 16, "torus:dims=4x4");
  int checked = 0;
  for (Collective c : {Collective::AllReduce, Collective::AllGather})
    for (bool bidir : {false, true}) {
      Request req{c, std::uint64_t{3} << 20, 128, 0};
      auto plan = generate("ring", req, &t, {0, 0, bidir, {}});
      for (LinkModel m : {LinkModel::Queue, LinkModel::MaxMin}) {
        SimOptions on, off;
        on.model = off.model = m;
        off.fold_symmetry = false;
        SimResult x = simulate(*plan, t, on), y = simulate(*plan, t, off);
        CAPTURE(to_string(c));
        CAPTURE(bidir);
        CAPTURE(x.folded);
        // As test_symmetry.cpp: MaxMin exactly, Queue within 2% (another valid service order).
        CHECK(x.time_us == doctest::Approx(y.time_us).epsilon(m == LinkModel::MaxMin ? 1e-12 : 0.02));
        CHECK(x.events == y.events);
        CHECK(x.folded > 1);  // something was folded, or this compared a run with itself
        ++checked;
      }
    }
  CHECK(checked == 8);
}
