#include <doctest/doctest.h>

#include <random>

#include "collkit/core/error.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"
#include "synth/rate.h"
#include "synth/split.h"
#include "synth/trees.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using collkit::topo::Topology;
using collkit::topo::VertexId;
using collkit::topo::VertexKind;

namespace {

// Checks a packing: roots(v) k trees rooted at each node v, each spanning every node through
// arcs in parent-before-child order, and no arc used by more trees than its units.
void check_packing(const synth::SplitGraph& g, const synth::Packing& pk) {
  std::size_t n = g.nodes.size();
  std::vector<std::int64_t> per_root(n, 0), used(g.arcs.size(), 0);
  for (const synth::Tree& tr : pk.trees) {
    REQUIRE(tr.root < n);
    ++per_root[tr.root];
    CHECK(tr.arcs.size() == n - 1);
    std::vector<char> reached(n, 0);
    std::vector<int> depth(n, 0);
    reached[tr.root] = 1;
    int deepest = 0;
    for (std::size_t a : tr.arcs) {
      REQUIRE(a < g.arcs.size());
      ++used[a];
      CHECK(reached[g.arcs[a].from]);  // the parent is already in the tree
      CHECK(!reached[g.arcs[a].to]);   // each node entered once
      reached[g.arcs[a].to] = 1;
      depth[g.arcs[a].to] = depth[g.arcs[a].from] + 1;
      deepest = std::max(deepest, depth[g.arcs[a].to]);
      CHECK(tr.parent[g.arcs[a].to] == a);
    }
    for (std::size_t v = 0; v < n; ++v) CHECK(reached[v]);
    CHECK(tr.depth == deepest);
  }
  for (std::size_t v = 0; v < n; ++v) CHECK(per_root[v] == g.roots[v] * g.trees);
  for (std::size_t a = 0; a < g.arcs.size(); ++a) CHECK(used[a] <= g.arcs[a].units);
}

synth::SplitGraph ring3(std::int64_t units_each_way) {
  synth::SplitGraph g;
  g.nodes = {0, 1, 2};
  g.ranks = {1, 1, 1};
  g.roots = {1, 1, 1};
  g.trees = 1;
  g.unit_gbps = 1;
  for (std::size_t v = 0; v < 3; ++v) {
    if (units_each_way > 0) g.arcs.push_back({v, (v + 1) % 3, units_each_way, {}});
    g.arcs.push_back({(v + 1) % 3, v, 1, {}});
  }
  return g;
}

}  // namespace

TEST_CASE("synth trees: a three-node ring both ways holds one tree per root, one way does not") {
  // Both ways, one unit each: every root must send one unit on each of its two arcs (6 arcs for
  // 3 trees of 2 arcs), so only the three stars fit.
  synth::SplitGraph both = ring3(1);
  synth::Packing pk = synth::pack_trees(both);
  check_packing(both, pk);
  for (const synth::Tree& tr : pk.trees) CHECK(tr.depth == 1);
  // One way only: a node receives 1 unit, not the 3 that one tree per rank needs.
  CHECK_THROWS_WITH_AS(synth::pack_trees(ring3(0)),
                       "synth: the split graph cannot hold 1 trees per root: a rank vertex receives 2 of 3 units", collkit::Error);
}

TEST_CASE("synth trees: random graphs and presets, split then packed") {
  std::mt19937 rng(23);
  auto bw = [&](unsigned span) { return 10.0 * static_cast<double>(1 + rng() % span); };
  for (int trial = 0; trial < 12; ++trial) {
    Topology t;
    int switches = 1 + static_cast<int>(rng() % 3), gpus = 3 + static_cast<int>(rng() % 4);
    for (int s = 0; s < switches; ++s) t.add_vertex(make_vertex("s" + std::to_string(s), VertexKind::NetSwitch));
    for (int s = 1; s < switches; ++s) t.add_link(make_link(static_cast<VertexId>(rng() % s), static_cast<VertexId>(s), bw(10), 1));
    for (int g = 0; g < gpus; ++g) {
      auto v = t.add_vertex(make_vertex("g" + std::to_string(g), VertexKind::Gpu));
      t.add_link(make_link(v, static_cast<VertexId>(rng() % switches), bw(10), 1));
      if (g > 0 && rng() % 2) t.add_link(make_link(v, v - 1, bw(5), 1));
      t.add_rank(v);
    }
    CAPTURE(trial);
    for (std::int64_t k : {1, 2}) {
      CAPTURE(k);
      double x = synth::rate_for_trees(t, gpus, k);
      synth::SplitGraph g = synth::split_switches(t, gpus, k, x / static_cast<double>(k));
      check_packing(g, synth::pack_trees(g));
      // One root's k trees (Broadcast): only its node roots any, and they still span every node.
      int root = trial % gpus;
      double xr = synth::rate_for_trees(t, gpus, k, root);
      synth::SplitGraph gr = synth::split_switches(t, gpus, k, xr / static_cast<double>(k), root);
      CHECK(synth::min_rooted_flow(gr) >= k);
      synth::Packing pr = synth::pack_trees(gr);
      check_packing(gr, pr);
      CHECK(pr.trees.size() == static_cast<std::size_t>(k));
      for (const synth::Tree& tr : pr.trees) CHECK(gr.nodes[tr.root] == t.rank_vertex(static_cast<collkit::topo::Rank>(root)));
    }
  }
  for (auto node_hosts : {std::pair{"dgx-a100", 1}, {"dgx-a100", 2}, {"dgx1-v100", 1}}) {
    auto [node, hosts] = node_hosts;  // CAPTURE names the pair: clang 14 cannot capture a structured binding
    CAPTURE(node_hosts.first);
    Topology t = collkit::topo::synth({node, hosts, ""});
    int p = static_cast<int>(t.num_ranks());
    double x = synth::rate_for_trees(t, p, 2);
    synth::SplitGraph g = synth::split_switches(t, p, 2, x / 2);
    check_packing(g, synth::pack_trees(g));
  }
}
