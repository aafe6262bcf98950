// Host cycles over a direct network (ring_hosts.h). The fabric seen from the hosts is one more
// instance of the in-host problem (ring_search.h): hosts are the ranks, router-to-router link
// directions the links, and each cycle is run both ways round, so a step from host a to host b
// loads the route a -> b and the route b -> a.

#include "ring_hosts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <tuple>

#include "collkit/topo/affinity.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/topology.h"
#include "ring_search.h"

namespace collkit::plan::algo {

namespace {

using topo::Topology;
using topo::VertexId;

// Hosts up to which the depth-first search (ring_search.h) runs before rotations.
constexpr std::size_t kSearchedHosts = 32;
// Rotation attempts per level (seeds) and steps per cycle per host: a 3D torus of 512 hosts
// needs about 2 steps per host.
constexpr unsigned kRotationSeeds = 4;
constexpr long kRotationSteps = 40;

bool fabric_vertex(const Topology& t, VertexId v) { return t.vertex(v).host.empty(); }

// Hamiltonian cycles by extension and rotation (Posa): extend the path to a free neighbour
// (least loaded, then fewest onward choices); where the end has none, close it onto a
// neighbour p[i] earlier on the path and drop the step p[i] -> p[i+1], reversing the part
// after it, so that p[i+1] becomes the end. Routes load both directions alike (each cycle runs
// both ways round), so reversing part of the path leaves the load as it was. Sparse graphs of
// hundreds of hosts take a few steps per host, where depth-first search strands a host and
// backtracks without end. Cycles are found one after the other under the level's capacities.
class Rotations {
 public:
  Rotations(const HostLinks& h, double level, unsigned seed) : h_(h), m_(h.size()), rng_(seed) {
    for (double b : h.arc_gbps) cap_.push_back(static_cast<int>(std::floor(level * b * (1 + 1e-9))));
    load_.assign(cap_.size(), 0);
    next_.resize(m_);
    for (std::size_t a = 0; a < m_; ++a)
      for (std::size_t b = 0; b < m_; ++b)
        if (a != b && h.reachable[a][b]) next_[a].push_back(static_cast<int>(b));
  }

  bool run(std::size_t cycles, long steps_per_cycle, std::vector<std::vector<int>>& out) {
    out.clear();
    for (std::size_t k = 0; k < cycles; ++k) {
      std::vector<int> path;
      if (!cycle(path, steps_per_cycle)) return false;
      out.push_back(std::move(path));
    }
    return true;
  }

 private:
  const std::vector<int>& route(int a, int b) const { return h_.route[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]; }
  bool fits(int a, int b) const {
    for (int x : route(a, b))
      if (load_[static_cast<std::size_t>(x)] >= cap_[static_cast<std::size_t>(x)]) return false;
    return true;
  }
  int busiest(int a, int b) const {
    int most = 0;
    for (int x : route(a, b)) most = std::max(most, load_[static_cast<std::size_t>(x)]);
    return most;
  }
  void add(int a, int b, int d) {
    for (int x : route(a, b)) load_[static_cast<std::size_t>(x)] += d;
  }
  bool closes(int a, int b) const { return h_.reachable[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] && fits(a, b); }
  bool free_step(int v) const {
    for (int w : next_[static_cast<std::size_t>(v)])
      if (pos_[static_cast<std::size_t>(w)] < 0 && fits(v, w)) return true;
    return false;
  }

  bool cycle(std::vector<int>& path, long budget) {
    path.assign(1, 0);
    pos_.assign(m_, -1);
    pos_[0] = 0;
    while (budget-- > 0) {
      int v = path.back();
      if (path.size() == m_ && closes(v, path.front())) {
        add(v, path.front(), 1);
        return true;
      }
      if (path.size() < m_ && extend(path)) continue;
      if (!rotate(path)) break;
    }
    for (std::size_t i = 0; i + 1 < path.size(); ++i) add(path[i], path[i + 1], -1);
    return false;
  }

  bool extend(std::vector<int>& path) {
    int v = path.back(), best = -1;
    std::tuple<int, int, unsigned> key{};
    for (int w : next_[static_cast<std::size_t>(v)]) {
      if (pos_[static_cast<std::size_t>(w)] >= 0 || !fits(v, w)) continue;
      int onward = 0;
      for (int x : next_[static_cast<std::size_t>(w)]) onward += pos_[static_cast<std::size_t>(x)] < 0 && x != w && fits(w, x);
      std::tuple<int, int, unsigned> k{busiest(v, w), onward, static_cast<unsigned>(rng_())};
      if (best < 0 || k < key) {
        best = w;
        key = k;
      }
    }
    if (best < 0) return false;
    add(v, best, 1);
    pos_[static_cast<std::size_t>(best)] = static_cast<int>(path.size());
    path.push_back(best);
    return true;
  }

  // Close the path onto an earlier host and drop the step after it; prefer the new ends that
  // can go on (extend, or close the cycle when every host is on the path).
  bool rotate(std::vector<int>& path) {
    int v = path.back();
    std::size_t n = path.size();
    std::vector<std::size_t> good, any;
    for (int u : next_[static_cast<std::size_t>(v)]) {
      int i = pos_[static_cast<std::size_t>(u)];
      if (i < 0 || static_cast<std::size_t>(i) + 2 >= n) continue;
      auto si = static_cast<std::size_t>(i);
      add(path[si], path[si + 1], -1);
      bool ok = fits(v, u);
      int end = path[si + 1];
      bool on = ok && (n < m_ ? free_step(end) : closes(end, path.front()));
      add(path[si], path[si + 1], 1);
      if (ok) (on ? good : any).push_back(si);
    }
    const auto& pick = good.empty() ? any : good;
    if (pick.empty()) return false;
    std::size_t i = pick[rng_() % pick.size()];
    add(path[i], path[i + 1], -1);
    add(v, path[i], 1);
    std::reverse(path.begin() + static_cast<std::ptrdiff_t>(i) + 1, path.end());
    for (std::size_t j = i + 1; j < n; ++j) pos_[static_cast<std::size_t>(path[j])] = static_cast<int>(j);
    return true;
  }

  const HostLinks& h_;
  std::size_t m_;
  std::mt19937 rng_;
  std::vector<int> cap_, load_, pos_;
  std::vector<std::vector<int>> next_;
};

}  // namespace

std::vector<std::vector<int>> fabric_cycles(const Topology& t, const std::vector<std::vector<int>>& hosts, const topo::NicAffinity& aff,
                                            int cycles) {
  std::size_t m = hosts.size();
  if (m < 3 || cycles < 1) return {};
  std::vector<VertexId> nics;
  for (const auto& ranks : hosts) {
    const auto& list = aff.nics[t.rank_vertex(static_cast<topo::Rank>(ranks.front()))];
    if (list.empty()) return {};
    nics.push_back(list.front());
  }
  // Each host's entry switches (the fabric side of its NICs), and whose entry each switch is.
  std::vector<int> entry_of(t.num_vertices(), -1);
  std::vector<std::vector<VertexId>> entries(m);
  for (std::size_t a = 0; a < m; ++a)
    for (int r : hosts[a])
      for (VertexId nic : aff.nics[t.rank_vertex(static_cast<topo::Rank>(r))])
        for (const topo::Adjacent& adj : t.adjacent(nic)) {
          if (!fabric_vertex(t, adj.peer) || entry_of[adj.peer] == static_cast<int>(a)) continue;
          if (entry_of[adj.peer] >= 0) return {};  // shared with another host: not a direct network
          entry_of[adj.peer] = static_cast<int>(a);
          entries[a].push_back(adj.peer);
        }

  // A direct network has no switch but the hosts' own: a switch that is no host's entry (a
  // spine above private leaves) makes it an indirect one, where topology order is kept.
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (fabric_vertex(t, v) && !t.adjacent(v).empty() && entry_of[v] < 0) return {};

  // Candidate steps: the hosts whose entry switches are linked to this host's (a torus's
  // neighbours). A longer step loads more links than the hosts it skips would save, and its
  // route depends on the rail it runs on (equal-cost paths are the destination NIC's choice),
  // so loads counted on one rail's route would not be the plan's; searching only these also
  // keeps a torus of 512 hosts at milliseconds.
  std::vector<std::vector<int>> near(m);
  for (std::size_t a = 0; a < m; ++a)
    for (VertexId v : entries[a])
      for (const topo::Adjacent& adj : t.adjacent(v)) {
        int b = fabric_vertex(t, adj.peer) ? entry_of[adj.peer] : -1;
        if (b < 0 || b == static_cast<int>(a)) continue;
        near[a].push_back(b);
        near[static_cast<std::size_t>(b)].push_back(static_cast<int>(a));  // a route each way round
      }
  for (auto& list : near) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }

  topo::Router router(t);
  HostLinks h;
  std::map<std::size_t, int> dense;
  auto arc = [&](std::size_t dir) {
    auto [it, fresh] = dense.emplace(dir, static_cast<int>(h.arc_gbps.size()));
    if (fresh) h.arc_gbps.push_back(t.link(static_cast<topo::LinkId>(dir / 2)).bw_gbps);
    return it->second;
  };
  std::vector<std::vector<std::vector<int>>> one_way(m, std::vector<std::vector<int>>(m));
  h.reachable.assign(m, std::vector<char>(m, 0));
  h.width.assign(m, std::vector<double>(m, 0));
  h.hops.assign(m, std::vector<std::size_t>(m, 0));
  for (std::size_t a = 0; a < m; ++a) {
    std::vector<VertexId> to;
    for (int b : near[a]) to.push_back(nics[static_cast<std::size_t>(b)]);
    std::vector<topo::Path> paths = router.routes_to(nics[a], to);
    for (std::size_t i = 0; i < to.size(); ++i) {
      auto b = static_cast<std::size_t>(near[a][i]);
      if (!paths[i].found) continue;
      h.reachable[a][b] = 1;
      double width = std::numeric_limits<double>::infinity();
      for (const topo::Hop& hop : paths[i].hops) {
        const topo::Link& l = t.link(hop.link);
        if (!fabric_vertex(t, l.a) || !fabric_vertex(t, l.b)) continue;
        one_way[a][b].push_back(arc(hop.channel()));
        width = std::min(width, l.bw_gbps);
      }
      h.width[a][b] = width;
      h.hops[a][b] = one_way[a][b].size();
    }
  }
  h.route.assign(m, std::vector<std::vector<int>>(m));
  for (std::size_t a = 0; a < m; ++a)
    for (std::size_t b = 0; b < m; ++b) {
      h.reachable[a][b] = h.reachable[a][b] && h.reachable[b][a];
      if (!h.reachable[a][b]) continue;
      h.route[a][b] = one_way[a][b];
      h.route[a][b].insert(h.route[a][b].end(), one_way[b][a].begin(), one_way[b][a].end());
    }
  h.sparse = true;
  h.base.resize(m);
  std::iota(h.base.begin(), h.base.end(), 0);
  auto k = static_cast<std::size_t>(cycles);
  std::vector<ChannelEnds> ends(k, ChannelEnds{0, -1, false});
  // Topology order (run both ways round) unless a search finds cycles of neighbour steps.
  std::vector<std::vector<int>> best(k, h.base);
  double load = max_load(h, best, ends, true);  // infinite where it takes a step that is no neighbour's
  // Small fabrics: the depth-first search, exact where it finishes (a 4x4 torus needs its
  // links split exactly into two Hamiltonian cycles, which rotations rarely find). Beyond, it
  // strands hosts and backtracks without end: rotations only.
  if (m <= kSearchedHosts) {
    std::vector<std::vector<int>> found = spread_channels(h, ends, true);
    double l = max_load(h, found, ends, true);
    if (l < load) {
      best = std::move(found);
      load = l;
    }
  }
  for (double level : levels_below(h, k * m, load)) {
    long room = 0;
    for (double b : h.arc_gbps) room += static_cast<long>(std::floor(level * b * (1 + 1e-9)));
    if (room < static_cast<long>(2 * k * m)) continue;  // every step loads a link each way
    std::vector<std::vector<int>> found;
    bool ok = false;
    for (unsigned seed = 1; seed <= kRotationSeeds && !ok; ++seed)
      ok = Rotations(h, level, seed).run(k, kRotationSteps * static_cast<long>(m), found);
    if (!ok) continue;
    for (auto& c : found) std::rotate(c.begin(), std::find(c.begin(), c.end(), 0), c.end());
    best = std::move(found);
    break;
  }
  return best;
}

}  // namespace collkit::plan::algo
