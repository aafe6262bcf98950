// Tree packing on the split graph (trees.h, docs/synth.md).

#include "synth/trees.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "collkit/core/error.h"
#include "synth/flow.h"

namespace collkit::plan::synth {

namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

/// Whether the trees not yet begun (`waiting` per root) and one growing tree spanning `in` fit
/// into `left` units per arc. Edmonds' theorem for root sets: they fit iff every vertex set X
/// is entered by at least as many arcs as there are trees with no vertex in X, i.e. iff a source
/// feeding each root its waiting count, and the growing tree's vertices together one unit, can
/// send every tree's unit to each vertex.
bool fits(const SplitGraph& g, const std::vector<std::int64_t>& left, const std::vector<std::int64_t>& waiting, const std::vector<char>& in,
          int& flows) {
  std::size_t n = g.nodes.size();
  ArcNetwork net(n + 1);  // vertex n: the growing tree
  for (std::size_t a = 0; a < g.arcs.size(); ++a) net.arc(g.arcs[a].from, g.arcs[a].to, left[a]);
  std::int64_t total = 1;
  for (std::size_t v = 0; v < n; ++v) {
    net.arc(net.source(), v, waiting[v]);
    total += waiting[v];
    if (in[v]) net.arc(n, v, ArcNetwork::kInfinite);
  }
  net.arc(net.source(), n, 1);
  std::size_t base = net.size();
  for (std::size_t v = 0; v < n; ++v) {
    net.truncate(base);
    net.arc(v, net.sink(), ArcNetwork::kInfinite);
    ++flows;
    if (net.max_flow() < total) return false;
  }
  return true;
}

}  // namespace

Packing pack_trees(const SplitGraph& g) {
  Packing out;
  std::size_t n = g.nodes.size();
  std::int64_t p = std::accumulate(g.roots.begin(), g.roots.end(), std::int64_t{0});
  if (n < 2) {
    for (std::size_t v = 0; v < n; ++v)
      for (std::int64_t i = 0; i < g.roots[v] * g.trees; ++i) out.trees.push_back({v, {}, std::vector<std::size_t>(n, kNone), 0});
    return out;
  }
  std::int64_t least = min_rooted_flow(g);
  if (least < p * g.trees)
    throw Error(fmt::format("synth: the split graph cannot hold {} trees per root: a rank vertex receives {} of {} units", g.trees, least,
                            p * g.trees));
  std::vector<std::int64_t> left(g.arcs.size()), waiting(n);
  for (std::size_t a = 0; a < g.arcs.size(); ++a) left[a] = g.arcs[a].units;
  for (std::size_t v = 0; v < n; ++v) waiting[v] = g.roots[v] * g.trees;
  std::vector<std::vector<std::size_t>> leaving(n);
  for (std::size_t a = 0; a < g.arcs.size(); ++a) leaving[g.arcs[a].from].push_back(a);

  for (std::size_t root = 0; root < n; ++root) {
    while (waiting[root] > 0) {
      --waiting[root];
      Tree tree{root, {}, std::vector<std::size_t>(n, kNone), 0};
      std::vector<char> in(n, 0);
      std::vector<int> depth(n, 0);
      in[root] = 1;
      for (std::size_t size = 1; size < n; ++size) {
        // Candidates: arcs leaving the tree with units left, shallowest first (the tree's depth
        // is the latency), then the most units left (spreads the load).
        std::vector<std::size_t> cand;
        for (std::size_t v = 0; v < n; ++v)
          if (in[v])
            for (std::size_t a : leaving[v])
              if (left[a] > 0 && !in[g.arcs[a].to]) cand.push_back(a);
        std::stable_sort(cand.begin(), cand.end(), [&](std::size_t a, std::size_t b) {
          if (depth[g.arcs[a].from] != depth[g.arcs[b].from]) return depth[g.arcs[a].from] < depth[g.arcs[b].from];
          return left[a] > left[b];
        });
        bool grown = false;
        for (std::size_t a : cand) {
          std::size_t to = g.arcs[a].to;
          --left[a];
          in[to] = 1;
          if (fits(g, left, waiting, in, out.flows)) {
            tree.arcs.push_back(a);
            tree.parent[to] = a;
            depth[to] = depth[g.arcs[a].from] + 1;
            tree.depth = std::max(tree.depth, depth[to]);
            grown = true;
            break;
          }
          ++left[a];
          in[to] = 0;
        }
        if (!grown) throw Error(fmt::format("synth: tree {} of root node {} cannot grow past {} vertices", out.trees.size(), root, size));
      }
      out.trees.push_back(std::move(tree));
    }
  }
  return out;
}

}  // namespace collkit::plan::synth
