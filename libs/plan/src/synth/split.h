#pragma once
// Switch removal by edge splitting (ForestColl, arXiv 2402.06787; docs/synth.md): every vertex
// that holds none of the first p ranks (switches, NICs, CPUs, idle GPUs) is split off, each pair
// of arcs u -> w -> t becoming u -> t, so that what is left is a directed multigraph over the rank
// vertices alone in which every rank vertex can still receive p k units from a source feeding
// each rank vertex its ranks times k: the condition for k out-trees per rank (Edmonds), so the
// rate of k trees of one unit each survives. Links are full duplex, so every vertex has as many
// units in as out, which is what makes a complete splitting exist (Bang-Jensen, Frank, Jackson).

#include <cstdint>
#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::plan::synth {

/// Units a link direction of `bw_gbps` holds at `unit_gbps` each: floor(bw / unit), with a
/// relative 1e-9 of slack so that a unit computed as bw / m gives m.
std::int64_t link_units(double bw_gbps, double unit_gbps);

/// The directed multigraph over rank vertices that splitting leaves.
struct SplitGraph {
  struct Arc {
    std::size_t from = 0;              ///< index into nodes
    std::size_t to = 0;                ///< index into nodes
    std::int64_t units = 0;            ///< > 0
    std::vector<topo::VertexId> path;  ///< the walk over topology links it stands for, both ends included
  };
  std::vector<topo::VertexId> nodes;  ///< the rank vertices, in vertex id order
  std::vector<std::int64_t> ranks;    ///< ranks on each node (of the first p)
  std::vector<std::int64_t> roots;    ///< trees rooted at each node, per k: its ranks, or (one root) 1 there, 0 elsewhere
  std::vector<Arc> arcs;              ///< parallel arcs differ in path
  std::int64_t trees = 0;             ///< k: trees per rank
  double unit_gbps = 0;               ///< one unit's bandwidth; a tree carries one unit
  int flows = 0;                      ///< max flows run to split
  int attempts = 1;                   ///< split_routed: units tried (the last is unit_gbps)
};

/// How many units split_routed tries before it gives up, and how many bisection steps it then
/// takes between the unit that fitted and the last that did not.
constexpr int kRoutedAttempts = 8;
constexpr int kRoutedRefinements = 3;

/// Splits off every vertex without a rank, links holding link_units(bw, unit_gbps) each way,
/// keeping every rank vertex's connectivity from the source at p k (or, if the topology has less,
/// at what it had: never lower). With root >= 0 the source feeds only rank `root`'s vertex, k
/// units, and every rank vertex keeps k: k trees from that one root (Broadcast, Reduce). Per arc pair, all of it is tried first (one max
/// flow per rank vertex), else the most that can go is found by two (the cuts that splitting lowers); arcs into a switch are first spread
/// evenly over the arcs out of it. Throws collkit::Error if a vertex cannot be split off completely (the theorem says it can; this would be
/// a bug).
SplitGraph split_switches(const topo::Topology& t, int p, std::int64_t k, double unit_gbps, int root = -1);

/// split_switches keeping to the routes between the first p ranks (RouteWalks, routed.h): only
/// link directions some route takes hold units, and a split joins two walks only where the join
/// is part of a route, so every arc left, from rank vertex a to b, is the route from a to b and
/// a plan's send along it loads exactly the links the packing counted. The splitting theorem says
/// nothing of such restricted splits: what cannot be joined is dropped, which may leave a rank
/// vertex less than p k; then the unit is lowered (by the share kept) and splitting run again, at
/// most kRoutedAttempts times, then bisected kRoutedRefinements times between the largest unit
/// that fitted and the smallest that did not. The result's unit_gbps is the unit that fitted.
/// Throws collkit::Error if none did. With `host_paths`, an arc may also be the path staged
/// through host memory between two ranks on one host (RouteWalks).
SplitGraph split_routed(const topo::Topology& t, int p, std::int64_t k, double unit_gbps, int root = -1, bool host_paths = false);

/// The least, over nodes v, of the max flow to v from a source feeding each node roots(v) k units
/// over the arcs: at least the sum of roots(v) k means that many trees fit (Edmonds' branching
/// theorem).
std::int64_t min_rooted_flow(const SplitGraph& g);

}  // namespace collkit::plan::synth
