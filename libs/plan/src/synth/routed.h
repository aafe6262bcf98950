#pragma once
// The part of a topology that rank-to-rank traffic is routed over (topo/routing.h). The optimal
// rate lets any vertex relay over any link, e.g. GPU to GPU through PCIe and the CPU beside the
// NVSwitch; but a plan's sends go rank to rank along the topology's routes, which take no such
// detour, so trees packed at that rate would ask the routed links for more than they have.
// Synthesising on the routed links alone gives trees that the routes carry (docs/synth.md).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::plan::synth {

/// A copy of t (same vertices, ids and ranks) with only the links on the route between some two
/// of the first p ranks' vertices.
topo::Topology routed_links(const topo::Topology& t, int p);

/// As routed_links, with the routes between hosts taken through each of the NICs `nics` in turn
/// (a plan whose channels name their NIC, PlanInfo::channel_nics; sim::NicRoutes): the links some
/// channel of such a plan may load. A pair with no route through one of them keeps the others'.
topo::Topology routed_links(const topo::Topology& t, int p, const std::vector<int>& nics);

/// As routed_links(t, p), with the links of the paths staged through host memory (sim::HostRoutes,
/// channel_paths "host") between every two of the first p ranks on one host: what a plan whose
/// tree arcs may be either loads (Arcs::Host in synth.cpp).
topo::Topology routed_host_links(const topo::Topology& t, int p);

/// A copy of t (same vertices, ids and ranks) with only the links that join two of the first p
/// ranks' vertices (NVLink or xGMI between GPUs). A GPU never forwards (topo/routing.h), so the
/// routes over it are those links alone: trees packed on it (Arcs::Direct in synth.cpp) leave
/// PCIe, the CPUs and the NICs to the sends staged through host memory (the host share).
topo::Topology direct_links(const topo::Topology& t, int p);

/// Where the links of `routed` (routed_links of some topology) form a star, one vertex that holds
/// no rank joined by one link each to the first p ranks' vertices (p distinct vertices) and no
/// other link, as the GPUs of one NVSwitch: the AllGather rate per root of every rank's star (each
/// root sends straight to every other rank), min over the ranks of their link's bandwidth /
/// (p - 1). That is the optimum (a rank's link must let in the p - 1 other shards), so the stars
/// are an optimal packing without splitting (p^3 max flows: 72 GPUs of a GB200 NVL72 took two
/// minutes). nullopt where the links are not such a star.
std::optional<double> star_rate(const topo::Topology& routed, int p);

/// Whether the first p ranks of t are all on one host (a host name, the same for all).
bool one_host(const topo::Topology& t, int p);

/// Where the routes between the first p ranks of t, all on one host, form a star (star_rate) and
/// the paths staged through host memory (sim::HostRoutes) join the ranks in groups of one size g,
/// 2 <= g < p, every two ranks of a group and no two of different groups, as a GB200 superchip's
/// two GPUs through their Grace CPU over NVLink-C2C: the groups, each in rank order, ordered by
/// their least rank. On several hosts of one size (synth::equal_hosts: GB200 NVL72 racks), where
/// host 0 is such a star and every host's groups are at the same local places: every host's
/// groups, host by host. nullopt otherwise.
std::optional<std::vector<std::vector<int>>> star_groups(const topo::Topology& t, int p);

/// Every rank's trees with some arcs staged through host memory, and the rate per root they give.
struct HostTrees {
  std::vector<std::vector<int>> trees;  ///< per tree (a root's k in a row), every rank's parent, -1 at the root
  std::vector<std::vector<char>> host;  ///< per tree and rank, whether the arc from its parent is staged
  double per_root_gbps = 0;
};

/// k trees per root on a star with groups (star_groups), or on several such hosts, where the rank
/// at the root's local place on every other host takes the root's data over the network first and
/// then hands it on there as the root does on its own: `relay` of a root's k hand its data over
/// the star to one rank of every other group (the rank of place (l + tree) mod g, l the root's
/// place in its own group, so that every rank takes that turn alike and moving every rank to the
/// same place of the next group maps the trees onto themselves), which passes it on to the rest of its group through
/// host memory, and to the root's own group through host memory straight from the root; the
/// other k - relay are the root's star. A rank then takes in over its host link what its star link
/// cannot: the cut bound's in-bandwidth of one rank, star link plus host link, where stars alone
/// reach the star link's. per_root_gbps: k times the least, over the link directions the arcs'
/// paths cross (routes, and host paths for staged arcs), of the bandwidth over the arcs crossing it.
/// With fan > 0 the star inside each host has two levels: the entry's children over the star, in
/// the order of their place after it, the first `fan` from the entry and the x-th after them from
/// the (x mod fan)-th; and the hosts take the data in a binary heap from the root's (host offset i
/// from offset (i - 1) / 2), not all from the root. A tree then takes about fan + 3 channels, not
/// one a rank and host (a GB200 NVL72 rack's star: 71, and 15 rails on sixteen racks), at the same
/// loads per rank (each forwards others' data as the entry did its own), a few hops deeper.
/// With relay_of > 0, `relay` of every relay_of groups in turn are relayed in each tree, not whole
/// trees: tree j of a root relays group q where (j + q - q0) mod relay_of < relay (q, q0: the
/// group's and the root's group's places among their host's groups), which shares finer than
/// whole trees where a root has few (two: a half or nothing).
HostTrees star_relay_trees(const topo::Topology& t, int p, const std::vector<std::vector<int>>& groups, int k, int relay, int fan = 0,
                           int relay_of = 0);

/// The share of a link each tree gets where trees carry equal data: the least, over the link
/// directions the arcs' paths cross (the route between parent and child, or for a staged arc its
/// host path, sim::HostRoutes), of the bandwidth over the arcs crossing it. 0 where some arc has
/// no such path.
double tree_share(const topo::Topology& t, const HostTrees& trees);

/// The link directions (topo::Hop::channel) a tree arc between two ranks crosses: the route
/// between them, or for an arc staged through host memory its host path (sim::HostRoutes);
/// memoised, for rates counted again and again on one topology.
class ArcPaths {
 public:
  explicit ArcPaths(const topo::Topology& t);
  ~ArcPaths();
  ArcPaths(const ArcPaths&) = delete;
  ArcPaths& operator=(const ArcPaths&) = delete;
  /// nullptr where the arc has no such path.
  const std::vector<std::size_t>* of(int a, int c, bool staged);
  const topo::Topology& topology() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// tree_share over `paths`' topology; with `per_host`, that least per host too, over the links of
/// its vertices (a link between a host and the fabric under the host's name, the fabric's own
/// under "").
double tree_share(ArcPaths& paths, const HostTrees& trees, std::map<std::string, double>* per_host = nullptr);

/// star_relay_trees over `paths`' topology, its paths memoised there (for several relay counts).
HostTrees star_relay_trees(ArcPaths& paths, int p, const std::vector<std::vector<int>>& groups, int k, int relay, int fan = 0,
                           int relay_of = 0);

/// How one root's trees on stars with groups hand its data on (star_relay_root_trees): tree t
/// goes first through host memory to a twin of the root where t mod via_of < via, and relays
/// group q (its place among its host's groups) where (t + q) mod relay_of < relay on the root's
/// host, (t + q) mod away_of < away on the others (whose host links also carry the pieces coming
/// in over the network, where the NIC hangs off the host, as a GB200's off its Grace); hosts in a
/// heap of fan-out `fan` from the root's.
struct RootRelay {
  int relay = 0, relay_of = 1;
  int away = 0, away_of = 1;
  int via = 0, via_of = 1;
  int fan = 1;
};

/// One root's trees (Broadcast; Reduce on them reversed) on stars with groups (star_groups), one
/// host or several alike, k per head: every local place outside the root's group is a head, whose
/// trees take the root's data over the star (or, `via`, through host memory to the root's twin,
/// which sends it over the star: the root then sends over both its links), then over the network
/// to the rank at that place on every other host (a heap by `fan`), each of which hands it on in
/// its host straight over the star to every rank or, for the groups the tree relays, to one member
/// (the one whose group-mates have taken the fewest so far) which passes it on to the rest of its
/// group through host memory. So every rank takes in over both its star link and its host link,
/// the cut bound's in-bandwidth (GB200 NVL72: 900 + 225 GB/s), where trees over the star alone
/// reach the star link's. The root's group takes every piece over the star (the root's host link
/// carries the via share). per_root_gbps: the number of trees times tree_share (`per_host`: its
/// shares per host). Empty where the trees cannot be made (no group beside the root's, an arc
/// without a path).
HostTrees star_relay_root_trees(ArcPaths& paths, int p, const std::vector<std::vector<int>>& groups, int root, int k, const RootRelay& how,
                                std::map<std::string, double>* per_host = nullptr);

/// The rate sends staged through host memory (sim::HostRoutes, channel_paths "host") between the
/// rank pairs `sends`, all at once, each reach: the least, over link directions, of the bandwidth
/// over the sends crossing it; 0 where some pair shares a vertex or has no such path (ranks on
/// different hosts).
double host_paths_rate(const topo::Topology& t, const std::vector<std::pair<int, int>>& sends);

/// The walks of the routes between every two of the first p ranks' vertices (topo::Router), and
/// every contiguous part of them: splitting that joins only walks whose join is such a part
/// (split.h) ends with arcs from rank vertex a to b that are exactly the route from a to b, so
/// the sends of a plan load the links as the packing assumed (docs/synth.md, "Routed arcs").
/// With `host_paths`, the paths staged through host memory between two ranks on one host too, so
/// that an arc is either the route between its ends or that path.
class RouteWalks {
 public:
  RouteWalks(const topo::Topology& t, int p, bool host_paths = false);
  /// Whether the vertices `walk` (at least two) are consecutive on some route.
  bool contains(const std::vector<topo::VertexId>& walk) const;
  /// Whether walk a followed by walk b (b starting where a ends) is consecutive on some route.
  bool joins(const std::vector<topo::VertexId>& a, const std::vector<topo::VertexId>& b) const;
  std::size_t routes() const { return routes_; }

 private:
  /// Every contiguous part (two vertices or more) of the walk v.
  void add(const std::vector<topo::VertexId>& v);
  std::unordered_set<std::string> parts_;
  std::size_t routes_ = 0;
};

}  // namespace collkit::plan::synth
