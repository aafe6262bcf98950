#include "collkit/topo/routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>

#include "routing_internal.h"

namespace collkit::topo {

using namespace routing;

namespace {

// The edge rules of routing.h, for routes that start at `src`. Factored out so that route(),
// routes_from(), equal_cost_paths() and reachability all obey exactly the same rules.
class Rules {
 public:
  // `host`: a dense host number per vertex (-1 for fabric). `allowed`: when given, the hosts a
  // targeted search may enter (the destinations' hosts); a route never crosses a third host,
  // so leaving the others out changes no route and saves flooding every host of a cluster.
  // `aff`: when given, the route leaves the source's host only through one of the source's NICs
  // and, for a single destination `dst`, enters its host only through one of dst's (affinity.h).
  Rules(const Topology& t, const std::vector<int>& host, VertexId src, const std::vector<char>* allowed = nullptr,
        const NicAffinity* aff = nullptr, std::optional<VertexId> dst = std::nullopt)
      : t_(t), host_(host), src_(src), src_host_(host[src]), allowed_(allowed), aff_(aff), dst_(dst) {}

  // May a route continue from u (already reached) over to w?
  bool step(VertexId u, VertexId w) const {
    if (u != src_ && !forwards(t_.vertex(u).kind)) return false;
    int hu = host_[u], hw = host_[w];
    bool u_home = hu == src_host_;
    bool u_fabric = hu < 0;
    if (!u_home && !u_fabric) return hw == hu;                     // inside the far host: stay there
    if (!u_home && hw == src_host_ && src_host_ >= 0) return false;  // no re-entry
    if (allowed_ && hw >= 0 && hw != src_host_ && !(*allowed_)[static_cast<std::size_t>(hw)]) return false;
    if (aff_) {
      bool leaving = u_home && src_host_ >= 0 && hw != src_host_;
      if (leaving && t_.vertex(u).kind == VertexKind::Nic && !aff_->allows(src_, u)) return false;
      bool entering = dst_ && hw >= 0 && hw == host_[*dst_] && hu != hw;
      if (entering && t_.vertex(w).kind == VertexKind::Nic && !aff_->allows(*dst_, w)) return false;
    }
    return true;
  }

 private:
  const Topology& t_;
  const std::vector<int>& host_;
  VertexId src_;
  int src_host_;
  const std::vector<char>* allowed_;
  const NicAffinity* aff_;
  std::optional<VertexId> dst_;
};

// What a search needs besides the topology: host numbers, and for targeted searches the
// targets and the hosts they are on.
struct Search {
  const Topology& t;
  const std::vector<int>& host;
  const std::vector<VertexId>* targets = nullptr;
  std::vector<char> allowed;  // per host number, when targets are given
  const NicAffinity* aff = nullptr;
  std::optional<VertexId> dst;  // the one destination whose entry NICs `aff` restricts

  Search(const Topology& topo, const std::vector<int>& hosts, const std::vector<VertexId>* dsts = nullptr)
      : t(topo), host(hosts), targets(dsts) {
    if (!targets) return;
    int n = 0;
    for (int h : host) n = std::max(n, h + 1);
    allowed.assign(static_cast<std::size_t>(n), 0);
    for (VertexId d : *targets)
      if (host[d] >= 0) allowed[static_cast<std::size_t>(host[d])] = 1;
  }
  Rules rules(VertexId src) const { return Rules(t, host, src, targets ? &allowed : nullptr, aff, dst); }
};

// Pass 1: the widest (max bottleneck) bandwidth from src to every vertex; with `targets`, it
// stops once all of them are settled (their values are then final, the others may be partial).
std::vector<double> widest(const Search& q, VertexId src) {
  const Topology& t = q.t;
  const std::vector<VertexId>* targets = q.targets;
  Rules rules = q.rules(src);
  std::vector<double> best(t.num_vertices(), 0.0);
  std::vector<char> done(t.num_vertices(), 0);
  best[src] = kInf;
  std::vector<char> wanted;
  std::size_t left = 0;
  if (targets) {
    wanted.assign(t.num_vertices(), 0);
    for (VertexId d : *targets) {
      if (wanted[d]) continue;
      wanted[d] = 1;
      ++left;
    }
  }
  std::priority_queue<std::pair<double, VertexId>> heap;
  heap.push({kInf, src});
  while (!heap.empty()) {
    auto [bw, u] = heap.top();
    heap.pop();
    if (done[u]) continue;
    done[u] = 1;
    if (targets && wanted[u] && --left == 0) break;
    for (const Adjacent& a : t.adjacent(u)) {
      if (done[a.peer] || !rules.step(u, a.peer)) continue;
      double nb = std::min(bw, t.link(a.link).bw_gbps);
      if (nb > best[a.peer]) {
        best[a.peer] = nb;
        heap.push({nb, a.peer});
      }
    }
  }
  return best;
}

// Pass 2: fewest hops, then least latency, over links at least `threshold` wide.
struct ShortestTree {
  std::vector<Label> label;
  std::vector<LinkId> parent_link;
  std::vector<VertexId> parent;
};

ShortestTree shortest(const Search& q, VertexId src, double threshold) {
  const Topology& t = q.t;
  const std::vector<VertexId>* targets = q.targets;
  Rules rules = q.rules(src);
  ShortestTree s;
  std::size_t n = t.num_vertices();
  s.label.assign(n, Label{});
  s.parent_link.assign(n, 0);
  s.parent.assign(n, src);
  std::vector<char> done(n, 0);
  s.label[src] = {0, 0.0};
  ShortestQueue heap;
  heap.push({s.label[src], src});
  std::vector<char> wanted;
  std::size_t left = 0;
  if (targets) {
    wanted.assign(n, 0);
    for (VertexId d : *targets) {
      if (wanted[d]) continue;
      wanted[d] = 1;
      ++left;
    }
  }
  while (!heap.empty()) {
    auto [lab, u] = heap.top();
    heap.pop();
    if (done[u]) continue;
    done[u] = 1;
    if (targets && wanted[u] && --left == 0) break;
    for (const Adjacent& a : t.adjacent(u)) {
      const Link& l = t.link(a.link);
      if (done[a.peer] || !at_least(l.bw_gbps, threshold) || !rules.step(u, a.peer)) continue;
      Label nl = plus(lab, l);
      if (relax(s.label[a.peer], s.parent[a.peer], s.parent_link[a.peer], src, a.peer, nl, u, a.link)) heap.push({nl, a.peer});
    }
  }
  return s;
}

Path self_path(const Topology& t, VertexId v) {
  Path p;
  p.src = p.dst = v;
  p.found = true;
  p.bottleneck_gbps = t.vertex(v).local_bw_gbps;
  return p;
}

}  // namespace

bool forwards(VertexKind kind) { return kind != VertexKind::Gpu; }

std::vector<VertexId> Path::vertices(const Topology& t) const {
  std::vector<VertexId> out{src};
  for (const Hop& h : hops) {
    const Link& l = t.link(h.link);
    out.push_back(h.forward ? l.b : l.a);
  }
  return out;
}

Router::Router(const Topology& t) : t_(t) {
  std::unordered_map<std::string_view, int> number;
  host_.reserve(t.num_vertices());
  for (const Vertex& v : t.vertices()) {
    if (v.host.empty()) {
      host_.push_back(-1);
      continue;
    }
    auto [it, fresh] = number.emplace(v.host, static_cast<int>(number.size()));
    host_.push_back(it->second);
  }
  num_hosts_ = static_cast<int>(number.size());
}

// Per-vertex state of the targeted searches, valid where stamp[v] == current.
struct Router::Workspace {
  std::vector<std::uint32_t> stamp;
  std::uint32_t current = 0;
  std::vector<double> best;
  std::vector<Label> label;
  std::vector<VertexId> parent;
  std::vector<LinkId> parent_link;
  std::vector<char> done, wanted;
  std::vector<char> allowed;  // per host

  explicit Workspace(std::size_t n, int hosts)
      : stamp(n, 0), best(n), label(n), parent(n), parent_link(n), done(n), wanted(n), allowed(static_cast<std::size_t>(hosts), 0) {}
  void begin() {
    if (++current == 0) {  // wrapped: forget every stamp
      std::fill(stamp.begin(), stamp.end(), 0);
      current = 1;
    }
  }
  void touch(VertexId v) {
    if (stamp[v] == current) return;
    stamp[v] = current;
    best[v] = 0;
    label[v] = Label{};
    done[v] = 0;
    wanted[v] = 0;
  }
};

Router::Workspace& Router::workspace() const {
  if (!ws_) ws_ = std::make_shared<Workspace>(t_.num_vertices(), num_hosts_);
  return *ws_;
}

Path Router::route(VertexId src, VertexId dst) const { return routes_to(src, {dst}).front(); }

Path Router::route_ranks(Rank a, Rank b) const { return route(t_.rank_vertex(a), t_.rank_vertex(b)); }

std::vector<Path> Router::routes_from(VertexId src) const {
  std::vector<VertexId> all(t_.num_vertices());
  for (VertexId v = 0; v < all.size(); ++v) all[v] = v;
  return routes_to(src, all);
}

std::vector<char> Router::reachable_from(VertexId src) const {
  // Rules::step depends on the link's two ends only (and the source), so the vertices an allowed
  // path reaches are those a search over allowed steps visits.
  Rules rules(t_, host_, src);
  std::vector<char> seen(t_.num_vertices(), 0);
  std::vector<VertexId> queue{src};
  seen[src] = 1;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    VertexId u = queue[i];
    for (const Adjacent& a : t_.adjacent(u)) {
      if (seen[a.peer] || !rules.step(u, a.peer)) continue;
      seen[a.peer] = 1;
      queue.push_back(a.peer);
    }
  }
  return seen;
}

const NicAffinity& Router::affinity() const {
  if (!aff_) aff_ = std::make_shared<NicAffinity>(nic_affinity(t_));
  return *aff_;
}

const NicAffinity& Router::no_affinity() const {
  if (!none_) {
    none_ = std::make_shared<NicAffinity>();
    none_->nics.assign(t_.num_vertices(), {});
    none_->set.assign(t_.num_vertices(), -1);
  }
  return *none_;
}

std::size_t Router::routes_by_entry_tables() const { return fabric_ ? fabric_->entered : 0; }

std::vector<Path> Router::routes_to(VertexId src, const std::vector<VertexId>& dsts) const {
  // The same two passes as routes_from(), on stamped workspace arrays, entering no host but the
  // destinations', stopping once every destination is settled.
  Workspace& w = workspace();
  std::vector<Path> out(dsts.size());
  std::vector<int> hosts_set;
  for (VertexId d : dsts)
    if (host_[d] >= 0 && !w.allowed[static_cast<std::size_t>(host_[d])]) {
      w.allowed[static_cast<std::size_t>(host_[d])] = 1;
      hosts_set.push_back(host_[d]);
    }
  Rules rules(t_, host_, src, &w.allowed);

  auto mark_wanted = [&](const std::vector<VertexId>& targets) {
    std::size_t left = 0;
    for (VertexId d : targets) {
      w.touch(d);
      if (!w.wanted[d]) {
        w.wanted[d] = 1;
        ++left;
      }
    }
    return left;
  };

  // Destinations outside the source's host (another host, or the fabric from a host) go
  // through AcrossHosts (routing_across.cpp), which keeps to the NICs of source and destination;
  // the rest through the plain searches below.
  std::vector<char> across(dsts.size(), 0);
  bool any = false;
  for (std::size_t i = 0; i < dsts.size(); ++i) {
    int hs = host_[src], hd = host_[dsts[i]];
    across[i] = dsts[i] != src && hd != hs && (hs >= 0 || hd >= 0);
    any = any || across[i];
  }
  std::vector<double> bottleneck(dsts.size(), 0.0);
  std::unique_ptr<routing::AcrossHosts> tables, unrestricted;
  if (any) {
    if (!fabric_) fabric_ = std::make_shared<routing::FabricTables>(t_, host_, num_hosts_);
    bool use = fabric_tables_ && fabric_->pays;
    tables = std::make_unique<routing::AcrossHosts>(*fabric_, affinity(), src, use, entry_tables_);
    for (std::size_t i = 0; i < dsts.size(); ++i) {
      if (!across[i]) continue;
      bottleneck[i] = tables->bottleneck(dsts[i]);
      // No route through the NICs of both ends (a rail-only network has no path from one rail to
      // another): any NIC will do then, rather than no route at all.
      if (bottleneck[i] <= 0) {
        if (!unrestricted) unrestricted = std::make_unique<routing::AcrossHosts>(*fabric_, no_affinity(), src, use, entry_tables_);
        bottleneck[i] = unrestricted->bottleneck(dsts[i]);
        across[i] = 2;
      }
    }
  }

  // Pass 1: widest bottleneck to each destination.
  std::vector<VertexId> others;
  for (std::size_t i = 0; i < dsts.size(); ++i)
    if (dsts[i] != src && !across[i]) others.push_back(dsts[i]);
  if (!others.empty()) {
    w.begin();
    std::size_t left = mark_wanted(others);
    w.touch(src);
    w.best[src] = kInf;
    std::priority_queue<std::pair<double, VertexId>> heap;
    heap.push({kInf, src});
    while (!heap.empty() && left > 0) {
      auto [bw, u] = heap.top();
      heap.pop();
      if (w.done[u]) continue;
      w.done[u] = 1;
      if (w.wanted[u]) --left;
      for (const Adjacent& a : t_.adjacent(u)) {
        if (!rules.step(u, a.peer)) continue;
        w.touch(a.peer);
        if (w.done[a.peer]) continue;
        double nb = std::min(bw, t_.link(a.link).bw_gbps);
        if (nb > w.best[a.peer]) {
          w.best[a.peer] = nb;
          heap.push({nb, a.peer});
        }
      }
    }
    for (std::size_t i = 0; i < dsts.size(); ++i)
      if (dsts[i] != src && !across[i]) bottleneck[i] = w.done[dsts[i]] ? w.best[dsts[i]] : 0.0;
  }

  // Pass 2: per distinct bottleneck, fewest hops then least latency over links that wide.
  std::vector<std::pair<double, std::vector<std::size_t>>> levels;
  for (std::size_t i = 0; i < dsts.size(); ++i) {
    if (dsts[i] == src) {
      out[i] = self_path(t_, src);
      continue;
    }
    out[i].src = src;
    out[i].dst = dsts[i];
    double b = bottleneck[i];
    if (b <= 0) continue;
    auto it = std::find_if(levels.begin(), levels.end(), [&](auto& l) { return at_least(l.first, b) && at_least(b, l.first); });
    if (it == levels.end()) levels.push_back({b, {i}});
    else it->second.push_back(i);
  }
  for (auto& [level, all] : levels) {
    std::vector<std::size_t> idx;
    for (std::size_t i : all) {
      if (across[i]) out[i] = (across[i] == 1 ? tables : unrestricted)->path(dsts[i], level);
      else idx.push_back(i);
    }
    if (idx.empty()) continue;
    std::vector<VertexId> group;
    for (std::size_t i : idx) group.push_back(dsts[i]);
    w.begin();
    std::size_t left = mark_wanted(group);
    w.touch(src);
    w.label[src] = {0, 0.0};
    ShortestQueue heap;
    heap.push({w.label[src], src});
    while (!heap.empty() && left > 0) {
      auto [lab, u] = heap.top();
      heap.pop();
      if (w.done[u]) continue;
      w.done[u] = 1;
      if (w.wanted[u]) --left;
      for (const Adjacent& a : t_.adjacent(u)) {
        const Link& l = t_.link(a.link);
        if (!at_least(l.bw_gbps, level) || !rules.step(u, a.peer)) continue;
        w.touch(a.peer);
        if (w.done[a.peer]) continue;
        Label nl = plus(lab, l);
        if (relax(w.label[a.peer], w.parent[a.peer], w.parent_link[a.peer], src, a.peer, nl, u, a.link)) heap.push({nl, a.peer});
      }
    }
    for (std::size_t i : idx) {
      VertexId d = dsts[i];
      if (!w.done[d]) continue;
      Path& p = out[i];
      p.found = true;
      p.bottleneck_gbps = level;
      p.latency_us = w.label[d].latency;
      for (VertexId v = d; v != src; v = w.parent[v]) p.hops.push_back(hop_from(t_, w.parent_link[v], w.parent[v]));
      std::reverse(p.hops.begin(), p.hops.end());
    }
  }
  for (int h : hosts_set) w.allowed[static_cast<std::size_t>(h)] = 0;
  return out;
}

std::vector<Path> Router::equal_cost_paths(VertexId src, VertexId dst, std::size_t limit) const {
  std::vector<Path> out;
  if (limit == 0) return out;
  if (src == dst) {
    out.push_back(self_path(t_, src));
    return out;
  }
  // Between hosts, the alternatives keep to the NICs of both ends, as route() does (and drop
  // that rule where it leaves no path at all).
  Search all(t_, host_);
  if (host_[dst] != host_[src]) {
    all.aff = &affinity();
    all.dst = dst;
  }
  auto best = widest(all, src);
  if (best[dst] <= 0 && all.aff) {
    all.aff = nullptr;
    best = widest(all, src);
  }
  if (best[dst] <= 0) return out;
  double threshold = best[dst];
  ShortestTree s = shortest(all, src, threshold);
  Rules rules = all.rules(src);
  // Walk back from dst over every link that lies on some shortest (by hops) path, depth first
  // in link-id order. A link u->w is on one iff label[u].hops + 1 == label[w].hops.
  std::vector<Hop> stack;
  std::function<void(VertexId)> walk = [&](VertexId w) {
    if (out.size() >= limit) return;
    if (w == src) {
      Path p;
      p.src = src;
      p.dst = dst;
      p.found = true;
      p.bottleneck_gbps = threshold;
      p.hops.assign(stack.rbegin(), stack.rend());
      for (const Hop& h : p.hops) p.latency_us += t_.link(h.link).latency_us;
      out.push_back(std::move(p));
      return;
    }
    std::vector<Adjacent> preds(t_.adjacent(w).begin(), t_.adjacent(w).end());
    std::sort(preds.begin(), preds.end(), [](const Adjacent& x, const Adjacent& y) { return x.link < y.link; });
    for (const Adjacent& a : preds) {
      VertexId u = a.peer;
      if (s.label[u].hops == std::numeric_limits<std::uint32_t>::max()) continue;
      if (s.label[u].hops + 1 != s.label[w].hops) continue;
      if (!at_least(t_.link(a.link).bw_gbps, threshold) || !rules.step(u, w)) continue;
      stack.push_back(hop_from(t_, a.link, u));
      walk(u);
      stack.pop_back();
      if (out.size() >= limit) return;
    }
  };
  walk(dst);
  return out;
}

std::vector<const Path*> RouteCache::routes_to(VertexId src, const std::vector<VertexId>& dsts) {
  // One lookup per destination kept (the planner asks for the same routes once per candidate
  // simulated), a second only for those searched now.
  std::vector<const Path*> out(dsts.size(), nullptr);
  std::vector<VertexId> missing;
  for (std::size_t i = 0; i < dsts.size(); ++i) {
    std::uint32_t j = index_.find(FlatIndex::pair(src, dsts[i]));
    if (j != FlatIndex::kNone) out[i] = &paths_[j];
    else missing.push_back(dsts[i]);
  }
  if (!missing.empty()) {
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    std::vector<Path> found = router_.routes_to(src, missing);
    std::vector<const Path*> kept(missing.size());
    for (std::size_t i = 0; i < missing.size(); ++i) {
      index_.emplace(FlatIndex::pair(src, missing[i]), static_cast<std::uint32_t>(paths_.size()));
      paths_.push_back(std::move(found[i]));
      kept[i] = &paths_.back();
    }
    // missing is sorted: each destination searched now finds its route there, not by a second lookup.
    for (std::size_t i = 0; i < dsts.size(); ++i)
      if (!out[i]) out[i] = kept[static_cast<std::size_t>(std::lower_bound(missing.begin(), missing.end(), dsts[i]) - missing.begin())];
  }
  return out;
}

}  // namespace collkit::topo
