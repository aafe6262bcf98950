#pragma once
// Synthesis on tori by translation (docs/synth.md, "Tori by translation"): a torus of one GPU a
// host is vertex-transitive under its translations, so the trees of every root are the trees of
// rank 0 moved by the translation that takes rank 0 to that root. Only rank 0's trees are built,
// as offsets on the torus; a rank's place in root r's tree is its offset from r looked up there.
// The plan stores the torus (dims, rank order) and the kind of trees, not the trees, and states
// one translation per dimension as a symmetry, so the simulator runs one rank of p.
//
// Two kinds of trees, k = 2 d (d dimensions) a root, each of the d rotations of the dimension
// order taken twice:
//  - "shortest": dimension-ordered shortest-path trees: along the first dimension of the order
//    both ways round its ring, from every rank reached along the second, and so on; the two of a
//    rotation differ in which way the antipode (even sizes) is reached. Depth sum floor(n_i / 2).
//  - "chains": the same with every ring taken one way only (+ for one of the two, - for the
//    other): chains along each dimension in turn. Depth sum (n_i - 1).
// Over all translates every link direction of dimension i carries the same number of arcs, and
// the d rotations spread the arcs over the dimensions, so a rank's NIC, not the torus links,
// binds wherever the torus links together carry more than the NIC (the presets' tori).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::plan::synth {

/// The first p ranks as positions on a torus: position = x_0 + n_0 (x_1 + n_1 x_2), dimension 0
/// fastest, as coll-topo's torus fabric numbers its hosts.
struct TorusGrid {
  std::vector<int> dims;  ///< n_i, each 2 or more
  std::vector<int> rank;  ///< rank at each position
  std::vector<int> pos;   ///< position of each rank
  int size() const { return static_cast<int>(rank.size()); }
  /// Position a moved by the offset at position b (coordinates added modulo n_i).
  int add(int a, int b) const;
  /// The offset from a to b (coordinates b - a modulo n_i).
  int sub(int b, int a) const;
  /// The position one step along dimension i (+1 or -1) from a.
  int step(int a, int i, int dir) const;
};

/// The torus the first p ranks of t form, with one rank a vertex: dimensions from the
/// topology's "fabric torus AxB" note, else the first factorisation of p into 2 or 3 sizes whose
/// neighbours, ranks in order, are exactly rank 0's nearest ranks by route; then every
/// translation checked to map every rank's routes to its torus neighbours onto the image's,
/// link direction for link direction, with equal bandwidth and latency. nullopt with `why` when
/// not (the ranks do not form such a torus, or the fabric does not treat them alike).
std::optional<TorusGrid> torus_grid(const topo::Topology& t, int p, std::string* why);

enum class TorusKind { Shortest, Chains };
const char* to_string(TorusKind k);

/// Rank 0's trees as offsets (position = offset from the root), children in position order.
struct TorusTrees {
  TorusGrid grid;
  TorusKind kind = TorusKind::Shortest;
  int k = 0;                             ///< trees a root
  std::vector<std::vector<int>> parent;  ///< per tree, every offset's parent offset (-1 at 0)
  std::vector<std::vector<int>> first;   ///< per tree, children of offset o: child[first[o] .. first[o + 1])
  std::vector<std::vector<int>> child;
  std::vector<std::vector<int>> slot;  ///< per tree, every offset's place among its parent's children
  int most_children = 1;
  int depth = 0;
};
TorusTrees torus_trees(const TorusGrid& g, TorusKind kind);

/// Rank `me`'s place in tree j of root `root` (the translate of rank 0's tree j): its parent
/// rank (-1 at the root), its children (ranks, in their offsets' order) and its slot.
struct TorusPlace {
  int parent = -1;
  std::vector<int> children;
  int slot = 0;
};
TorusPlace torus_place(const TorusTrees& tt, int root, int j, int me);

/// Every root's trees written out (root r's tree j at r k + j: every rank's parent), for
/// synth-info and the tests.
std::vector<std::vector<int>> torus_all_trees(const TorusTrees& tt);

/// The rate per root the trees give on t: k times the least, over the link directions their
/// arcs' routes cross, of bandwidth over the arcs crossing it over all translates. `nic`: per
/// tree, the NIC its arcs between hosts take (PlanInfo::channel_nics; -1 or empty: the route's).
double torus_rate(const topo::Topology& t, const TorusTrees& tt, const std::vector<int>& nic = {});

/// Per tree, the NIC its arcs take for the best torus_rate: q of the k trees through NIC n of
/// every host (q and n tried in turn), the rest on their routes; empty when no choice beats the
/// routes (one NIC a host, or the torus links bind). `rate`: the rate it gives.
std::vector<int> torus_nics(const topo::Topology& t, const TorusTrees& tt, double* rate = nullptr);

/// The translations by one step along each dimension, as rank maps, with their orders.
struct TorusShift {
  std::vector<int> rank;
  int order = 1;
};
std::vector<TorusShift> torus_shifts(const TorusGrid& g);

/// Plan parameters (sym_torus: the dims, "8x8x8"; sym_torus_ranks; sym_torus_trees: the kind)
/// written and read back: nullopt when the plan has none, InputError (one line) when malformed.
void write_torus_params(const TorusTrees& tt, std::map<std::string, std::string>& params);
std::optional<TorusTrees> read_torus_params(const std::map<std::string, std::string>& params, int p);
/// read_torus_params, kept between calls (a rank's program reads them all).
std::shared_ptr<const TorusTrees> shared_torus_trees(const std::map<std::string, std::string>& params, int p);

}  // namespace collkit::plan::synth
