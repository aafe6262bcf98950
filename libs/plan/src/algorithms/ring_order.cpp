// Topology-aware ring orders, after NCCL's ring search (graph/search.cc, graph/rings.cc):
//  - ranks grouped by host, hosts in topology order, so the ring crosses each host boundary once;
//  - inside a host, the maximum-bottleneck cycle (host_cycles), so NVLink / NVSwitch neighbours
//    stay adjacent and PCIe traffic stays under one switch when it can;
//  - rail-aligned: the rank that enters host h+1 is on the rail of the rank that left host h, so
//    each inter-host hop stays under one leaf switch of a rail-optimised fabric. Hosts alternate
//    direction around their cycle: host h enters at e and leaves at e's neighbour f, host h+1
//    enters at f and leaves at e, so with an even number of identical hosts the wrap-around hop
//    is rail-aligned too (with an odd number it is the one hop that may not be);
//  - channel c enters host 0 at a different rank (distinct rails first), so channels spread
//    their inter-host traffic over the NICs.

#include "ring_order.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <string>

#include "collkit/topo/affinity.h"
#include "collkit/topo/queries.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/topology.h"
#include "host_rings.h"

namespace collkit::plan {

namespace algo {

namespace {

using topo::Topology;

// Candidate cycles explored per bottleneck threshold before settling for a lower one: enough
// for the 8- and 16-GPU meshes in use, bounded for pathological inputs.
constexpr long kSearchBudget = 200000;

struct Widths {
  std::vector<std::vector<double>> bw;      // route bottleneck between local ranks i, j
  std::vector<std::vector<std::size_t>> hops;
};

Widths widths(const Topology& t, const std::vector<int>& ranks) {
  topo::Router router(t);
  std::size_t m = ranks.size();
  Widths w{std::vector<std::vector<double>>(m, std::vector<double>(m, 0)),
           std::vector<std::vector<std::size_t>>(m, std::vector<std::size_t>(m, 0))};
  // Routes to the host's own ranks only: searches that stop once those are settled, rather than
  // routes to every vertex of a cluster of thousands of hosts.
  std::vector<topo::VertexId> verts;
  for (int r : ranks) verts.push_back(t.rank_vertex(static_cast<topo::Rank>(r)));
  for (std::size_t i = 0; i < m; ++i) {
    std::vector<topo::Path> paths = router.routes_to(verts[i], verts);
    for (std::size_t j = 0; j < m; ++j) {
      if (verts[i] == verts[j]) {
        w.bw[i][j] = std::numeric_limits<double>::infinity();  // co-located ranks: no link at all
      } else if (paths[j].found) {
        w.bw[i][j] = paths[j].bottleneck_gbps;
        w.hops[i][j] = paths[j].hops.size();
      }
    }
  }
  return w;
}

// Depth-first search for a Hamiltonian cycle whose every edge is at least `threshold` wide,
// trying widest (then shortest) neighbours first.
class CycleSearch {
 public:
  CycleSearch(const Widths& w, double threshold) : w_(w), threshold_(threshold), used_(w.bw.size(), 0) {
    std::size_t m = w.bw.size();
    order_.resize(m);
    for (std::size_t u = 0; u < m; ++u) {
      for (std::size_t v = 0; v < m; ++v)
        if (v != u) order_[u].push_back(v);
      std::stable_sort(order_[u].begin(), order_[u].end(), [&](std::size_t a, std::size_t b) {
        if (w.bw[u][a] != w.bw[u][b]) return w.bw[u][a] > w.bw[u][b];
        return w.hops[u][a] < w.hops[u][b];
      });
    }
  }

  bool run(std::vector<int>& cycle) {
    path_ = {0};
    used_[0] = 1;
    if (!extend()) return false;
    cycle.assign(path_.begin(), path_.end());
    return true;
  }

 private:
  bool ok(std::size_t u, std::size_t v) const { return w_.bw[u][v] >= threshold_ * (1 - 1e-9); }

  bool extend() {
    std::size_t m = used_.size();
    if (path_.size() == m) return m < 3 || ok(static_cast<std::size_t>(path_.back()), 0);
    auto u = static_cast<std::size_t>(path_.back());
    for (std::size_t v : order_[u]) {
      if (used_[v] || !ok(u, v)) continue;
      if (--budget_ < 0) return false;
      used_[v] = 1;
      path_.push_back(static_cast<int>(v));
      if (extend()) return true;
      path_.pop_back();
      used_[v] = 0;
    }
    return false;
  }

  const Widths& w_;
  double threshold_;
  std::vector<char> used_;
  std::vector<std::vector<std::size_t>> order_;
  std::vector<int> path_;
  long budget_ = kSearchBudget;
};

// Greedy nearest neighbour by width: the fallback when no threshold yields a cycle in budget.
std::vector<int> greedy_cycle(const Widths& w) {
  std::size_t m = w.bw.size();
  std::vector<int> cycle{0};
  std::vector<char> used(m, 0);
  used[0] = 1;
  while (cycle.size() < m) {
    auto u = static_cast<std::size_t>(cycle.back());
    std::size_t best = m;
    for (std::size_t v = 0; v < m; ++v) {
      if (used[v]) continue;
      if (best == m || w.bw[u][v] > w.bw[u][best] || (w.bw[u][v] == w.bw[u][best] && w.hops[u][v] < w.hops[u][best]))
        best = v;
    }
    used[best] = 1;
    cycle.push_back(static_cast<int>(best));
  }
  return cycle;
}

// The widest cycle over local indices 0..m-1.
std::vector<int> widest_cycle(const Widths& w) {
  std::size_t m = w.bw.size();
  if (m <= 2) {
    std::vector<int> c(m);
    std::iota(c.begin(), c.end(), 0);
    return c;
  }
  std::vector<double> levels;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < m; ++j)
      if (i != j && w.bw[i][j] > 0) levels.push_back(w.bw[i][j]);
  std::sort(levels.begin(), levels.end(), std::greater<>());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  for (double level : levels) {
    std::vector<int> cycle;
    if (CycleSearch(w, level).run(cycle)) return cycle;
  }
  return greedy_cycle(w);
}

// A host's layout as seen from inside: vertex ids without the "<host>/" prefix. Hosts placed
// from one preset share it, so their cycle is searched once.
std::string signature(const Topology& t, const std::string& host, const std::vector<int>& ranks) {
  std::string sig;
  std::string prefix = host + "/";
  for (int r : ranks) {
    const std::string& id = t.vertex(t.rank_vertex(static_cast<topo::Rank>(r))).id;
    sig += (id.rfind(prefix, 0) == 0 ? id.substr(prefix.size()) : id) + "|";
  }
  return sig;
}

}  // namespace

std::vector<std::vector<int>> host_cycles(int nranks, const Topology& topo) {
  if (nranks <= 0 || static_cast<std::size_t>(nranks) > topo.num_ranks()) return {};
  std::vector<std::vector<int>> out;
  std::map<std::string, std::vector<int>> cache;  // signature -> cycle over local indices
  for (const topo::HostGroup& g : topo::ranks_by_host(topo)) {
    std::vector<int> ranks;
    for (topo::Rank r : g.ranks)
      if (static_cast<int>(r) < nranks) ranks.push_back(static_cast<int>(r));
    if (ranks.empty()) continue;
    if (g.host.empty()) return {};
    std::string sig = signature(topo, g.host, ranks);
    auto it = cache.find(sig);
    if (it == cache.end()) it = cache.emplace(sig, widest_cycle(widths(topo, ranks))).first;
    std::vector<int> cycle;
    for (int local : it->second) cycle.push_back(ranks[static_cast<std::size_t>(local)]);
    out.push_back(std::move(cycle));
  }
  return out;
}

std::int64_t rail_of(const Topology& topo, const topo::NicAffinity& aff, int rank) {
  auto r = static_cast<topo::Rank>(rank);
  const auto& nics = aff.nics[topo.rank_vertex(r)];
  if (!nics.empty() && topo.vertex(nics.front()).index >= 0) return topo.vertex(nics.front()).index;
  if (auto nic = topo::nearest_switch(topo, r, topo::VertexKind::Nic)) {
    int index = topo.vertex(*nic).index;
    if (index >= 0) return index;
  }
  if (auto sw = topo::nearest_switch(topo, r, topo::VertexKind::NetSwitch)) return 1000000 + static_cast<std::int64_t>(*sw);
  return -1;
}

}  // namespace algo

namespace {

std::vector<int> identity(int n) {
  std::vector<int> order(static_cast<std::size_t>(std::max(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::size_t index_of(const std::vector<int>& v, int x) {
  return static_cast<std::size_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

}  // namespace

std::vector<int> ring_order(const Request& req, const topo::Topology* topo, int channel) {
  if (!topo) return identity(req.nranks);
  std::vector<std::vector<int>> hosts = algo::host_cycles(req.nranks, *topo);
  if (hosts.empty()) return identity(req.nranks);
  topo::NicAffinity aff = topo::nic_affinity(*topo);
  auto rail = [&](int r) { return algo::rail_of(*topo, aff, r); };

  // Host 0's entry for this channel: cycle positions with a rail not seen yet first.
  const std::vector<int>& first = hosts[0];
  std::vector<std::size_t> starts, repeats;
  std::vector<std::int64_t> seen;
  for (std::size_t i = 0; i < first.size(); ++i) {
    std::int64_t k = rail(first[i]);
    if (std::find(seen.begin(), seen.end(), k) == seen.end()) {
      seen.push_back(k);
      starts.push_back(i);
    } else {
      repeats.push_back(i);
    }
  }
  starts.insert(starts.end(), repeats.begin(), repeats.end());
  std::size_t entry = starts[static_cast<std::size_t>(std::max(channel, 0)) % starts.size()];

  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(req.nranks));
  int exit_rank = -1;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    const std::vector<int>& cycle = hosts[h];
    std::size_t m = cycle.size();
    if (h > 0) {
      // Enter on the rail the previous host left from; among several ranks on it, prefer the
      // one at the same local index (identical hosts then mirror each other).
      std::vector<int> prev_sorted = hosts[h - 1], sorted = cycle;
      std::sort(prev_sorted.begin(), prev_sorted.end());
      std::sort(sorted.begin(), sorted.end());
      std::size_t local = index_of(prev_sorted, exit_rank) % m;
      std::int64_t want = rail(exit_rank);
      int pick = sorted[local];
      if (rail(pick) != want || want < 0) {
        for (int r : cycle)
          if (want >= 0 && rail(r) == want) {
            pick = r;
            break;
          }
      }
      entry = index_of(cycle, pick);
    }
    bool forward = h % 2 == 0;
    for (std::size_t i = 0; i < m; ++i) order.push_back(cycle[forward ? (entry + i) % m : (entry + m - i) % m]);
    exit_rank = order.back();
  }
  return order;
}

}  // namespace collkit::plan
