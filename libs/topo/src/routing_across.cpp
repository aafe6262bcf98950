// Routes between hosts through shared fabric tables (routing_internal.h, AcrossHosts): the plain
// searches of routing.cpp flood the whole fabric once per source, which on a 2048-host
// rail-optimised fat-tree (544 switches, 33k fabric links) made routing 16k sources cost more
// than the rest of a simulation together.

#include <optional>
#include <queue>

#include "routing_internal.h"

namespace collkit::topo::routing {

namespace {

// Fabric tables hold |fabric| labels per entry vertex (a fabric vertex next to a host). They pay
// when many hosts share an entry (a leaf serves 32 hosts on each rail): the plain search floods
// the fabric once per source, the tables once per entry. Where every host has its own entries (a
// torus of per-host routers) they save nothing and would cost |fabric|^2, so the plain searches
// serve; small fabrics use the tables either way (the tests compare both on them). Tables stop
// at 8 M labels in all (about 200 MB, with the widest ones): 8192 hosts on a two-tier tree fit.
constexpr std::size_t kFabricSmall = 256;
constexpr std::size_t kTableLabelsMax = std::size_t{1} << 23;

using Widest = std::pair<double, VertexId>;  // max-heap: widest first

}  // namespace

FabricTables::FabricTables(const Topology& topo, const std::vector<int>& hosts, int num_hosts)
    : t(topo), host(hosts), pos(topo.num_vertices(), 0), members(static_cast<std::size_t>(num_hosts)), fwd(topo.num_vertices(), 0) {
  for (VertexId v = 0; v < topo.num_vertices(); ++v) {
    fwd[v] = forwards(topo.vertex(v).kind) ? 1 : 0;
    auto& list = host[v] < 0 ? fabric : members[static_cast<std::size_t>(host[v])];
    pos[v] = static_cast<std::uint32_t>(list.size());
    list.push_back(v);
  }
  widest_from.resize(fabric.size());
  pays = pay();
}

bool FabricTables::pay() const {
  if (fabric.size() <= kFabricSmall) return true;
  std::size_t entries = 0;
  for (VertexId f : fabric) {
    bool entry = false;
    for (const Adjacent& a : t.adjacent(f)) entry = entry || host[a.peer] >= 0;
    entries += entry ? 1 : 0;
  }
  return 2 * entries <= members.size() && entries * fabric.size() <= kTableLabelsMax;
}

// The widest bottleneck from `entry` to every fabric vertex over fabric vertices only.
const std::vector<double>& FabricTables::widest(VertexId entry) {
  std::vector<double>& best = widest_from[pos[entry]];
  if (!best.empty()) return best;
  best.assign(fabric.size(), 0.0);
  std::vector<char> done(fabric.size(), 0);
  best[pos[entry]] = kInf;
  std::priority_queue<Widest> heap;
  heap.push({kInf, entry});
  while (!heap.empty()) {
    auto [bw, u] = heap.top();
    heap.pop();
    if (done[pos[u]]) continue;
    done[pos[u]] = 1;
    if (!fwd[u]) continue;
    for (const Adjacent& a : t.adjacent(u)) {
      if (host[a.peer] >= 0 || done[pos[a.peer]]) continue;
      double nb = std::min(bw, t.link(a.link).bw_gbps);
      if (nb > best[pos[a.peer]]) {
        best[pos[a.peer]] = nb;
        heap.push({nb, a.peer});
      }
    }
  }
  return best;
}

// Fewest hops, then least latency, from `entry` to every fabric vertex over fabric vertices
// and links at least `level` wide.
const std::vector<Label>& FabricTables::shortest(VertexId entry, double level) {
  auto it = std::find_if(shortest_from.begin(), shortest_from.end(), [&](const auto& l) { return l.first == level; });
  if (it == shortest_from.end()) {
    shortest_from.push_back({level, std::vector<std::vector<Label>>(fabric.size())});
    it = shortest_from.end() - 1;
  }
  std::vector<Label>& label = it->second[pos[entry]];
  if (!label.empty()) return label;
  label.assign(fabric.size(), Label{});
  std::vector<char> done(fabric.size(), 0);
  label[pos[entry]] = {0, 0.0};
  ShortestQueue heap;
  heap.push({label[pos[entry]], entry});
  while (!heap.empty()) {
    VertexId u = heap.top().second;
    heap.pop();
    if (done[pos[u]]) continue;
    done[pos[u]] = 1;
    if (!fwd[u]) continue;
    for (const Adjacent& a : t.adjacent(u)) {
      const Link& l = t.link(a.link);
      if (host[a.peer] >= 0 || done[pos[a.peer]] || !at_least(l.bw_gbps, level)) continue;
      Label nl = plus(label[pos[u]], l);
      if (nl < label[pos[a.peer]]) {
        label[pos[a.peer]] = nl;
        heap.push({nl, a.peer});
      }
    }
  }
  return label;
}

AcrossHosts::AcrossHosts(FabricTables& f, VertexId src) : f_(f), t_(f.t), src_(src), home_(f.host[src]) {}

// The plain search's relaxation of v from u (routing_internal.h).
bool AcrossHosts::relax(Local& l, VertexId v, Label nl, VertexId u, LinkId link) const {
  std::uint32_t k = f_.pos[v];
  return routing::relax(l.label[k], l.parent[k], l.parent_link[k], src_, v, nl, u, link);
}

// Completes the search inside host h from the labels already seeded in l (widest: l.best).
void AcrossHosts::search_host(int h, Local& l, bool widest, double level) const {
  const std::vector<VertexId>& m = f_.members[static_cast<std::size_t>(h)];
  std::vector<char> done(m.size(), 0);
  if (widest) {
    std::priority_queue<Widest> heap;
    for (VertexId v : m)
      if (l.best[f_.pos[v]] > 0) heap.push({l.best[f_.pos[v]], v});
    while (!heap.empty()) {
      auto [bw, u] = heap.top();
      heap.pop();
      if (done[f_.pos[u]]) continue;
      done[f_.pos[u]] = 1;
      if (!may_leave(u)) continue;
      for (const Adjacent& a : t_.adjacent(u)) {
        if (f_.host[a.peer] != h || done[f_.pos[a.peer]]) continue;
        double nb = std::min(bw, t_.link(a.link).bw_gbps);
        if (nb > l.best[f_.pos[a.peer]]) {
          l.best[f_.pos[a.peer]] = nb;
          heap.push({nb, a.peer});
        }
      }
    }
    return;
  }
  ShortestQueue heap;
  for (VertexId v : m)
    if (l.label[f_.pos[v]].reached()) heap.push({l.label[f_.pos[v]], v});
  while (!heap.empty()) {
    VertexId u = heap.top().second;
    heap.pop();
    if (done[f_.pos[u]]) continue;
    done[f_.pos[u]] = 1;
    if (!may_leave(u)) continue;
    for (const Adjacent& a : t_.adjacent(u)) {
      const Link& l2 = t_.link(a.link);
      if (f_.host[a.peer] != h || done[f_.pos[a.peer]] || !at_least(l2.bw_gbps, level)) continue;
      if (relax(l, a.peer, plus(l.label[f_.pos[u]], l2), u, a.link)) heap.push({l.label[f_.pos[a.peer]], a.peer});
    }
  }
}

double AcrossHosts::bottleneck(VertexId dst) {
  if (!widest_done_) {
    widest_done_ = true;
    const std::vector<VertexId>& home = f_.members[static_cast<std::size_t>(home_)];
    home_w_.best.assign(home.size(), 0.0);
    home_w_.best[f_.pos[src_]] = kInf;
    search_host(home_, home_w_, true, 0);
    fabric_w_.best.assign(f_.fabric.size(), 0.0);
    for (VertexId x : home) {
      double bx = home_w_.best[f_.pos[x]];
      if (bx <= 0 || !may_leave(x)) continue;
      for (const Adjacent& a : t_.adjacent(x)) {
        if (f_.host[a.peer] >= 0) continue;
        double v = std::min(bx, t_.link(a.link).bw_gbps);
        if (v <= 0) continue;
        const std::vector<double>& w = f_.widest(a.peer);
        for (std::size_t k = 0; k < w.size(); ++k) fabric_w_.best[k] = std::max(fabric_w_.best[k], std::min(v, w[k]));
      }
    }
  }
  return far_widest(f_.host[dst]).best[f_.pos[dst]];
}

const AcrossHosts::Local& AcrossHosts::far_widest(int h) {
  for (const auto& [host, l] : far_w_)
    if (host == h) return l;
  Local l;
  const std::vector<VertexId>& m = f_.members[static_cast<std::size_t>(h)];
  l.best.assign(m.size(), 0.0);
  for (VertexId y : m)
    for (const Adjacent& a : t_.adjacent(y)) {
      VertexId u = a.peer;
      double bu = 0;
      if (f_.host[u] == home_ && may_leave(u)) bu = home_w_.best[f_.pos[u]];
      else if (f_.host[u] < 0 && f_.fwd[u]) bu = fabric_w_.best[f_.pos[u]];
      l.best[f_.pos[y]] = std::max(l.best[f_.pos[y]], std::min(bu, t_.link(a.link).bw_gbps));
    }
  search_host(h, l, true, 0);
  far_w_.emplace_back(h, std::move(l));
  return far_w_.back().second;
}

AcrossHosts::Level& AcrossHosts::level(double level) {
  for (Level& lv : levels_)
    if (lv.level == level) return lv;
  Level lv;
  lv.level = level;
  const std::vector<VertexId>& home = f_.members[static_cast<std::size_t>(home_)];
  auto sized = [](Local& l, std::size_t n) {
    l.label.assign(n, Label{});
    l.parent.assign(n, 0);
    l.parent_link.assign(n, 0);
  };
  sized(lv.home, home.size());
  lv.home.label[f_.pos[src_]] = {0, 0.0};
  lv.home.parent[f_.pos[src_]] = src_;
  search_host(home_, lv.home, false, level);
  lv.fabric.label.assign(f_.fabric.size(), Label{});
  for (VertexId x : home) {
    const Label& lx = lv.home.label[f_.pos[x]];
    if (!lx.reached() || !may_leave(x)) continue;
    for (const Adjacent& a : t_.adjacent(x)) {
      const Link& l = t_.link(a.link);
      if (f_.host[a.peer] >= 0 || !at_least(l.bw_gbps, level)) continue;
      Label base = plus(lx, l);
      const std::vector<Label>& d = f_.shortest(a.peer, level);
      for (std::size_t k = 0; k < d.size(); ++k) {
        if (!d[k].reached()) continue;
        Label c{base.hops + d[k].hops, base.latency + d[k].latency};
        if (c < lv.fabric.label[k]) lv.fabric.label[k] = c;
      }
    }
  }
  levels_.push_back(std::move(lv));
  return levels_.back();
}

const AcrossHosts::Local& AcrossHosts::far_shortest(Level& lv, int h) {
  for (const auto& [host, l] : lv.far)
    if (host == h) return l;
  Local l;
  const std::vector<VertexId>& m = f_.members[static_cast<std::size_t>(h)];
  l.label.assign(m.size(), Label{});
  l.parent.assign(m.size(), 0);
  l.parent_link.assign(m.size(), 0);
  for (VertexId y : m)
    for (const Adjacent& a : t_.adjacent(y)) {
      const Link& link = t_.link(a.link);
      VertexId u = a.peer;
      if (!at_least(link.bw_gbps, lv.level)) continue;
      Label lu;
      if (f_.host[u] == home_ && may_leave(u)) lu = lv.home.label[f_.pos[u]];
      else if (f_.host[u] < 0 && f_.fwd[u]) lu = lv.fabric.label[f_.pos[u]];
      if (lu.reached()) relax(l, y, plus(lu, link), u, a.link);
    }
  search_host(h, l, false, lv.level);
  lv.far.emplace_back(h, std::move(l));
  return lv.far.back().second;
}

std::optional<Path> AcrossHosts::path(VertexId dst, double lvl) {
  Level& lv = level(lvl);
  int h = f_.host[dst];
  const Local& far = far_shortest(lv, h);
  Path p;
  p.src = src_;
  p.dst = dst;
  if (!far.label[f_.pos[dst]].reached()) return p;
  VertexId v = dst;
  while (f_.host[v] == h) {
    p.hops.push_back(hop_from(t_, far.parent_link[f_.pos[v]], far.parent[f_.pos[v]]));
    v = far.parent[f_.pos[v]];
  }
  while (f_.host[v] < 0) {
    // v's predecessor: the lowest-ranked of the neighbours whose label plus the link ties v's.
    const Label& want = lv.fabric.label[f_.pos[v]];
    bool found = false;
    VertexId best_u = 0;
    LinkId best_link = 0;
    std::uint64_t best_rank = 0;
    for (const Adjacent& a : t_.adjacent(v)) {
      const Link& l = t_.link(a.link);
      VertexId u = a.peer;
      if (!at_least(l.bw_gbps, lvl)) continue;
      Label lu;
      if (f_.host[u] < 0 && f_.fwd[u]) lu = lv.fabric.label[f_.pos[u]];
      else if (f_.host[u] == home_ && may_leave(u)) lu = lv.home.label[f_.pos[u]];
      if (!lu.reached() || !ties(plus(lu, l), want)) continue;
      std::uint64_t rank = ecmp_rank(src_, v, a.link);
      if (!found || rank < best_rank) {
        found = true;
        best_u = u;
        best_link = a.link;
        best_rank = rank;
      }
    }
    if (!found) return std::nullopt;  // cannot happen when the labels are right; the plain search decides
    p.hops.push_back(hop_from(t_, best_link, best_u));
    v = best_u;
  }
  while (v != src_) {
    p.hops.push_back(hop_from(t_, lv.home.parent_link[f_.pos[v]], lv.home.parent[f_.pos[v]]));
    v = lv.home.parent[f_.pos[v]];
  }
  std::reverse(p.hops.begin(), p.hops.end());
  p.found = true;
  p.bottleneck_gbps = lvl;
  for (const Hop& hop : p.hops) p.latency_us += t_.link(hop.link).latency_us;  // from the source, as the search sums
  return p;
}

}  // namespace collkit::topo::routing
