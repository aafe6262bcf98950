#pragma once
// Relay trees (docs/synth.md, "Relay trees"): k spanning out-trees per rank whose arcs are only
// the topology's shortest rank-to-rank routes, so that data for far ranks is relayed through the
// ranks between, as TACOS (arXiv 2304.05301) does on tori, instead of being packed over switch
// splittings. On a torus of one GPU a host each arc is a route between neighbouring hosts, one
// torus link, and the trees load every link and NIC as evenly as a greedy choice of parents and a
// local search on the load's sum of squares make them. Each tree is a shortest-path tree of the
// neighbour graph, so its depth is the graph's eccentricity (2 on a 3x3 torus, 4 on 4x4).

#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::plan::synth {

struct RelayTrees {
  /// Per tree, every rank's parent rank (-1 at the root); k trees per root, by root rank. Empty
  /// when the topology has no neighbour graph worth relaying over (below).
  std::vector<std::vector<int>> trees;
  /// The rate per root the trees allow: k times the least, over the link directions their arcs'
  /// routes cross, of bandwidth over the number of arcs crossing it.
  double per_root_gbps = 0;
  int depth = 0;  ///< the deepest tree
};

/// k relay trees per rank over the first p ranks of t (one rank per vertex). The neighbour graph:
/// arcs a -> b whose route has at most h links, h the least for which that graph is strongly
/// connected; where that graph is every pair (one switch box, hosts on one switch: the trees
/// would be stars, which direct sends already are) or no h makes it so, none are made.
RelayTrees relay_trees(const topo::Topology& t, int p, int k);

/// Chains round `cycles` Hamiltonian cycles of the same neighbour graph (its arcs taken both
/// ways; the cycles share no link), each way round each: k = 2 cycles trees per root, each of
/// depth p - 1. A ring in trees: every rank sends on 2 cycles links only, each carrying one
/// stream of every root's data, which the Queue link model serves with few gaps where trees of
/// many arcs a link leave them (docs/synth.md). None where relay_trees makes none, or where the
/// search (depth-first, Warnsdorff's order, a bounded number of steps) finds no such cycles.
RelayTrees ring_trees(const topo::Topology& t, int p, int cycles);

}  // namespace collkit::plan::synth
