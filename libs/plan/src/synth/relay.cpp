// Relay trees over the neighbour graph of shortest routes (relay.h, docs/synth.md).

#include "synth/relay.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <utility>

#include "collkit/topo/routing.h"

namespace collkit::plan::synth {

namespace {

using Routes = std::vector<std::vector<std::vector<std::uint32_t>>>;  // [a][b]: link directions of the route a -> b

/// Whether every rank reaches every other over the arcs with at most `h` links.
bool strongly_connected(const std::vector<std::vector<int>>& hops, int h) {
  auto p = hops.size();
  for (bool reverse : {false, true}) {
    std::vector<char> seen(p, 0);
    std::deque<std::size_t> todo{0};
    seen[0] = 1;
    std::size_t reached = 1;
    while (!todo.empty()) {
      std::size_t a = todo.front();
      todo.pop_front();
      for (std::size_t b = 0; b < p; ++b) {
        int hb = reverse ? hops[b][a] : hops[a][b];
        if (b == a || seen[b] || hb < 0 || hb > h) continue;
        seen[b] = 1;
        ++reached;
        todo.push_back(b);
      }
    }
    if (reached != p) return false;
  }
  return true;
}

/// The neighbour graph: routes as link directions, their lengths, the length h that joins every
/// rank (-1: none does, or only every pair does) and the link directions' bandwidths.
struct Neighbours {
  std::size_t n = 0;
  Routes route;
  std::vector<std::vector<int>> hops;
  int h = -1;
  std::vector<double> bw;  // per link direction
  bool arc(std::size_t a, std::size_t b) const { return a != b && hops[a][b] >= 0 && hops[a][b] <= h; }
};

Neighbours neighbours(const topo::Topology& t, int p) {
  Neighbours g;
  auto n = static_cast<std::size_t>(p);
  g.n = n;
  std::vector<topo::VertexId> ends;
  for (int r = 0; r < p; ++r) ends.push_back(t.rank_vertex(static_cast<topo::Rank>(r)));
  // Every rank-to-rank route as link directions, and its length in links (-1: none).
  topo::Router router(t);
  g.route.assign(n, std::vector<std::vector<std::uint32_t>>(n));
  g.hops.assign(n, std::vector<int>(n, -1));
  std::vector<int> lengths;
  for (std::size_t a = 0; a < n; ++a) {
    std::vector<topo::Path> paths = router.routes_to(ends[a], ends);
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b || !paths[b].found || paths[b].hops.empty()) continue;
      for (const topo::Hop& hop : paths[b].hops) g.route[a][b].push_back(static_cast<std::uint32_t>(hop.channel()));
      g.hops[a][b] = static_cast<int>(paths[b].hops.size());
      lengths.push_back(g.hops[a][b]);
    }
  }
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  for (int len : lengths)
    if (strongly_connected(g.hops, len)) {
      g.h = len == lengths.back() ? -1 : len;  // every pair: stars
      break;
    }
  g.bw.assign(2 * t.num_links(), 0);
  for (std::size_t l = 0; l < t.num_links(); ++l) g.bw[2 * l] = g.bw[2 * l + 1] = t.link(static_cast<topo::LinkId>(l)).bw_gbps;
  return g;
}

/// k times the least, over link directions, of bandwidth over the tree arcs crossing it.
double per_root_rate(const Neighbours& g, const std::vector<std::vector<int>>& trees, int k) {
  std::vector<double> load(g.bw.size(), 0);
  for (const std::vector<int>& parent : trees)
    for (std::size_t v = 0; v < parent.size(); ++v)
      if (parent[v] >= 0)
        for (std::uint32_t e : g.route[static_cast<std::size_t>(parent[v])][v]) load[e] += 1;
  double worst = 0;
  for (std::size_t e = 0; e < load.size(); ++e)
    if (load[e] > 0) worst = std::max(worst, load[e] / g.bw[e]);
  return worst > 0 ? static_cast<double>(k) / worst : 0;
}

/// A Hamiltonian cycle of the neighbour graph's two-way arcs, none of them in `used`: depth-first
/// from rank 0, the neighbour with the fewest ranks still to visit first (Warnsdorff; ties by
/// rank, rotated by `turn`), at most `budget` steps; empty if none was found.
std::vector<std::size_t> hamiltonian_cycle(const Neighbours& g, const std::vector<std::vector<char>>& used, long budget, std::size_t turn) {
  std::size_t n = g.n;
  std::vector<std::vector<std::size_t>> adj(n);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      if (g.arc(a, b) && g.arc(b, a) && !used[a][b]) adj[a].push_back(b);
  std::vector<std::size_t> path{0};
  std::vector<char> on(n, 0);
  on[0] = 1;
  long steps = 0;
  auto free_around = [&](std::size_t b) {
    std::size_t c = 0;
    for (std::size_t x : adj[b]) c += !on[x];
    return c;
  };
  std::function<bool(std::size_t)> extend = [&](std::size_t a) -> bool {
    if (path.size() == n) return std::find(adj[a].begin(), adj[a].end(), std::size_t{0}) != adj[a].end();
    if (++steps > budget) return false;
    std::vector<std::pair<std::size_t, std::size_t>> next;  // (free neighbours, rank)
    for (std::size_t b : adj[a])
      if (!on[b]) next.emplace_back(free_around(b) * n + (b + turn) % n, b);
    std::sort(next.begin(), next.end());
    for (const auto& choice : next) {
      std::size_t b = choice.second;
      on[b] = 1;
      path.push_back(b);
      if (extend(b)) return true;
      path.pop_back();
      on[b] = 0;
      if (steps > budget) return false;
    }
    return false;
  };
  if (n < 3 || !extend(0)) return {};
  return path;
}

}  // namespace

RelayTrees relay_trees(const topo::Topology& t, int p, int k) {
  RelayTrees out;
  if (p < 3 || k < 1) return out;
  Neighbours g = neighbours(t, p);
  if (g.h < 0) return out;
  std::size_t n = g.n;
  int h = g.h;
  const Routes& route = g.route;
  const std::vector<std::vector<int>>& hops = g.hops;
  std::vector<std::vector<std::size_t>> in(n);  // in[v]: ranks with an arc into v
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      if (a != b && hops[a][b] >= 0 && hops[a][b] <= h) in[b].push_back(a);
  // Depth of every rank from every root over the neighbour graph (BFS).
  std::vector<std::vector<int>> depth(n, std::vector<int>(n, -1));
  for (std::size_t r = 0; r < n; ++r) {
    std::deque<std::size_t> todo{r};
    depth[r][r] = 0;
    while (!todo.empty()) {
      std::size_t a = todo.front();
      todo.pop_front();
      for (std::size_t b = 0; b < n; ++b)
        if (depth[r][b] < 0 && hops[a][b] >= 0 && hops[a][b] <= h) {
          depth[r][b] = depth[r][a] + 1;
          out.depth = std::max(out.depth, depth[r][b]);
          todo.push_back(b);
        }
    }
  }
  std::vector<double> inv_bw2(g.bw.size(), 0);
  for (std::size_t e = 0; e < g.bw.size(); ++e) inv_bw2[e] = g.bw[e] > 0 ? 1 / (g.bw[e] * g.bw[e]) : 0;
  // Arcs crossing each link direction. A tree arc's cost is what it adds to the sum over link
  // directions of (arcs / bandwidth)^2, which favours the least loaded links and ranks (every
  // arc out of a rank crosses its NIC and PCIe links).
  std::vector<double> load(inv_bw2.size(), 0);
  auto cost = [&](std::size_t u, std::size_t v) {
    double c = 0;
    for (std::uint32_t e : route[u][v]) c += (2 * load[e] + 1) * inv_bw2[e];
    return c;
  };
  auto add = [&](std::size_t u, std::size_t v, double d) {
    for (std::uint32_t e : route[u][v]) load[e] += d;
  };
  // The parent among v's in-neighbours one level nearer tree r's root that costs least (scanned
  // from a place that differs per tree, so equal choices spread over a root's k trees); `keep`
  // stays unless another is cheaper by more than rounding.
  // With `deg`, only ranks below `cap` arcs out are taken (but `keep`).
  auto best_parent = [&](std::size_t r, std::size_t v, std::size_t rotate, std::size_t keep, const std::vector<int>* deg = nullptr,
                         int cap_out = 0) {
    const std::vector<std::size_t>& cand = in[v];
    std::size_t best = keep;
    double best_cost = keep < n ? cost(keep, v) - 1e-9 * cost(keep, v) : 0;
    for (std::size_t i = 0; i < cand.size(); ++i) {
      std::size_t u = cand[(i + rotate) % cand.size()];
      if (depth[r][u] != depth[r][v] - 1 || (deg && u != keep && (*deg)[u] >= cap_out)) continue;
      double c = cost(u, v);
      if (best == n || c < best_cost) {
        best = u;
        best_cost = c;
      }
    }
    return best;
  };
  auto kk = static_cast<std::size_t>(k);
  std::vector<std::vector<int>> parent(n * kk, std::vector<int>(n, -1));
  // Grown level by level over all trees at once, so that no tree takes the best links first.
  for (int d = 1; d <= out.depth; ++d)
    for (std::size_t tr = 0; tr < n * kk; ++tr) {
      std::size_t r = tr / kk;
      for (std::size_t v = 0; v < n; ++v) {
        if (depth[r][v] != d) continue;
        std::size_t u = best_parent(r, v, tr, n);
        parent[tr][v] = static_cast<int>(u);
        add(u, v, 1);
      }
    }
  // Out-degrees even: every arc out of a rank crosses its NIC (where one GPU is a host's rank), so
  // the rate is at most that NIC's bandwidth over the rank's arcs out, p - 1 per tree index at
  // best. Where a rank has more, a chain of moves (a child of rank a moved to another parent b
  // one level up, one of b's to c, ...) to a rank with fewer is found by breadth-first search
  // over the ranks, as an augmenting path of a bipartite assignment.
  std::vector<int> out_deg(n, 0);
  for (const std::vector<int>& par : parent)
    for (int u : par)
      if (u >= 0) ++out_deg[static_cast<std::size_t>(u)];
  int cap = (p - 1) * k;
  auto movable = [&](std::size_t tr, std::size_t v, std::size_t u) {  // tree tr's rank v may hang from u
    return u != v && hops[u][v] >= 0 && hops[u][v] <= h && depth[tr / kk][u] == depth[tr / kk][v] - 1;
  };
  for (std::size_t over = 0; over < n; ++over) {
    while (out_deg[over] > cap) {
      // via[b]: the (tree, rank) whose move from its parent reached b first.
      std::vector<std::pair<std::size_t, std::size_t>> via(n, {SIZE_MAX, SIZE_MAX});
      std::vector<char> seen(n, 0);
      std::deque<std::size_t> todo{over};
      seen[over] = 1;
      std::size_t found = n;
      while (!todo.empty() && found == n) {
        std::size_t a = todo.front();
        todo.pop_front();
        for (std::size_t tr = 0; tr < n * kk && found == n; ++tr)
          for (std::size_t v = 0; v < n && found == n; ++v) {
            if (parent[tr][v] != static_cast<int>(a)) continue;
            for (std::size_t b : in[v]) {
              if (seen[b] || !movable(tr, v, b)) continue;
              seen[b] = 1;
              via[b] = {tr, v};
              if (out_deg[b] < cap) {
                found = b;
                break;
              }
              todo.push_back(b);
            }
          }
      }
      if (found == n) break;  // no chain: left as it is
      for (std::size_t b = found; b != over;) {
        auto [tr, v] = via[b];
        auto a = static_cast<std::size_t>(parent[tr][v]);
        add(a, v, -1);
        add(b, v, 1);
        parent[tr][v] = static_cast<int>(b);
        b = a;
      }
      --out_deg[over];
      ++out_deg[found];
    }
  }
  // Local search: move a rank to another parent one level up while that lowers the sum of
  // squares, keeping out-degrees within what the chains above reached.
  for (std::size_t v = 0; v < n; ++v) cap = std::max(cap, out_deg[v]);
  for (int pass = 0; pass < 50; ++pass) {
    bool moved = false;
    for (std::size_t tr = 0; tr < n * kk; ++tr)
      for (std::size_t v = 0; v < n; ++v) {
        if (parent[tr][v] < 0) continue;
        auto now = static_cast<std::size_t>(parent[tr][v]);
        add(now, v, -1);
        --out_deg[now];
        std::size_t u = best_parent(tr / kk, v, tr, now, &out_deg, cap);
        add(u, v, 1);
        ++out_deg[u];
        if (u != now) {
          parent[tr][v] = static_cast<int>(u);
          moved = true;
        }
      }
    if (!moved) break;
  }
  out.per_root_gbps = per_root_rate(g, parent, k);
  out.trees = std::move(parent);
  return out;
}

}  // namespace collkit::plan::synth

namespace collkit::plan::synth {

RelayTrees ring_trees(const topo::Topology& t, int p, int cycles) {
  RelayTrees out;
  if (p < 3 || cycles < 1) return out;
  Neighbours g = neighbours(t, p);
  if (g.h < 0) return out;
  std::size_t n = g.n;
  // The cycles one after another, each avoiding the links of those before; where a later one is
  // not found, all again with ties turned otherwise (the first cycle can leave the rest of a
  // 4-regular torus in pieces), n times at most.
  std::vector<std::vector<std::size_t>> found;
  for (std::size_t turn = 0; turn < n && found.size() < static_cast<std::size_t>(cycles); ++turn) {
    found.clear();
    std::vector<std::vector<char>> used(n, std::vector<char>(n, 0));
    for (int c = 0; c < cycles; ++c) {
      std::vector<std::size_t> cyc = hamiltonian_cycle(g, used, 2000 + 20 * static_cast<long>(n), turn);
      if (cyc.empty()) break;
      for (std::size_t i = 0; i < n; ++i) {
        std::size_t a = cyc[i], b = cyc[(i + 1) % n];
        used[a][b] = used[b][a] = 1;
      }
      found.push_back(std::move(cyc));
    }
  }
  if (found.size() < static_cast<std::size_t>(cycles)) return out;
  // Per root, per cycle, the chain each way round from it.
  for (std::size_t r = 0; r < n; ++r)
    for (const std::vector<std::size_t>& cyc : found) {
      std::size_t at = static_cast<std::size_t>(std::find(cyc.begin(), cyc.end(), r) - cyc.begin());
      for (std::size_t step : {std::size_t{1}, n - 1}) {
        std::vector<int> parent(n, -1);
        for (std::size_t j = 1; j < n; ++j) parent[cyc[(at + j * step) % n]] = static_cast<int>(cyc[(at + (j - 1) * step) % n]);
        out.trees.push_back(std::move(parent));
      }
    }
  out.depth = p - 1;
  out.per_root_gbps = per_root_rate(g, out.trees, 2 * cycles);
  return out;
}

}  // namespace collkit::plan::synth
