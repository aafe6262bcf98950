#pragma once
// Queries the planner needs beyond single routes: grouping of ranks by host and by switch,
// per-rank bandwidth, and cuts between vertex sets.

#include <string>
#include <vector>

#include "collkit/topo/routing.h"
#include "collkit/topo/topology.h"

namespace collkit::topo {

/// Ranks grouped by the host of their endpoint, hosts in topology order.
struct HostGroup {
  std::string host;
  std::vector<Rank> ranks;
};
std::vector<HostGroup> ranks_by_host(const Topology& t);

/// The switch of `kind` nearest to a rank: fewest hops over forwarding vertices, then the widest
/// bottleneck, then the lowest vertex id. Nullopt when no such switch is reachable. For a
/// rail-optimised cluster, the NetSwitch nearest GPU i is its rail's leaf.
std::optional<VertexId> nearest_switch(const Topology& t, Rank r, VertexKind kind);

/// Ranks grouped by their nearest switch of `kind` (ranks with none are left out), ordered by switch id.
struct SwitchGroup {
  VertexId sw;
  std::vector<Rank> ranks;
};
std::vector<SwitchGroup> ranks_by_switch(const Topology& t, VertexKind kind);

/// Do ranks a and b have the same nearest switch of `kind`?
bool share_switch(const Topology& t, Rank a, Rank b, VertexKind kind);

/// Bandwidth a rank can inject or absorb: the links at its endpoint vertex, split evenly among the
/// ranks mapped there. `off_vertex` only; traffic between co-located ranks is not counted.
struct RankBandwidth {
  double egress_gbps = 0;
  double ingress_gbps = 0;
};
RankBandwidth rank_bandwidth(const Topology& t, Rank r);

/// Sum of link bandwidth in the direction from set `from` to set `to` over links with one end in each.
double cut_gbps(const Topology& t, const std::vector<VertexId>& from, const std::vector<VertexId>& to);
/// Bandwidth leaving the set S: B+(S), the sum over links from S to its complement.
double boundary_gbps(const Topology& t, const std::vector<VertexId>& s);
/// Maximum flow from set `from` to set `to` through the whole graph (every link both ways at its
/// bandwidth; GPUs outside both sets are not used as relays): the min cut between them, computed
/// with Boost.Graph's push-relabel. Sets must be disjoint and non-empty.
double max_flow_gbps(const Topology& t, const std::vector<VertexId>& from, const std::vector<VertexId>& to);

/// The endpoint vertices of a list of ranks, without repeats.
std::vector<VertexId> endpoints(const Topology& t, const std::vector<Rank>& ranks);

}  // namespace collkit::topo
