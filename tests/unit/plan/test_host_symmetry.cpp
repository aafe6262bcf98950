// host_symmetry.h: which hosts' cuts mirror another host's, so the ForestColl search skips them.

#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "collkit/topo/synth.h"
#include "host_symmetry.h"

namespace collkit::plan::detail {

namespace {

std::vector<double> weights(const topo::Topology& t) {
  std::vector<double> w(t.num_vertices(), 0.0);
  for (topo::Rank r = 0; r < t.num_ranks(); ++r) w[t.rank_vertex(r)] += 1;
  return w;
}

// The hosts with no vertex marked.
std::set<std::string> kept(const topo::Topology& t, const std::vector<char>& marked) {
  std::set<std::string> hosts, out;
  for (topo::VertexId v = 0; v < t.num_vertices(); ++v)
    if (!t.vertex(v).host.empty()) hosts.insert(t.vertex(v).host);
  for (const auto& h : hosts) {
    bool any = false;
    for (topo::VertexId v = 0; v < t.num_vertices(); ++v)
      if (t.vertex(v).host == h && marked[v]) any = true;
    if (!any) out.insert(h);
  }
  return out;
}

}  // namespace

TEST_CASE("host symmetry: twins and mirrored leaf groups are skipped, odd ones kept") {
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  // Leaves of radix 8: four hosts per leaf group. Hosts 0-3 and 4-7 mirror each other (swap
  // the groups and their leaves); hosts 8-9 form a smaller group of another shape.
  auto t = topo::synth({"dgx-h100", 10, "fat-tree:rails=8,leaf_radix=8"});
  auto w = weights(t);
  CHECK(kept(t, mirrored_hosts(t, w)) == std::set<std::string>{"node0", "node8"});
  // Ranks on only part of the cluster: weights differ, so do the groups' shapes.
  std::vector<double> part(w.size(), 0.0);
  for (topo::Rank r = 0; r < 20; ++r) part[t.rank_vertex(r)] += 1;  // node0, node1 and half of node2
  // node1 is node0's twin; node2 (half its ranks) and node3 (none) differ from them and from
  // each other; the rank-free groups 4-7 and 8-9 have no earlier group of their shape.
  CHECK(kept(t, mirrored_hosts(t, part)) == std::set<std::string>{"node0", "node2", "node3", "node4", "node8"});
}

}  // namespace collkit::plan::detail
