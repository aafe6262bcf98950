// Lower bounds on a collective's time on a topology (REFERENCE Part B 2.2; docs/plan.md,
// "Simulation and bounds").
//
// Bandwidth: data that must cross a cut divided by the cut's bandwidth, maximised over cuts.
//  - AllGather / ReduceScatter: ForestColl's bound, computed exactly (see max_ratio_cut()).
//  - AllReduce (no in-network reduction): twice the ReduceScatter bound.
//  - AlltoAll: the best of a set of candidate cuts (every rank vertex alone, every host, every
//    network switch's ranks, the first half of the hosts against the rest); the exact maximum
//    of a quadratic objective over all cuts is not a max-flow problem, so this one is a bound,
//    not necessarily the best one.
//  - Broadcast / Reduce: bytes over the smallest max flow between the root and another rank
//    (Edmonds: that is the broadcast rate of the best packing of spanning arborescences).
// Every link carries its bandwidth in each direction; GPUs are allowed to relay, since an
// algorithm may forward through a GPU (a ring does), so cuts count every link.
//
// Latency: the single-port model's ceil(log2 p) rounds, each at least the smallest route
// latency between two ranks, or the route latency between the two ranks farthest apart (for
// Broadcast / Reduce: the farthest rank from / to the root), whichever is larger.

#include "collkit/plan/bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <string>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/topo/queries.h"
#include "collkit/topo/routing.h"
#include "host_symmetry.h"

namespace collkit::plan {

namespace {

using topo::Topology;
using topo::VertexId;

constexpr double kUsPerByteGbps = 1e-3;  // bytes / GB/s = ns; 10^-3 of that in microseconds

/// Whole numbers as such ("1000000"), others with six significant digits.
std::string num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.6g}", v);
}

/// A max-flow network over the whole topology (every link both ways) plus a source and a sink
/// joined to every vertex, so each query only sets capacities. Boost.Graph's push-relabel.
class FlowNet {
 public:
  explicit FlowNet(const Topology& t) : t_(t), g_(t.num_vertices() + 2) {
    std::size_t n = t.num_vertices();
    source_ = n;
    sink_ = n + 1;
    cap_ = boost::get(boost::edge_capacity, g_);
    res_ = boost::get(boost::edge_residual_capacity, g_);
    auto rev = boost::get(boost::edge_reverse, g_);
    auto arc = [&](std::size_t u, std::size_t v) {
      auto e = boost::add_edge(u, v, g_).first;
      auto r = boost::add_edge(v, u, g_).first;
      rev[e] = r;
      rev[r] = e;
      cap_[r] = 0;
      return e;
    };
    for (const topo::Link& l : t.links()) {
      link_arcs_.push_back(arc(l.a, l.b));
      link_arcs_.push_back(arc(l.b, l.a));
    }
    for (std::size_t v = 0; v < n; ++v) {
      from_source_.push_back(arc(source_, v));
      to_sink_.push_back(arc(v, sink_));
    }
  }

  /// A capacity larger than any cut of a query whose finite capacities sum to `finite`.
  static double unbounded(double finite) { return 1 + 2 * finite; }

  /// Max flow with links at `scale` x bandwidth, source->v at src[v], v->sink at dst[v].
  double run(double scale, const std::vector<double>& src, const std::vector<double>& dst) {
    for (std::size_t l = 0; l < t_.num_links(); ++l) {
      double c = scale * t_.link(static_cast<topo::LinkId>(l)).bw_gbps;
      cap_[link_arcs_[2 * l]] = c;
      cap_[link_arcs_[2 * l + 1]] = c;
    }
    for (std::size_t v = 0; v < t_.num_vertices(); ++v) {
      cap_[from_source_[v]] = src[v];
      cap_[to_sink_[v]] = dst[v];
    }
    return boost::push_relabel_max_flow(g_, source_, sink_);
  }

  /// After run(): the vertices the source still reaches through arcs with residual capacity,
  /// i.e. the source side of a minimum cut.
  std::vector<char> source_side(double tolerance) const {
    std::vector<char> seen(t_.num_vertices() + 2, 0);
    std::vector<std::size_t> stack{source_};
    seen[source_] = 1;
    while (!stack.empty()) {
      std::size_t u = stack.back();
      stack.pop_back();
      for (auto [e, end] = boost::out_edges(u, g_); e != end; ++e) {
        std::size_t v = boost::target(*e, g_);
        if (!seen[v] && res_[*e] > tolerance) {
          seen[v] = 1;
          stack.push_back(v);
        }
      }
    }
    seen.resize(t_.num_vertices());
    return seen;
  }

 private:
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, double,
                      boost::property<boost::edge_residual_capacity_t, double,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const Topology& t_;
  Graph g_;
  std::size_t source_ = 0, sink_ = 0;
  boost::property_map<Graph, boost::edge_capacity_t>::type cap_;
  boost::property_map<Graph, boost::edge_residual_capacity_t>::type res_;
  std::vector<Traits::edge_descriptor> link_arcs_, from_source_, to_sink_;
};

double total_bw(const Topology& t) {
  double sum = 0;
  for (const topo::Link& l : t.links()) sum += l.bw_gbps;
  return sum;
}

/// B+(S): bandwidth of the links with exactly one end in S (each is full duplex).
double leaving(const Topology& t, const std::vector<char>& in) {
  double sum = 0;
  for (const topo::Link& l : t.links())
    if (in[l.a] != in[l.b]) sum += l.bw_gbps;
  return sum;
}

double weight(const std::vector<double>& w, const std::vector<char>& in) {
  double sum = 0;
  for (std::size_t v = 0; v < w.size(); ++v)
    if (in[v]) sum += w[v];
  return sum;
}

/// "host h" or "{a, b, c}", or "all vertices but" either, whichever is shorter; at most 8 names.
std::string describe_set(const Topology& t, const std::vector<char>& in) {
  std::size_t inside = static_cast<std::size_t>(std::count(in.begin(), in.end(), 1));
  bool complement = inside > t.num_vertices() - inside;
  std::vector<std::string> names;
  std::string host;
  bool one_host = true;
  for (std::size_t v = 0; v < in.size(); ++v) {
    const topo::Vertex& x = t.vertex(static_cast<VertexId>(v));
    bool listed = static_cast<bool>(in[v]) != complement;
    if (listed) {
      names.push_back(x.id);
      if (names.size() == 1) host = x.host;
      one_host = one_host && !x.host.empty() && x.host == host;
    }
  }
  // Exactly one host's vertices (none of it left out)?
  for (std::size_t v = 0; v < in.size() && one_host; ++v)
    if (t.vertex(static_cast<VertexId>(v)).host == host && static_cast<bool>(in[v]) == complement) one_host = false;
  if (one_host && !names.empty()) return (complement ? "all vertices but host " : "host ") + host;
  std::string s = complement ? "all vertices but {" : "{";
  for (std::size_t k = 0; k < names.size() && k < 8; ++k) s += (k ? ", " : "") + names[k];
  if (names.size() > 8) s += ", ... +" + std::to_string(names.size() - 8) + " more";
  return s + "}";
}

struct RatioCut {
  std::vector<char> in;  // empty: no cut separates the ranks
  double ranks = 0;
  double out_gbps = 0;
  bool exact = true;  // false: the left-out rank ran over one rank per host only
  double ratio() const { return out_gbps > 0 ? ranks / out_gbps : 0.0; }
};

/// max over vertex sets S holding some but not all ranks of w(S) / B+(S), exactly (up to a
/// relative 1e-9 of floating point), where w(v) counts the ranks on vertex v.
///
/// For a fixed x, "is there S with w(S) - x B+(S) > 0?" is a minimum cut: a source arc to each
/// rank vertex v of capacity w(v) (cut when v is left out of S), every link direction u->v at
/// x * bandwidth (cut when u in S and v not), S = the source side. Then
///     max_S [w(S) - x B+(S)] = W - mincut,   W = total rank weight.
/// A source side with no rank scores <= 0, so "some rank inside" needs no constraint. "Not all
/// ranks inside" does: one rank vertex r is tied to the sink with unbounded capacity, and r runs
/// over every rank vertex. For each r Dinkelbach's iteration raises x to the ratio of the cut
/// found until the best cut scores 0 (it converges in a few steps: each x is the ratio of a
/// strictly better cut). Since w(S) - x B+(S) only falls as x grows, a rank vertex that scored
/// <= 0 for an earlier x still does, so one sweep over r suffices: |rank vertices| + #improvements
/// max flows in all.
constexpr std::size_t kExactSinks = 512;

RatioCut max_ratio_cut(const Topology& t, const std::vector<double>& w) {
  std::size_t n = t.num_vertices();
  std::vector<VertexId> ranked;
  double total = 0;
  for (std::size_t v = 0; v < n; ++v)
    if (w[v] > 0) {
      ranked.push_back(static_cast<VertexId>(v));
      total += w[v];
    }
  RatioCut best;
  if (ranked.size() < 2) return best;
  // Start from the best single vertex or everything-but-one-vertex cut: on a switch the latter
  // is already optimal, so most sweeps need no improvement at all.
  for (VertexId v : ranked) {
    double out = 0;
    for (const topo::Adjacent& a : t.adjacent(v)) out += t.link(a.link).bw_gbps;
    for (bool rest : {false, true}) {
      RatioCut c{std::vector<char>(n, rest ? 1 : 0), rest ? total - w[v] : w[v], out};
      c.in[v] = rest ? 0 : 1;
      if (c.out_gbps > 0 && (best.in.empty() || c.ratio() > best.ratio())) best = std::move(c);
    }
  }
  FlowNet net(t);
  double finite_links = total_bw(t);
  std::vector<double> src(w), dst(n, 0.0);
  // Beyond kExactSinks rank vertices the left-out rank runs over the first rank vertex of each
  // host only (and every rank vertex on the fabric): one max flow per host instead of per GPU.
  // Every cut found is still a real cut, so the bound stays a valid lower bound; on clusters of
  // identical hosts the symmetric optimum is among them. RatioCut::exact says which was done.
  // Either way, ranks of a host that an automorphism maps onto another host are skipped, exactly:
  // their cuts mirror cuts left-out ranks of that host see (detail::mirrored_hosts). 2048
  // identical DGX H100 hosts on a rail-optimised fat-tree then cost one max flow (and one per
  // improvement), not 2048. RatioCut::exact still says which sweep was done.
  std::vector<VertexId> sinks;
  std::vector<char> twin = detail::mirrored_hosts(t, w);
  bool all = ranked.size() <= kExactSinks;
  std::set<std::string_view> seen;
  std::size_t candidates = 0;  // sinks before twins are skipped
  for (VertexId r : ranked) {
    bool first_of_host = t.vertex(r).host.empty() || seen.insert(t.vertex(r).host).second;
    if (!all && !first_of_host) continue;
    ++candidates;
    if (!twin[r]) sinks.push_back(r);
  }
  for (VertexId r : sinks) {
    for (;;) {
      double x = best.ratio();
      dst[r] = FlowNet::unbounded(x * finite_links + total);
      double flow = net.run(x, src, dst);
      dst[r] = 0;
      if (total - flow <= 1e-9 * total) break;
      std::vector<char> in = net.source_side(1e-12 * std::max(1.0, x * finite_links));
      RatioCut c{in, weight(w, in), leaving(t, in)};
      if (c.ranks <= 0 || c.ranks >= total || c.out_gbps <= 0 || c.ratio() <= x * (1 + 1e-12)) break;
      best = std::move(c);
    }
  }
  best.exact = candidates == ranked.size();
  return best;
}

/// Rank weight per vertex for the first `p` ranks.
std::vector<double> rank_weights(const Topology& t, int p) {
  std::vector<double> w(t.num_vertices(), 0.0);
  for (int r = 0; r < p; ++r) w[t.rank_vertex(static_cast<topo::Rank>(r))] += 1;
  return w;
}

/// AllGather: the shards of the ranks in S must leave S. ReduceScatter is the mirror image (the
/// contributions of the ranks outside S must enter it, over B-(S) = B+(S) as every link has one
/// bandwidth both ways); AllReduce without in-network reduction is a ReduceScatter and an AllGather.
// The ratio does not depend on the bytes: a sweep over sizes, or auto over algorithms, asks for
// the same cut many times. Memoised per (topology fingerprint, ranks); the max flows run once.
RatioCut cached_max_ratio_cut(const Topology& t, int p) {
  static std::mutex mutex;
  static std::map<std::pair<std::uint64_t, int>, RatioCut> cache;
  auto key = std::make_pair(t.fingerprint(), p);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  RatioCut c = max_ratio_cut(t, rank_weights(t, p));
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() > 64) cache.clear();  // a bound, not a leak, for long-lived callers
  return cache.emplace(key, std::move(c)).first->second;
}

void forestcoll(const Request& req, const Topology& t, Bound& b) {
  RatioCut c = cached_max_ratio_cut(t, req.nranks);
  if (c.in.empty()) {
    b.witness = "all ranks share one vertex: no cut separates them";
    return;
  }
  double shard = static_cast<double>(req.bytes) / req.nranks;
  bool ag = req.coll == Collective::AllGather;
  double factor = req.coll == Collective::AllReduce ? 2.0 : 1.0;
  b.bandwidth_us = factor * shard * c.ratio() * kUsPerByteGbps;
  b.witness = std::string(req.coll == Collective::AllReduce ? "2 x reduce-scatter: " : "") + "S = " + describe_set(t, c.in) +
              ": " + num(c.ranks) + " of " + std::to_string(req.nranks) + " ranks inside, " + num(c.out_gbps) +
              " GB/s leaves S; " + num(c.ranks) + " shards of " + num(shard) + " bytes must " + (ag ? "leave" : "enter") + " S";
  if (!c.exact) b.witness += " (cuts searched leaving out one rank per host: valid, exact on identical hosts)";
}

/// AlltoAll: each ordered pair of ranks exchanges bytes / p; a cut with k ranks on one side
/// carries k (p - k) of those pieces each way.
void alltoall(const Request& req, const Topology& t, Bound& b) {
  int p = req.nranks;
  auto w = rank_weights(t, p);
  double piece = static_cast<double>(req.bytes) / p;
  auto consider = [&](double k, double gbps, const std::string& what) {
    if (k <= 0 || k >= p || gbps <= 0) return;
    double us = k * (p - k) * piece / gbps * kUsPerByteGbps;
    if (us > b.bandwidth_us) {
      b.bandwidth_us = us;
      b.witness = what + ": " + num(k) + " x " + num(p - k) + " pieces of " + num(piece) + " bytes cross " + num(gbps) + " GB/s";
    }
  };
  for (std::size_t v = 0; v < t.num_vertices(); ++v) {
    if (w[v] <= 0) continue;
    double out = 0;
    for (const topo::Adjacent& a : t.adjacent(static_cast<VertexId>(v))) out += t.link(a.link).bw_gbps;
    consider(w[v], out, "vertex " + t.vertex(static_cast<VertexId>(v)).id + " (" + num(w[v]) + " of " + std::to_string(p) + " ranks)");
  }
  // Groups of ranks against the rest, through the min cut between them.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  auto hosts = topo::ranks_by_host(t);
  std::vector<int> first_half;
  std::size_t half_hosts = 0;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    std::vector<int> g;
    for (topo::Rank r : hosts[h].ranks)
      if (static_cast<int>(r) < p) g.push_back(static_cast<int>(r));
    if (!hosts[h].host.empty()) groups.push_back({"ranks of host " + hosts[h].host, g});
    if (h < hosts.size() / 2) {
      first_half.insert(first_half.end(), g.begin(), g.end());
      ++half_hosts;
    }
  }
  if (half_hosts > 0) groups.push_back({"the first " + std::to_string(half_hosts) + " of " + std::to_string(hosts.size()) + " hosts", first_half});
  for (const auto& sg : topo::ranks_by_switch(t, topo::VertexKind::NetSwitch)) {
    std::vector<int> g;
    for (topo::Rank r : sg.ranks)
      if (static_cast<int>(r) < p) g.push_back(static_cast<int>(r));
    groups.push_back({"ranks under switch " + t.vertex(sg.sw).id, g});
  }
  FlowNet net(t);
  double inf = FlowNet::unbounded(total_bw(t));
  for (const auto& [name, g] : groups) {
    if (g.empty() || static_cast<int>(g.size()) >= p) continue;
    std::vector<double> src(t.num_vertices(), 0.0), dst(t.num_vertices(), 0.0);
    for (int r : g) src[t.rank_vertex(static_cast<topo::Rank>(r))] = inf;
    bool disjoint = true;
    for (int r = 0; r < p; ++r) {
      VertexId v = t.rank_vertex(static_cast<topo::Rank>(r));
      if (src[v] > 0 && std::find(g.begin(), g.end(), r) == g.end()) disjoint = false;
      if (src[v] == 0) dst[v] = inf;
    }
    if (!disjoint) continue;
    consider(static_cast<double>(g.size()), net.run(1.0, src, dst), name + " vs the rest");
  }
}

/// Broadcast / Reduce: every rank needs the root's n bytes (or the root needs everyone's).
void rooted(const Request& req, const Topology& t, Bound& b) {
  VertexId root = t.rank_vertex(static_cast<topo::Rank>(req.root));
  bool reduce = req.coll == Collective::Reduce;
  FlowNet net(t);
  double inf = FlowNet::unbounded(total_bw(t));
  std::vector<char> done(t.num_vertices(), 0);
  done[root] = 1;
  double worst = std::numeric_limits<double>::infinity();
  VertexId worst_v = root;
  for (int r = 0; r < req.nranks; ++r) {
    VertexId v = t.rank_vertex(static_cast<topo::Rank>(r));
    if (done[v]) continue;
    done[v] = 1;
    std::vector<double> src(t.num_vertices(), 0.0), dst(t.num_vertices(), 0.0);
    src[reduce ? v : root] = inf;
    dst[reduce ? root : v] = inf;
    double f = net.run(1.0, src, dst);
    if (f < worst) {
      worst = f;
      worst_v = v;
    }
  }
  if (worst_v == root) return;
  b.bandwidth_us = static_cast<double>(req.bytes) / worst * kUsPerByteGbps;
  std::string rootname = "root rank " + std::to_string(req.root) + " (" + t.vertex(root).id + ")";
  std::string other = "vertex " + t.vertex(worst_v).id;
  b.witness = (reduce ? other + " to " + rootname : rootname + " to " + other) + ": max flow " + num(worst) + " GB/s for " +
              std::to_string(req.bytes) + " bytes";
}

// Both terms cost one search, not one per rank, so the bound stays cheap at 16k ranks:
//  - no message between two ranks takes less than the smallest path latency between two distinct
//    rank endpoints (0 when ranks share a vertex), found for all pairs at once by a multi-source
//    search over latency (the closest pair meets across some link whose two ends were reached
//    from different endpoints); ceil(log2 p) rounds of messages are needed (single-port argument);
//  - data must reach the rank farthest from rank 0 (from the root for Broadcast; into the root
//    for Reduce), so T >= that route's latency.
void latency(const Request& req, const Topology& t, Bound& b) {
  int p = req.nranks;
  if (p < 2) return;
  std::vector<char> is_rank(t.num_vertices(), 0);
  bool shared = false;
  std::vector<VertexId> verts;
  for (int r = 0; r < p; ++r) {
    VertexId v = t.rank_vertex(static_cast<topo::Rank>(r));
    if (is_rank[v]) shared = true;
    else verts.push_back(v);
    is_rank[v] = 1;
  }
  double nearest = std::numeric_limits<double>::infinity();
  {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> dist(t.num_vertices(), inf);
    std::vector<VertexId> owner(t.num_vertices(), 0);
    using Item = std::pair<double, VertexId>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
    for (VertexId v : verts) {
      dist[v] = 0;
      owner[v] = v;
      heap.push({0.0, v});
    }
    while (!heap.empty()) {
      auto [d, u] = heap.top();
      heap.pop();
      if (d > dist[u]) continue;
      for (const topo::Adjacent& a : t.adjacent(u)) {
        double nd = d + t.link(a.link).latency_us;
        if (nd < dist[a.peer]) {
          dist[a.peer] = nd;
          owner[a.peer] = owner[u];
          heap.push({nd, a.peer});
        }
      }
    }
    for (const topo::Link& l : t.links())
      if (owner[l.a] != owner[l.b] && dist[l.a] < inf && dist[l.b] < inf)
        nearest = std::min(nearest, dist[l.a] + l.latency_us + dist[l.b]);
  }
  if (shared || verts.size() < 2 || !std::isfinite(nearest)) nearest = 0;
  VertexId from = t.rank_vertex(static_cast<topo::Rank>(facts(req.coll).has_root ? req.root : 0));
  double farthest = 0;
  topo::Router router(t);
  // Routes are symmetric (full-duplex links, symmetric host confinement), so the routes into
  // the root of a Reduce are the routes out of it reversed.
  for (const auto& path : router.routes_to(from, verts))
    if (path.found) farthest = std::max(farthest, path.latency_us);
  double rounds = std::ceil(std::log2(static_cast<double>(p)));
  b.latency_us = std::max(rounds * nearest, farthest);
}

}  // namespace

Bound lower_bound(const Request& req, const topo::Topology& topo) {
  check(req);
  if (static_cast<std::size_t>(req.nranks) > topo.num_ranks())
    throw InputError("lower bound: the request has " + std::to_string(req.nranks) + " ranks but topology \"" + topo.name +
                     "\" maps " + std::to_string(topo.num_ranks()));
  Bound b;
  if (req.nranks < 2) {
    b.witness = "one rank: nothing crosses a link";
    return b;
  }
  switch (req.coll) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllReduce: forestcoll(req, topo, b); break;
    case Collective::AlltoAll: alltoall(req, topo, b); break;
    case Collective::Broadcast:
    case Collective::Reduce: rooted(req, topo, b); break;
  }
  latency(req, topo, b);
  return b;
}

double gap_percent(double predicted_us, const Bound& b) {
  double bound = b.time_us();
  return bound > 0 ? 100.0 * (predicted_us - bound) / bound : 0.0;
}

}  // namespace collkit::plan
