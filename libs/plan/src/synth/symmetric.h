#pragma once
// Synthesis by symmetry (docs/synth.md, "Scale by symmetry"; ForestColl's symmetric generator):
// on hosts that are identical and that the fabric treats alike, the trees of the roots on host h
// are the images of host 0's roots' trees under a group of host permutations acting regularly
// (every host is the image of host 0 by exactly one element), so only host 0's pattern is built:
//  - the group: hosts in groups of twins (hosts whose links out reach the very same fabric
//    vertices: the hosts under one set of leaves of a rail-optimised fat-tree), G hosts in each of
//    A groups; the element (x, y) moves host b of group a to host b + y mod G of group a + x mod A,
//    each rank to the rank of the same local index (optionally also l -> l + z mod g, below);
//  - host 0's inter-host tree: over the hosts, through the rank of the root's local index on each
//    (its rail), a tree of fan-out f across the groups then inside each group (A - 1 arcs cross
//    groups, the fewest); every rank's NIC then carries, over all translates, exactly H - 1 arcs
//    out and in, whatever the tree's shape, which is the cut bound's traffic when NICs bind;
//  - intra-host trees: K per local root (K = 1 unless one tree a root packs well below the host's
//    optimum), from the general solver on one host (split switches, packed trees), the same in
//    every host; when they are rotations of each other and the rotation l -> l + 1 maps routes
//    onto routes, it is a symmetry too.
// The trees are translates only where the group maps every route the trees use onto the route
// of the image pair, link direction for link direction with equal bandwidth and latency: that is
// checked (routes_symmetric), never assumed; where it fails the topology is not symmetric enough
// and the caller falls back to the general solver (or refuses).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::plan::synth {

/// The first p ranks as grid positions (group a, host b in the group, local index l), position
/// (a G + b) g + l.
struct HostGrid {
  int groups = 1;         ///< A: groups of twin hosts
  int hosts = 1;          ///< G: hosts per group
  int local = 1;          ///< g: ranks per host
  std::vector<int> rank;  ///< rank at each position (-1: an empty slot of a host short of ranks, rail_hosts)
  std::vector<int> pos;   ///< position of each rank
  int num_hosts() const { return groups * hosts; }
  /// Whether some host is short of ranks (rail_hosts): some slot holds none.
  bool holes() const { return std::find(rank.begin(), rank.end(), -1) != rank.end(); }
  /// The rank at host e's local slot l or, where that slot is empty, at the host's next slot
  /// after l (cyclically) that holds one: who stands in for the slot's rail on that host.
  int holder(int e, int l) const {
    for (int x = 0; x < local; ++x)
      if (int r = rank[static_cast<std::size_t>(e * local + (l + x) % local)]; r >= 0) return r;
    return -1;
  }
};

/// The grid of the first p ranks of t: every rank's vertex on a host, every host with the same
/// number of them (local index by vertex id), at least two hosts, twin groups all of one size
/// (groups and the hosts in them ordered by their least rank). nullopt with `why` when not.
std::optional<HostGrid> host_grid(const topo::Topology& t, int p, std::string* why);

/// Host 0's pattern: everything the trees of all ranks follow from.
struct QuotientTrees {
  HostGrid grid;
  int fanout = 2;             ///< of the inter-host tree, across groups and inside each
  bool rotate_local = false;  ///< l -> l + 1 is a symmetry (intra trees are rotations)
  int intra_k = 1;            ///< K: distinct intra-host trees per local root
  /// Per local root l, its K trees at l K .. l K + K - 1: every local index's parent (-1 at l).
  std::vector<std::vector<int>> intra;
};

/// Host element e's parent in host 0's inter-host tree (-1 at 0): elements are a G + b.
int inter_parent(const HostGrid& g, int fanout, int element);

/// Every rank's trees: the plan's tree t is root t / k's (t mod k)-th, which uses intra-host tree
/// (t mod k) mod K; a root's trees with the same intra-host tree are identical, stored once.
struct TreeSet {
  int p = 0, k = 1, intra_k = 1;
  /// Where the plan's tree t is stored: root t / k's, its intra-host tree's place.
  std::size_t index(int t) const {
    return static_cast<std::size_t>(t / k) * static_cast<std::size_t>(intra_k) + static_cast<std::size_t>(t % k % intra_k);
  }
  /// Per stored tree (root rank r's K trees at r K ..): every rank's parent (-1 at the root).
  std::vector<std::vector<int>> parent;
  /// Per stored tree, children in the group's order (the order of their images under the element
  /// that takes the root to host 0, local 0 with rotate_local), so that a child's place (its
  /// channel) is the same in every translate: CSR by parent rank.
  std::vector<std::vector<int>> first, child;
  std::vector<std::vector<int>> slot;  ///< per stored tree, every rank's place among its parent's children
  int most_children = 1;               ///< over all trees and ranks (channels per tree)
};
/// k trees per root, k a multiple of q.intra_k (InputError otherwise).
TreeSet expand_trees(const QuotientTrees& q, int k);

/// The group's generators as rank maps with their orders: b -> b + 1 (order G, if G > 1),
/// a -> a + 1 (order A, if A > 1), l -> l + 1 (order g, with rotate_local).
struct Generator {
  std::vector<int> rank;
  int order;
  std::string name;    ///< for messages
  bool local = false;  ///< the rotation of local indices (the others move hosts)
};
std::vector<Generator> generators(const QuotientTrees& q);

/// Whether every generator maps the route of every (parent, child) pair of `trees` onto the route
/// of the image pair, link direction by link direction, one-to-one, with equal bandwidth and
/// latency; on failure `why` names the first generator and pair that does not. Also the rate per
/// root the trees give (k times the least bandwidth over trees crossing a link direction), into
/// `rate_gbps` when not null.
bool routes_symmetric(const topo::Topology& t, const QuotientTrees& q, const TreeSet& trees, std::string* why, double* rate_gbps = nullptr);

/// A topology of host element 0 alone (its vertices and the links between them, its ranks in local
/// order), for its intra-host trees.
topo::Topology host_topology(const topo::Topology& t, const HostGrid& g);

/// Intra-host trees from a solver on one host (g ranks, k trees per rank, parent arrays by root,
/// a root's k in a row).
using IntraSolver = std::function<std::vector<std::vector<int>>(const topo::Topology& one_host, int g, int k)>;

/// Host 0's pattern on t for the first p ranks with intra_k trees a local root, checked
/// (routes_symmetric, the host generators; rotate_local only where its generator passes too);
/// nullopt with `why` when t is not symmetric enough. Also the rate per root the trees give
/// (rate_gbps). Memoised per (topology, p, fanout, intra_k).
std::optional<QuotientTrees> quotient(const topo::Topology& t, int p, int fanout, int intra_k, const IntraSolver& intra, std::string* why,
                                      double* rate_gbps = nullptr);

/// Plan parameters (sym_grid, sym_ranks, sym_fanout, sym_intra, and sym_intra_k where K > 1)
/// written and read back; reading
/// gives nullopt when the plan has none, InputError (one line) when they are malformed.
void write_params(const QuotientTrees& q, std::map<std::string, std::string>& params);
std::optional<QuotientTrees> read_params(const std::map<std::string, std::string>& params, int p);

/// expand_trees of the plan's parameters, kept between calls (a rank's program reads them all).
std::shared_ptr<const TreeSet> shared_trees(const std::map<std::string, std::string>& params, int p, int k);

}  // namespace collkit::plan::synth

namespace collkit::plan::synth {

/// The first p ranks on hosts of one size (at least two), hosts ordered by their least rank,
/// ranks on a host by vertex id; one group (whatever the fabric). nullopt with `why` when not.
std::optional<HostGrid> equal_hosts(const topo::Topology& t, int p, std::string* why);

/// equal_hosts', or on hosts of unlike sizes (a host short of a GPU: `coll-plan shell`'s `fail
/// vertex node5/gpu3`) a grid whose slots are the GPUs' device indices (Vertex::index), so that
/// slot l is rail l on every host: local = the number of distinct indices, which one host must
/// hold all of; a short host's empty slots hold rank -1 (HostGrid::holder stands in for them).
/// nullopt with `why` where the ranks are on one host, a rank's vertex has no device index, two
/// ranks of a host share one, or no host holds every index.
std::optional<HostGrid> rail_hosts(const topo::Topology& t, int p, std::string* why);

/// How rooted_trees hands the pieces on inside each host.
struct RootedVariant {
  /// The root's own piece handed on its host down a chain of the g - 1 others instead (each rank
  /// forwards it once: g trees per copy, k = copies g, a seventh of the trees and ops; where each
  /// pair of GPUs has a link of its own, as on MI300X, that link then carries two pieces, and the
  /// chain's rate is lower: routed_tree_rate says).
  bool chain = false;
  /// Per local root l, every local index's parent in a spanning tree of one host rooted at l (-1
  /// at l: the host's AllGather trees): a piece is handed on inside a host down the tree rooted at
  /// the rank that holds it, not straight from it: where a host's GPUs are not all joined
  /// pairwise (DGX-1's cube-mesh: three of a GPU's seven peers are reached over PCIe), a star's
  /// sends to the far ones share the PCIe links.
  const std::vector<std::vector<int>>* intra = nullptr;
  /// Every piece handed on down a chain round the host's local indices instead (with `chain`,
  /// which it implies; `intra` unused): on another host piece j from its rail rank j through j + 1,
  /// j + 2, ... to j - 1; on the root's host from the root to the rank after j (the root left out
  /// of the order) and round to j, which sends it off the host, the root's own piece down the
  /// chain from the root and off the host from its last rank. Every rank then sends g - 1 pieces
  /// inside its host and one off it, the root g inside: where a GPU reaches its peers, its NIC and
  /// the other socket over one PCIe link (pcie-8gpu), no link carries a piece twice, where a star
  /// sends the g - 1 pieces of one rank's across the socket link each (the root's star also its
  /// own piece twice, to its host and its NIC: 28 of the bound's 31.5 GB/s on 2 x pcie-8gpu). The
  /// price is depth: g - 1 a host.
  bool ring = false;
  /// On a host short of a GPU (rail_hosts), the piece of a slot the root's host lacks sent off it
  /// by the root itself, not by the rank that stands in for the slot: every rank's trees at once
  /// (AllGather), where the roots of a short host then spread those pieces over their own NICs
  /// instead of all sending them through one stand-in's (3 x dgx-h100 less node1's GPU 0 and
  /// node2's GPU 5: 1.245 x the bound against 1.307, AllGather of 64 MiB).
  bool root_leads_holes = false;
};

/// One root's trees on hosts of equal size (Broadcast, Reduce; docs/synth.md, "Broadcast and
/// Reduce on hosts alike"): the vector is cut into g pieces, piece j carried off the root's host
/// by the rank of local index j there (its rail), over an inter-host tree of that rail, and on
/// every other host handed by the rail's rank to the host's g - 1 others; on the root's host
/// the root gives piece j to rank j, which hands it to the g - 2 others, and the root's own
/// piece, which leaves by its own NIC, is relayed there by the g - 1 others in turn (a (g-1)-th
/// each), so that the root sends the vector once inside its host and every NIC of its host
/// carries an equal share out. The inter-host tree over the H - 1 other hosts (the root's host
/// first, then the others in order from it): fan-out 1, a chain; fan-out 2, two binary heaps,
/// copy c's inner places held by the hosts at odd or even places in that order (each host has
/// children in at most one of the two, so every NIC sends what it receives: the NIC-bound rate
/// at depth log2 H). Trees of equal weight: g (g
/// - 1) per copy (piece j's g - 1 copies, the root's piece's g - 1 relays), in all k = copies
/// g (g - 1) (g = 1: copies). Returns the parent arrays over the first p ranks (-1 at root);
/// nullopt with `why` where the ranks are not on hosts of one size (equal_hosts) or fanout is not
/// 1 or 2. On hosts of unlike sizes (rail_hosts) only with `chain` (not `intra` or `ring`): piece
/// j of a slot that a host lacks is taken there by the rank that stands in for the slot
/// (HostGrid::holder; on the root's host from the root, or the root itself where it stands in),
/// which sends it on and hands it to its host's others, its NIC carrying two rails' pieces (what
/// the shares of weighed trees then even out).
std::optional<std::vector<std::vector<int>>> rooted_trees(const topo::Topology& t, int p, int root, int fanout, std::string* why,
                                                          const RootedVariant& variant = {});

/// The rate per root that trees give, the sends taking the topology's routes: the number of
/// trees times the least bandwidth over the trees crossing a link direction (trees share the
/// root's rate equally). 0 if some pair has no route. With `nics` (one per tree, -1: the route's
/// own), tree j's arcs between hosts go through NIC nics[j] of both hosts (PlanInfo::channel_nics).
double routed_tree_rate(const topo::Topology& t, const std::vector<std::vector<int>>& trees, const std::vector<std::int16_t>& nics = {});

}  // namespace collkit::plan::synth
