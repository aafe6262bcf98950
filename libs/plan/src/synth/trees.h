#pragma once
// Packing k out-trees per rank into the split graph (ForestColl, arXiv 2402.06787;
// docs/synth.md): each tree is grown one arc at a time, and an arc is kept only if all the trees
// not yet done still fit, which a max flow per rank vertex decides (Edmonds' branching theorem
// with the growing tree's vertices as one more root set). The theorem also says some arc always
// fits, so every tree completes.

#include <cstdint>
#include <vector>

#include "synth/split.h"

namespace collkit::plan::synth {

/// One spanning out-tree of the split graph, carrying one unit.
struct Tree {
  std::size_t root = 0;             ///< node index (SplitGraph::nodes)
  std::vector<std::size_t> arcs;    ///< indices into SplitGraph::arcs, a parent's arc before its children's
  std::vector<std::size_t> parent;  ///< per node: the arc into it, or SIZE_MAX for the root
  int depth = 0;                    ///< arcs on the longest root-to-leaf path
};

struct Packing {
  std::vector<Tree> trees;  ///< roots(v) k trees rooted at each node v, grouped by root in node order
  int flows = 0;            ///< max flows run
};

/// Packs roots(v) k trees per node v, each arc of the split graph in at most `units` of them.
/// Throws collkit::Error when the graph cannot hold them (min_rooted_flow below their number).
Packing pack_trees(const SplitGraph& g);

}  // namespace collkit::plan::synth
