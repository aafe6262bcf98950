// Cut searches behind the lower bounds (docs/plan.md, "Lower bounds"): ForestColl's maximum
// ratio cut and the minimum cut between two rank vertices, both by max flow over the whole
// topology (Boost.Graph push-relabel), both memoised per (topology, ranks).

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <set>
#include <string_view>

#include "bounds_internal.h"
#include "host_symmetry.h"

namespace collkit::plan::bounds {

using topo::Topology;
using topo::VertexId;

std::string num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.6g}", v);
}

double total_bw(const Topology& t) {
  double sum = 0;
  for (const topo::Link& l : t.links()) sum += l.bw_gbps;
  return sum;
}

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

double vertex_bw(const Topology& t, VertexId v) {
  double out = 0;
  for (const topo::Adjacent& a : t.adjacent(v)) out += t.link(a.link).bw_gbps;
  return out;
}

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

std::vector<double> rank_weights(const Topology& t, int p) {
  std::vector<double> w(t.num_vertices(), 0.0);
  for (int r = 0; r < p; ++r) w[t.rank_vertex(static_cast<topo::Rank>(r))] += 1;
  return w;
}

FlowNet::FlowNet(const Topology& t) : t_(t), g_(t.num_vertices() + 2) {
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

double FlowNet::run(double scale, const std::vector<double>& src, const std::vector<double>& dst) {
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

double FlowNet::run_links(const std::vector<double>& link_cap, const std::vector<double>& src, const std::vector<double>& dst) {
  for (std::size_t l = 0; l < t_.num_links(); ++l) {
    cap_[link_arcs_[2 * l]] = link_cap[l];
    cap_[link_arcs_[2 * l + 1]] = link_cap[l];
  }
  for (std::size_t v = 0; v < t_.num_vertices(); ++v) {
    cap_[from_source_[v]] = src[v];
    cap_[to_sink_[v]] = dst[v];
  }
  return boost::push_relabel_max_flow(g_, source_, sink_);
}

std::vector<char> FlowNet::source_side(double tolerance) const {
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

namespace {

std::vector<VertexId> ranked_vertices(const std::vector<double>& w, double& total) {
  std::vector<VertexId> ranked;
  total = 0;
  for (std::size_t v = 0; v < w.size(); ++v)
    if (w[v] > 0) {
      ranked.push_back(static_cast<VertexId>(v));
      total += w[v];
    }
  return ranked;
}

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
RankCut search_max_ratio_cut(const Topology& t, const std::vector<double>& w) {
  std::size_t n = t.num_vertices();
  double total = 0;
  std::vector<VertexId> ranked = ranked_vertices(w, total);
  RankCut best;
  if (ranked.size() < 2) return best;
  // Start from the best single vertex or everything-but-one-vertex cut: on a switch the latter
  // is already optimal, so most sweeps need no improvement at all.
  // The vertex set is written out only for a cut that wins (16384 ranks: not 32768 sets of
  // every vertex).
  for (VertexId v : ranked) {
    double out = vertex_bw(t, v);
    for (bool rest : {false, true}) {
      RankCut c{{}, rest ? total - w[v] : w[v], out};
      if (c.out_gbps > 0 && (best.in.empty() || c.ratio() > best.ratio())) {
        c.in.assign(n, rest ? 1 : 0);
        c.in[v] = rest ? 0 : 1;
        best = std::move(c);
      }
    }
  }
  FlowNet net(t);
  double finite_links = total_bw(t);
  std::vector<double> src(w), dst(n, 0.0);
  // Beyond kExactSinks rank vertices the left-out rank runs over the first rank vertex of each
  // host only (and every rank vertex on the fabric): one max flow per host instead of per GPU.
  // Every cut found is still a real cut, so the bound stays a valid lower bound; on clusters of
  // identical hosts the symmetric optimum is among them. RankCut::exact says which was done.
  // Either way, ranks of a host that an automorphism maps onto another host are skipped, exactly:
  // their cuts mirror cuts left-out ranks of that host see (detail::mirrored_hosts). 2048
  // identical DGX H100 hosts on a rail-optimised fat-tree then cost one max flow (and one per
  // improvement), not 2048.
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
      RankCut c{in, weight(w, in), leaving(t, in)};
      if (c.ranks <= 0 || c.ranks >= total || c.out_gbps <= 0 || c.ratio() <= x * (1 + 1e-12)) break;
      best = std::move(c);
    }
  }
  best.exact = candidates == ranked.size();
  return best;
}

// What the max flows found so far show of the others' (least_flow's argument, bounds_internal.h):
// per vertex, a flow from the common source that it has at least.
class FlowFloor {
 public:
  explicit FlowFloor(const Topology& t) : t_(t), at_least_(t.num_vertices(), 0.0) {}
  double at_least(topo::VertexId v) const { return at_least_[v]; }
  /// v's flow is f: every vertex that a path from v reaches has at least the smaller of f and the
  /// path's narrowest link (the widest such path, found as Dijkstra's with max-min for sum-min).
  void found(topo::VertexId v, double f) {
    std::vector<double> w(t_.num_vertices(), 0.0);
    w[v] = f;
    std::priority_queue<std::pair<double, topo::VertexId>> heap;
    heap.emplace(f, v);
    while (!heap.empty()) {
      auto [b, u] = heap.top();
      heap.pop();
      if (b < w[u]) continue;
      for (const topo::Adjacent& a : t_.adjacent(u)) {
        double through = std::min(b, t_.link(a.link).bw_gbps);
        if (through > w[a.peer]) {
          w[a.peer] = through;
          heap.emplace(through, a.peer);
        }
      }
    }
    for (std::size_t x = 0; x < w.size(); ++x) at_least_[x] = std::max(at_least_[x], w[x]);
  }

 private:
  const Topology& t_;
  std::vector<double> at_least_;
};

/// min over vertex sets S holding some but not all ranks of B+(S): every such S separates the
/// first rank vertex r0 from some other rank vertex t, so it is the least of the max flows from
/// r0 to each t (exact up to floating point), after the cuts that cost no max flow (each rank
/// vertex alone, each host) have set the value to beat. Beyond kExactMinCut rank vertices only
/// those are tried. Every set tried is a real cut, so the result is valid either way;
/// RankCut::exact says which search was done.
RankCut search_min_rank_cut(const Topology& t, const std::vector<double>& w) {
  std::size_t n = t.num_vertices();
  double total = 0;
  std::vector<VertexId> ranked = ranked_vertices(w, total);
  RankCut best;
  if (ranked.size() < 2) return best;
  auto better = [&](double out) { return out > 0 && (best.in.empty() || out < best.out_gbps); };
  for (VertexId v : ranked) {
    double out = vertex_bw(t, v);
    if (!better(out)) continue;
    best = RankCut{std::vector<char>(n, 0), w[v], out};
    best.in[v] = 1;
  }
  // Each host's vertices, all at once: one pass over the links.
  std::map<std::string_view, std::size_t> host_index;
  std::vector<int> host_of(n, -1);
  for (std::size_t v = 0; v < n; ++v) {
    const std::string& h = t.vertex(static_cast<VertexId>(v)).host;
    if (!h.empty()) host_of[v] = static_cast<int>(host_index.emplace(h, host_index.size()).first->second);
  }
  std::vector<double> host_out(host_index.size(), 0.0), host_w(host_index.size(), 0.0);
  for (std::size_t v = 0; v < n; ++v)
    if (host_of[v] >= 0) host_w[static_cast<std::size_t>(host_of[v])] += w[v];
  for (const topo::Link& l : t.links()) {
    int a = host_of[l.a], b = host_of[l.b];
    if (a == b) continue;
    if (a >= 0) host_out[static_cast<std::size_t>(a)] += l.bw_gbps;
    if (b >= 0) host_out[static_cast<std::size_t>(b)] += l.bw_gbps;
  }
  for (std::size_t h = 0; h < host_out.size(); ++h) {
    if (host_w[h] <= 0 || host_w[h] >= total || !better(host_out[h])) continue;
    best = RankCut{std::vector<char>(n, 0), host_w[h], host_out[h]};
    for (std::size_t v = 0; v < n; ++v) best.in[v] = host_of[v] == static_cast<int>(h);
  }
  best.exact = ranked.size() <= kExactMinCut;
  if (!best.exact) return best;
  FlowNet net(t);
  double finite = total_bw(t);
  std::vector<double> src(n, 0.0), dst(n, 0.0);
  src[ranked.front()] = FlowNet::unbounded(finite);
  // A rank vertex whose flow from r0 a path from one already done shows to be no lower than the
  // best cut so far is skipped, as least_flow does (on hosts a switch joins, one max flow a host).
  FlowFloor floor(t);
  for (std::size_t k = 1; k < ranked.size(); ++k) {
    if (!best.in.empty() && floor.at_least(ranked[k]) >= best.out_gbps) continue;
    dst[ranked[k]] = FlowNet::unbounded(finite);
    double flow = net.run(1.0, src, dst);
    dst[ranked[k]] = 0;
    floor.found(ranked[k], flow);
    if (!better(flow * (1 + 1e-12))) continue;
    std::vector<char> in = net.source_side(1e-12 * std::max(1.0, finite));
    RankCut c{in, weight(w, in), leaving(t, in)};
    if (c.ranks > 0 && c.ranks < total && better(c.out_gbps)) best = std::move(c);
  }
  return best;
}

template <class Search>
RankCut memoised(const Topology& t, int p, std::uint64_t fingerprint, Search search) {
  static std::mutex mutex;
  static std::map<std::pair<std::uint64_t, int>, RankCut> cache;
  auto key = std::make_pair(fingerprint, p);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  RankCut c = search(t, rank_weights(t, p));
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() > 64) cache.clear();  // a bound, not a leak, for long-lived callers
  return cache.emplace(key, std::move(c)).first->second;
}

}  // namespace

// Each search gets its own cache: memoised<> is instantiated once per lambda type.
RankCut max_ratio_cut(const Topology& t, int p, std::uint64_t fingerprint) {
  return memoised(t, p, fingerprint, [](const Topology& g, const std::vector<double>& w) { return search_max_ratio_cut(g, w); });
}

RankCut min_rank_cut(const Topology& t, int p, std::uint64_t fingerprint) {
  return memoised(t, p, fingerprint, [](const Topology& g, const std::vector<double>& w) { return search_min_rank_cut(g, w); });
}

LeastFlow least_flow(const Topology& t, topo::VertexId from, const std::vector<topo::VertexId>& to, bool into) {
  LeastFlow out;
  out.gbps = std::numeric_limits<double>::infinity();
  out.at = from;
  FlowNet net(t);
  double inf = FlowNet::unbounded(total_bw(t));
  FlowFloor floor(t);
  std::vector<char> done(t.num_vertices(), 0);
  done[from] = 1;
  for (topo::VertexId v : to) {
    if (done[v]) continue;
    done[v] = 1;
    if (floor.at_least(v) >= out.gbps) continue;
    std::vector<double> src(t.num_vertices(), 0.0), dst(t.num_vertices(), 0.0);
    src[into ? v : from] = inf;
    dst[into ? from : v] = inf;
    double f = net.run(1.0, src, dst);
    ++out.flows;
    if (f < out.gbps) {
      out.gbps = f;
      out.at = v;
    }
    floor.found(v, f);
  }
  return out;
}

}  // namespace collkit::plan::bounds
