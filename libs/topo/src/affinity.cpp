#include "collkit/topo/affinity.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>

#include "collkit/topo/routing.h"

namespace collkit::topo {

namespace {

constexpr double kRelTol = 1e-9;  // as routing's: bandwidths this close are equal
bool at_least(double bw, double threshold) { return bw >= threshold * (1 - kRelTol); }

// The nearest of `nics` to v inside v's host: widest bottleneck first, then
// fewest hops; GPUs other than v do not forward (routing.h's rules).
std::vector<VertexId> nearest(const Topology& t, VertexId v, const std::vector<char>& is_nic) {
  const std::string& host = t.vertex(v).host;
  auto inside = [&](VertexId w) { return t.vertex(w).host == host; };
  auto may_leave = [&](VertexId u) { return u == v || forwards(t.vertex(u).kind); };
  std::map<VertexId, double> best{{v, std::numeric_limits<double>::infinity()}};
  std::priority_queue<std::pair<double, VertexId>> heap;
  heap.push({best[v], v});
  std::map<VertexId, char> done;
  while (!heap.empty()) {
    auto [bw, u] = heap.top();
    heap.pop();
    if (done[u]) continue;
    done[u] = 1;
    if (!may_leave(u) || (u != v && is_nic[u])) continue;  // a NIC ends a route to the NICs
    for (const Adjacent& a : t.adjacent(u)) {
      if (!inside(a.peer)) continue;
      double nb = std::min(bw, t.link(a.link).bw_gbps);
      auto it = best.find(a.peer);
      if (it == best.end() || nb > it->second) {
        best[a.peer] = nb;
        heap.push({nb, a.peer});
      }
    }
  }
  double widest = 0;
  for (auto& [w, bw] : best)
    if (w != v && is_nic[w]) widest = std::max(widest, bw);
  if (!(widest > 0)) return {};
  // Fewest hops over links at least that wide.
  std::map<VertexId, int> hops{{v, 0}};
  std::vector<VertexId> layer{v};
  std::vector<VertexId> found;
  while (!layer.empty() && found.empty()) {
    std::vector<VertexId> next;
    for (VertexId u : layer) {
      if (!may_leave(u) || (u != v && is_nic[u])) continue;
      for (const Adjacent& a : t.adjacent(u)) {
        if (!inside(a.peer) || hops.count(a.peer) || !at_least(t.link(a.link).bw_gbps, widest)) continue;
        hops[a.peer] = hops[u] + 1;
        next.push_back(a.peer);
        if (is_nic[a.peer] && at_least(best[a.peer], widest)) found.push_back(a.peer);
      }
    }
    layer = std::move(next);
  }
  std::sort(found.begin(), found.end(), [&](VertexId a, VertexId b) {
    int ia = t.vertex(a).index, ib = t.vertex(b).index;
    return ia != ib ? ia < ib : a < b;
  });
  return found;
}

}  // namespace

bool NicAffinity::allows(VertexId v, VertexId nic) const {
  if (v >= nics.size() || nics[v].empty()) return true;
  return std::find(nics[v].begin(), nics[v].end(), nic) != nics[v].end();
}

NicAffinity nic_affinity(const Topology& t) {
  NicAffinity out;
  std::size_t n = t.num_vertices();
  out.nics.assign(n, {});
  out.set.assign(n, -1);
  // NICs that reach outside their host: only those can carry traffic to other
  // hosts.
  std::vector<char> is_nic(n, 0);
  for (VertexId v = 0; v < n; ++v) {
    const Vertex& x = t.vertex(v);
    if (x.kind != VertexKind::Nic || x.host.empty()) continue;
    for (const Adjacent& a : t.adjacent(v)) is_nic[v] = is_nic[v] || t.vertex(a.peer).host != x.host;
  }
  // Per host, the members of each group of vertices with the same nearest NICs,
  // in device order.
  std::map<std::pair<std::string, std::vector<VertexId>>, std::vector<VertexId>> groups;
  for (VertexId v = 0; v < n; ++v) {
    const Vertex& x = t.vertex(v);
    if ((x.kind != VertexKind::Gpu && x.kind != VertexKind::Cpu) || x.host.empty()) continue;
    std::vector<VertexId> near = nearest(t, v, is_nic);
    if (!near.empty()) groups[{x.host, std::move(near)}].push_back(v);
  }
  std::map<std::vector<VertexId>, int> ids;
  for (auto& [key, members] : groups) {
    const std::vector<VertexId>& nics = key.second;
    std::stable_sort(members.begin(), members.end(), [&](VertexId a, VertexId b) {
      const Vertex &x = t.vertex(a), &y = t.vertex(b);
      if (x.kind != y.kind) return x.kind < y.kind;  // GPUs first
      return x.index != y.index ? x.index < y.index : a < b;
    });
    std::size_t m = members.size(), k = nics.size();
    for (std::size_t i = 0; i < m; ++i) {
      std::vector<VertexId> mine;
      if (k >= m) {
        for (std::size_t j = i; j < k; j += m) mine.push_back(nics[j]);
      } else {
        mine.push_back(nics[i % k]);
      }
      auto [it, fresh] = ids.emplace(mine, static_cast<int>(out.sets.size()));
      if (fresh) out.sets.push_back(mine);
      out.set[members[i]] = it->second;
      out.nics[members[i]] = std::move(mine);
    }
  }
  return out;
}

}  // namespace collkit::topo
