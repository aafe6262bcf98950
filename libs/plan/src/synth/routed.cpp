// The links rank-to-rank routes use, and their walks (routed.h).

#include "synth/routed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "collkit/topo/routing.h"
#include "nic_route.h"
#include "synth/symmetric.h"

namespace collkit::plan::synth {

namespace {

std::vector<topo::VertexId> rank_vertices(const topo::Topology& t, int p) {
  std::vector<topo::VertexId> ends;
  for (int r = 0; r < p; ++r) ends.push_back(t.rank_vertex(static_cast<topo::Rank>(r)));
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  return ends;
}

/// A walk's vertices as bytes, the key of RouteWalks' set.
void append(std::string& key, const topo::VertexId* v, std::size_t n) {
  std::size_t at = key.size();
  key.resize(at + n * sizeof(topo::VertexId));
  std::memcpy(key.data() + at, v, n * sizeof(topo::VertexId));
}

}  // namespace

namespace {

topo::Topology with_links(const topo::Topology& t, const std::vector<char>& used) {
  topo::Topology out;
  out.name = t.name;
  out.source = t.source;
  for (const topo::Vertex& v : t.vertices()) out.add_vertex(v);
  for (std::size_t l = 0; l < t.num_links(); ++l)
    if (used[l]) out.add_link(t.link(static_cast<topo::LinkId>(l)));
  for (topo::VertexId v : t.rank_vertices()) out.add_rank(v);
  return out;
}

}  // namespace

namespace {

/// Per link, whether the route between some two of `ends` takes it.
std::vector<char> routes_use(const topo::Topology& t, const std::vector<topo::VertexId>& ends) {
  std::vector<char> used(t.num_links(), 0);
  topo::Router router(t);
  for (topo::VertexId a : ends)
    for (const topo::Path& path : router.routes_to(a, ends))
      for (const topo::Hop& h : path.hops) used[h.link] = 1;
  return used;
}

/// Calls f(path) for the host-memory path between every two distinct rank vertices of `ends` on
/// one host that has one.
template <class F>
void for_host_paths(const topo::Topology& t, const std::vector<topo::VertexId>& ends, F&& f) {
  sim::HostRoutes hr(t);
  for (topo::VertexId a : ends)
    for (topo::VertexId b : ends) {
      if (a == b || t.vertex(a).host.empty() || t.vertex(a).host != t.vertex(b).host) continue;
      topo::Path path = hr.route(a, b);
      if (path.found && !path.hops.empty()) f(path);
    }
}

}  // namespace

topo::Topology routed_links(const topo::Topology& t, int p) { return with_links(t, routes_use(t, rank_vertices(t, p))); }

topo::Topology routed_host_links(const topo::Topology& t, int p) {
  std::vector<topo::VertexId> ends = rank_vertices(t, p);
  std::vector<char> used = routes_use(t, ends);
  for_host_paths(t, ends, [&](const topo::Path& path) {
    for (const topo::Hop& h : path.hops) used[h.link] = 1;
  });
  return with_links(t, used);
}

topo::Topology direct_links(const topo::Topology& t, int p) {
  std::vector<char> is_rank(t.num_vertices(), 0), used(t.num_links(), 0);
  for (topo::VertexId v : rank_vertices(t, p)) is_rank[v] = 1;
  for (std::size_t l = 0; l < t.num_links(); ++l) {
    const topo::Link& link = t.link(static_cast<topo::LinkId>(l));
    used[l] = link.a != link.b && is_rank[link.a] && is_rank[link.b];
  }
  return with_links(t, used);
}

std::optional<double> star_rate(const topo::Topology& routed, int p) {
  if (p < 2 || routed.num_links() != static_cast<std::size_t>(p)) return std::nullopt;
  std::vector<char> is_rank(routed.num_vertices(), 0);
  for (topo::VertexId v : rank_vertices(routed, p)) is_rank[v] = 1;
  if (std::count(is_rank.begin(), is_rank.end(), 1) != p) return std::nullopt;  // ranks sharing a vertex
  std::optional<topo::VertexId> center;
  std::vector<char> joined(routed.num_vertices(), 0);
  double least = std::numeric_limits<double>::infinity();
  for (const topo::Link& l : routed.links()) {
    if (is_rank[l.a] == is_rank[l.b]) return std::nullopt;  // rank to rank, or two vertices without ranks
    topo::VertexId leaf = is_rank[l.a] ? l.a : l.b, hub = is_rank[l.a] ? l.b : l.a;
    if (center && *center != hub) return std::nullopt;
    if (joined[leaf]) return std::nullopt;  // two links from one rank
    center = hub;
    joined[leaf] = 1;
    least = std::min(least, l.bw_gbps);
  }
  return least / (p - 1);  // p links, one from each rank vertex, all to the hub
}

namespace {

/// star_groups on one host.
std::optional<std::vector<std::vector<int>>> one_host_groups(const topo::Topology& t, int p) {
  if (p < 3 || !star_rate(routed_links(t, p), p)) return std::nullopt;
  sim::HostRoutes hr(t);
  std::vector<int> group(static_cast<std::size_t>(p), -1);
  std::vector<std::vector<int>> groups;
  for (int a = 0; a < p; ++a) {
    if (group[static_cast<std::size_t>(a)] >= 0) continue;
    group[static_cast<std::size_t>(a)] = static_cast<int>(groups.size());
    groups.push_back({a});
    for (int b = a + 1; b < p; ++b)
      if (hr.route(t.rank_vertex(static_cast<topo::Rank>(a)), t.rank_vertex(static_cast<topo::Rank>(b))).found) {
        if (group[static_cast<std::size_t>(b)] >= 0) return std::nullopt;  // b is already in another group
        group[static_cast<std::size_t>(b)] = group[static_cast<std::size_t>(a)];
        groups.back().push_back(b);
      }
  }
  std::size_t g = groups.front().size();
  if (g < 2 || g >= static_cast<std::size_t>(p)) return std::nullopt;
  for (const std::vector<int>& members : groups) {
    if (members.size() != g) return std::nullopt;
    // Every two of a group joined (the first joined each; the others each other too).
    for (std::size_t i = 1; i < g; ++i)
      for (std::size_t j = 1; j < g; ++j)
        if (i != j &&
            !hr.route(t.rank_vertex(static_cast<topo::Rank>(members[i])), t.rank_vertex(static_cast<topo::Rank>(members[j]))).found)
          return std::nullopt;
  }
  return groups;
}

}  // namespace

bool one_host(const topo::Topology& t, int p) {
  for (int r = 0; r < p; ++r) {
    const std::string& host = t.vertex(t.rank_vertex(static_cast<topo::Rank>(r))).host;
    if (host.empty() || host != t.vertex(t.rank_vertex(0)).host) return false;
  }
  return true;
}

std::optional<std::vector<std::vector<int>>> star_groups(const topo::Topology& t, int p) {
  if (p < 3) return std::nullopt;
  if (one_host(t, p)) return one_host_groups(t, p);
  // Hosts of one size, host 0's ranks such a star, every host's groups at the same local places
  // (equal_hosts' order), each joined through host memory.
  std::optional<HostGrid> grid = equal_hosts(t, p, nullptr);
  if (!grid) return std::nullopt;
  std::optional<std::vector<std::vector<int>>> local = one_host_groups(host_topology(t, *grid), grid->local);
  if (!local) return std::nullopt;
  sim::HostRoutes hr(t);
  auto joined = [&](int a, int b) {
    return hr.route(t.rank_vertex(static_cast<topo::Rank>(a)), t.rank_vertex(static_cast<topo::Rank>(b))).found;
  };
  std::vector<std::vector<int>> groups;
  for (int h = 0; h < grid->num_hosts(); ++h)
    for (const std::vector<int>& places : *local) {
      std::vector<int> members;
      for (int l : places) members.push_back(grid->rank[static_cast<std::size_t>(h * grid->local + l)]);
      for (std::size_t i = 1; i < members.size(); ++i)
        if (!joined(members[0], members[i]) || !joined(members[i], members[0])) return std::nullopt;
      groups.push_back(std::move(members));
    }
  return groups;
}

HostTrees star_relay_trees(const topo::Topology& t, int p, const std::vector<std::vector<int>>& groups, int k, int relay, int fan,
                           int relay_of) {
  ArcPaths paths(t);
  return star_relay_trees(paths, p, groups, k, relay, fan, relay_of);
}

HostTrees star_relay_trees(ArcPaths& paths, int p, const std::vector<std::vector<int>>& groups, int k, int relay, int fan, int relay_of) {
  auto at = [](int i) { return static_cast<std::size_t>(i); };
  const topo::Topology& t = paths.topology();
  std::vector<int> group_of(at(p), -1), local(at(p), 0);
  for (std::size_t q = 0; q < groups.size(); ++q)
    for (std::size_t l = 0; l < groups[q].size(); ++l) {
      group_of[at(groups[q][l])] = static_cast<int>(q);
      local[at(groups[q][l])] = static_cast<int>(l);
    }
  auto g = static_cast<int>(groups.front().size());
  // Hosts: one, or hosts of one size in equal_hosts' order (place h L + l: host h, local l).
  const bool single = one_host(t, p);
  std::optional<HostGrid> grid = single ? std::nullopt : equal_hosts(t, p, nullptr);
  if (!single && !grid) return {};
  const int hosts = grid ? grid->num_hosts() : 1, L = grid ? grid->local : p;
  const int per_host = static_cast<int>(groups.size()) / hosts;  // groups a host, in the same local order on each
  auto place = [&](int r) { return grid ? grid->pos[at(r)] : r; };
  auto rank_at = [&](int x) { return grid ? grid->rank[at(x)] : x; };
  HostTrees out;
  for (int root = 0; root < p; ++root)
    for (int j = 0; j < k; ++j) {
      std::vector<int> parent(at(p), -1);
      std::vector<char> staged(at(p), 0);
      // On each host the rank at the root's local place takes the data (over the network on
      // the others) and hands it on there: a star, or relayed inside the groups.
      // With a bounded fan-out, the hosts in a binary heap from the root's (host offset i takes it
      // from offset (i - 1) / 2), else all from the root.
      const int home = place(root) / L;
      auto entry_of = [&](int h) { return h == home ? root : rank_at(h * L + place(root) % L); };
      for (int h = 0; h < hosts; ++h) {
        int entry = entry_of(h), i = (h - home + hosts) % hosts;
        if (entry != root) parent[at(entry)] = fan > 0 ? entry_of((home + (i - 1) / 2) % hosts) : root;
        for (int x = h * L; x < h * L + L; ++x) {
          int r = rank_at(x);
          if (r == entry) continue;
          const std::vector<int>& members = groups[at(group_of[at(r)])];
          int head = group_of[at(r)] == group_of[at(entry)] ? entry : members[at((local[at(entry)] + j) % g)];
          // Whole trees relayed, or (relay_of > 0) each group by turns from the root's group on.
          int dq = ((group_of[at(r)] - group_of[at(root)]) % per_host + per_host) % per_host;
          bool relayed = (relay_of > 0 ? (j + dq) % relay_of < relay : j < relay) && r != head;
          parent[at(r)] = relayed ? head : entry;
          staged[at(r)] = relayed ? 1 : 0;
        }
        // Bounded fan-out: the entry's children over the star in the order of their place after
        // it, the first `fan` from the entry, the x-th after them from the (x mod fan)-th.
        if (fan <= 0) continue;
        std::vector<int> direct;
        for (int x = 0; x < L; ++x) {
          int r = rank_at(h * L + (place(entry) % L + x) % L);
          if (r != entry && parent[at(r)] == entry && !staged[at(r)]) direct.push_back(r);
        }
        for (std::size_t x = static_cast<std::size_t>(fan); x < direct.size(); ++x) parent[at(direct[x])] = direct[x % at(fan)];
      }
      out.trees.push_back(std::move(parent));
      out.host.push_back(std::move(staged));
    }
  double least = tree_share(paths, out);
  if (least <= 0) return {};
  out.per_root_gbps = least * k;
  return out;
}

struct ArcPaths::Impl {
  const topo::Topology& t;
  topo::Router router;
  sim::HostRoutes hr;
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> paths;
  explicit Impl(const topo::Topology& topo) : t(topo), router(topo), hr(topo) {}
};

ArcPaths::ArcPaths(const topo::Topology& t) : impl_(std::make_unique<Impl>(t)) {}
ArcPaths::~ArcPaths() = default;
const topo::Topology& ArcPaths::topology() const { return impl_->t; }

const std::vector<std::size_t>* ArcPaths::of(int a, int c, bool staged) {
  std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 33) |
                      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(c)) << 1) | (staged ? 1U : 0U);
  auto [it, fresh] = impl_->paths.try_emplace(key);
  if (fresh) {
    const topo::Topology& t = impl_->t;
    topo::VertexId va = t.rank_vertex(static_cast<topo::Rank>(a)), vc = t.rank_vertex(static_cast<topo::Rank>(c));
    topo::Path path = staged ? impl_->hr.route(va, vc) : impl_->router.route(va, vc);
    if (!path.found) it->second.push_back(std::numeric_limits<std::size_t>::max());
    for (const topo::Hop& h : path.hops) it->second.push_back(h.channel());
  }
  return !it->second.empty() && it->second.front() == std::numeric_limits<std::size_t>::max() ? nullptr : &it->second;
}

double tree_share(const topo::Topology& t, const HostTrees& trees) {
  ArcPaths paths(t);
  return tree_share(paths, trees);
}

double tree_share(ArcPaths& paths, const HostTrees& trees, std::map<std::string, double>* per_host) {
  auto at = [](int i) { return static_cast<std::size_t>(i); };
  const topo::Topology& t = paths.topology();
  // The loads: arcs per link direction, each over its route or its host path.
  std::vector<double> load(2 * t.num_links(), 0);
  for (std::size_t i = 0; i < trees.trees.size(); ++i)
    for (int c = 0; c < static_cast<int>(trees.trees[i].size()); ++c) {
      int a = trees.trees[i][at(c)];
      if (a < 0) continue;
      const std::vector<std::size_t>* dirs = paths.of(a, c, trees.host[i][at(c)] != 0);
      if (!dirs) return 0;
      for (std::size_t dir : *dirs) load[dir] += 1;
    }
  double least = std::numeric_limits<double>::infinity();
  for (std::size_t dir = 0; dir < load.size(); ++dir)
    if (load[dir] > 0) {
      const topo::Link& l = t.link(static_cast<topo::LinkId>(dir / 2));
      least = std::min(least, l.bw_gbps / load[dir]);
      if (per_host) {
        const std::string& h = t.vertex(l.a).host.empty() ? t.vertex(l.b).host : t.vertex(l.a).host;
        auto [it, fresh] = per_host->try_emplace(h, l.bw_gbps / load[dir]);
        if (!fresh) it->second = std::min(it->second, l.bw_gbps / load[dir]);
      }
    }
  return std::isfinite(least) ? least : 0;
}

HostTrees star_relay_root_trees(ArcPaths& paths, int p, const std::vector<std::vector<int>>& groups, int root, int k, const RootRelay& how,
                                std::map<std::string, double>* per_host) {
  auto at = [](int i) { return static_cast<std::size_t>(i); };
  const topo::Topology& t = paths.topology();
  std::vector<int> group_of(at(p), -1);
  for (std::size_t q = 0; q < groups.size(); ++q)
    for (int r : groups[q]) group_of[at(r)] = static_cast<int>(q);
  const bool single = one_host(t, p);
  std::optional<HostGrid> grid = single ? std::nullopt : equal_hosts(t, p, nullptr);
  if ((!single && !grid) || root < 0 || root >= p || k < 1 || how.relay_of <= 0 || how.away_of <= 0 || how.via_of <= 0 || how.fan < 1)
    return {};
  const int hosts = grid ? grid->num_hosts() : 1, L = grid ? grid->local : p;
  auto place = [&](int r) { return grid ? grid->pos[at(r)] : r; };
  auto rank_at = [&](int x) { return grid ? grid->rank[at(x)] : x; };
  const int home = place(root) / L, groups_a_host = static_cast<int>(groups.size()) / hosts;
  // The root's twins (the rest of its group) and the heads: every other local place.
  const std::vector<int>& root_group = groups[at(group_of[at(root)])];
  std::vector<int> twins, heads;
  std::vector<char> in_root_group(at(L), 0);
  for (int r : root_group) {
    in_root_group[at(place(r) % L)] = 1;
    if (r != root) twins.push_back(r);
  }
  for (int l = 0; l < L; ++l)
    if (!in_root_group[at(l)]) heads.push_back(l);
  if (heads.empty() || twins.empty()) return {};
  // Arcs staged into each rank so far: a relayed group's sender is the member whose others have
  // taken the fewest (the first of equals), so that every rank's host link carries its share.
  std::vector<int> staged_in(at(p), 0);
  HostTrees out;
  for (int head : heads)
    for (int j = 0; j < k; ++j) {
      const int tree = static_cast<int>(out.trees.size());
      std::vector<int> parent(at(p), -1);
      std::vector<char> staged(at(p), 0), done(groups.size(), 0);
      // The first hop: over the star, or through host memory to a twin that sends it over the star.
      const int first = rank_at(home * L + head);
      const bool via = tree % how.via_of < how.via;
      const int twin = twins[at(tree / how.via_of % static_cast<int>(twins.size()))];
      if (via) {
        parent[at(twin)] = root;
        staged[at(twin)] = 1;
      }
      parent[at(first)] = via ? twin : root;
      // Hosts in a heap of fan-out `fan` from the root's: the rank at the head's place on each
      // takes the piece from its parent host's over the network.
      std::vector<int> entry(at(hosts), -1);
      for (int i = 0; i < hosts; ++i) {
        entry[at(i)] = rank_at((home + i) % hosts * L + head);
        if (i > 0) parent[at(entry[at(i)])] = entry[at((i - 1) / how.fan)];
      }
      // Inside each host from its entry: to every group straight over the star, or (the groups
      // this tree relays there) to one member, which hands it on through host memory.
      for (int i = 0; i < hosts; ++i) {
        const int h = (home + i) % hosts, e = entry[at(i)];
        const int relay = i == 0 ? how.relay : how.away, of = i == 0 ? how.relay_of : how.away_of;
        for (int x = h * L; x < h * L + L; ++x) {
          int r = rank_at(x);
          if (r == e || r == root || (via && r == twin)) continue;
          int q = group_of[at(r)];
          if (q == group_of[at(root)] || (tree + q % groups_a_host) % of >= relay) {  // the root's group: never relayed
            parent[at(r)] = e;
            continue;
          }
          if (done[at(q)]) continue;  // the whole group at its first member met
          done[at(q)] = 1;
          const std::vector<int>& members = groups[at(q)];
          int sender = e;
          if (q != group_of[at(e)]) {
            auto others_in = [&](int m) {
              int n = 0;
              for (int o : members) n += o == m ? 0 : staged_in[at(o)];
              return n;
            };
            sender = members.front();
            for (int m : members)
              if (others_in(m) < others_in(sender)) sender = m;
            parent[at(sender)] = e;
          }
          for (int o : members)
            if (o != sender) {
              parent[at(o)] = sender;
              staged[at(o)] = 1;
              ++staged_in[at(o)];
            }
        }
      }
      out.trees.push_back(std::move(parent));
      out.host.push_back(std::move(staged));
    }
  double least = tree_share(paths, out, per_host);
  if (least <= 0) return {};
  out.per_root_gbps = least * static_cast<double>(out.trees.size());
  return out;
}

double host_paths_rate(const topo::Topology& t, const std::vector<std::pair<int, int>>& sends) {
  sim::HostRoutes hr(t);
  std::map<std::size_t, int> crossing;
  for (auto [a, b] : sends) {
    topo::VertexId va = t.rank_vertex(static_cast<topo::Rank>(a)), vb = t.rank_vertex(static_cast<topo::Rank>(b));
    if (va == vb) return 0;
    topo::Path path = hr.route(va, vb);
    if (!path.found) return 0;
    for (const topo::Hop& h : path.hops) ++crossing[h.channel()];
  }
  double rate = 0;
  bool first = true;
  for (const auto& [dir, n] : crossing) {
    double x = t.link(static_cast<topo::LinkId>(dir / 2)).bw_gbps / n;
    rate = first ? x : std::min(rate, x);
    first = false;
  }
  return rate;
}

topo::Topology routed_links(const topo::Topology& t, int p, const std::vector<int>& nics) {
  std::vector<topo::VertexId> ends = rank_vertices(t, p);
  std::vector<char> used(t.num_links(), 0);
  topo::RouteCache cache(t);
  sim::NicRoutes via(t, cache);
  for (topo::VertexId a : ends)
    for (topo::VertexId b : ends)
      for (int nic : nics) {
        if (a == b) continue;
        topo::Path path = via.route(a, b, nic);
        if (path.found)
          for (const topo::Hop& h : path.hops) used[h.link] = 1;
      }
  return with_links(t, used);
}

RouteWalks::RouteWalks(const topo::Topology& t, int p, bool host_paths) {
  std::vector<topo::VertexId> ends = rank_vertices(t, p);
  topo::Router router(t);
  for (topo::VertexId a : ends)
    for (const topo::Path& path : router.routes_to(a, ends))
      if (path.found && !path.hops.empty()) add(path.vertices(t));
  if (host_paths) for_host_paths(t, ends, [&](const topo::Path& path) { add(path.vertices(t)); });
}

void RouteWalks::add(const std::vector<topo::VertexId>& v) {
  ++routes_;
  std::string key;
  for (std::size_t i = 0; i + 1 < v.size(); ++i)
    for (std::size_t j = i + 2; j <= v.size(); ++j) {
      key.clear();
      append(key, v.data() + i, j - i);
      parts_.insert(key);
    }
}

bool RouteWalks::contains(const std::vector<topo::VertexId>& walk) const {
  std::string key;
  append(key, walk.data(), walk.size());
  return parts_.count(key) > 0;
}

bool RouteWalks::joins(const std::vector<topo::VertexId>& a, const std::vector<topo::VertexId>& b) const {
  std::string key;
  append(key, a.data(), a.size());
  if (b.size() > 1) append(key, b.data() + 1, b.size() - 1);
  return parts_.count(key) > 0;
}

}  // namespace collkit::plan::synth
