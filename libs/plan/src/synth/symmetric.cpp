#include "synth/symmetric.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <mutex>
#include <random>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "collkit/core/error.h"
#include "collkit/topo/routing.h"
#include "nic_route.h"

namespace collkit::plan::synth {

namespace {

using topo::Topology;
using topo::VertexId;

auto at(int x) { return static_cast<std::size_t>(x); }

int mod(int x, int n) { return ((x % n) + n) % n; }

std::uint64_t pair_key(int a, int b) { return (std::uint64_t{static_cast<std::uint32_t>(a)} << 32) | static_cast<std::uint32_t>(b); }

// Position of the rank at grid position `pos` moved by (x, y, z): group + x, host + y, local + z.
int moved(const HostGrid& g, int pos, int x, int y, int z) {
  int l = pos % g.local, e = pos / g.local, b = e % g.hosts, a = e / g.hosts;
  return ((mod(a + x, g.groups) * g.hosts) + mod(b + y, g.hosts)) * g.local + mod(l + z, g.local);
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// Whole numbers separated by `sep` (the whole string); InputError naming the parameter otherwise.
std::vector<int> parse_ints(const std::string& name, const std::string& s, char sep = ',') {
  std::vector<int> out;
  const char* c = s.data();
  const char* end = c + s.size();
  while (c <= end) {
    int v = 0;
    auto [q, ec] = std::from_chars(c, end, v);
    if (ec != std::errc())
      throw InputError("synth: plan parameter " + name + ": expected a whole number at character " + std::to_string(c - s.data()));
    out.push_back(v);
    c = q;
    if (c == end) break;
    if (*c != sep)
      throw InputError("synth: plan parameter " + name + ": unexpected '" + std::string(1, *c) + "' at character " +
                       std::to_string(c - s.data()));
    ++c;
  }
  return out;
}

// Whether each local root's j-th intra-host tree is local root 0's j-th turned by l -> l + root.
bool rotations(const std::vector<std::vector<int>>& intra, int intra_k) {
  int g = static_cast<int>(intra.size()) / intra_k;
  for (int j = 0; j < intra_k; ++j)
    for (int l = 0; l < g; ++l)
      for (int x = 0; x < g; ++x) {
        int base = intra[at(j)][at(x)];
        if (intra[at(l * intra_k + j)][at(mod(x + l, g))] != (base < 0 ? -1 : mod(base + l, g))) return false;
      }
  return true;
}

// The first p ranks by host name (every rank's vertex on a host, two hosts at least, each holding
// as many ranks as the first), or why not.
std::optional<std::map<std::string, std::vector<int>>> ranks_by_host(const Topology& t, int p, std::string* why, bool one_size = true) {
  auto no = [&](std::string w) -> std::optional<std::map<std::string, std::vector<int>>> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (p < 2 || static_cast<std::size_t>(p) > t.num_ranks()) return no("fewer than two ranks");
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < p; ++r) {
    const std::string& h = t.vertex(t.rank_vertex(static_cast<topo::Rank>(r))).host;
    if (h.empty()) return no("rank " + std::to_string(r) + "'s vertex is on no host");
    by_host[h].push_back(r);
  }
  if (by_host.size() < 2) return no("one host");
  std::size_t g = by_host.begin()->second.size();
  for (const auto& [name, ranks] : by_host)
    if (one_size && ranks.size() != g)
      return no("hosts hold different numbers of ranks (" + by_host.begin()->first + " " + std::to_string(g) + ", " + name + " " +
                std::to_string(ranks.size()) + ")");
  return by_host;
}

}  // namespace

std::optional<HostGrid> host_grid(const Topology& t, int p, std::string* why) {
  auto no = [&](std::string w) -> std::optional<HostGrid> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  std::optional<std::map<std::string, std::vector<int>>> grouped = ranks_by_host(t, p, why);
  if (!grouped) return std::nullopt;
  std::map<std::string, std::vector<int>>& by_host = *grouped;
  std::size_t g = by_host.begin()->second.size();
  // Each host's vertices in id order; its signature: per link out, (position inside, far vertex,
  // bandwidth). Twins have equal signatures: the same links to the very same fabric vertices.
  std::map<std::string, std::vector<VertexId>> vertices;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (by_host.count(t.vertex(v).host)) vertices[t.vertex(v).host].push_back(v);
  std::map<std::vector<std::uint64_t>, std::vector<std::string>> twins;
  for (const auto& [name, vs] : vertices) {
    std::vector<std::uint64_t> sig{vs.size()};
    for (std::size_t i = 0; i < vs.size(); ++i)
      for (const topo::Adjacent& a : t.adjacent(vs[i]))
        if (t.vertex(a.peer).host != name) {
          double bw = t.link(a.link).bw_gbps;
          sig.insert(sig.end(), {i, a.peer, static_cast<std::uint64_t>(bw * 1e6)});
        }
    twins[sig].push_back(name);
  }
  std::vector<std::vector<std::string>> groups;
  for (auto& [sig, names] : twins) {
    std::sort(names.begin(), names.end(),
              [&](const std::string& x, const std::string& y) { return by_host[x].front() < by_host[y].front(); });
    groups.push_back(names);
  }
  std::sort(groups.begin(), groups.end(),
            [&](const auto& x, const auto& y) { return by_host[x.front()].front() < by_host[y.front()].front(); });
  for (const auto& grp : groups)
    if (grp.size() != groups.front().size())
      return no("groups of hosts on the same fabric switches differ in size (" + std::to_string(groups.front().size()) + " and " +
                std::to_string(grp.size()) + ")");
  HostGrid out;
  out.groups = static_cast<int>(groups.size());
  out.hosts = static_cast<int>(groups.front().size());
  out.local = static_cast<int>(g);
  out.pos.assign(at(p), -1);
  for (const auto& grp : groups)
    for (const std::string& name : grp) {
      std::vector<int> ranks = by_host[name];
      std::sort(ranks.begin(), ranks.end(),
                [&](int x, int y) { return t.rank_vertex(static_cast<topo::Rank>(x)) < t.rank_vertex(static_cast<topo::Rank>(y)); });
      for (int r : ranks) {
        out.pos[at(r)] = static_cast<int>(out.rank.size());
        out.rank.push_back(r);
      }
    }
  return out;
}

int inter_parent(const HostGrid& g, int fanout, int element) {
  int a = element / g.hosts, b = element % g.hosts;
  if (b != 0) return a * g.hosts + (b - 1) / fanout;
  if (a != 0) return ((a - 1) / fanout) * g.hosts;
  return -1;
}

TreeSet expand_trees(const QuotientTrees& q, int k) {
  const HostGrid& g = q.grid;
  int p = static_cast<int>(g.rank.size()), H = g.num_hosts(), K = q.intra_k;
  if (K < 1 || k % K != 0)
    throw InputError("synth: " + std::to_string(k) + " trees a root do not share out " + std::to_string(K) + " intra-host trees a root");
  TreeSet ts;
  ts.p = p;
  ts.k = k;
  ts.intra_k = K;
  std::vector<int> inter(at(H));
  for (int e = 0; e < H; ++e) inter[at(e)] = inter_parent(g, q.fanout, e);
  std::size_t stored = at(p) * at(K);
  ts.parent.assign(stored, std::vector<int>(at(p), -1));
  ts.first.assign(stored, std::vector<int>(at(p) + 1, 0));
  ts.child.assign(stored, std::vector<int>(at(p), 0));
  ts.slot.assign(stored, std::vector<int>(at(p), 0));
  std::vector<int> fill(at(p)), host_to(at(H)), local_to(at(g.local));
  for (int s = 0; s < p * K; ++s) {
    int root = s / K, j = s % K;
    int rp = g.pos[at(root)], rl = rp % g.local, re = rp / g.local;
    int ra = re / g.hosts, rb = re % g.hosts, rz = q.rotate_local ? rl : 0;
    std::vector<int>& parent = ts.parent[at(s)];
    // Canonical position c (host 0's frame) -> the rank it stands for in this root's tree, by
    // tables of the moved host element and local index.
    for (int e = 0; e < H; ++e) host_to[at(e)] = moved(g, e * g.local, ra, rb, 0) / g.local;
    for (int l = 0; l < g.local; ++l) local_to[at(l)] = mod(l + rz, g.local);
    auto rank_of = [&](int c) { return g.rank[at(host_to[at(c / g.local)] * g.local + local_to[at(c % g.local)])]; };
    for (int c = 0; c < p; ++c) {
      int l = c % g.local, e = c / g.local;  // in host 0's frame, root at (0, rl - rz)
      int root_l = rl - rz;
      int pc = -1;
      if (e != 0 && l == root_l) pc = inter[at(e)] * g.local + l;
      else if (l != root_l) pc = e * g.local + mod(q.intra[at(root_l * K + j)][at(l)], g.local);
      parent[at(rank_of(c))] = pc < 0 ? -1 : rank_of(pc);
    }
    // Children in canonical order: counted, then placed walking the canonical positions.
    std::vector<int>& first = ts.first[at(s)];
    for (int r = 0; r < p; ++r)
      if (parent[at(r)] >= 0) ++first[at(parent[at(r)]) + 1];
    for (int r = 0; r < p; ++r) {
      ts.most_children = std::max(ts.most_children, first[at(r) + 1]);
      first[at(r) + 1] += first[at(r)];
    }
    std::copy(first.begin(), first.end() - 1, fill.begin());
    for (int c = 0; c < p; ++c) {
      int r = rank_of(c), up = parent[at(r)];
      if (up < 0) continue;
      ts.slot[at(s)][at(r)] = fill[at(up)] - first[at(up)];
      ts.child[at(s)][at(fill[at(up)]++)] = r;
    }
  }
  return ts;
}

std::vector<Generator> generators(const QuotientTrees& q) {
  const HostGrid& g = q.grid;
  int p = static_cast<int>(g.rank.size());
  std::vector<Generator> out;
  auto make = [&](int x, int y, int z, int order, const char* name) {
    Generator gen{std::vector<int>(at(p)), order, name, z != 0};
    for (int r = 0; r < p; ++r) gen.rank[at(r)] = g.rank[at(moved(g, g.pos[at(r)], x, y, z))];
    out.push_back(std::move(gen));
  };
  if (g.hosts > 1) make(0, 1, 0, g.hosts, "host b -> b + 1 in its group");
  if (g.groups > 1) make(1, 0, 0, g.groups, "group a -> a + 1");
  if (q.rotate_local && g.local > 1) make(0, 0, 1, g.local, "local index l -> l + 1");
  return out;
}

bool routes_symmetric(const Topology& t, const QuotientTrees& q, const TreeSet& trees, std::string* why, double* rate_gbps) {
  int p = trees.p;
  auto no = [&](std::string w) {
    if (why) *why = std::move(w);
    return false;
  };
  // The (parent, child) pairs of every tree, their routes as link directions.
  std::unordered_map<std::uint64_t, std::uint32_t> index;
  std::vector<std::vector<int>> dsts(at(p));
  for (const std::vector<int>& parent : trees.parent)
    for (int c = 0; c < p; ++c) {
      int up = parent[at(c)];
      if (up >= 0 && index.emplace(pair_key(up, c), 0).second) dsts[at(up)].push_back(c);
    }
  std::vector<std::uint32_t> first{0}, res;
  topo::Router router(t);
  for (int a = 0; a < p; ++a) {
    std::vector<VertexId> to;
    for (int b : dsts[at(a)]) to.push_back(t.rank_vertex(static_cast<topo::Rank>(b)));
    std::vector<topo::Path> paths = router.routes_to(t.rank_vertex(static_cast<topo::Rank>(a)), to);
    for (std::size_t i = 0; i < paths.size(); ++i) {
      if (!paths[i].found) return no("no route from rank " + std::to_string(a) + " to rank " + std::to_string(dsts[at(a)][i]));
      index[pair_key(a, dsts[at(a)][i])] = static_cast<std::uint32_t>(first.size() - 1);
      for (const topo::Hop& h : paths[i].hops) res.push_back(static_cast<std::uint32_t>(h.channel()));
      first.push_back(static_cast<std::uint32_t>(res.size()));
    }
  }
  std::size_t n = 2 * t.num_links();
  auto bw = [&](std::uint32_t r) { return t.link(r / 2).bw_gbps; };
  auto lat = [&](std::uint32_t r) { return t.link(r / 2).latency_us; };
  for (const Generator& gen : generators(q)) {
    const std::string& name = gen.name;
    std::vector<std::uint32_t> map(n, std::numeric_limits<std::uint32_t>::max()), back = map;
    for (const auto& [key, i] : index) {
      int a = static_cast<int>(key >> 32), b = static_cast<int>(key & 0xffffffffu);
      auto it = index.find(pair_key(gen.rank[at(a)], gen.rank[at(b)]));
      std::string pair = "ranks " + std::to_string(a) + " -> " + std::to_string(b);
      if (it == index.end()) return no(name + ": the trees are not translates at " + pair);
      std::uint32_t x = first[i], xe = first[i + 1], y = first[it->second];
      if (xe - x != first[it->second + 1] - y) return no(name + " maps the route of " + pair + " onto a route of other length");
      for (; x < xe; ++x, ++y) {
        std::uint32_t rx = res[x], ry = res[y];
        if (map[rx] == std::numeric_limits<std::uint32_t>::max()) {
          if (back[ry] != std::numeric_limits<std::uint32_t>::max() || bw(rx) != bw(ry) || lat(rx) != lat(ry))
            return no(name + " maps the route of " + pair + " onto links of other bandwidth, latency or use");
          map[rx] = ry;
          back[ry] = rx;
        } else if (map[rx] != ry) {
          return no(name + " maps a link of the route of " + pair + " onto two links");
        }
      }
    }
  }
  if (rate_gbps) {
    std::vector<std::uint32_t> load(n, 0);
    for (const std::vector<int>& parent : trees.parent)
      for (int c = 0; c < p; ++c)
        if (parent[at(c)] >= 0) {
          std::uint32_t i = index.at(pair_key(parent[at(c)], c));
          for (std::uint32_t x = first[i]; x < first[i + 1]; ++x) ++load[res[x]];
        }
    double rate = std::numeric_limits<double>::infinity();
    for (std::uint32_t r = 0; r < n; ++r)
      if (load[r]) rate = std::min(rate, bw(r) / load[r]);
    *rate_gbps = rate * trees.intra_k;  // a root's K distinct trees share its rate
  }
  return true;
}

Topology host_topology(const Topology& t, const HostGrid& g) {
  const std::string& host = t.vertex(t.rank_vertex(static_cast<topo::Rank>(g.rank[0]))).host;
  Topology one;
  one.name = t.name + " (one host)";
  std::vector<VertexId> id(t.num_vertices(), std::numeric_limits<VertexId>::max());
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (t.vertex(v).host == host) id[v] = one.add_vertex(t.vertex(v));
  for (const topo::Link& l : t.links())
    if (id[l.a] != std::numeric_limits<VertexId>::max() && id[l.b] != std::numeric_limits<VertexId>::max()) {
      topo::Link c = l;
      c.a = id[l.a];
      c.b = id[l.b];
      one.add_link(c);
    }
  for (int l = 0; l < g.local; ++l) one.add_rank(id[t.rank_vertex(static_cast<topo::Rank>(g.rank[at(l)]))]);
  return one;
}

std::optional<QuotientTrees> quotient(const Topology& t, int p, int fanout, int intra_k, const IntraSolver& intra, std::string* why,
                                      double* rate_gbps) {
  struct Entry {
    std::optional<QuotientTrees> q;
    std::string why;
    double rate = 0;
  };
  static std::mutex mu;
  static std::map<std::tuple<std::uint64_t, int, int, int>, Entry> memo;
  auto key = std::make_tuple(t.fingerprint(), p, fanout, intra_k);
  auto give = [&](const Entry& e) {
    if (why) *why = e.why;
    if (rate_gbps) *rate_gbps = e.rate;
    return e.q;
  };
  {
    std::lock_guard lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return give(it->second);
  }
  Entry e;
  if (std::optional<HostGrid> g = host_grid(t, p, &e.why)) {
    QuotientTrees q;
    q.grid = std::move(*g);
    q.fanout = std::max(1, fanout);
    int gl = q.grid.local;
    q.intra_k = gl == 1 ? 1 : std::max(1, intra_k);
    if (gl == 1) q.intra = {{-1}};
    else q.intra = intra(host_topology(t, q.grid), gl, q.intra_k);
    bool ok = q.intra.size() == at(gl) * at(q.intra_k);
    for (std::size_t i = 0; ok && i < q.intra.size(); ++i) {
      auto l = i / at(q.intra_k);
      ok = q.intra[i].size() == at(gl) && q.intra[i][l] == -1;
    }
    if (!ok)
      throw Error("synth: the intra-host trees do not fit the host's " + std::to_string(gl) + " ranks at " + std::to_string(q.intra_k) +
                  " a root");
    q.rotate_local = gl > 1 && rotations(q.intra, q.intra_k);
    std::string fail;
    bool sym = routes_symmetric(t, q, expand_trees(q, q.intra_k), &fail, &e.rate);
    if (!sym && q.rotate_local) {
      q.rotate_local = false;
      sym = routes_symmetric(t, q, expand_trees(q, q.intra_k), &fail, &e.rate);
    }
    if (sym) e.q = std::move(q);
    else e.why = "the fabric does not treat the hosts alike: " + fail;
  }
  std::lock_guard lock(mu);
  return give(memo.emplace(key, std::move(e)).first->second);
}

void write_params(const QuotientTrees& q, std::map<std::string, std::string>& params) {
  const HostGrid& g = q.grid;
  params["sym_grid"] = join({g.groups, g.hosts, g.local, q.rotate_local ? 1 : 0});
  params["sym_ranks"] = join(g.rank);
  params["sym_fanout"] = std::to_string(q.fanout);
  std::string intra;
  for (std::size_t l = 0; l < q.intra.size(); ++l) intra += (l ? ";" : "") + join(q.intra[l]);
  params["sym_intra"] = intra;
  if (q.intra_k > 1) params["sym_intra_k"] = std::to_string(q.intra_k);
  else params.erase("sym_intra_k");
}

std::optional<QuotientTrees> read_params(const std::map<std::string, std::string>& params, int p) {
  auto it = params.find("sym_grid");
  if (it == params.end()) return std::nullopt;
  auto need = [&](const std::string& name) -> const std::string& {
    auto f = params.find(name);
    if (f == params.end()) throw InputError("synth: plan parameter " + name + " is missing (sym_grid is given)");
    return f->second;
  };
  std::vector<int> grid = parse_ints("sym_grid", it->second);
  if (grid.size() != 4 || grid[0] < 1 || grid[1] < 1 || grid[2] < 1 || (grid[3] != 0 && grid[3] != 1) ||
      static_cast<std::int64_t>(grid[0]) * grid[1] * grid[2] != p || grid[0] * grid[1] < 2)
    throw InputError("synth: plan parameter sym_grid \"" + it->second +
                     "\" is not groups,hosts,local,rotate (0 or 1) with groups x hosts x local = " + std::to_string(p) +
                     " ranks on two hosts or more");
  QuotientTrees q;
  q.grid.groups = grid[0];
  q.grid.hosts = grid[1];
  q.grid.local = grid[2];
  q.rotate_local = grid[3] == 1;
  q.grid.rank = parse_ints("sym_ranks", need("sym_ranks"));
  q.grid.pos.assign(at(p), -1);
  bool perm = q.grid.rank.size() == at(p);
  for (std::size_t i = 0; perm && i < q.grid.rank.size(); ++i) {
    int r = q.grid.rank[i];
    perm = r >= 0 && r < p && q.grid.pos[at(r)] < 0;
    if (perm) q.grid.pos[at(r)] = static_cast<int>(i);
  }
  if (!perm) throw InputError("synth: plan parameter sym_ranks is not an order of the " + std::to_string(p) + " ranks");
  std::vector<int> fan = parse_ints("sym_fanout", need("sym_fanout"));
  if (fan.size() != 1 || fan[0] < 1) throw InputError("synth: plan parameter sym_fanout must be a whole number of 1 or more");
  q.fanout = fan[0];
  int g = q.grid.local;
  if (auto kt = params.find("sym_intra_k"); kt != params.end()) {
    std::vector<int> kv = parse_ints("sym_intra_k", kt->second);
    if (kv.size() != 1 || kv[0] < 1 || kv[0] > 64)
      throw InputError("synth: plan parameter sym_intra_k must be a whole number from 1 to 64 (intra-host trees a root)");
    q.intra_k = kv[0];
  }
  int K = q.intra_k, n = g * K;
  std::string intra = need("sym_intra");
  std::size_t start = 0;
  for (int i = 0; i < n; ++i) {
    int l = i / K;
    std::size_t end = intra.find(';', start);
    std::string part = intra.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::vector<int> parent = parse_ints("sym_intra", part);
    if (parent.size() != at(g))
      throw InputError("synth: plan parameter sym_intra: tree " + std::to_string(i) + " has " + std::to_string(parent.size()) +
                       " ranks, expected " + std::to_string(g));
    for (int x = 0; x < g; ++x) {
      int y = x;
      for (int step = 0; step <= g && y >= 0 && y < g && y != l; ++step) y = parent[at(y)];
      if (y != l || parent[at(l)] != -1)
        throw InputError("synth: plan parameter sym_intra: tree " + std::to_string(i) + " does not lead local index " + std::to_string(x) +
                         " to its root " + std::to_string(l));
    }
    q.intra.push_back(std::move(parent));
    if ((end == std::string::npos) != (i == n - 1))
      throw InputError("synth: plan parameter sym_intra: expected " + std::to_string(n) + " trees (" + std::to_string(K) +
                       " a local root)");
    start = end + 1;
  }
  if (q.rotate_local && !rotations(q.intra, K))
    throw InputError("synth: plan parameter sym_grid says the intra-host trees are rotations, and they are not");
  return q;
}

std::shared_ptr<const TreeSet> shared_trees(const std::map<std::string, std::string>& params, int p, int k) {
  struct Entry {
    std::string text;
    std::shared_ptr<const TreeSet> trees;
  };
  constexpr std::size_t kKept = 2;
  thread_local std::vector<Entry> kept;
  std::string text = std::to_string(p) + "/" + std::to_string(k);
  for (const char* name : {"sym_grid", "sym_fanout", "sym_intra", "sym_intra_k", "sym_ranks"}) {
    auto it = params.find(name);
    text += "/" + (it == params.end() ? std::string() : it->second);
  }
  for (const Entry& e : kept)
    if (e.text == text) return e.trees;
  std::optional<QuotientTrees> q = read_params(params, p);
  if (!q) return nullptr;
  auto trees = std::make_shared<const TreeSet>(expand_trees(*q, k));
  if (kept.size() == kKept) kept.erase(kept.begin());
  kept.push_back({std::move(text), trees});
  return trees;
}

}  // namespace collkit::plan::synth

namespace collkit::plan::synth {

std::optional<HostGrid> equal_hosts(const topo::Topology& t, int p, std::string* why) {
  std::optional<std::map<std::string, std::vector<int>>> by_host = ranks_by_host(t, p, why);
  if (!by_host) return std::nullopt;
  std::vector<std::vector<int>> hosts;
  for (auto& [name, ranks] : *by_host) {
    std::sort(ranks.begin(), ranks.end(),
              [&](int x, int y) { return t.rank_vertex(static_cast<topo::Rank>(x)) < t.rank_vertex(static_cast<topo::Rank>(y)); });
    hosts.push_back(ranks);
  }
  std::sort(hosts.begin(), hosts.end(),
            [](const auto& x, const auto& y) { return *std::min_element(x.begin(), x.end()) < *std::min_element(y.begin(), y.end()); });
  HostGrid out;
  out.hosts = static_cast<int>(hosts.size());
  out.local = static_cast<int>(hosts.front().size());
  out.pos.assign(at(p), -1);
  for (const std::vector<int>& ranks : hosts)
    for (int r : ranks) {
      out.pos[at(r)] = static_cast<int>(out.rank.size());
      out.rank.push_back(r);
    }
  return out;
}

std::optional<HostGrid> rail_hosts(const topo::Topology& t, int p, std::string* why) {
  std::string unequal;
  if (std::optional<HostGrid> g = equal_hosts(t, p, &unequal)) return g;
  std::optional<std::map<std::string, std::vector<int>>> by_host = ranks_by_host(t, p, why, false);
  if (!by_host) return std::nullopt;
  auto no = [&](const std::string& w) -> std::optional<HostGrid> {
    if (why) *why = unequal + ", and " + w;
    return std::nullopt;
  };
  auto index = [&](int r) { return t.vertex(t.rank_vertex(static_cast<topo::Rank>(r))).index; };
  std::vector<int> slots;  // every device index, sorted
  for (const auto& [name, ranks] : *by_host)
    for (int r : ranks) {
      if (index(r) < 0) return no("rank " + std::to_string(r) + "'s vertex has no device index to line the hosts' rails up by");
      slots.push_back(index(r));
    }
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  std::vector<std::vector<int>> hosts;
  bool full = false;
  for (const auto& [name, ranks] : *by_host) {
    std::vector<int> at_slot(slots.size(), -1);
    for (int r : ranks) {
      auto l = static_cast<std::size_t>(std::lower_bound(slots.begin(), slots.end(), index(r)) - slots.begin());
      if (at_slot[l] >= 0) return no("host " + name + " holds two ranks of device index " + std::to_string(index(r)));
      at_slot[l] = r;
    }
    full = full || ranks.size() == slots.size();
    hosts.push_back(std::move(at_slot));
  }
  if (!full) return no("no host holds a GPU of every device index its peers have (" + std::to_string(slots.size()) + ")");
  auto least = [](const std::vector<int>& h) {
    int m = std::numeric_limits<int>::max();
    for (int r : h)
      if (r >= 0) m = std::min(m, r);
    return m;
  };
  std::sort(hosts.begin(), hosts.end(), [&](const auto& x, const auto& y) { return least(x) < least(y); });
  HostGrid out;
  out.hosts = static_cast<int>(hosts.size());
  out.local = static_cast<int>(slots.size());
  out.pos.assign(at(p), -1);
  for (const std::vector<int>& h : hosts)
    for (int r : h) {
      if (r >= 0) out.pos[at(r)] = static_cast<int>(out.rank.size());
      out.rank.push_back(r);
    }
  return out;
}

namespace {

// rooted_trees' inter-host trees on places x = 0 .. n - 1 of the hosts' order: per copy, every
// place's parent place (-1: the root's host).
struct RootedShape {
  int copies = 1;
  std::vector<std::vector<int>> parent;
};

RootedShape rooted_shape(int n, int copies, int fanout) {
  RootedShape s;
  s.copies = copies;
  s.parent.assign(at(copies), std::vector<int>(at(n), -1));
  for (int c = 0; c < copies; ++c) {
    std::vector<int> x_at;  // heap place -> place in the order
    for (int pass = 0; pass < copies; ++pass)
      for (int x = 0; x < n; ++x)
        if (copies == 1 || (x % 2 == c) == (pass == 0)) x_at.push_back(x);
    for (int place = 1; place < n; ++place) s.parent[at(c)][at(x_at[at(place)])] = x_at[at((place - 1) / fanout)];
  }
  return s;
}

// The order of the n = H - 1 hosts other than the root's (host elements) at rooted_shape's
// places. At first the x-th host after the root's, as always; where the arcs of the rail of the
// root's local index then load some link direction beyond its share (issue #11: on a fat-tree of
// four leaves a rail, D-mod-k sends arcs from one leaf to hosts of one port index up one uplink,
// three of them, four reversed, where a NIC carries two), hosts are swapped between places of one
// parity (so that the trees' shape, and which hosts are inner in which copy, stay as they are)
// while the excess does not grow, until a budget of swaps is spent or none has helped for a while.
// A link direction's share: `copies` arcs at the least bandwidth the arcs' routes reach, in
// proportion to its own bandwidth; the excess over it is counted over the arcs as Broadcast sends
// them and reversed (Reduce), squared, and outweighs the excess over one arc's share (Queue).
// Deterministic (a fixed seed). The order found is kept only where `rate` (the trees'
// routed_tree_rate; the trees differ only in the hosts' arcs, so with or without `chain` alike) is
// no lower than at first. Memoised per (topology, p, root, fan-out): the trees with and without
// `chain`, `intra` or `ring` share the order (their inter-host arcs are the same, but for the
// ring's root piece, which leaves from another rank of the root's host; the rate that judged it
// is the first caller's).
using OrderRate = std::function<double(const std::vector<int>& order)>;
std::vector<int> rooted_order(const Topology& t, const HostGrid& g, int re, int lr, const RootedShape& shape, const OrderRate& rate) {
  int H = g.num_hosts(), n = H - 1, gl = g.local;
  std::vector<int> order(at(n));
  for (int x = 0; x < n; ++x) order[at(x)] = mod(re + 1 + x, H);
  if (n < 3) return order;
  static std::mutex mu;
  static std::map<std::tuple<std::uint64_t, int, int, int, int>, std::vector<int>> memo;
  auto key = std::make_tuple(t.fingerprint(), static_cast<int>(g.pos.size()), g.rank[at(re * gl + lr)], shape.copies,
                             static_cast<int>(shape.parent.front().size()));
  {
    std::lock_guard lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  // Routes between the rail's ranks (link directions: channels), per source host.
  std::vector<VertexId> vertex(at(H));
  for (int e = 0; e < H; ++e) vertex[at(e)] = t.rank_vertex(static_cast<topo::Rank>(g.holder(e, lr)));
  topo::Router router(t);
  std::vector<std::vector<std::vector<std::uint32_t>>> route(at(H));
  double narrowest = std::numeric_limits<double>::infinity();
  bool unrouted = false;
  auto channels = [&](int a, int b) -> const std::vector<std::uint32_t>& {
    if (route[at(a)].empty()) {
      route[at(a)].resize(at(H));
      std::vector<topo::Path> paths = router.routes_to(vertex[at(a)], vertex);
      for (int e = 0; e < H; ++e) {
        if (e == a) continue;
        if (!paths[at(e)].found) unrouted = true;
        narrowest = std::min(narrowest, paths[at(e)].bottleneck_gbps);
        for (const topo::Hop& h : paths[at(e)].hops) route[at(a)][at(e)].push_back(static_cast<std::uint32_t>(h.channel()));
      }
    }
    return route[at(a)][at(b)];
  };
  // Arcs by place (from, to; from -1: the root's host), and each place's arcs.
  std::vector<std::pair<int, int>> arcs;
  std::vector<std::vector<int>> arcs_at(at(n));
  for (int c = 0; c < shape.copies; ++c)
    for (int x = 0; x < n; ++x) {
      int up = shape.parent[at(c)][at(x)];
      int id = static_cast<int>(arcs.size());
      arcs.emplace_back(up, x);
      arcs_at[at(x)].push_back(id);
      if (up >= 0) arcs_at[at(up)].push_back(id);
    }
  auto host = [&](int x) { return x < 0 ? re : order[at(x)]; };
  for (int e = 0; e < H; ++e) channels(e, e == 0 ? 1 : 0);  // every route, and the narrowest
  if (unrouted || !(narrowest > 0)) return order;
  std::size_t nch = 2 * t.num_links();
  std::vector<double> share(nch);
  for (std::size_t ch = 0; ch < nch; ++ch) share[ch] = shape.copies * t.link(static_cast<topo::LinkId>(ch / 2)).bw_gbps / narrowest;
  // load[0]: the arcs as sent, load[1]: reversed.
  std::vector<double> load[2] = {std::vector<double>(nch, 0), std::vector<double>(nch, 0)};
  auto hard = [&](int dir, std::uint32_t ch) {
    double over = load[dir][ch] - share[ch];
    return over > 1e-9 ? over * over : 0.0;
  };
  // Then, less weighty, beyond one arc's share: under the Queue link model (first come, first
  // served) two streams from different senders on one fabric link take turns unevenly.
  auto excess = [&](int dir, std::uint32_t ch) {
    double over = load[dir][ch] - share[ch] / shape.copies;
    return 16 * hard(dir, ch) + (over > 1e-9 ? over * over : 0.0);
  };
  // A step's link directions, each once (marked with the step's stamp), then sorted: the same
  // list as sorting them all and dropping repeats, in a fifth of the time (most repeat: the arcs
  // before and after a swap share their hosts' links).
  std::vector<std::uint32_t> mark(nch, 0);
  std::uint32_t stamp = 0;
  auto apply = [&](int id, double w, std::vector<std::uint32_t>* touched) {
    int a = host(arcs[at(id)].first), b = host(arcs[at(id)].second);
    for (int dir = 0; dir < 2; ++dir)
      for (std::uint32_t ch : dir == 0 ? channels(a, b) : channels(b, a)) {
        load[dir][ch] += w;
        if (touched && mark[ch] != stamp) {
          mark[ch] = stamp;
          touched->push_back(ch);
        }
      }
  };
  for (std::size_t id = 0; id < arcs.size(); ++id) apply(static_cast<int>(id), 1, nullptr);
  double over = 0;
  for (int dir = 0; dir < 2; ++dir)
    for (std::size_t ch = 0; ch < nch; ++ch) over += hard(dir, static_cast<std::uint32_t>(ch));
  if (over > 0) {
    std::mt19937 rng(20261205u);
    std::vector<int> ids;
    std::vector<std::uint32_t> touched;
    auto local_cost = [&] {
      double sum = 0;
      for (std::uint32_t ch : touched) sum += excess(0, ch) + excess(1, ch);
      return sum;
    };
    long budget = std::min<long>(2000L * n, 4'000'000L), gained = 0;
    for (long step = 0; step < budget && step - gained < 1000L * n; ++step) {
      int x = static_cast<int>(rng() % static_cast<std::uint32_t>(n));
      int y = static_cast<int>(rng() % static_cast<std::uint32_t>((n + 1) / 2)) * 2 + x % 2;
      if (y >= n || y == x) continue;
      ids = arcs_at[at(x)];
      ids.insert(ids.end(), arcs_at[at(y)].begin(), arcs_at[at(y)].end());
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      // The excess over the link directions the arcs take before and after the swap.
      touched.clear();
      ++stamp;
      for (int id : ids) apply(id, 0, &touched);
      std::swap(order[at(x)], order[at(y)]);
      for (int id : ids) apply(id, 0, &touched);
      std::swap(order[at(x)], order[at(y)]);
      std::sort(touched.begin(), touched.end());
      double before = local_cost();
      for (int id : ids) apply(id, -1, nullptr);
      std::swap(order[at(x)], order[at(y)]);
      for (int id : ids) apply(id, 1, nullptr);
      double after = local_cost();
      if (after < before - 1e-12) gained = step;
      if (after > before + 1e-12) {
        for (int id : ids) apply(id, -1, nullptr);
        std::swap(order[at(x)], order[at(y)]);
        for (int id : ids) apply(id, 1, nullptr);
      }
    }
  }
  std::vector<int> plain(at(n));
  for (int x = 0; x < n; ++x) plain[at(x)] = mod(re + 1 + x, H);
  if (order != plain && rate(plain) > rate(order) * (1 + 1e-9)) order = plain;
  std::lock_guard lock(mu);
  return memo.emplace(key, std::move(order)).first->second;
}

// Whether trees[l] is, for every local index l < g, a spanning tree of the g local indices rooted
// at l (every index's parent chain ends at l, -1 there).
bool spanning_trees(const std::vector<std::vector<int>>& trees, int g) {
  if (trees.size() != at(g)) return false;
  for (int l = 0; l < g; ++l) {
    const std::vector<int>& parent = trees[at(l)];
    if (parent.size() != at(g) || parent[at(l)] != -1) return false;
    for (int x = 0; x < g; ++x) {
      int y = x, steps = 0;
      while (y != l && steps++ < g) {
        y = parent[at(y)];
        if (y < 0 || y >= g) return false;
      }
      if (y != l) return false;
    }
  }
  return true;
}

}  // namespace

std::optional<std::vector<std::vector<int>>> rooted_trees(const topo::Topology& t, int p, int root, int fanout, std::string* why,
                                                          const RootedVariant& variant) {
  const bool ring = variant.ring, chain = variant.chain || ring;
  const std::vector<std::vector<int>>* intra = ring ? nullptr : variant.intra;
  if (fanout != 1 && fanout != 2) {
    if (why) *why = "fan-out " + std::to_string(fanout) + " (1 or 2 only)";
    return std::nullopt;
  }
  if (root < 0 || root >= p) {
    if (why) *why = "root " + std::to_string(root) + " is not a rank";
    return std::nullopt;
  }
  std::optional<HostGrid> grid = rail_hosts(t, p, why);
  if (!grid) return std::nullopt;
  const HostGrid& g = *grid;
  int H = g.num_hosts(), gl = g.local, n = H - 1;
  if (g.holes() && (ring || intra || !chain)) {
    if (why) *why = "on hosts of unlike sizes only the root's own piece down a chain and the others from the rail's rank";
    return std::nullopt;
  }
  if (intra && !spanning_trees(*intra, gl)) {
    if (why) *why = "the intra-host trees are not " + std::to_string(gl) + " spanning trees of the host's " + std::to_string(gl) + " ranks";
    return std::nullopt;
  }
  // Who hands a piece that local index `from` holds to local index l of its host: `from` itself
  // (a star), or l's parent in the intra-host tree rooted at `from`.
  auto handed = [&](int from, int l) { return intra ? (*intra)[at(from)][at(l)] : from; };
  int re = g.pos[at(root)] / gl, lr = g.pos[at(root)] % gl;
  auto rank = [&](int e, int l) { return g.rank[at(e * gl + l)]; };
  int copies = fanout == 2 && n > 2 ? 2 : 1;
  // Per copy, every host element's parent element in the rail's tree (-1 at the root's host):
  // the host at place x of `order` (x = 0 .. n - 1; at first the x-th host after the root's) at a
  // heap place. A chain: place x. Two copies: copy c's heap takes first the places x of parity
  // c, then the others, so its inner places (the first ceil((n - 1) / 2), never more than the
  // floor(n / 2) odd x) hold hosts of one parity, each host inner in one copy at most. (The mirror
  // image of one heap, as before, has the same loads, but under the Queue link model 32 and 64
  // hosts took 1.19 and 1.16 x the bound against 1.06 and 1.10 this way, at 128 chunks:
  // docs/synth.md.) The hosts' order then keeps arcs that share a fabric link apart
  // (rooted_order).
  RootedShape shape = rooted_shape(n, copies, fanout);
  auto build = [&](const std::vector<int>& order) {
    std::vector<std::vector<int>> inter(at(copies), std::vector<int>(at(H), -1));
    for (int c = 0; c < copies; ++c)
      for (int x = 0; x < n; ++x) {
        int up = shape.parent[at(c)][at(x)];
        inter[at(c)][at(order[at(x)])] = up < 0 ? re : order[at(up)];
      }
    std::vector<std::vector<int>> trees;
    int relays = chain ? 1 : std::max(1, gl - 1);
    for (int c = 0; c < copies; ++c)
      for (int j = 0; j < gl; ++j)
        for (int i = 0; i < relays; ++i) {
          std::vector<int> parent(at(p), -1);
          // Who sends the piece off the root's host: the rank of its rail; where the host has
          // none (a host short of a GPU), the root or the slot's stand-in (below), whose NIC then
          // carries two pieces.
          int leader = rank(re, j) >= 0 ? rank(re, j) : root;
          if (gl > 1 && ring) {
            // Round the root's host (the root left out of the order), from the root to the rank
            // after j and on to j; the root's own piece from the root to the last.
            auto next = [&](int l) { return mod(l + 1, gl) == lr ? mod(l + 2, gl) : mod(l + 1, gl); };
            int end = j == lr ? mod(lr - 1, gl) : j;
            parent[at(rank(re, next(j)))] = root;
            for (int l = next(j); l != end; l = next(l)) parent[at(rank(re, next(l)))] = rank(re, l);
            leader = rank(re, end);
          } else if (gl > 1 && chain && j == lr) {
            // The root's own piece down a chain of the others on its host, from the root.
            int prev = root;
            for (int x = 1; x < gl; ++x) {
              int r = rank(re, mod(lr + x, gl));
              if (r < 0) continue;
              parent[at(r)] = prev;
              prev = r;
            }
          } else if (gl > 1 && rank(re, j) < 0) {
            // A slot of the root's host with no rank: the rank that stands in for it (where that
            // is the root, the next after the root; the root itself on a host of one) gets the
            // piece from the root, sends it off the host and hands it to the others. Under Queue
            // the root's NIC carrying its own piece and this one ran 1.40 x the bound where a
            // stand-in's ran 1.20 (3 x dgx-h100 less node0's GPU 0, Broadcast of 64 MiB). With
            // `root_leads_holes` the root sends it off itself.
            if (!variant.root_leads_holes) leader = g.holder(re, j) != root ? g.holder(re, j) : g.holder(re, lr + 1);
            if (leader != root) parent[at(leader)] = root;
            for (int l = 0; l < gl; ++l)
              if (rank(re, l) >= 0 && rank(re, l) != root && rank(re, l) != leader) parent[at(rank(re, l))] = leader;
          } else if (gl > 1) {
            // On the root's host: rank j (or, for the root's own piece, the i-th other rank, its
            // relay) gets it from the root, straight or, with `intra`, down the root's tree (over
            // NVLink where the route is PCIe); the others from it, straight or down its own tree
            // (where that tree passes through the root, the root hands the piece on: it holds
            // every piece).
            int via = j != lr ? j : (i < lr ? i : i + 1);
            std::vector<char> on_path(at(gl), 0);
            if (intra)
              for (int x = via; x != lr; x = (*intra)[at(lr)][at(x)]) {
                parent[at(rank(re, x))] = rank(re, (*intra)[at(lr)][at(x)]);
                on_path[at(x)] = 1;
              }
            else parent[at(rank(re, via))] = root;
            for (int l = 0; l < gl; ++l)
              if (l != lr && l != via && !on_path[at(l)] && rank(re, l) >= 0) parent[at(rank(re, l))] = rank(re, handed(via, l));
          }
          // On every other host, the rail's rank (or who stands in for it, HostGrid::holder) gets
          // the piece from the parent host's and hands it on.
          for (int e = 0; e < H; ++e) {
            if (e == re) continue;
            int up = inter[at(c)][at(e)];
            int rail = g.holder(e, j);
            parent[at(rail)] = up == re ? leader : g.holder(up, j);
            for (int l = 0; l < gl; ++l)
              if (rank(e, l) >= 0 && rank(e, l) != rail)
                parent[at(rank(e, l))] = ring ? rank(e, mod(l - 1, gl)) : g.holder(e, handed(j, l));
          }
          trees.push_back(std::move(parent));
        }
    return trees;
  };
  return build(rooted_order(t, g, re, lr, shape, [&](const std::vector<int>& order) { return routed_tree_rate(t, build(order)); }));
}

double routed_tree_rate(const topo::Topology& t, const std::vector<std::vector<int>>& trees, const std::vector<std::int16_t>& nics) {
  if (trees.empty()) return 0;
  int p = static_cast<int>(trees.front().size());
  std::vector<double> load(2 * t.num_links(), 0);
  auto least = [&] {
    double rate = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < load.size(); ++r)
      if (load[r] > 0) rate = std::min(rate, t.link(static_cast<topo::LinkId>(r / 2)).bw_gbps / load[r]);
    return rate * static_cast<double>(trees.size());
  };
  if (!nics.empty()) {
    // Each arc on the route through its tree's NIC (sim::NicRoutes, as the simulator takes it).
    topo::RouteCache cache(t);
    sim::NicRoutes via(t, cache);
    for (std::size_t j = 0; j < trees.size(); ++j)
      for (int c = 0; c < p; ++c) {
        int parent = trees[j][at(c)];
        if (parent < 0) continue;
        topo::Path path = via.route(t.rank_vertex(static_cast<topo::Rank>(parent)), t.rank_vertex(static_cast<topo::Rank>(c)), nics[j]);
        if (!path.found) return 0;
        for (const topo::Hop& h : path.hops) load[h.channel()] += 1;
      }
    return least();
  }
  std::unordered_map<std::uint64_t, std::uint32_t> count;
  for (const std::vector<int>& parent : trees)
    for (int c = 0; c < p; ++c)
      if (parent[at(c)] >= 0) ++count[pair_key(parent[at(c)], c)];
  std::vector<std::vector<std::pair<int, std::uint32_t>>> dsts(at(p));
  for (const auto& [key, n] : count) dsts[static_cast<std::size_t>(key >> 32)].push_back({static_cast<int>(key & 0xffffffffu), n});
  topo::Router router(t);
  for (int a = 0; a < p; ++a) {
    if (dsts[at(a)].empty()) continue;
    std::vector<VertexId> to;
    for (const auto& d : dsts[at(a)]) to.push_back(t.rank_vertex(static_cast<topo::Rank>(d.first)));
    std::vector<topo::Path> paths = router.routes_to(t.rank_vertex(static_cast<topo::Rank>(a)), to);
    for (std::size_t i = 0; i < paths.size(); ++i) {
      if (!paths[i].found) return 0;
      for (const topo::Hop& h : paths[i].hops) load[h.channel()] += dsts[at(a)][i].second;
    }
  }
  return least();
}

}  // namespace collkit::plan::synth
