// The optimal AllGather rate by max flows (rate.h, docs/synth.md).

#include "synth/rate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "bounds_internal.h"

namespace collkit::plan::synth {

namespace {

/// Bandwidth in whole 0.001 GB/s, the unit the tree count is worked out in.
std::int64_t milli(double gbps) { return std::llround(gbps * 1000); }

/// The gcd of every link's bandwidth in 0.001 GB/s.
std::int64_t link_gcd(const topo::Topology& t) {
  std::int64_t g = 0;
  for (const topo::Link& l : t.links()) g = std::gcd(g, milli(l.bw_gbps));
  return g;
}

}  // namespace

Rate optimal_rate(const topo::Topology& t, int p) {
  Rate r;
  r.per_root_gbps = std::numeric_limits<double>::infinity();
  std::vector<double> w = bounds::rank_weights(t, p);
  std::vector<topo::VertexId> targets;
  for (std::size_t v = 0; v < w.size(); ++v)
    if (w[v] > 0) targets.push_back(static_cast<topo::VertexId>(v));
  if (targets.size() < 2) return r;
  double ranks = bounds::weight(w, std::vector<char>(w.size(), 1));

  // Start from the cut around one rank vertex (all vertices but it on the source side): a cut's
  // own ratio, so an upper bound on x*. x is kept as the fraction c / n (c in 0.001 GB/s, n
  // ranks) and every capacity is scaled by 1000 n, so the flows are whole numbers, exact in a
  // double: links at milli(bw) n, the source to v at w(v) c, and each target needs p c.
  std::vector<char> best(w.size(), 1);
  best[targets[0]] = 0;
  std::int64_t c = milli(bounds::leaving(t, best));
  std::int64_t n = std::llround(ranks - w[targets[0]]);
  bounds::FlowNet net(t);
  for (;;) {
    bool improved = false;
    std::vector<double> src(w.size()), dst(w.size(), 0);
    for (std::size_t v = 0; v < w.size(); ++v) src[v] = w[v] * static_cast<double>(c);
    double need = ranks * static_cast<double>(c);
    double scale = 1000.0 * static_cast<double>(n);
    for (topo::VertexId v : targets) {
      dst[v] = bounds::FlowNet::unbounded(need + scale * bounds::total_bw(t));
      double flow = net.run(scale, src, dst);
      ++r.flows;
      dst[v] = 0;
      if (flow >= need - 0.5) continue;
      std::vector<char> a = net.source_side(0.5);
      std::int64_t in = std::llround(bounds::weight(w, a));
      std::int64_t out = milli(bounds::leaving(t, a));
      if (in <= 0 || out * n >= c * in) continue;  // not tighter (cannot happen with whole flows)
      c = out;
      n = in;
      best = a;
      improved = true;
      break;
    }
    if (!improved) break;
  }
  double x = static_cast<double>(c) / 1000.0 / static_cast<double>(n);
  r.per_root_gbps = x;
  r.cut_ranks = bounds::weight(w, best);
  r.cut_gbps = bounds::leaving(t, best);
  // x* = C / n with C the cut's bandwidth in milli-GB/s and n its ranks; a link of c units holds
  // c k / x* = c k n / C trees of x*/k each: whole for every link when k = C / gcd(C, g n), g the
  // gcd of all link bandwidths.
  std::int64_t g = link_gcd(t);
  r.trees = c > 0 && g > 0 ? c / std::gcd(c, g * n) : 0;
  return r;
}

Rate broadcast_rate(const topo::Topology& t, int p, int root) {
  Rate r;
  r.per_root_gbps = std::numeric_limits<double>::infinity();
  std::vector<double> w = bounds::rank_weights(t, p);
  std::vector<topo::VertexId> ranks;
  for (std::size_t v = 0; v < w.size(); ++v)
    if (w[v] > 0) ranks.push_back(static_cast<topo::VertexId>(v));
  bounds::LeastFlow least = bounds::least_flow(t, t.rank_vertex(static_cast<topo::Rank>(root)), ranks, false);
  r.per_root_gbps = least.gbps;
  r.flows = least.flows;
  if (std::isinf(r.per_root_gbps)) return r;
  r.cut_gbps = r.per_root_gbps;
  r.cut_ranks = 1;
  std::int64_t c = milli(r.per_root_gbps), g = link_gcd(t);
  r.trees = c > 0 && g > 0 ? c / std::gcd(c, g) : 0;
  return r;
}

double rate_for_trees(const topo::Topology& t, int p, std::int64_t k, int root) {
  Rate best = root >= 0 ? broadcast_rate(t, p, root) : optimal_rate(t, p);
  if (std::isinf(best.per_root_gbps) || k <= 0) return best.per_root_gbps;
  std::vector<double> w = bounds::rank_weights(t, p);
  std::vector<double> roots = w;  // trees rooted at each vertex, per k
  if (root >= 0) {
    roots.assign(w.size(), 0);
    roots[t.rank_vertex(static_cast<topo::Rank>(root))] = 1;
  }
  double ranks = bounds::weight(roots, std::vector<char>(w.size(), 1));
  bounds::FlowNet net(t);
  std::vector<double> caps(t.num_links());
  auto feasible = [&](double u) {
    for (std::size_t l = 0; l < caps.size(); ++l) caps[l] = std::floor(t.link(static_cast<topo::LinkId>(l)).bw_gbps / u * (1 + 1e-12));
    std::vector<double> src(w.size()), dst(w.size(), 0);
    for (std::size_t v = 0; v < w.size(); ++v) src[v] = roots[v] * static_cast<double>(k);
    double need = ranks * static_cast<double>(k), all = need;
    for (double c : caps) all += c;
    for (std::size_t v = 0; v < w.size(); ++v) {
      if (w[v] <= 0) continue;
      dst[v] = 1 + 2 * all;
      double flow = net.run_links(caps, src, dst);
      dst[v] = 0;
      if (flow < need - 0.5) return false;
    }
    return true;
  };
  // u = x*/k is the most any unit can be (whole units never beat the fractional rate).
  double hi = best.per_root_gbps / static_cast<double>(k) * (1 + 1e-9), lo = 0;
  if (feasible(hi)) return best.per_root_gbps;
  double min_bw = std::numeric_limits<double>::infinity();
  for (const topo::Link& l : t.links()) min_bw = std::min(min_bw, l.bw_gbps);
  lo = hi;
  while (lo > 0 && !feasible(lo)) lo /= 2;
  if (lo <= min_bw * 1e-9) return 0;
  for (int i = 0; i < 60 && hi - lo > lo * 1e-12; ++i) {
    double mid = (lo + hi) / 2;
    (feasible(mid) ? lo : hi) = mid;
  }
  // Snap to the largest bw / m <= lo: the units change only there, so it is feasible too.
  double u = 0;
  for (const topo::Link& l : t.links()) u = std::max(u, l.bw_gbps / std::ceil(l.bw_gbps / lo * (1 - 1e-12)));
  return static_cast<double>(k) * std::max(u, lo);
}

}  // namespace collkit::plan::synth
