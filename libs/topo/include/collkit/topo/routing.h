#pragma once
// Paths through the topology, with switches explicit: traffic flows only along links, and only
// switch-like vertices (CPU root complexes, PCIe switches, NICs, NVSwitches, network switches,
// coarse host vertices) forward it. A GPU never forwards: relaying through a GPU is an algorithm's
// choice, written in its schedule, not a route.
//
// Route choice (documented in docs/topology.md):
//  1. widest first: the largest bottleneck bandwidth any allowed path reaches;
//  2. then fewest hops among those, then the smallest summed latency.
// Shortest-widest is not isotone, so it is computed in two exact passes (a widest-path search,
// then a (hops, latency) search over links at least that wide), not one lexicographic Dijkstra.
//
// Host confinement: a route between two vertices of one host never leaves the host; a route
// between two hosts uses only those hosts and fabric vertices (host ""), entering the far host once.
//
// Rail affinity (affinity.h): a route out of a GPU's (or CPU's) host leaves through one of that
// vertex's NICs, and a route into a GPU's host enters through one of its NICs, as NCCL's net
// transport uses each GPU's own NIC; the rule is dropped for a pair it would leave unconnected.
// Inside the fabric, equal-cost choices are the destination's (D-mod-k on its port), so the
// flows to one leaf spread over the spines (routing_internal.h, AcrossHosts).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "collkit/core/flat_index.h"
#include "collkit/topo/affinity.h"
#include "collkit/topo/topology.h"

namespace collkit::topo {

namespace routing {
struct FabricTables;
}

/// One traversal of a link; `forward` is a->b as stored in the Link.
struct Hop {
  LinkId link;
  bool forward;
  /// Index of this direction as a unique resource (2*link + (forward ? 0 : 1)), for simulators.
  std::size_t channel() const { return 2 * static_cast<std::size_t>(link) + (forward ? 0 : 1); }
};

struct Path {
  VertexId src = 0;
  VertexId dst = 0;
  std::vector<Hop> hops;        ///< empty when src == dst
  double bottleneck_gbps = 0;   ///< min link bandwidth; src == dst: the vertex's local_bw_gbps (0 = unknown)
  double latency_us = 0;        ///< sum of link latencies
  bool found = false;           ///< false when no allowed path exists
  /// The vertices visited, src first.
  std::vector<VertexId> vertices(const Topology& t) const;
};

/// Answers path queries on one topology. Cheap to build; holds a reference to the topology.
class Router {
 public:
  explicit Router(const Topology& t);

  /// The route from src to dst (see the rules above). Path::found is false when none exists.
  Path route(VertexId src, VertexId dst) const;
  Path route_ranks(Rank a, Rank b) const;

  /// Routes from src to every vertex (index = destination vertex): routes_to() of all of them.
  std::vector<Path> routes_from(VertexId src) const;

  /// Which vertices some allowed path from src reaches (index = vertex): exactly those whose
  /// routes_from(src) entry is found (the NIC rule is dropped where it would leave a pair
  /// unconnected, so it never decides reachability), by one breadth-first search instead of
  /// the routes themselves.
  std::vector<char> reachable_from(VertexId src) const;

  /// Routes from src to the given destinations only (result[i] for dsts[i]): the searches stop as
  /// soon as every destination is settled, so near destinations cost little in big topologies.
  std::vector<Path> routes_to(VertexId src, const std::vector<VertexId>& dsts) const;

  /// Every route from src to dst that ties with route() on bottleneck and hops (ECMP: the spine
  /// choices of a fat-tree), at most `limit`, in a deterministic order; between hosts, through
  /// the NICs of src and dst as route() goes.
  std::vector<Path> equal_cost_paths(VertexId src, VertexId dst, std::size_t limit = 64) const;

  /// Whether routes_to() finds routes between hosts through tables of the fabric shared by all
  /// sources (the default: a search per source then costs its hosts, not the whole fabric) or
  /// by plain searches. The routes are the same either way; tests compare the two.
  void use_fabric_tables(bool on) { fabric_tables_ = on; }
  /// Whether a far host entered at one vertex is crossed by the tables' search from that vertex,
  /// shared by all sources (the default), or searched per source. The same routes either way.
  void use_entry_tables(bool on) { entry_tables_ = on; }
  /// How many routes so far crossed their far host by those tables.
  std::size_t routes_by_entry_tables() const;

  /// The NICs each vertex's traffic to other hosts goes through (affinity.h), computed once.
  const NicAffinity& affinity() const;

 private:
  const NicAffinity& no_affinity() const;
  struct Workspace;
  Workspace& workspace() const;

  const Topology& t_;
  std::vector<int> host_;  // dense host number per vertex, -1 for fabric switches
  int num_hosts_ = 0;
  // Arrays reused by routes_to() so that a search costs what it visits, not the topology's
  // size: one Router is not for concurrent use.
  mutable std::shared_ptr<Workspace> ws_;
  mutable std::shared_ptr<routing::FabricTables> fabric_;  // made on first use
  mutable std::shared_ptr<NicAffinity> aff_, none_;        // made on first use
  bool fabric_tables_ = true;
  bool entry_tables_ = true;
};

/// Routes kept once found: for callers that ask for the same pairs again and again (the planner
/// simulates a dozen candidates between the same ranks; each simulation checks its symmetry on the
/// routes, then runs on them). One Router's tables serve every query. Not for concurrent use.
class RouteCache {
 public:
  explicit RouteCache(const Topology& t) : router_(t), t_(&t) {}

  const Topology& topology() const { return *t_; }

  /// The routes from src to dsts (as Router::routes_to), searching only for those not yet kept.
  /// The pointers stay valid for the cache's lifetime.
  std::vector<const Path*> routes_to(VertexId src, const std::vector<VertexId>& dsts);

  std::size_t size() const { return paths_.size(); }

 private:
  Router router_;
  const Topology* t_;
  // The routes in a deque (pointers to its elements stay valid as it grows), indexed by vertex
  // pair: hundreds of thousands of routes at 16k ranks, where a node-based map's allocations,
  // rehashes and divisions were a tenth of finding them.
  std::deque<Path> paths_;
  FlatIndex index_;  // (src, dst) -> into paths_
};

/// True for kinds that forward traffic (everything but Gpu).
bool forwards(VertexKind kind);

}  // namespace collkit::topo
