#include <doctest/doctest.h>

#include <map>
#include <random>

#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"
#include "nic_route.h"
#include "plan/sim_topologies.h"
#include "synth/rate.h"
#include "synth/routed.h"
#include "synth/split.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using collkit::topo::Topology;
using collkit::topo::VertexId;
using collkit::topo::VertexKind;

namespace {

// Splits t at k trees of `unit` GB/s and checks what splitting promises: only rank vertices
// are left, each can still receive p k units, and every arc is a walk over the topology's links
// through vertices without ranks whose units, summed per link direction, fit the link.
synth::SplitGraph check_split(const Topology& t, int p, std::int64_t k, double unit) {
  synth::SplitGraph g = synth::split_switches(t, p, k, unit);
  CHECK(g.trees == k);
  std::vector<char> rank(t.num_vertices(), 0);
  for (int r = 0; r < p; ++r) rank[t.rank_vertex(static_cast<collkit::topo::Rank>(r))] = 1;
  std::size_t rank_vertices = 0;
  for (char c : rank) rank_vertices += c;
  REQUIRE(g.nodes.size() == rank_vertices);
  for (VertexId v : g.nodes) CHECK(rank[v]);
  CHECK(synth::min_rooted_flow(g) == p * k);
  std::map<std::pair<VertexId, VertexId>, std::int64_t> used, room;
  for (const auto& l : t.links()) {
    room[{l.a, l.b}] += synth::link_units(l.bw_gbps, unit);
    room[{l.b, l.a}] += synth::link_units(l.bw_gbps, unit);
  }
  for (const auto& a : g.arcs) {
    CHECK(a.units > 0);
    CHECK(a.from != a.to);
    REQUIRE(a.path.size() >= 2);
    CHECK(a.path.front() == g.nodes[a.from]);
    CHECK(a.path.back() == g.nodes[a.to]);
    for (std::size_t i = 1; i + 1 < a.path.size(); ++i) CHECK(!rank[a.path[i]]);
    for (std::size_t i = 0; i + 1 < a.path.size(); ++i) used[{a.path[i], a.path[i + 1]}] += a.units;
  }
  for (const auto& used_dir : used) {  // not a structured binding: clang 14 cannot capture one
    const auto& dir = used_dir.first;
    const auto units = used_dir.second;
    CAPTURE(dir.first);
    CAPTURE(dir.second);
    CHECK(units <= room[dir]);
  }
  return g;
}

Topology random_graph(std::mt19937& rng, int trial, int& gpus) {
  auto bw = [&](unsigned span) { return 10.0 * static_cast<double>(1 + rng() % span); };
  Topology t;
  t.name = "random" + std::to_string(trial);
  int switches = 1 + static_cast<int>(rng() % 3);
  gpus = 3 + static_cast<int>(rng() % 5);
  for (int s = 0; s < switches; ++s) t.add_vertex(make_vertex("s" + std::to_string(s), VertexKind::NetSwitch));
  for (int s = 1; s < switches; ++s) t.add_link(make_link(static_cast<VertexId>(rng() % s), static_cast<VertexId>(s), bw(10), 1));
  for (int g = 0; g < gpus; ++g) {
    auto v = t.add_vertex(make_vertex("g" + std::to_string(g), VertexKind::Gpu));
    t.add_link(make_link(v, static_cast<VertexId>(rng() % switches), bw(10), 1));
    if (g > 0 && rng() % 2) t.add_link(make_link(v, v - 1, bw(5), 1));
    t.add_rank(v);
  }
  return t;
}

}  // namespace

TEST_CASE("synth split: a star becomes arcs between its GPUs only") {
  // x* = 100/3 with one tree per root: each GPU's link holds 3 units, all of which splitting
  // turns into arcs to the 3 other GPUs.
  Topology star = uniform(4, 100, 1);
  synth::SplitGraph g = check_split(star, 4, 1, 100.0 / 3);
  std::vector<std::int64_t> out(4, 0), in(4, 0);
  for (const auto& a : g.arcs) {
    out[a.from] += a.units;
    in[a.to] += a.units;
    CHECK(a.path.size() == 3);
  }
  for (int v = 0; v < 4; ++v) {
    CHECK(out[v] == 3);
    CHECK(in[v] == 3);
  }
}

TEST_CASE("synth split: two hosts on a thin link keep the rate") {
  Topology t = two_hosts(2, 100, 1, 10, 5);
  synth::Rate r = synth::optimal_rate(t, 4);
  check_split(t, 4, r.trees, r.per_root_gbps / static_cast<double>(r.trees));
  // The arcs across the hosts carry at most the thin link's units.
  synth::SplitGraph g = synth::split_switches(t, 4, 1, 5);
  std::int64_t across = 0;
  for (const auto& a : g.arcs)
    if ((a.from < 2) != (a.to < 2)) across += a.units;
  CHECK(across == 2 * synth::link_units(10, 5));
}

TEST_CASE("synth split: random graphs keep k trees per root, exact and bounded k") {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 20; ++trial) {
    int gpus = 0;
    Topology t = random_graph(rng, trial, gpus);
    CAPTURE(trial);
    synth::Rate r = synth::optimal_rate(t, gpus);
    REQUIRE(r.trees > 0);
    check_split(t, gpus, r.trees, r.per_root_gbps / static_cast<double>(r.trees));
    for (std::int64_t k : {1, 2, 3}) {
      CAPTURE(k);
      double x = synth::rate_for_trees(t, gpus, k);
      REQUIRE(x > 0);
      check_split(t, gpus, k, x / static_cast<double>(k));
    }
  }
}

TEST_CASE("synth split: presets keep their rate with 2 trees per root") {
  for (auto node_hosts : {std::pair{"dgx-a100", 1}, {"dgx-a100", 2}, {"dgx1-v100", 1}, {"dgx-h100", 2}}) {
    auto [node, hosts] = node_hosts;
    CAPTURE(node_hosts.first);
    CAPTURE(node_hosts.second);
    Topology t = collkit::topo::synth({node, hosts, ""});
    int p = static_cast<int>(t.num_ranks());
    double x = synth::rate_for_trees(t, p, 2);
    REQUIRE(x > 0);
    check_split(t, p, 2, x / 2);
  }
}

TEST_CASE("synth routed: only the links rank-to-rank routes take are kept") {
  // dgx-a100: GPU to GPU goes through an NVSwitch, never over PCIe and the CPU.
  Topology t = collkit::topo::synth({"dgx-a100", 1, ""});
  Topology r = synth::routed_links(t, static_cast<int>(t.num_ranks()));
  CHECK(r.num_vertices() == t.num_vertices());
  CHECK(r.num_ranks() == t.num_ranks());
  REQUIRE(r.num_links() > 0);
  CHECK(r.num_links() < t.num_links());
  for (const auto& l : r.links()) {
    VertexKind a = r.vertex(l.a).kind, b = r.vertex(l.b).kind;
    CHECK(((a == VertexKind::Gpu && b == VertexKind::NvSwitch) || (a == VertexKind::NvSwitch && b == VertexKind::Gpu)));
  }
  // Without PCIe relays the rate is the NVSwitch port's 300 GB/s over 7 peers (47.36 with them).
  CHECK(synth::optimal_rate(r, 8).per_root_gbps == doctest::Approx(300.0 / 7).epsilon(1e-9));
  CHECK(synth::optimal_rate(t, 8).per_root_gbps > 47);
  // Two hosts on a thin link: every link is on some route.
  Topology two = two_hosts(2, 100, 1, 10, 5);
  CHECK(synth::routed_links(two, 4).num_links() == two.num_links());
}

TEST_CASE("synth split routed: every arc is the route between its ends, and k trees per root still fit") {
  // Splitting over any walks joins, on two dgx-a100 hosts and on a torus, pieces that no route
  // between the two ranks takes (through another GPU's NIC, around the torus another way), so a
  // plan's sends load other links than the packing counted; keeping to routes, every arc is one.
  struct Case {
    const char* name;
    Topology t;
    bool keeps_unit;  // the routes carry the rate over the routed links (no unit lowered)
  };
  std::vector<Case> cases;
  cases.push_back({"star", uniform(4, 100, 1), true});
  cases.push_back({"dgx-a100 x2", collkit::topo::synth({"dgx-a100", 2, ""}), true});
  cases.push_back({"dgx-a100 x4", collkit::topo::synth({"dgx-a100", 4, ""}), true});
  cases.push_back({"torus 3x3", collkit::topo::synth({"pcie-8gpu:gpus=1", 9, "torus:dims=3x3"}), false});
  int arcs = 0, unrouted_before = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Topology& t = c.t;
    int p = static_cast<int>(t.num_ranks());
    collkit::topo::Router router(t);
    double x = synth::rate_for_trees(synth::routed_links(t, p), p, 1);
    REQUIRE(x > 0);
    synth::SplitGraph g = synth::split_routed(t, p, 1, x);
    CHECK(synth::min_rooted_flow(g) >= p);
    CHECK(g.unit_gbps <= x * (1 + 1e-9));
    if (c.keeps_unit) CHECK(g.unit_gbps == doctest::Approx(x).epsilon(1e-9));
    std::map<std::pair<VertexId, VertexId>, std::int64_t> used, room;
    for (const auto& l : t.links()) {
      room[{l.a, l.b}] += synth::link_units(l.bw_gbps, g.unit_gbps);
      room[{l.b, l.a}] += synth::link_units(l.bw_gbps, g.unit_gbps);
    }
    for (const auto& a : g.arcs) {
      CHECK(a.units > 0);
      CHECK(a.path == router.route(g.nodes[a.from], g.nodes[a.to]).vertices(t));
      for (std::size_t i = 0; i + 1 < a.path.size(); ++i) used[{a.path[i], a.path[i + 1]}] += a.units;
      ++arcs;
    }
    for (const auto& [dir, units] : used) CHECK(units <= room[dir]);
    // What this replaces: splitting over any walk, on the same links, leaves arcs that are not
    // the routes between their ends (but on the star, where every walk is one).
    synth::SplitGraph any = synth::split_switches(synth::routed_links(t, p), p, 1, x);
    for (const auto& a : any.arcs) unrouted_before += a.path != router.route(any.nodes[a.from], any.nodes[a.to]).vertices(t);
  }
  MESSAGE("arcs checked: " << arcs << ", arcs of plain splitting off their route: " << unrouted_before);
  CHECK(arcs > 300);
  CHECK(unrouted_before > 0);
}

TEST_CASE("synth split: routed with host paths, every arc is a route or the path through host memory") {
  // One dgx-h100: the routes between GPUs take the NVSwitch alone (64.29 GB/s a root); with the
  // paths staged through host memory each GPU's PCIe link adds in, and 4 trees a root pack at
  // 72 of the bound's 73.29.
  Topology t = collkit::topo::synth({"dgx-h100", 1, ""});
  int p = static_cast<int>(t.num_ranks());
  double routed = synth::rate_for_trees(synth::routed_links(t, p), p, 4);
  double x = synth::rate_for_trees(synth::routed_host_links(t, p), p, 4);
  CHECK(routed == doctest::Approx(450.0 / 7).epsilon(1e-6));
  CHECK(x > routed * 1.1);
  synth::SplitGraph g = synth::split_routed(t, p, 4, x / 4, -1, true);
  CHECK(g.unit_gbps * 4 == doctest::Approx(x).epsilon(1e-9));
  CHECK(synth::min_rooted_flow(g) >= 4 * p);
  collkit::topo::Router router(t);
  sim::HostRoutes host(t);
  std::map<std::pair<VertexId, VertexId>, std::int64_t> used, room;
  for (const auto& l : t.links()) {
    room[{l.a, l.b}] += synth::link_units(l.bw_gbps, g.unit_gbps);
    room[{l.b, l.a}] += synth::link_units(l.bw_gbps, g.unit_gbps);
  }
  int routes = 0, host_paths = 0;
  for (const auto& a : g.arcs) {
    VertexId from = g.nodes[a.from], to = g.nodes[a.to];
    bool is_route = a.path == router.route(from, to).vertices(t), is_host = a.path == host.route(from, to).vertices(t);
    CHECK((is_route || is_host));
    routes += is_route;
    host_paths += is_host;
    for (std::size_t i = 0; i + 1 < a.path.size(); ++i) used[{a.path[i], a.path[i + 1]}] += a.units;
  }
  for (const auto& [dir, units] : used) CHECK(units <= room[dir]);
  CHECK(routes > 0);
  CHECK(host_paths > 0);
}
