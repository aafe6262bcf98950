// Routes out of a source's host (routing_internal.h, AcrossHosts): through
// shared fabric tables where they pay, since the plain searches of routing.cpp
// flood the whole fabric once per source, which on a 2048-host rail-optimised
// fat-tree (544 switches, 33k fabric links) made routing 16k sources cost more
// than the rest of a simulation together.

#include <algorithm>
#include <charconv>
#include <optional>
#include <queue>
#include <string_view>

#include "collkit/core/error.h"
#include "routing_internal.h"

namespace collkit::topo::routing {

namespace {

// Fabric tables hold |fabric| labels per entry vertex (a fabric vertex next to
// a host). They pay when many hosts share an entry (a leaf serves 32 hosts on
// each rail): a search per source floods the fabric once per source, the tables
// once per entry. Where every host has its own entries (a torus of per-host
// routers) they save nothing and would cost |fabric|^2, so each source searches
// the fabric; small fabrics use the tables either way (the tests compare both
// on them). Tables stop at 8 M labels in all (about 200 MB, with the widest
// ones): 8192 hosts on a two-tier tree fit.
constexpr std::size_t kFabricSmall = 256;
constexpr std::size_t kTableLabelsMax = std::size_t{1} << 23;

using Widest = std::pair<double, VertexId>;  // max-heap: widest first

}  // namespace

FabricTables::FabricTables(const Topology& topo, const std::vector<int>& hosts, int num_hosts)
    : t(topo),
      host(hosts),
      pos(topo.num_vertices(), 0),
      members(static_cast<std::size_t>(num_hosts)),
      fwd(topo.num_vertices(), 0),
      nic(topo.num_vertices(), 0),
      port(topo.num_links(), 0) {
  for (VertexId v = 0; v < topo.num_vertices(); ++v) {
    fwd[v] = forwards(topo.vertex(v).kind) ? 1 : 0;
    nic[v] = topo.vertex(v).kind == VertexKind::Nic ? 1 : 0;
    auto& list = host[v] < 0 ? fabric : members[static_cast<std::size_t>(host[v])];
    pos[v] = static_cast<std::uint32_t>(list.size());
    list.push_back(v);
  }
  for (VertexId f : fabric) {
    std::vector<LinkId> down;
    for (const Adjacent& a : topo.adjacent(f))
      if (host[a.peer] >= 0) down.push_back(a.link);
    std::sort(down.begin(), down.end());
    for (std::size_t k = 0; k < down.size(); ++k) port[down[k]] = static_cast<std::uint32_t>(k);
  }
  torus_coord.resize(fabric.size());
  for (VertexId f : fabric) {
    auto it = topo.vertex(f).attrs.find("torus_coord");
    if (it == topo.vertex(f).attrs.end()) continue;
    std::vector<int> c;
    bool ok = true;
    for (std::string_view rest = it->second; ok && !rest.empty();) {
      std::size_t comma = rest.find(',');
      std::string_view part = rest.substr(0, comma);
      int x = 0;
      auto [q, ec] = std::from_chars(part.data(), part.data() + part.size(), x);
      ok = ec == std::errc() && q == part.data() + part.size();
      c.push_back(x);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    if (ok) torus_coord[pos[f]] = std::move(c);  // not a list of numbers: no coordinates
  }
  torus_router.assign(members.size(), -1);
  for (VertexId f : fabric) {
    if (torus_coord[pos[f]].empty()) continue;
    for (const Adjacent& a : topo.adjacent(f)) {
      if (host[a.peer] < 0) continue;
      std::int64_t& r = torus_router[static_cast<std::size_t>(host[a.peer])];
      r = r < 0 || r == pos[f] ? pos[f] : -2;  // -2: several routers, none is the host's
    }
  }
  widest_from.resize(fabric.size());
  border.resize(members.size());
  for (std::size_t h = 0; h < members.size(); ++h)
    for (VertexId v : members[h]) {
      bool out = false;
      for (const Adjacent& a : topo.adjacent(v)) out = out || host[a.peer] != static_cast<int>(h);
      if (out) border[h].push_back(v);
    }
  widest_in_slot_.assign(topo.num_vertices(), -1);
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

// The widest bottleneck from `entry` to every vertex of region h (a host number; -1: the fabric)
// over that region's vertices only, into `best` (by pos, sized to the region); a vertex relays
// only where it forwards, the entry too unless `entry_relays`.
void FabricTables::widest_within(int h, VertexId entry, bool entry_relays, std::vector<double>& best) const {
  std::vector<char> done(best.size(), 0);
  best[pos[entry]] = kInf;
  std::priority_queue<Widest> heap;
  heap.push({kInf, entry});
  while (!heap.empty()) {
    auto [bw, u] = heap.top();
    heap.pop();
    if (done[pos[u]]) continue;
    done[pos[u]] = 1;
    if (!fwd[u] && !(entry_relays && u == entry)) continue;
    for (const Adjacent& a : t.adjacent(u)) {
      if (host[a.peer] != h || done[pos[a.peer]]) continue;
      double nb = std::min(bw, t.link(a.link).bw_gbps);
      if (nb > best[pos[a.peer]]) {
        best[pos[a.peer]] = nb;
        heap.push({nb, a.peer});
      }
    }
  }
}

// The widest bottleneck from `entry` to every fabric vertex over fabric vertices only.
const std::vector<double>& FabricTables::widest(VertexId entry) {
  std::vector<double>& best = widest_from[pos[entry]];
  if (!best.empty()) return best;
  best.assign(fabric.size(), 0.0);
  widest_within(-1, entry, true, best);
  return best;
}

// Fewest hops, then least latency, from `entry` to every fabric vertex over
// fabric vertices and links at least `level` wide.
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
    if (!fwd[u] && u != entry) continue;
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

// Inside the entry's host, by the rules of AcrossHosts::search: a vertex relays only if it
// forwards (the source is in no far host, and the entry is no source), over links at least
// `level` wide (shortest).
const std::vector<double>& FabricTables::widest_in_host(VertexId entry) {
  std::int32_t& slot = widest_in_slot_[entry];
  if (slot >= 0) return widest_in_[static_cast<std::size_t>(slot)];
  slot = static_cast<std::int32_t>(widest_in_.size());
  std::vector<double>& best = widest_in_.emplace_back(members[static_cast<std::size_t>(host[entry])].size(), 0.0);
  widest_within(host[entry], entry, false, best);
  return best;
}

const FabricTables::FromEntry& FabricTables::shortest_in_host(VertexId entry, double level) {
  auto it = std::find_if(shortest_in_.begin(), shortest_in_.end(), [&](const FromEntries& e) { return e.level == level; });
  if (it == shortest_in_.end()) {
    shortest_in_.push_back({level, std::vector<std::int32_t>(t.num_vertices(), -1), {}});
    it = shortest_in_.end() - 1;
  }
  std::int32_t& slot = it->slot[entry];
  if (slot >= 0) return it->of[static_cast<std::size_t>(slot)];
  slot = static_cast<std::int32_t>(it->of.size());
  const int h = host[entry];
  const std::size_t n = members[static_cast<std::size_t>(h)].size();
  FromEntry& e = it->of.emplace_back();
  e.label.assign(n, Label{});
  e.parent.assign(n, entry);
  e.parent_link.assign(n, 0);
  e.gap.assign(n, kInf);
  // own[k]: the least gap between vertex k's label and another candidate of as many hops, each
  // candidate weighed against the best one when it came (what was chosen over it, or what it
  // displaced, is no further from the final label than that).
  std::vector<double> own(n, kInf);
  std::vector<char> done(n, 0);
  e.label[pos[entry]] = {0, 0.0};
  ShortestQueue heap;
  heap.push({e.label[pos[entry]], entry});
  while (!heap.empty()) {
    VertexId u = heap.top().second;
    heap.pop();
    const std::uint32_t pu = pos[u];
    if (done[pu]) continue;
    done[pu] = 1;
    if (u != entry) e.gap[pu] = std::min(own[pu], e.gap[pos[e.parent[pu]]]);
    if (!fwd[u]) continue;
    for (const Adjacent& a : t.adjacent(u)) {
      const Link& l = t.link(a.link);
      const std::uint32_t k = pos[a.peer];
      if (host[a.peer] != h || done[k] || !at_least(l.bw_gbps, level)) continue;
      Label nl = plus(e.label[pu], l);
      Label& cur = e.label[k];
      if (nl.hops == cur.hops) own[k] = std::min(own[k], std::abs(nl.latency - cur.latency));
      if (nl < cur) {
        if (nl.hops < cur.hops) own[k] = kInf;  // what it had is no candidate of as many hops
        cur = nl;
        e.parent[k] = u;
        e.parent_link[k] = a.link;
        heap.push({nl, a.peer});
      }
    }
  }
  return e;
}

AcrossHosts::AcrossHosts(FabricTables& f, const NicAffinity& aff, VertexId src, bool use_tables, bool use_entries)
    : f_(f), aff_(aff), t_(f.t), src_(src), home_(f.host[src]), use_tables_(use_tables), use_entries_(use_entries) {}

std::vector<AcrossHosts::Local>& AcrossHosts::spare() {
  thread_local std::vector<Local> kept;
  return kept;
}

void AcrossHosts::reuse(Local& l) {
  std::vector<Local>& kept = spare();
  if (kept.empty()) return;
  l = std::move(kept.back());
  kept.pop_back();
}

AcrossHosts::~AcrossHosts() {
  // Enough for a source's far hosts on a few thousand hosts; beyond, freed as before.
  constexpr std::size_t kMostKept = 8192;
  std::vector<Local>& kept = spare();
  auto keep = [&](std::unordered_map<std::uint64_t, Local>& far) {
    for (auto& entry : far) {
      if (kept.size() >= kMostKept) return;
      kept.push_back(std::move(entry.second));
    }
  };
  keep(far_w_);
  for (Level& lv : levels_) keep(lv.far);
}

bool AcrossHosts::entry_ok(VertexId y, int set) const {
  if (!f_.nic[y] || set < 0) return true;
  const auto& allowed = aff_.sets[static_cast<std::size_t>(set)];
  return std::find(allowed.begin(), allowed.end(), y) != allowed.end();
}

// The plain search's relaxation of v from u (routing_internal.h).
bool AcrossHosts::relax(Local& l, VertexId v, Label nl, VertexId u, LinkId link) const {
  std::uint32_t k = f_.pos[v];
  return routing::relax(l.label[k], l.parent[k], l.parent_link[k], src_, v, nl, u, link);
}

// Completes the search inside host h (h = -1: the fabric, what the tables give when they do not
// pay) from the labels already seeded in l (widest: l.best), never leaving it.
bool AcrossHosts::search(int h, Local& l, bool widest, double level, VertexId stop) const {
  // The heaps are std::priority_queue's own push_heap / pop_heap on reused vectors: the same
  // order of visits, without two allocations per search.
  const std::vector<VertexId>& m = h < 0 ? f_.fabric : f_.members[static_cast<std::size_t>(h)];
  std::vector<char>& done = done_;
  done.assign(m.size(), 0);
  if (widest) {
    std::vector<Widest>& heap = widest_heap_;
    heap.clear();
    auto push = [&](Widest x) {
      heap.push_back(x);
      std::push_heap(heap.begin(), heap.end());
    };
    for (VertexId v : m)
      if (l.best[f_.pos[v]] > 0) push({l.best[f_.pos[v]], v});
    while (!heap.empty()) {
      auto [bw, u] = heap.front();
      std::pop_heap(heap.begin(), heap.end());
      heap.pop_back();
      if (done[f_.pos[u]]) continue;
      done[f_.pos[u]] = 1;
      if (u == stop) return false;
      if (!may_leave(u)) continue;
      for (const Adjacent& a : t_.adjacent(u)) {
        if (f_.host[a.peer] != h || done[f_.pos[a.peer]]) continue;
        double nb = std::min(bw, t_.link(a.link).bw_gbps);
        if (nb > l.best[f_.pos[a.peer]]) {
          l.best[f_.pos[a.peer]] = nb;
          push({nb, a.peer});
        }
      }
    }
    return true;
  }
  std::vector<LabelItem>& heap = shortest_heap_;
  heap.clear();
  auto push = [&](LabelItem x) {
    heap.push_back(x);
    std::push_heap(heap.begin(), heap.end(), Later{});
  };
  for (VertexId v : m)
    if (l.label[f_.pos[v]].reached()) push({l.label[f_.pos[v]], v});
  while (!heap.empty()) {
    VertexId u = heap.front().second;
    std::pop_heap(heap.begin(), heap.end(), Later{});
    heap.pop_back();
    if (done[f_.pos[u]]) continue;
    done[f_.pos[u]] = 1;
    if (u == stop) return false;
    if (!may_leave(u)) continue;
    for (const Adjacent& a : t_.adjacent(u)) {
      const Link& l2 = t_.link(a.link);
      if (f_.host[a.peer] != h || done[f_.pos[a.peer]] || !at_least(l2.bw_gbps, level)) continue;
      if (relax(l, a.peer, plus(l.label[f_.pos[u]], l2), u, a.link)) push({l.label[f_.pos[a.peer]], a.peer});
    }
  }
  return true;
}

// Completes a search of the fabric (fabric vertices only) from the labels
double AcrossHosts::from_best(VertexId u) const {
  if (home_ >= 0 && f_.host[u] == home_) return exit_ok(u) ? home_w_.best[f_.pos[u]] : 0.0;
  if (f_.host[u] < 0 && may_leave(u)) return fabric_w_.best[f_.pos[u]];
  return 0.0;
}

Label AcrossHosts::from_label(const Level& lv, VertexId u) const {
  if (home_ >= 0 && f_.host[u] == home_) return exit_ok(u) ? lv.home.label[f_.pos[u]] : Label{};
  if (f_.host[u] < 0 && may_leave(u)) return lv.fabric.label[f_.pos[u]];
  return Label{};
}

double AcrossHosts::bottleneck(VertexId dst) {
  if (!widest_done_) {
    widest_done_ = true;
    fabric_w_.best.assign(f_.fabric.size(), 0.0);
    if (home_ < 0) {
      if (use_tables_) fabric_w_.best = f_.widest(src_);
      else {
        fabric_w_.best[f_.pos[src_]] = kInf;
        search(-1, fabric_w_, true, 0);
      }
    } else {
      const std::vector<VertexId>& home = f_.members[static_cast<std::size_t>(home_)];
      home_w_.best.assign(home.size(), 0.0);
      home_w_.best[f_.pos[src_]] = kInf;
      search(home_, home_w_, true, 0);
      for (VertexId x : home) {
        double bx = home_w_.best[f_.pos[x]];
        if (bx <= 0 || !exit_ok(x)) continue;
        for (const Adjacent& a : t_.adjacent(x)) {
          if (f_.host[a.peer] >= 0) continue;
          double v = std::min(bx, t_.link(a.link).bw_gbps);
          if (v <= 0) continue;
          if (!use_tables_) {
            double& b = fabric_w_.best[f_.pos[a.peer]];
            b = std::max(b, v);
            continue;
          }
          const std::vector<double>& w = f_.widest(a.peer);
          for (std::size_t k = 0; k < w.size(); ++k) fabric_w_.best[k] = std::max(fabric_w_.best[k], std::min(v, w[k]));
        }
      }
      if (!use_tables_) search(-1, fabric_w_, true, 0);
    }
  }
  if (f_.host[dst] < 0) return fabric_w_.best[f_.pos[dst]];
  if (use_entries_) {
    // Entered at one vertex: its seed, then the host's own widest from there.
    Entry e = widest_entry(f_.host[dst], aff_.set[dst]);
    if (e.at == kNoStop && !e.many) return 0.0;
    if (!e.many) return std::min(e.best, f_.widest_in_host(e.at)[f_.pos[dst]]);
  }
  return far_widest(f_.host[dst], aff_.set[dst], dst).best[f_.pos[dst]];
}

AcrossHosts::Entry AcrossHosts::widest_entry(int h, int set) const {
  // The seeds far_widest gives its search.
  Entry e;
  for (VertexId y : f_.border[static_cast<std::size_t>(h)]) {
    if (!entry_ok(y, set)) continue;
    double b = 0;
    for (const Adjacent& a : t_.adjacent(y))
      if (f_.host[a.peer] != h) b = std::max(b, std::min(from_best(a.peer), t_.link(a.link).bw_gbps));
    if (b <= 0) continue;
    e.many = e.at != kNoStop;
    if (e.many) return e;
    e.at = y;
    e.best = b;
  }
  return e;
}

AcrossHosts::Entry AcrossHosts::shortest_entry(const Level& lv, int h, int set) const {
  // The seeds far_shortest gives its search, relaxed as it relaxes them.
  Entry e;
  for (VertexId y : f_.border[static_cast<std::size_t>(h)]) {
    if (!entry_ok(y, set)) continue;
    Label label;
    VertexId parent = 0;
    LinkId parent_link = 0;
    for (const Adjacent& a : t_.adjacent(y)) {
      const Link& link = t_.link(a.link);
      if (f_.host[a.peer] == h || !at_least(link.bw_gbps, lv.level)) continue;
      Label lu = from_label(lv, a.peer);
      if (lu.reached()) routing::relax(label, parent, parent_link, src_, y, plus(lu, link), a.peer, a.link);
    }
    if (!label.reached()) continue;
    e.many = e.at != kNoStop;
    if (e.many) return e;
    e = {y, false, 0, label, parent, parent_link};
  }
  return e;
}

const AcrossHosts::Local& AcrossHosts::far_widest(int h, int set, VertexId dst) {
  auto [it, fresh] = far_w_.try_emplace(far_key(h, set));
  Local& l = it->second;
  if (fresh) reuse(l);
  if (!fresh && (l.complete || l.settled[f_.pos[dst]])) return l;
  // A new one stops at dst; one stopped before dst is searched again, to the end.
  const std::vector<VertexId>& m = f_.members[static_cast<std::size_t>(h)];
  l.best.assign(m.size(), 0.0);
  for (VertexId y : f_.border[static_cast<std::size_t>(h)]) {
    if (!entry_ok(y, set)) continue;
    for (const Adjacent& a : t_.adjacent(y)) {
      if (f_.host[a.peer] == h) continue;
      double& b = l.best[f_.pos[y]];
      b = std::max(b, std::min(from_best(a.peer), t_.link(a.link).bw_gbps));
    }
  }
  l.complete = search(h, l, true, 0, fresh ? dst : kNoStop);
  if (!l.complete) l.settled = done_;
  return l;
}

AcrossHosts::Level& AcrossHosts::level(double level) {
  for (Level& lv : levels_)
    if (lv.level == level) return lv;
  Level lv;
  lv.level = level;
  auto sized = [](Local& l, std::size_t n) {
    l.label.assign(n, Label{});
    l.parent.assign(n, 0);
    l.parent_link.assign(n, 0);
  };
  sized(lv.fabric, f_.fabric.size());
  if (home_ < 0) {
    if (use_tables_) lv.fabric.label = f_.shortest(src_, level);
    else {
      lv.fabric.label[f_.pos[src_]] = {0, 0.0};
      search(-1, lv.fabric, false, level);
    }
  } else {
    const std::vector<VertexId>& home = f_.members[static_cast<std::size_t>(home_)];
    sized(lv.home, home.size());
    lv.home.label[f_.pos[src_]] = {0, 0.0};
    lv.home.parent[f_.pos[src_]] = src_;
    search(home_, lv.home, false, level);
    for (VertexId x : home) {
      const Label& lx = lv.home.label[f_.pos[x]];
      if (!lx.reached() || !exit_ok(x)) continue;
      for (const Adjacent& a : t_.adjacent(x)) {
        const Link& l = t_.link(a.link);
        if (f_.host[a.peer] >= 0 || !at_least(l.bw_gbps, level)) continue;
        Label base = plus(lx, l);
        if (!use_tables_) {
          relax(lv.fabric, a.peer, base, x, a.link);
          continue;
        }
        const std::vector<Label>& d = f_.shortest(a.peer, level);
        for (std::size_t k = 0; k < d.size(); ++k) {
          if (!d[k].reached()) continue;
          Label c{base.hops + d[k].hops, base.latency + d[k].latency};
          if (c < lv.fabric.label[k]) lv.fabric.label[k] = c;
        }
      }
    }
    if (!use_tables_) search(-1, lv.fabric, false, level);
  }
  levels_.push_back(std::move(lv));
  return levels_.back();
}

const AcrossHosts::Local& AcrossHosts::far_shortest(Level& lv, int h, int set, VertexId dst) {
  auto [it, fresh] = lv.far.try_emplace(far_key(h, set));
  Local& l = it->second;
  if (fresh) reuse(l);
  if (!fresh && (l.complete || l.settled[f_.pos[dst]])) return l;
  // A new one stops at dst; one stopped before dst is searched again, to the end.
  const std::vector<VertexId>& m = f_.members[static_cast<std::size_t>(h)];
  l.label.assign(m.size(), Label{});
  l.parent.assign(m.size(), 0);
  l.parent_link.assign(m.size(), 0);
  for (VertexId y : f_.border[static_cast<std::size_t>(h)]) {
    if (!entry_ok(y, set)) continue;
    for (const Adjacent& a : t_.adjacent(y)) {
      const Link& link = t_.link(a.link);
      if (f_.host[a.peer] == h || !at_least(link.bw_gbps, lv.level)) continue;
      Label lu = from_label(lv, a.peer);
      if (lu.reached()) relax(l, y, plus(lu, link), a.peer, a.link);
    }
  }
  l.complete = search(h, l, false, lv.level, fresh ? dst : kNoStop);
  if (!l.complete) l.settled = done_;
  return l;
}

Path AcrossHosts::path(VertexId dst, double lvl) {
  Level& lv = level(lvl);
  Path p;
  p.src = src_;
  p.dst = dst;
  p.hops.reserve(8);  // a route across a fat-tree: one allocation rather than four
  VertexId v = dst;
  std::uint32_t key = 0;
  if (f_.host[dst] >= 0) {
    int h = f_.host[dst];
    LinkId entry = 0;
    // A host entered at one vertex: the route inside it is the tables' from there, where no
    // candidate on it came within the ties' tolerance (routing_internal.h) of the chosen one,
    // shifted by the entry's label (with a hundredfold margin).
    const FabricTables::FromEntry* in = nullptr;
    Entry one;
    if (use_entries_) {
      one = shortest_entry(lv, h, aff_.set[dst]);
      if (one.at == kNoStop && !one.many) return p;
      if (!one.many) {
        in = &f_.shortest_in_host(one.at, lvl);
        const std::uint32_t k = f_.pos[dst];
        if (!in->label[k].reached()) return p;
        if (!(in->gap[k] > 1e-7 * std::max(1.0, one.label.latency + in->label[k].latency))) in = nullptr;
      }
    }
    if (in) {
      for (; v != one.at; v = in->parent[f_.pos[v]]) p.hops.push_back(hop_from(t_, in->parent_link[f_.pos[v]], in->parent[f_.pos[v]]));
      entry = one.parent_link;
      p.hops.push_back(hop_from(t_, entry, one.parent));
      v = one.parent;
      ++f_.entered;
    } else {
      const Local& far = far_shortest(lv, h, aff_.set[dst], dst);
      if (!far.label[f_.pos[dst]].reached()) return p;
      while (f_.host[v] == h) {
        entry = far.parent_link[f_.pos[v]];
        p.hops.push_back(hop_from(t_, entry, far.parent[f_.pos[v]]));
        v = far.parent[f_.pos[v]];
      }
    }
    key = f_.host[v] < 0 ? f_.port[entry] : 0;
  } else {
    if (!lv.fabric.label[f_.pos[dst]].reached()) return p;
    key = f_.pos[dst];
  }
  // Back through the fabric: among the predecessors whose label plus the link
  // ties v's (the equal-cost choices), the one the destination's key picks at
  // this depth.
  if (lv.tied_count.empty()) {
    lv.tied_first.assign(f_.fabric.size(), 0);
    lv.tied_count.assign(f_.fabric.size(), Level::kUnknown);
  }
  for (std::uint32_t depth = 0; f_.host[v] < 0 && v != src_; ++depth) {
    std::uint32_t pv = f_.pos[v];
    if (lv.tied_count[pv] == Level::kUnknown) {
      auto first = static_cast<std::uint32_t>(lv.tied_pool.size());
      const Label& want = lv.fabric.label[pv];
      for (const Adjacent& a : t_.adjacent(v)) {
        const Link& l = t_.link(a.link);
        if (!at_least(l.bw_gbps, lvl)) continue;
        Label lu = from_label(lv, a.peer);
        if (lu.reached() && ties(plus(lu, l), want)) lv.tied_pool.emplace_back(a.link, a.peer);
      }
      std::sort(lv.tied_pool.begin() + first, lv.tied_pool.end());
      lv.tied_first[pv] = first;
      lv.tied_count[pv] = static_cast<std::uint32_t>(lv.tied_pool.size()) - first;
    }
    std::uint32_t count = lv.tied_count[pv], first = lv.tied_first[pv];
    if (count == 0) throw Error("routing: no predecessor of " + t_.vertex(v).id + " ties its label (internal error)");
    // In a torus, dimension order: the hop into v crosses the highest dimension in which v and
    // the source's router differ (the dimensions below it were crossed before).
    const std::vector<int>& cv = f_.torus_coord[pv];
    std::int64_t home = home_ >= 0 ? f_.torus_router[static_cast<std::size_t>(home_)] : -1;
    if (count > 1 && !cv.empty() && home >= 0 && f_.torus_coord[static_cast<std::size_t>(home)].size() == cv.size()) {
      const std::vector<int>& cs = f_.torus_coord[static_cast<std::size_t>(home)];
      std::size_t dim = cv.size();
      while (dim > 0 && cv[dim - 1] == cs[dim - 1]) --dim;
      if (dim > 0) {
        // Both ways round an even ring (an antipodal pair): the sources of even coordinate there
        // go up (u = v - 1), the odd ones down, the other way for a destination's odd port, so
        // the pairs exchanging across the ring at once load both directions evenly.
        std::size_t d = dim - 1;
        bool go_up = (static_cast<std::uint32_t>(cs[d]) + key) % 2 == 0;
        std::uint32_t pick = count;
        for (std::uint32_t i = 0; i < count; ++i) {
          VertexId u = lv.tied_pool[first + i].second;
          if (f_.host[u] >= 0) continue;
          const std::vector<int>& cu = f_.torus_coord[f_.pos[u]];
          if (cu.size() != cv.size() || cu[d] == cv[d]) continue;  // not a hop in dimension d
          bool up = cv[d] - cu[d] == 1 || (cv[d] == 0 && cu[d] > 1);
          if (pick == count || up == go_up) pick = i;
          if (up == go_up) break;
        }
        if (pick < count) {
          first += pick;
          count = 1;
        }
      }
    }
    auto [link, u] = lv.tied_pool[first + (key + depth) % count];
    p.hops.push_back(hop_from(t_, link, u));
    v = u;
  }
  while (v != src_) {
    p.hops.push_back(hop_from(t_, lv.home.parent_link[f_.pos[v]], lv.home.parent[f_.pos[v]]));
    v = lv.home.parent[f_.pos[v]];
  }
  std::reverse(p.hops.begin(), p.hops.end());
  p.found = true;
  p.bottleneck_gbps = lvl;
  for (const Hop& hop : p.hops) p.latency_us += t_.link(hop.link).latency_us;  // from the source, as the searches sum
  return p;
}

}  // namespace collkit::topo::routing
