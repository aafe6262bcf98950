#pragma once
// Pieces of routing.cpp shared with routing_across.cpp: the route order (routing.h) as labels,
// its ties, the search queue and the relaxation with its ECMP choice, written once so that both
// searches find the same routes.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "collkit/topo/routing.h"

namespace collkit::topo::routing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
// Bandwidths equal to within this relative tolerance count as equal (JSON round trips, sums).
inline constexpr double kRelTol = 1e-9;

inline bool at_least(double bw, double threshold) { return bw >= threshold * (1 - kRelTol); }

/// A route's cost in pass 2: fewest hops, then least latency.
struct Label {
  std::uint32_t hops = std::numeric_limits<std::uint32_t>::max();
  double latency = kInf;
  bool operator<(const Label& o) const { return hops != o.hops ? hops < o.hops : latency < o.latency; }
  bool reached() const { return hops != std::numeric_limits<std::uint32_t>::max(); }
};

inline bool ties(const Label& x, const Label& y) {
  return x.hops == y.hops && std::abs(x.latency - y.latency) <= 1e-9 * std::max(1.0, std::abs(x.latency));
}

/// A stable pseudo-random rank of an equal-cost choice (splitmix64 of the three ids).
inline std::uint64_t ecmp_rank(VertexId src, VertexId v, LinkId link) {
  std::uint64_t x = (std::uint64_t{src} << 40) ^ (std::uint64_t{v} << 20) ^ link;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Pass 2's search order: the least label first, the lower vertex on a tie.
using LabelItem = std::pair<Label, VertexId>;
struct Later {
  bool operator()(const LabelItem& x, const LabelItem& y) const {
    return y.first < x.first || (!(x.first < y.first) && y.second < x.second);
  }
};
using ShortestQueue = std::priority_queue<LabelItem, std::vector<LabelItem>, Later>;

/// A label one link further.
inline Label plus(const Label& a, const Link& l) { return Label{a.hops + 1, a.latency + l.latency_us}; }

/// Pass 2's relaxation of v from u over `link`, in the search from `src`: a better label takes
/// over (returns true: v goes back on the queue); an equal one takes over when its link ranks
/// lower, as ECMP hashes flows over equal-cost parents (the spines of a fat-tree), so that
/// different sources and destinations spread instead of all taking the lowest-numbered one.
inline bool relax(Label& label, VertexId& parent, LinkId& parent_link, VertexId src, VertexId v, const Label& nl,
                  VertexId u, LinkId link) {
  if (nl < label) {
    label = nl;
    parent = u;
    parent_link = link;
    return true;
  }
  if (ties(nl, label) && ecmp_rank(src, v, link) < ecmp_rank(src, v, parent_link)) {
    parent = u;
    parent_link = link;
  }
  return false;
}

inline Hop hop_from(const Topology& t, LinkId l, VertexId from) { return Hop{l, t.link(l).a == from}; }

/// What every source's AcrossHosts shares: vertices grouped by host and the fabric (vertices of
/// no host), and routes inside the fabric from each fabric vertex a host enters it at, made on
/// first use (per pass-2 level for the shortest ones).
struct FabricTables {
  FabricTables(const Topology& t, const std::vector<int>& host, int num_hosts);
  /// Whether the tables pay (else the plain searches serve): see routing_across.cpp.
  bool pays = false;
  const std::vector<double>& widest(VertexId entry);
  const std::vector<Label>& shortest(VertexId entry, double level);

  const Topology& t;
  std::vector<int> host;                        // dense host number per vertex, -1 for fabric
  std::vector<std::uint32_t> pos;               // vertex -> index in its host's list or in `fabric`
  std::vector<std::vector<VertexId>> members;   // per host number
  std::vector<VertexId> fabric;
  std::vector<char> fwd;                        // forwards(kind)
  std::vector<std::vector<double>> widest_from;  // per fabric position: empty until needed
  std::vector<std::pair<double, std::vector<std::vector<Label>>>> shortest_from;  // per level

 private:
  bool pay() const;
};

/// Routes from one source vertex inside a host to vertices of other hosts, exactly as the plain
/// two-pass search finds them (routing.h), without flooding the fabric once per source.
///
/// A route to another host leaves the source's host once, crosses only the fabric, and enters
/// the far host once. So a label (bottleneck, or hops and latency) of a fabric vertex v is the
/// best over the home host's exits x -> f0 of label(x) + link + fabric-only route f0 -> v, and the
/// latter are tables shared by all sources (FabricTables). The far host is searched on its own,
/// seeded from its neighbours' labels. The route is then read backwards from the destination:
/// at each vertex, among the neighbours whose label plus the link ties its label (the equal-cost
/// predecessors the plain search would have relaxed it from), the one with the smallest ECMP
/// rank, which is the plain search's choice too. Latency is summed along the route from the
/// source, as the plain search sums it, so routes and times are the same to the bit.
class AcrossHosts {
 public:
  AcrossHosts(FabricTables& f, VertexId src);
  /// Pass 1: the widest bottleneck to dst (0: unreachable).
  double bottleneck(VertexId dst);
  /// Pass 2: the fewest-hops, least-latency route over links at least `level` wide (found
  /// false: unreachable); nullopt if it cannot be read back, for the plain search to decide.
  std::optional<Path> path(VertexId dst, double level);

 private:
  struct Local {  // labels of one host's vertices (by FabricTables::pos), or of the fabric
    std::vector<double> best;
    std::vector<Label> label;
    std::vector<VertexId> parent;
    std::vector<LinkId> parent_link;
  };
  struct Level {
    double level;
    Local home, fabric;
    std::vector<std::pair<int, Local>> far;  // per far host number
  };
  bool may_leave(VertexId u) const { return u == src_ || f_.fwd[u]; }
  bool relax(Local& l, VertexId v, Label nl, VertexId u, LinkId link) const;
  void search_host(int h, Local& l, bool widest, double level) const;
  Level& level(double level);
  const Local& far_widest(int h);
  const Local& far_shortest(Level& lv, int h);

  FabricTables& f_;
  const Topology& t_;
  VertexId src_;
  int home_;
  bool widest_done_ = false;
  Local home_w_, fabric_w_;
  std::vector<std::pair<int, Local>> far_w_;
  std::vector<Level> levels_;
};

}  // namespace collkit::topo::routing
