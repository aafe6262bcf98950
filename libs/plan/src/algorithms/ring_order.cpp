// Topology-aware ring orders, after NCCL's ring search (graph/search.cc, graph/rings.cc):
//  - ranks grouped by host, so the ring crosses each host boundary once; hosts in topology
//    order, except on a direct network (a torus: each host behind a router of its own), where
//    consecutive hosts share router links and every channel would cross the same ones: there
//    channel pairs (2k, 2k+1) run their own host cycle, one each way round, the cycles chosen so
//    that the router link directions carry as few channels as they can (ring_hosts.h);
//  - inside a host, each channel takes its own Hamiltonian cycle (one host) or path (several),
//    chosen with the other channels' so that the busiest link direction carries as few ring
//    hops per GB/s as the links allow (ring_search.h): the 8 channels of an xGMI full mesh or
//    the 6 of DGX-1's NVLink cube-mesh each get link directions of their own. Where every order
//    loads the links alike (an NVSwitch), channels keep the maximum-bottleneck cycle
//    (host_cycles), walked from their entry;
//  - rail-aligned: the rank that enters host h+1 is on the rail of the rank that left host h, so
//    each inter-host hop stays under one leaf switch of a rail-optimised fabric; host h+1 leaves
//    on the rail host h was entered at (hosts alternate direction), so with an even number of
//    identical hosts the wrap-around hop is rail-aligned too (with an odd number it is the one
//    hop that may not be). A host's ends thus follow from the parity of its place on the
//    channel's host order and the ranks the channel enters and leaves host 0 at. The way in
//    and out of a host through its NICs counts as link load too, so channels leave a host
//    through different NICs while there are enough;
//  - channel c (pair c/2 on a torus) enters host 0 at a different rank (distinct rails first),
//    so channels spread their inter-host traffic over the NICs. The two channels of a pair
//    enter and leave every host at the same two ranks, one each way: a host where one pair is
//    at an even place and another at an odd one still has each NIC used once each way.

#include "ring_order.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <string>

#include "collkit/topo/affinity.h"
#include "collkit/topo/queries.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/topology.h"
#include "host_rings.h"
#include "ring_hosts.h"
#include "ring_search.h"

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
  std::vector<std::vector<std::vector<std::size_t>>> dirs;  // link directions (Hop::channel) crossed
};

Widths widths(const Topology& t, const std::vector<int>& ranks) {
  topo::Router router(t);
  std::size_t m = ranks.size();
  Widths w{std::vector<std::vector<double>>(m, std::vector<double>(m, 0)),
           std::vector<std::vector<std::size_t>>(m, std::vector<std::size_t>(m, 0)),
           std::vector<std::vector<std::vector<std::size_t>>>(m, std::vector<std::vector<std::size_t>>(m))};
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
        for (const topo::Hop& hop : paths[j].hops) w.dirs[i][j].push_back(hop.channel());
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

struct Group {
  std::string sig;
  std::vector<int> ranks;  // ascending: local index -> rank
};

// Ranks 0..nranks-1 by host with their layouts' signatures; empty when they cannot be grouped.
std::vector<Group> groups(int nranks, const Topology& topo) {
  if (nranks <= 0 || static_cast<std::size_t>(nranks) > topo.num_ranks()) return {};
  std::vector<Group> out;
  for (const topo::HostGroup& g : topo::ranks_by_host(topo)) {
    std::vector<int> ranks;
    for (topo::Rank r : g.ranks)
      if (static_cast<int>(r) < nranks) ranks.push_back(static_cast<int>(r));
    if (ranks.empty()) continue;
    if (g.host.empty()) return {};
    out.push_back({signature(topo, g.host, ranks), std::move(ranks)});
  }
  return out;
}

// One host layout's links for the channel search (ring_search.h): the routes between its ranks
// and, with several hosts, each rank's way to and from the fabric through its own NIC (the
// route to the NIC, then the NIC's port), which the ring's inter-host hop at that rank crosses.
HostLinks host_links(const Topology& t, const std::vector<int>& ranks, bool several_hosts, const topo::NicAffinity& aff) {
  Widths w = widths(t, ranks);
  std::size_t m = ranks.size();
  HostLinks h;
  std::map<std::size_t, int> dense;  // Hop::channel() -> index into arc_gbps
  auto arc = [&](std::size_t dir) {
    auto [it, fresh] = dense.emplace(dir, static_cast<int>(h.arc_gbps.size()));
    if (fresh) h.arc_gbps.push_back(t.link(static_cast<topo::LinkId>(dir / 2)).bw_gbps);
    return it->second;
  };
  h.route.assign(m, std::vector<std::vector<int>>(m));
  h.reachable.assign(m, std::vector<char>(m, 0));
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < m; ++j) {
      if (i == j || w.bw[i][j] <= 0) continue;
      h.reachable[i][j] = 1;
      for (std::size_t dir : w.dirs[i][j]) h.route[i][j].push_back(arc(dir));
    }
  h.base = widest_cycle(w);
  h.width = std::move(w.bw);
  h.hops = std::move(w.hops);
  if (!several_hosts) return h;

  topo::Router router(t);
  h.exit.resize(m);
  h.entry.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    topo::VertexId v = t.rank_vertex(static_cast<topo::Rank>(ranks[i]));
    const auto& nics = aff.nics[v];
    if (nics.empty()) continue;
    topo::VertexId nic = nics.front();
    for (const topo::Hop& hop : router.route(v, nic).hops) h.exit[i].push_back(arc(hop.channel()));
    for (const topo::Hop& hop : router.route(nic, v).hops) h.entry[i].push_back(arc(hop.channel()));
    for (const topo::Adjacent& adj : t.adjacent(nic)) {
      if (t.vertex(adj.peer).host == t.vertex(nic).host) continue;
      bool out = t.link(adj.link).a == nic;
      h.exit[i].push_back(arc(topo::Hop{adj.link, out}.channel()));
      h.entry[i].insert(h.entry[i].begin(), arc(topo::Hop{adj.link, !out}.channel()));
      break;
    }
  }
  return h;
}

}  // namespace

std::vector<std::vector<int>> host_cycles(int nranks, const Topology& topo) {
  std::vector<std::vector<int>> out;
  std::map<std::string, std::vector<int>> cache;  // signature -> cycle over local indices
  for (const Group& g : groups(nranks, topo)) {
    auto it = cache.find(g.sig);
    if (it == cache.end()) it = cache.emplace(g.sig, widest_cycle(widths(topo, g.ranks))).first;
    std::vector<int> cycle;
    for (int local : it->second) cycle.push_back(g.ranks[static_cast<std::size_t>(local)]);
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

using algo::ChannelEnds;
using algo::HostLinks;

std::vector<int> identity(int n) {
  std::vector<int> order(static_cast<std::size_t>(std::max(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::size_t index_of(const std::vector<int>& v, int x) {
  return static_cast<std::size_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

// Channel orders already searched for a host layout: identical hosts reuse them, and the hosts
// that run the other way round (odd ones) reuse them reversed, which crosses every link
// direction the same number of times the other way.
class Solutions {
 public:
  const std::vector<std::vector<int>>& get(const std::string& sig, const HostLinks& h, const std::vector<ChannelEnds>& ends, bool cycle) {
    for (const Entry& e : entries_) {
      if (e.sig != sig) continue;
      if (fits(e.paths, ends)) return e.paths;
      std::vector<std::vector<int>> back = e.paths;
      for (auto& p : back) std::reverse(p.begin(), p.end());
      if (fits(back, ends) && algo::max_load(h, back, ends, cycle) <= e.load * (1 + 1e-9)) {
        entries_.push_back({sig, std::move(back), e.load});
        return entries_.back().paths;
      }
    }
    auto paths = algo::spread_channels(h, ends, cycle);
    double load = algo::max_load(h, paths, ends, cycle);
    entries_.push_back({sig, std::move(paths), load});
    return entries_.back().paths;
  }

 private:
  struct Entry {
    std::string sig;
    std::vector<std::vector<int>> paths;
    double load;
  };
  // Channel c's flags depend on c alone, so the same starts and ends make the same problem.
  static bool fits(const std::vector<std::vector<int>>& paths, const std::vector<ChannelEnds>& ends) {
    for (std::size_t c = 0; c < ends.size(); ++c)
      if (paths[c].front() != ends[c].start || (ends[c].end >= 0 && paths[c].back() != ends[c].end)) return false;
    return true;
  }
  std::deque<Entry> entries_;
};

}  // namespace

std::vector<std::vector<int>> ring_orders(const Request& req, const topo::Topology* topo, int channels, bool bidirectional) {
  auto nch = static_cast<std::size_t>(std::max(channels, 1));
  std::vector<algo::Group> hosts = topo ? algo::groups(req.nranks, *topo) : std::vector<algo::Group>{};
  if (hosts.empty()) return std::vector<std::vector<int>>(nch, identity(req.nranks));
  topo::NicAffinity aff = topo::nic_affinity(*topo);
  std::vector<std::int64_t> rails(static_cast<std::size_t>(req.nranks), std::numeric_limits<std::int64_t>::min());
  auto rail = [&](int r) {
    std::int64_t& k = rails[static_cast<std::size_t>(r)];
    if (k == std::numeric_limits<std::int64_t>::min()) k = algo::rail_of(*topo, aff, r);
    return k;
  };
  bool cycle = hosts.size() == 1;
  std::map<std::string, HostLinks> shapes;
  auto links = [&](const algo::Group& g) -> const HostLinks& {
    auto it = shapes.find(g.sig);
    if (it == shapes.end()) it = shapes.emplace(g.sig, algo::host_links(*topo, g.ranks, !cycle, aff)).first;
    return it->second;
  };
  auto base = [&](const algo::Group& g) {
    std::vector<int> c;
    for (int local : links(g).base) c.push_back(g.ranks[static_cast<std::size_t>(local)]);
    return c;
  };

  // Each channel's host order. On a direct network (a torus) channels take different host
  // cycles, each run both ways round by a pair of channels (2k, 2k+1), so that they spread over
  // the router links (ring_hosts.h); elsewhere every channel visits the hosts in topology order.
  std::vector<std::vector<int>> ranks_of;
  for (const algo::Group& g : hosts) ranks_of.push_back(g.ranks);
  std::vector<std::vector<int>> fabric =
      cycle ? std::vector<std::vector<int>>{} : algo::fabric_cycles(*topo, ranks_of, aff, static_cast<int>((nch + 1) / 2));
  bool paired = !fabric.empty();
  std::vector<std::vector<int>> seq(nch, identity(static_cast<int>(hosts.size())));
  std::vector<char> reversed(nch, 0);  // the ring runs channel c's order backwards (as the in-host search sees it)
  for (std::size_t c = 0; c < nch; ++c) {
    if (paired) seq[c] = fabric[c / 2];
    reversed[c] = (paired || bidirectional) && c % 2 == 1;
  }
  // at[h][c]: host h's position on channel c's host order.
  std::vector<std::vector<std::size_t>> at(hosts.size(), std::vector<std::size_t>(nch));
  for (std::size_t c = 0; c < nch; ++c)
    for (std::size_t i = 0; i < seq[c].size(); ++i) at[static_cast<std::size_t>(seq[c][i])][c] = i;

  // Host 0's entry per channel (pair): positions on its base cycle with a rail not seen yet first.
  std::vector<int> first = base(hosts[0]), starts, repeats;
  std::vector<std::int64_t> seen;
  for (int r : first) {
    std::int64_t k = rail(r);
    if (std::find(seen.begin(), seen.end(), k) == seen.end()) {
      seen.push_back(k);
      starts.push_back(r);
    } else {
      repeats.push_back(r);
    }
  }
  starts.insert(starts.end(), repeats.begin(), repeats.end());

  // The rank of host h on the rail of rank r of host 0; among several, the one at r's local
  // index, so that identical hosts mirror each other.
  auto across = [&](std::size_t h, int r) {
    const std::vector<int>& here = hosts[h].ranks;
    int pick = here[index_of(hosts[0].ranks, r) % here.size()];
    std::int64_t want = rail(r);
    if (want >= 0 && rail(pick) != want)
      for (int x : base(hosts[h]))
        if (rail(x) == want) {
          pick = x;
          break;
        }
    return pick;
  };

  // Host 0 (first on every channel): channel c enters at its start and leaves where the search
  // finds best. The two channels of a pair must leave at the same rank: with a host's ends
  // fixed by its position's parity (below), pairs whose positions differ in parity then still
  // use NICs of their own.
  Solutions solved;
  const algo::Group& g0 = hosts[0];
  std::vector<ChannelEnds> ends(nch);
  for (std::size_t c = 0; c < nch; ++c)
    ends[c] = {static_cast<int>(index_of(g0.ranks, starts[(paired ? c / 2 : c) % starts.size()])), -1, reversed[c] != 0};
  std::vector<std::vector<int>> paths0 = solved.get(g0.sig, links(g0), ends, cycle);
  if (paired) {
    bool fixed = false;
    for (std::size_t c = 1; c < nch; c += 2) {
      ends[c].end = ends[c - 1].end = paths0[c - 1].back();
      fixed = fixed || paths0[c].back() != paths0[c - 1].back();
    }
    if (fixed) paths0 = solved.get(g0.sig, links(g0), ends, cycle);
  }
  // Rail-aligned hops: host h is entered on the rail of the rank that left the host before it
  // and left on the rail that host was entered at, so hosts at even positions run from the
  // rail channel c entered host 0 at (its_in) to the one it left at (its_out), odd ones back.
  std::vector<int> its_in(nch), its_out(nch);
  for (std::size_t c = 0; c < nch; ++c) {
    its_in[c] = g0.ranks[static_cast<std::size_t>(paths0[c].front())];
    its_out[c] = g0.ranks[static_cast<std::size_t>(paths0[c].back())];
  }
  std::vector<std::vector<std::vector<int>>> placed(hosts.size());  // host -> channel -> ranks
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    const algo::Group& g = hosts[h];
    std::vector<std::vector<int>> paths = paths0;
    if (h > 0) {
      for (std::size_t c = 0; c < nch; ++c) {
        bool even = at[h][c] % 2 == 0;
        int in = across(h, even ? its_in[c] : its_out[c]);
        int out = across(h, even ? its_out[c] : its_in[c]);
        ends[c] = {static_cast<int>(index_of(g.ranks, in)), out == in ? -1 : static_cast<int>(index_of(g.ranks, out)), reversed[c] != 0};
      }
      paths = solved.get(g.sig, links(g), ends, cycle);
    }
    placed[h].resize(nch);
    for (std::size_t c = 0; c < nch; ++c)
      for (int local : paths[c]) placed[h][c].push_back(g.ranks[static_cast<std::size_t>(local)]);
  }
  std::vector<std::vector<int>> orders(nch);
  for (std::size_t c = 0; c < nch; ++c) {
    for (int h : seq[c])
      orders[c].insert(orders[c].end(), placed[static_cast<std::size_t>(h)][c].begin(), placed[static_cast<std::size_t>(h)][c].end());
    // Paired channels run opposite ways round: the caller reverses odd channels when
    // bidirectional, else they are written reversed here.
    if (paired && reversed[c] && !bidirectional) std::reverse(orders[c].begin(), orders[c].end());
  }
  return orders;
}

std::vector<int> ring_order(const Request& req, const topo::Topology* topo, int channel) {
  return ring_orders(req, topo, std::max(channel, 0) + 1)[static_cast<std::size_t>(std::max(channel, 0))];
}

}  // namespace collkit::plan
