#pragma once
// Pieces of routing.cpp shared with routing_across.cpp: the route order (routing.h) as labels,
// its ties, the search queue and the relaxation with its ECMP choice, written once so that both
// searches find the same routes.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collkit/topo/affinity.h"
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
  /// Whether the tables pay (else each source searches the fabric itself): see routing_across.cpp.
  bool pays = false;
  const std::vector<double>& widest(VertexId entry);
  const std::vector<Label>& shortest(VertexId entry, double level);

  const Topology& t;
  std::vector<int> host;                        // dense host number per vertex, -1 for fabric
  std::vector<std::uint32_t> pos;               // vertex -> index in its host's list or in `fabric`
  std::vector<std::vector<VertexId>> members;   // per host number
  std::vector<VertexId> fabric;
  std::vector<char> fwd;                        // forwards(kind)
  std::vector<char> nic;                        // kind == Nic
  /// Per link from a fabric vertex into a host: its port number among that fabric vertex's
  /// links into hosts (in link order), the key of destination-based ECMP (AcrossHosts::path).
  std::vector<std::uint32_t> port;
  /// Per fabric position, its coordinates in a torus (vertex attribute "torus_coord", written by
  /// the torus fabric), empty elsewhere; per host number, the fabric position of the torus router
  /// its links reach (-1: none or not one). Routes in a torus take dimension order (AcrossHosts::path).
  std::vector<std::vector<int>> torus_coord;
  std::vector<std::int64_t> torus_router;
  std::vector<std::vector<double>> widest_from;  // per fabric position: empty until needed
  std::vector<std::pair<double, std::vector<std::vector<Label>>>> shortest_from;  // per level
  /// Per host number, its vertices with a link out of the host (to the fabric or another host):
  /// where a route from elsewhere may enter it.
  std::vector<std::vector<VertexId>> border;

  /// A host's vertices searched from one of its border vertices alone, inside the host (indexed
  /// by `pos`), by the rules of a far host's search (AcrossHosts::search): what a source's search of
  /// that host is, shifted by the entry's own label, wherever the entry is the only one it is
  /// seeded at. Routes of all pairs cross each host from each entry once per source: 1024 sources
  /// of 128 hosts searched each host a million times; these searches are the same for all of them.
  struct FromEntry {
    std::vector<Label> label;  ///< fewest hops, then least latency, from the entry ({0, 0} there)
    std::vector<VertexId> parent;
    std::vector<LinkId> parent_link;
    /// Per vertex, the least latency gap, over the vertices of its route from the entry, between
    /// the label chosen there and another candidate of as many hops (kInf: none). A source's
    /// search, whose labels are shifted by the entry's, breaks ties the way this one cannot know
    /// (by the source, as ECMP does): the tables stand for it only where this gap is wide.
    std::vector<double> gap;
  };
  /// The widest bottleneck from `entry` (kInf there, 0: unreached) to each vertex of its host.
  const std::vector<double>& widest_in_host(VertexId entry);
  const FromEntry& shortest_in_host(VertexId entry, double level);
  std::size_t entered = 0;  ///< routes whose far host was crossed from these tables

 private:
  bool pay() const;
  void widest_within(int h, VertexId entry, bool entry_relays, std::vector<double>& best) const;
  std::vector<std::int32_t> widest_in_slot_;  // per vertex: index in widest_in_, -1 until needed
  std::deque<std::vector<double>> widest_in_;
  struct FromEntries {
    double level;
    std::vector<std::int32_t> slot;  // per vertex: index in `of`, -1 until needed
    std::deque<FromEntry> of;
  };
  std::vector<FromEntries> shortest_in_;  // per level
};

/// Routes from one source vertex to vertices of other hosts (routing.h): the route leaves the
/// source's host once (through one of the source's NICs when it has an affinity, affinity.h),
/// crosses only the fabric, and enters the destination's host once (through one of the
/// destination's NICs). The source's host is searched on its own; labels (bottleneck, or hops
/// and latency) of fabric vertices come from tables shared by all sources (FabricTables) when
/// they pay, else from one search of the fabric seeded at the host's exits; each destination
/// host is searched on its own per set of allowed entries, seeded from its neighbours' labels.
///
/// Inside the fabric, where several predecessors tie (the spines of a fat-tree, the dimensions
/// of a torus), the route takes the one the destination picks: the routes are destination-based
/// like an InfiniBand subnet manager's fat-tree routing (D-mod-k), keyed by the port at which the
/// route leaves the fabric, so the flows to the ports of one leaf climb distinct spines and every
/// spine's links carry an even share, instead of one hashed choice per source. In a torus (routers
/// with coordinates) the tie is broken by dimension order first, as torus networks route: the
/// lowest dimension in which source and destination differ is crossed first, so every
/// translate of a route is a route and uniform traffic loads each dimension's links evenly.
class AcrossHosts {
 public:
  /// `use_tables`: the fabric labels from the shared tables (else from a search per source);
  /// `use_entries`: a far host entered at one vertex from the tables' searches from it
  /// (FabricTables::FromEntry), else searched for this source.
  AcrossHosts(FabricTables& f, const NicAffinity& aff, VertexId src, bool use_tables, bool use_entries = true);
  AcrossHosts(const AcrossHosts&) = delete;
  AcrossHosts& operator=(const AcrossHosts&) = delete;
  /// Hands its far hosts' labels to the next source's searches on this thread (spare()).
  ~AcrossHosts();
  /// Pass 1: the widest bottleneck to dst (0: unreachable).
  double bottleneck(VertexId dst);
  /// Pass 2: the fewest-hops, least-latency route over links at least `level` wide (found
  /// false: unreachable).
  Path path(VertexId dst, double level);

 private:
  struct Local {  // labels of one host's vertices (by FabricTables::pos), or of the fabric
    std::vector<double> best;
    std::vector<Label> label;
    std::vector<VertexId> parent;
    std::vector<LinkId> parent_link;
    // A far host's search stops once the destination it was made for is settled (its label and
    // parents are final then: the rest of the search never changes them). complete: it ran to
    // the end; else only the vertices marked in `settled` are final.
    bool complete = true;
    std::vector<char> settled;
  };
  static constexpr VertexId kNoStop = ~VertexId{0};
  struct Level {
    double level;
    Local home, fabric;
    std::unordered_map<std::uint64_t, Local> far;  // per (far host, entry set): far_key()
    // Per fabric vertex (by position), its equal-cost predecessors, sorted, once path() has
    // needed them: the same for every destination, and a spine has a port per leaf to scan.
    // Flat: fabric vertex (by position) -> [tied_first, tied_first + tied_count) of tied_pool,
    // tied_count kUnknown until needed (a vector per fabric vertex and source cost more to make
    // and free than the few it holds).
    static constexpr std::uint32_t kUnknown = ~std::uint32_t{0};
    std::vector<std::uint32_t> tied_first, tied_count;
    std::vector<std::pair<LinkId, VertexId>> tied_pool;
  };
  bool may_leave(VertexId u) const { return u == src_ || f_.fwd[u]; }
  // May the route leave the home host from x (to the fabric or straight into another host)?
  bool exit_ok(VertexId x) const { return may_leave(x) && (!f_.nic[x] || aff_.allows(src_, x)); }
  // May it enter host h at y coming from outside, for a destination of entry set `set`?
  bool entry_ok(VertexId y, int set) const;
  bool relax(Local& l, VertexId v, Label nl, VertexId u, LinkId link) const;
  // h = -1: the fabric. Stops once `stop` is settled (false), else searches to the end (true).
  bool search(int h, Local& l, bool widest, double level, VertexId stop = kNoStop) const;
  Level& level(double level);
  // Host h's labels from entry set `set`, final at least at dst (a vertex of h).
  const Local& far_widest(int h, int set, VertexId dst);
  const Local& far_shortest(Level& lv, int h, int set, VertexId dst);
  // The one vertex of host h that entry set `set` lets a route enter at with a reached label, and
  // that label with its predecessor outside (as the search seeds it); `many`: more than one.
  struct Entry {
    VertexId at = kNoStop;
    bool many = false;
    double best = 0;  // widest
    Label label;      // shortest
    VertexId parent = 0;
    LinkId parent_link = 0;
  };
  Entry widest_entry(int h, int set) const;
  Entry shortest_entry(const Level& lv, int h, int set) const;
  // Far hosts' labels of sources done on this thread, whose vectors a new far host's labels take
  // over (their storage assigned again, not allocated): a source of 1024 reaches 128 hosts, and
  // allocating and freeing their labels was a third of the time the routes of all pairs took.
  static std::vector<Local>& spare();
  static void reuse(Local& l);
  // The label of u as a predecessor of a vertex outside the home host (unreached if none).
  Label from_label(const Level& lv, VertexId u) const;
  double from_best(VertexId u) const;

  FabricTables& f_;
  const NicAffinity& aff_;
  const Topology& t_;
  VertexId src_;
  int home_;  // -1: the source is a fabric vertex
  bool use_tables_;
  bool use_entries_;
  bool widest_done_ = false;
  Local home_w_, fabric_w_;
  // Per (far host, entry set), far_key(): a source reaches a few hosts of thousands, so a map
  // rather than a slot per host (clearing and freeing those took a tenth of its routes).
  std::unordered_map<std::uint64_t, Local> far_w_;
  static std::uint64_t far_key(int h, int set) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(h)) << 32) | static_cast<std::uint32_t>(set);
  }
  // Scratch of search(), reused: it runs a few times per destination host.
  mutable std::vector<char> done_;
  mutable std::vector<std::pair<double, VertexId>> widest_heap_;
  mutable std::vector<LabelItem> shortest_heap_;
  std::vector<Level> levels_;
};

}  // namespace collkit::topo::routing
