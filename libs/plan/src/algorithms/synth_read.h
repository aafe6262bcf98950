#pragma once
// A synthesised plan's parameters read back and checked as its programs read them (synth.cpp,
// synth_alltoall.cpp), for what `coll-plan synth-info` says about it (synth_info.cpp).

#include <string>
#include <vector>

#include "collkit/plan/plan.h"

namespace collkit::plan {

/// A plan of trees (every collective but AlltoAll).
struct SynthTrees {
  int k = 1;              ///< trees per root (param channels)
  int m = 1;              ///< chunks per tree (param pipeline)
  std::string allreduce;  ///< AllReduce: "rs-ag" or "reduce-bcast"; empty otherwise
  int root = -1;          ///< the one root of every tree; -1: k trees per rank
  /// Chunks of each root's slice sent straight to every other rank staged through host memory
  /// (param host_chunks; channel_paths "host"), after its k m tree chunks: Blink's PCIe share.
  int host = 0;
  /// Per tree (by root rank, k each), every rank's parent rank, -1 at the root; none on one rank.
  std::vector<std::vector<int>> trees;
  /// Per tree and rank, whether the arc from its parent is staged through host memory (param
  /// host_arcs, Arcs::Host: on the tree's last channels, channel_paths "host"); empty: none.
  std::vector<std::vector<char>> host_arcs;
  /// Trees laid out by rule, not packed (stars; stars relayed inside groups): they map onto
  /// themselves when every block of `block` consecutive ranks (a host) turns by `shift` places
  /// inside itself, and when the blocks move one block on (params tree_shift, tree_block; shift 0:
  /// none; block p: one host). A rank then takes its children, and sums theirs, in the order of
  /// their distance after it, block first (tree_distance), the same in every image, and the plan
  /// states both as symmetries (docs/plan.md "Symmetry").
  int shift = 0;
  int block = 0;
  /// Chains along k rings (param arcs=orders; Arcs::Orders): tree r k + j runs from r round ring
  /// j, and ring j's chains share channel j (a second set of k for AllReduce's second phase),
  /// each rank's ops there in step order, as the ring algorithm runs a ring.
  bool rings = false;
  /// One root's trees of unequal shares (param tree_chunks): tree t's chunk count, k m in all,
  /// tree t's chunks after tree t - 1's; empty: m each.
  std::vector<int> chunks;
  /// Every rank's trees of unequal shares (param tree_units; the trees by rails on hosts of one
  /// size whose links differ): tree t's units of its root's slice, tree t's after tree t - 1's, the
  /// same sum for every root (the slice's chunks); tree t moves its w units in min(m, w) steps, step
  /// i the units [i w / s, (i + 1) w / s) of s steps. Empty: none.
  std::vector<int> units;
};
SynthTrees read_synth_trees(const PlanInfo& info);

/// An AlltoAll's relayed paths (param relays): commodity src -> dst sends `chunks` of its block's
/// m chunks through rank via, the rest straight.
struct SynthRelay {
  int src, via, dst, chunks;
};
struct SynthRelays {
  int m = 1;  ///< chunks per block (param pipeline)
  std::vector<SynthRelay> relays;
};
SynthRelays read_synth_relays(const PlanInfo& info);

}  // namespace collkit::plan
