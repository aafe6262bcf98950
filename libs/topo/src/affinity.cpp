#include "collkit/topo/affinity.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <string_view>

#include "collkit/topo/routing.h"

namespace collkit::topo {

namespace {

constexpr double kRelTol = 1e-9;  // as routing's: bandwidths this close are equal
bool at_least(double bw, double threshold) { return bw >= threshold * (1 - kRelTol); }

// Per-vertex state of nearest(), reset after each call through `touched`: 20 k GPUs and CPUs
// each search their own host, and maps of the vertices seen cost more than the searches.
struct NearScratch {
  explicit NearScratch(std::size_t n) : best(n, 0.0), seen(n, 0), done(n, 0), hops(n, -1) {}
  std::vector<double> best;  // valid where seen
  std::vector<char> seen, done;
  std::vector<int> hops;  // -1: not reached by the hop search
  std::vector<VertexId> touched;
  void touch(VertexId v) {
    if (!seen[v] && hops[v] < 0 && !done[v]) touched.push_back(v);
  }
  void reset() {
    for (VertexId v : touched) {
      best[v] = 0.0;
      seen[v] = done[v] = 0;
      hops[v] = -1;
    }
    touched.clear();
  }
};

// The nearest of `nics` to v inside v's host: widest bottleneck first, then
// fewest hops; GPUs other than v do not forward (routing.h's rules). `host_of`: a
// dense number per host (-1: none).
std::vector<VertexId> nearest(const Topology& t, VertexId v, const std::vector<char>& is_nic, const std::vector<int>& host_of,
                              NearScratch& s) {
  int host = host_of[v];
  auto inside = [&](VertexId w) { return host_of[w] == host; };
  auto may_leave = [&](VertexId u) { return u == v || forwards(t.vertex(u).kind); };
  std::vector<VertexId> reached;  // the vertices given a bandwidth, v first
  auto set_best = [&](VertexId w, double bw) {
    s.touch(w);
    if (!s.seen[w]) reached.push_back(w);
    s.seen[w] = 1;
    s.best[w] = bw;
  };
  set_best(v, std::numeric_limits<double>::infinity());
  std::priority_queue<std::pair<double, VertexId>> heap;
  heap.push({s.best[v], v});
  while (!heap.empty()) {
    auto [bw, u] = heap.top();
    heap.pop();
    if (s.done[u]) continue;
    s.touch(u);
    s.done[u] = 1;
    if (!may_leave(u) || (u != v && is_nic[u])) continue;  // a NIC ends a route to the NICs
    for (const Adjacent& a : t.adjacent(u)) {
      if (!inside(a.peer)) continue;
      double nb = std::min(bw, t.link(a.link).bw_gbps);
      if (!s.seen[a.peer] || nb > s.best[a.peer]) {
        set_best(a.peer, nb);
        heap.push({nb, a.peer});
      }
    }
  }
  double widest = 0;
  for (VertexId w : reached)
    if (w != v && is_nic[w]) widest = std::max(widest, s.best[w]);
  if (!(widest > 0)) {
    s.reset();
    return {};
  }
  // Fewest hops over links at least that wide.
  s.touch(v);
  s.hops[v] = 0;
  std::vector<VertexId> layer{v};
  std::vector<VertexId> found;
  while (!layer.empty() && found.empty()) {
    std::vector<VertexId> next;
    for (VertexId u : layer) {
      if (!may_leave(u) || (u != v && is_nic[u])) continue;
      for (const Adjacent& a : t.adjacent(u)) {
        if (!inside(a.peer) || s.hops[a.peer] >= 0 || !at_least(t.link(a.link).bw_gbps, widest)) continue;
        s.touch(a.peer);
        s.hops[a.peer] = s.hops[u] + 1;
        next.push_back(a.peer);
        if (is_nic[a.peer] && at_least(s.seen[a.peer] ? s.best[a.peer] : 0.0, widest)) found.push_back(a.peer);
      }
    }
    layer = std::move(next);
  }
  s.reset();
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
  std::vector<int> host_of(n, -1);
  {
    std::map<std::string_view, int> number;
    for (VertexId v = 0; v < n; ++v)
      if (!t.vertex(v).host.empty()) host_of[v] = number.emplace(t.vertex(v).host, static_cast<int>(number.size())).first->second;
  }
  NearScratch scratch(n);
  for (VertexId v = 0; v < n; ++v) {
    const Vertex& x = t.vertex(v);
    if ((x.kind != VertexKind::Gpu && x.kind != VertexKind::Cpu) || x.host.empty()) continue;
    std::vector<VertexId> near = nearest(t, v, is_nic, host_of, scratch);
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
