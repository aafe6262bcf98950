// Tori by translation (torus.h, docs/synth.md "Tori by translation").

#include "synth/torus.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "collkit/core/error.h"
#include "collkit/plan/collective.h"
#include "collkit/topo/routing.h"
#include "nic_route.h"

namespace collkit::plan::synth {

namespace {

auto at(int x) { return static_cast<std::size_t>(x); }

std::vector<int> coords(const TorusGrid& g, int a) {
  std::vector<int> x(g.dims.size());
  for (std::size_t i = 0; i < g.dims.size(); ++i) {
    x[i] = a % g.dims[i];
    a /= g.dims[i];
  }
  return x;
}

int index(const TorusGrid& g, const std::vector<int>& x) {
  int a = 0;
  for (std::size_t i = g.dims.size(); i-- > 0;) a = a * g.dims[i] + ((x[i] % g.dims[i]) + g.dims[i]) % g.dims[i];
  return a;
}

std::string join(const std::vector<int>& v, char sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? std::string(1, sep) : "") + std::to_string(v[i]);
  return s;
}

// Whole numbers of `least` or more separated by `sep` ("8x8x8"); empty when not.
std::vector<int> parse_sizes(std::string_view s, char sep, int least = 1) {
  std::vector<int> out;
  while (true) {
    std::size_t x = s.find(sep);
    std::string_view part = s.substr(0, x);
    int d = 0;
    auto [q, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (ec != std::errc() || q != part.data() + part.size() || d < least) return {};
    out.push_back(d);
    if (x == std::string_view::npos) return out;
    s = s.substr(x + 1);
  }
}

TorusGrid identity_grid(const std::vector<int>& dims) {
  TorusGrid g;
  g.dims = dims;
  int p = 1;
  for (int d : dims) p *= d;
  for (int r = 0; r < p; ++r) {
    g.rank.push_back(r);
    g.pos.push_back(r);
  }
  return g;
}

// Every position's torus neighbours, in an order every translate shares: +1 then -1 along each
// dimension, a neighbour met twice (a ring of 2) once.
std::vector<int> neighbours(const TorusGrid& g, int a) {
  std::vector<int> out;
  for (std::size_t i = 0; i < g.dims.size(); ++i)
    for (int dir : {1, -1}) {
      int b = g.step(a, static_cast<int>(i), dir);
      if (b != a && std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    }
  return out;
}

// The routes between torus neighbours as link directions: route(a, q) for neighbours(g, a)[q].
struct NeighbourRoutes {
  std::vector<std::vector<int>> nb;                         // per position
  std::vector<std::vector<std::vector<std::uint32_t>>> rt;  // per position, per neighbour
  bool found = true;
};

NeighbourRoutes neighbour_routes(const topo::Topology& t, const TorusGrid& g) {
  NeighbourRoutes nr;
  topo::Router router(t);
  int p = g.size();
  nr.nb.resize(at(p));
  nr.rt.resize(at(p));
  for (int a = 0; a < p; ++a) {
    nr.nb[at(a)] = neighbours(g, a);
    std::vector<topo::VertexId> to;
    for (int b : nr.nb[at(a)]) to.push_back(t.rank_vertex(static_cast<topo::Rank>(g.rank[at(b)])));
    std::vector<topo::Path> paths = router.routes_to(t.rank_vertex(static_cast<topo::Rank>(g.rank[at(a)])), to);
    for (const topo::Path& path : paths) {
      nr.found = nr.found && path.found && !path.hops.empty();
      std::vector<std::uint32_t> dirs;
      for (const topo::Hop& h : path.hops) dirs.push_back(static_cast<std::uint32_t>(h.channel()));
      nr.rt[at(a)].push_back(std::move(dirs));
    }
  }
  return nr;
}

}  // namespace

int TorusGrid::add(int a, int b) const {
  int out = 0, scale = 1;
  for (int d : dims) {
    out += ((a % d + b % d) % d) * scale;
    scale *= d;
    a /= d;
    b /= d;
  }
  return out;
}

int TorusGrid::sub(int b, int a) const {
  int out = 0, scale = 1;
  for (int d : dims) {
    out += ((b % d - a % d + d) % d) * scale;
    scale *= d;
    a /= d;
    b /= d;
  }
  return out;
}

int TorusGrid::step(int a, int i, int dir) const {
  std::vector<int> x = coords(*this, a);
  x[at(i)] += dir;
  return index(*this, x);
}

std::optional<TorusGrid> torus_grid(const topo::Topology& t, int p, std::string* why) {
  auto no = [&](std::string w) -> std::optional<TorusGrid> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (p < 4 || static_cast<std::size_t>(p) > t.num_ranks()) return no("fewer than four ranks");
  std::vector<topo::VertexId> ends;
  for (int r = 0; r < p; ++r) ends.push_back(t.rank_vertex(static_cast<topo::Rank>(r)));
  {
    std::vector<topo::VertexId> sorted = ends;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return no("ranks share a vertex");
  }
  // Rank 0's nearest ranks by route.
  topo::Router router(t);
  std::vector<topo::Path> from0 = router.routes_to(ends[0], ends);
  std::size_t least = std::numeric_limits<std::size_t>::max();
  for (int r = 1; r < p; ++r)
    if (from0[at(r)].found) least = std::min(least, from0[at(r)].hops.size());
  std::vector<int> nearest;
  for (int r = 1; r < p; ++r)
    if (from0[at(r)].found && from0[at(r)].hops.size() == least) nearest.push_back(r);
  // Candidate dimensions: the fabric's note first, then every factorisation into 2 or 3 sizes.
  std::vector<std::vector<int>> candidates;
  const std::string note = "fabric torus ";
  for (const std::string& n : t.notes)
    if (n.rfind(note, 0) == 0) {
      std::string_view rest = std::string_view(n).substr(note.size());
      std::vector<int> dims = parse_sizes(rest.substr(0, rest.find(':')), 'x');
      int prod = 1;
      for (int d : dims) prod *= d;
      if (!dims.empty() && prod == p) candidates.push_back(dims);
    }
  for (int a = 2; a <= p / 2; ++a)
    if (p % a == 0) {
      candidates.push_back({a, p / a});
      for (int b = 2; b <= p / a / 2; ++b)
        if ((p / a) % b == 0) candidates.push_back({a, b, p / a / b});
    }
  std::optional<TorusGrid> grid;
  for (const std::vector<int>& dims : candidates) {
    if (std::any_of(dims.begin(), dims.end(), [](int d) { return d < 2; })) continue;
    TorusGrid g = identity_grid(dims);
    std::vector<int> nb = neighbours(g, 0);
    std::sort(nb.begin(), nb.end());
    if (nb == nearest) {
      grid = std::move(g);
      break;
    }
  }
  if (!grid)
    return no("rank 0's nearest ranks by route (" + join(nearest, ',') + ") are not its neighbours on any torus of the ranks in order");
  // Every rank's routes to its neighbours, each as long as rank 0's, and every translation by one
  // step mapping them onto the image's link direction for link direction, one to one.
  NeighbourRoutes nr = neighbour_routes(t, *grid);
  if (!nr.found) return no("a rank has no route to a torus neighbour");
  for (int a = 0; a < p; ++a)
    for (const std::vector<std::uint32_t>& r : nr.rt[at(a)])
      if (r.size() != least) return no("rank " + std::to_string(grid->rank[at(a)]) + "'s routes to its torus neighbours differ in length");
  std::size_t n = 2 * t.num_links();
  auto bw = [&](std::uint32_t r) { return t.link(r / 2).bw_gbps; };
  auto lat = [&](std::uint32_t r) { return t.link(r / 2).latency_us; };
  for (const TorusShift& s : torus_shifts(*grid)) {
    constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> map(n, kNone), back(n, kNone);
    for (int a = 0; a < p; ++a)
      for (std::size_t q = 0; q < nr.nb[at(a)].size(); ++q) {
        int ga = grid->pos[at(s.rank[at(grid->rank[at(a)])])];
        const std::vector<std::uint32_t>&x = nr.rt[at(a)][q], &y = nr.rt[at(ga)][q];
        for (std::size_t h = 0; h < x.size(); ++h) {
          std::uint32_t rx = x[h], ry = y[h];
          bool ok = map[rx] == kNone ? back[ry] == kNone && bw(rx) == bw(ry) && lat(rx) == lat(ry) : map[rx] == ry;
          if (!ok)
            return no("the translation along a dimension does not map the route of ranks " + std::to_string(grid->rank[at(a)]) + " -> " +
                      std::to_string(grid->rank[at(nr.nb[at(a)][q])]) + " onto its image's, link for link");
          map[rx] = ry;
          back[ry] = rx;
        }
      }
  }
  return grid;
}

const char* to_string(TorusKind k) { return k == TorusKind::Shortest ? "shortest" : "chains"; }

TorusTrees torus_trees(const TorusGrid& g, TorusKind kind) {
  TorusTrees tt;
  tt.grid = g;
  tt.kind = kind;
  auto D = static_cast<int>(g.dims.size());
  int p = g.size();
  bool any_even = std::any_of(g.dims.begin(), g.dims.end(), [](int d) { return d % 2 == 0 && d > 2; });
  // Shortest-path trees of one rotation are one tree where no ring has an antipode to choose.
  int sides = kind == TorusKind::Chains || any_even ? 2 : 1;
  tt.k = D * sides;
  for (int j = 0; j < tt.k; ++j) {
    int rot = j / sides, side = j % sides;
    std::vector<int> parent(at(p), -1);
    for (int o = 1; o < p; ++o) {
      std::vector<int> x = coords(g, o);
      int last = -1;  // the last dimension of the order where o is off the root
      for (int s = 0; s < D; ++s)
        if (x[at((rot + s) % D)] != 0) last = (rot + s) % D;
      int n = g.dims[at(last)], xi = x[at(last)], dir;
      if (kind == TorusKind::Chains) dir = side == 0 ? -1 : 1;
      else if (xi < n - xi) dir = -1;
      else if (xi > n - xi) dir = 1;
      else dir = side == 0 ? -1 : 1;
      parent[at(o)] = g.step(o, last, dir);
    }
    std::vector<int> first(at(p) + 1, 0), child(at(p > 0 ? p - 1 : 0)), slot(at(p), 0);
    for (int o = 1; o < p; ++o) ++first[at(parent[at(o)]) + 1];
    for (int o = 0; o < p; ++o) {
      tt.most_children = std::max(tt.most_children, first[at(o) + 1]);
      first[at(o) + 1] += first[at(o)];
    }
    std::vector<int> fill(first.begin(), first.end() - 1);
    for (int o = 1; o < p; ++o) {
      int up = parent[at(o)];
      slot[at(o)] = fill[at(up)] - first[at(up)];
      child[at(fill[at(up)]++)] = o;
    }
    for (int o = 1; o < p; ++o) {
      int d = 0;
      for (int a = o; a != 0 && d <= p; a = parent[at(a)]) ++d;
      tt.depth = std::max(tt.depth, d);
    }
    tt.parent.push_back(std::move(parent));
    tt.first.push_back(std::move(first));
    tt.child.push_back(std::move(child));
    tt.slot.push_back(std::move(slot));
  }
  return tt;
}

TorusPlace torus_place(const TorusTrees& tt, int root, int j, int me) {
  const TorusGrid& g = tt.grid;
  int rp = g.pos[at(root)], o = g.sub(g.pos[at(me)], rp);
  TorusPlace out;
  int up = tt.parent[at(j)][at(o)];
  out.parent = up < 0 ? -1 : g.rank[at(g.add(rp, up))];
  const std::vector<int>& first = tt.first[at(j)];
  for (int i = first[at(o)]; i < first[at(o) + 1]; ++i) out.children.push_back(g.rank[at(g.add(rp, tt.child[at(j)][at(i)]))]);
  out.slot = tt.slot[at(j)][at(o)];
  return out;
}

std::vector<std::vector<int>> torus_all_trees(const TorusTrees& tt) {
  const TorusGrid& g = tt.grid;
  int p = g.size();
  std::vector<std::vector<int>> out;
  for (int r = 0; r < p; ++r)
    for (int j = 0; j < tt.k; ++j) {
      std::vector<int> parent(at(p), -1);
      int rp = g.pos[at(r)];
      for (int o = 1; o < p; ++o) parent[at(g.rank[at(g.add(rp, o))])] = g.rank[at(g.add(rp, tt.parent[at(j)][at(o)]))];
      out.push_back(std::move(parent));
    }
  return out;
}

namespace {

// The routes between torus neighbours through NIC `nic` of both hosts (PlanInfo::channel_nics).
NeighbourRoutes nic_neighbour_routes(const topo::Topology& t, const TorusGrid& g, int nic) {
  if (nic < 0) return neighbour_routes(t, g);
  NeighbourRoutes nr;
  topo::RouteCache cache(t);
  sim::NicRoutes via(t, cache);
  int p = g.size();
  nr.nb.resize(at(p));
  nr.rt.resize(at(p));
  for (int a = 0; a < p; ++a) {
    nr.nb[at(a)] = neighbours(g, a);
    for (int b : nr.nb[at(a)]) {
      topo::Path path =
          via.route(t.rank_vertex(static_cast<topo::Rank>(g.rank[at(a)])), t.rank_vertex(static_cast<topo::Rank>(g.rank[at(b)])), nic);
      nr.found = nr.found && path.found && !path.hops.empty();
      std::vector<std::uint32_t> dirs;
      for (const topo::Hop& h : path.hops) dirs.push_back(static_cast<std::uint32_t>(h.channel()));
      nr.rt[at(a)].push_back(std::move(dirs));
    }
  }
  return nr;
}

// torus_rate over routes per NIC (key -1: the plain routes); `spread`, when given: the sum over
// link directions of their load's square (arcs over bandwidth), lower where the load is spread.
double rate_over(const topo::Topology& t, const TorusTrees& tt, const std::vector<int>& nic, const std::map<int, NeighbourRoutes>& routes,
                 double* spread = nullptr) {
  const TorusGrid& g = tt.grid;
  int p = g.size();
  // Root r's tree j has an arc a -> a + d wherever rank 0's has one from a - r with the same step
  // d: over all roots, every rank sends N_d arcs of step d, N_d the arcs of step d in rank 0's
  // trees. So each rank's route to its neighbour a + d carries N_d arcs (p 2 dims routes, not
  // p^2 k arcs); trees through another NIC count on that NIC's routes.
  const std::vector<int>& steps = routes.at(-1).nb[0];  // neighbour positions of 0: the steps, in every rank's order
  std::vector<double> load(2 * t.num_links(), 0);
  for (const auto& [n, nr] : routes) {
    if (!nr.found) return 0;
    std::vector<double> per_step(steps.size(), 0);
    bool any = false;
    for (int j = 0; j < tt.k; ++j) {
      if ((nic.empty() ? -1 : nic[at(j)]) != n) continue;
      any = true;
      for (int o = 1; o < p; ++o) {
        int d = g.sub(o, tt.parent[at(j)][at(o)]);
        per_step[static_cast<std::size_t>(std::find(steps.begin(), steps.end(), d) - steps.begin())] += 1;
      }
    }
    if (!any) continue;
    for (int a = 0; a < p; ++a)
      for (std::size_t q = 0; q < steps.size(); ++q)
        for (std::uint32_t e : nr.rt[at(a)][q]) load[e] += per_step[q];
  }
  double worst = 0;
  if (spread) *spread = 0;
  for (std::size_t e = 0; e < load.size(); ++e)
    if (load[e] > 0) {
      double u = load[e] / t.link(static_cast<topo::LinkId>(e / 2)).bw_gbps;
      worst = std::max(worst, u);
      if (spread) *spread += u * u;
    }
  return worst > 0 ? tt.k / worst : 0;
}

}  // namespace

double torus_rate(const topo::Topology& t, const TorusTrees& tt, const std::vector<int>& nic) {
  std::map<int, NeighbourRoutes> routes;
  routes.emplace(-1, neighbour_routes(t, tt.grid));
  for (int n : nic)
    if (!routes.count(n)) routes.emplace(n, nic_neighbour_routes(t, tt.grid, n));
  return rate_over(t, tt, nic, routes);
}

std::vector<int> torus_nics(const topo::Topology& t, const TorusTrees& tt, double* rate) {
  std::map<int, NeighbourRoutes> routes;
  routes.emplace(-1, neighbour_routes(t, tt.grid));
  std::vector<int> best;
  double best_spread = 0, best_rate = rate_over(t, tt, best, routes, &best_spread);
  topo::RouteCache cache(t);
  sim::NicRoutes via(t, cache);
  auto v0 = t.rank_vertex(static_cast<topo::Rank>(tt.grid.rank[0]));
  // q of the k trees (spread over the rotations) through NIC n, the others on their routes.
  for (int n = 0; n <= kMaxChannelNic && via.nic_of(v0, n); ++n) {
    routes.emplace(n, nic_neighbour_routes(t, tt.grid, n));
    if (!routes.at(n).found) continue;
    for (int q = 1; q <= tt.k; ++q) {
      std::vector<int> nic(at(tt.k), -1);
      for (int j = 0; j < tt.k; ++j)
        if ((j + 1) * q / tt.k > j * q / tt.k) nic[at(j)] = n;
      // The best rate, and among equal rates the load spread evenest over the links: in the
      // Queue model a transfer holds each link at its full rate, so a NIC loaded near its rate
      // leaves gaps on the GPU's link that other transfers of the same size cannot fill (3x3
      // AllGather, Queue: 1 tree of 4 through NIC 1, 1.235 x the bound; 2 of 4, 1.170).
      double spread = 0, r = rate_over(t, tt, nic, routes, &spread);
      if (r > best_rate * (1 + 1e-9) || (r >= best_rate * (1 - 1e-9) && spread < best_spread * (1 - 1e-9))) {
        best_rate = std::max(r, best_rate);
        best_spread = spread;
        best = std::move(nic);
      }
    }
  }
  if (rate) *rate = best_rate;
  return best;
}

std::vector<TorusShift> torus_shifts(const TorusGrid& g) {
  std::vector<TorusShift> out;
  int p = g.size();
  for (std::size_t i = 0; i < g.dims.size(); ++i) {
    TorusShift s{std::vector<int>(at(p)), g.dims[i]};
    for (int r = 0; r < p; ++r) s.rank[at(r)] = g.rank[at(g.step(g.pos[at(r)], static_cast<int>(i), 1))];
    out.push_back(std::move(s));
  }
  return out;
}

void write_torus_params(const TorusTrees& tt, std::map<std::string, std::string>& params) {
  params["sym_torus"] = join(tt.grid.dims, 'x');
  params["sym_torus_ranks"] = join(tt.grid.rank, ',');
  params["sym_torus_trees"] = to_string(tt.kind);
}

std::optional<TorusTrees> read_torus_params(const std::map<std::string, std::string>& params, int p) {
  auto it = params.find("sym_torus");
  if (it == params.end()) return std::nullopt;
  std::vector<int> dims = parse_sizes(it->second, 'x');
  long prod = 1;
  for (int d : dims) prod *= d;
  if (dims.size() < 2 || dims.size() > 3 || std::any_of(dims.begin(), dims.end(), [](int d) { return d < 2; }) || prod != p)
    throw InputError("synth: plan parameter sym_torus \"" + it->second + "\" is not 2 or 3 sizes of 2 or more (like 8x8x8) holding " +
                     std::to_string(p) + " ranks");
  auto need = [&](const std::string& name) -> const std::string& {
    auto f = params.find(name);
    if (f == params.end()) throw InputError("synth: plan parameter " + name + " is missing (sym_torus is given)");
    return f->second;
  };
  const std::string& kind = need("sym_torus_trees");
  if (kind != "shortest" && kind != "chains")
    throw InputError("synth: plan parameter sym_torus_trees is \"" + kind + "\", expected shortest or chains");
  TorusGrid g;
  g.dims = dims;
  g.pos.assign(at(p), -1);
  const std::string& ranks = need("sym_torus_ranks");
  std::vector<int> order = parse_sizes(ranks, ',', 0);
  bool perm = order.size() == at(p);
  for (std::size_t i = 0; perm && i < order.size(); ++i) {
    int r = order[i];
    perm = r < p && g.pos[at(r)] < 0;
    if (perm) g.pos[at(r)] = static_cast<int>(i);
  }
  if (!perm) throw InputError("synth: plan parameter sym_torus_ranks is not an order of the " + std::to_string(p) + " ranks");
  g.rank = std::move(order);
  return torus_trees(g, kind == "shortest" ? TorusKind::Shortest : TorusKind::Chains);
}

std::shared_ptr<const TorusTrees> shared_torus_trees(const std::map<std::string, std::string>& params, int p) {
  struct Entry {
    std::string text;
    std::shared_ptr<const TorusTrees> trees;
  };
  constexpr std::size_t kKept = 2;
  thread_local std::vector<Entry> kept;
  std::string text = std::to_string(p);
  for (const char* name : {"sym_torus", "sym_torus_trees", "sym_torus_ranks"}) {
    auto it = params.find(name);
    text += "/" + (it == params.end() ? std::string() : it->second);
  }
  for (const Entry& e : kept)
    if (e.text == text) return e.trees;
  std::optional<TorusTrees> tt = read_torus_params(params, p);
  if (!tt) return nullptr;
  auto trees = std::make_shared<const TorusTrees>(std::move(*tt));
  if (kept.size() == kKept) kept.erase(kept.begin());
  kept.push_back({std::move(text), trees});
  return trees;
}

}  // namespace collkit::plan::synth
