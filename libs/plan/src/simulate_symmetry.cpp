// Which symmetric threads the simulator may fold (simulate_symmetry.h).
//
// A plan states cyclic symmetries of its threads (plan.h, SymmetryAxis); the simulator may run
// one thread per orbit only if the topology agrees: the image of every transfer must follow the
// image of its route, link direction for link direction, each of the same bandwidth and latency
// (so the image transfer costs the same and meets the images of the same transfers), and no link
// direction may be its own image under another element (else the symmetric copies of a transfer
// would share it, which one representative cannot stand for). For each axis the smallest power
// whose generator passes is kept: a ring laid over 128 hosts is symmetric under a shift of two
// hosts, but the routes are only under a shift of a whole leaf (32 hosts).

#include "simulate_symmetry.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "collkit/core/flat_index.h"
#include "collkit/topo/routing.h"
#include "nic_route.h"

namespace collkit::plan::sim {

namespace {

using Map = std::vector<int>;

struct Gen {
  Map rank, channel;
  int order = 1;
};

// a after b.
Gen compose(const Gen& a, const Gen& b) {
  Gen c{Map(b.rank.size()), Map(b.channel.size()), 1};
  for (std::size_t i = 0; i < b.rank.size(); ++i) c.rank[i] = a.rank[static_cast<std::size_t>(b.rank[i])];
  for (std::size_t i = 0; i < b.channel.size(); ++i) c.channel[i] = a.channel[static_cast<std::size_t>(b.channel[i])];
  return c;
}

Gen identity(int p, int nch) {
  Gen g{Map(static_cast<std::size_t>(p)), Map(static_cast<std::size_t>(nch)), 1};
  std::iota(g.rank.begin(), g.rank.end(), 0);
  std::iota(g.channel.begin(), g.channel.end(), 0);
  return g;
}

bool is_permutation(const Map& m) {
  std::vector<char> seen(m.size(), 0);
  for (int x : m) {
    if (x < 0 || static_cast<std::size_t>(x) >= m.size() || seen[static_cast<std::size_t>(x)]) return false;
    seen[static_cast<std::size_t>(x)] = 1;
  }
  return true;
}

constexpr std::uint32_t kUnset = FlatIndex::kNone;

// Rank pair (a << 32 | b) -> index: the closure and the checks below look pairs up millions of
// times at 16k ranks, where std::unordered_map pays a cache miss per node.
struct PairIndex : FlatIndex {
  static std::uint64_t key(int a, int b) { return pair(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b)); }
};

// A pair's receiver with its channel's route code (fold_nic: the NIC it names, -1 for the route's
// own, kHostPath for a path staged through host memory) in one int's 32 bits: ranks are below
// 2^24 (kMaxPlanRanks), codes + 2 from 0 to kMaxChannelNic + 2 = 128 in the 8 bits above.
constexpr int kNicShift = 24;
static_assert(kMaxPlanRanks <= (1 << kNicShift) && kHostPath == -2 && (kMaxChannelNic + 2) < (1 << (32 - kNicShift)));
int with_nic(int receiver, int nic) {
  return static_cast<int>(static_cast<std::uint32_t>(receiver) | (static_cast<std::uint32_t>(nic + 2) << kNicShift));
}
int receiver_of(int code) { return static_cast<int>(static_cast<std::uint32_t>(code) & ((1u << kNicShift) - 1)); }
int nic_of(int code) { return static_cast<int>(static_cast<std::uint32_t>(code) >> kNicShift) - 2; }

// Rank pairs (sender, receiver code) seen, by sender: a short list scanned while it is short (a
// rank talks to a few peers; hashing every pair of the closure below missed the cache once per
// pair, 300 k pairs per plan at 16k ranks), a bitmap of receiver codes for a sender past that.
// The short lists sit in one array, a cache line per sender (count, then up to 15 peers): a list
// per sender on the heap cost a miss for its header and another for its peers, and 16k
// allocations a plan. A bitmap (p bits, or more for codes that name a NIC or the host path) rather
// than a hash of pairs: pairwise and direct at 1024 ranks have every sender past its short list,
// a million pairs whose hash index grew, and was faulted in, six times over.
class PairSet {
 public:
  explicit PairSet(int p) : p_(p), short_(static_cast<std::size_t>(p)), long_of_(static_cast<std::size_t>(p), -1) {}
  // Adds (a, b) unless there; true when it was added.
  bool insert(int a, int b) {
    Short& s = short_[static_cast<std::size_t>(a)];
    if (s.n <= kShort) {
      for (int k = 0; k < s.n; ++k)
        if (s.peer[k] == b) return false;
      if (s.n < kShort) {
        s.peer[s.n++] = b;
        return true;
      }
      // Past the short list: a's peers move to a list and a bitmap of their own.
      long_of_[static_cast<std::size_t>(a)] = static_cast<std::int32_t>(long_.size());
      Long& l = long_.emplace_back();
      for (int x : s.peer) l.add(x, bit_of(x));
      s.n = kShort + 1;
    }
    return long_[static_cast<std::size_t>(long_of_[static_cast<std::size_t>(a)])].add(b, bit_of(b));
  }
  // Every pair, ascending (as std::sort orders pairs).
  std::vector<std::pair<int, int>> sorted() {
    std::vector<std::pair<int, int>> out;
    for (std::size_t a = 0; a < short_.size(); ++a) {
      Short& s = short_[a];
      int* first = s.peer;
      int* last = s.peer;
      if (s.n > kShort) {  // (s.peer + s.n would point past the array's end)
        std::vector<int>& v = long_[static_cast<std::size_t>(long_of_[a])].peers;
        first = v.data();
        last = v.data() + v.size();
      } else {
        last = s.peer + s.n;
      }
      std::sort(first, last);
      for (const int* b = first; b != last; ++b) out.emplace_back(static_cast<int>(a), *b);
    }
    return out;
  }

 private:
  static constexpr int kShort = 15;
  struct alignas(64) Short {
    int n = 0;  // peers; kShort + 1: they are in long_
    int peer[kShort]{};
  };
  // A receiver code's bit: p bits per route code (nic_of + 2), in the order codes come.
  std::size_t bit_of(int code) const {
    return static_cast<std::size_t>(nic_of(code) + 2) * static_cast<std::size_t>(p_) + static_cast<std::size_t>(receiver_of(code));
  }
  struct Long {
    std::vector<std::uint64_t> bits;
    std::vector<int> peers;
    bool add(int b, std::size_t at) {
      std::size_t word = at / 64;
      if (word >= bits.size()) bits.resize(std::max(word + 1, 2 * bits.size()), 0);
      std::uint64_t bit = std::uint64_t{1} << (at % 64);
      if (bits[word] & bit) return false;
      bits[word] |= bit;
      peers.push_back(b);
      return true;
    }
  };
  int p_;
  std::vector<Short> short_;
  std::vector<std::int32_t> long_of_;  // per sender: its index in long_ past kShort peers, else -1
  std::vector<Long> long_;
};

// The resources of a transfer, as the simulator names them (simulate.cpp): the link directions of
// its route, or a vertex's local copies (2 * links + vertex) between ranks on one vertex.
template <class F>
void for_resources(const topo::Topology& t, const topo::Path& p, F f) {
  if (p.src == p.dst) f(static_cast<std::uint32_t>(2 * t.num_links() + p.src));
  for (const topo::Hop& h : p.hops) f(static_cast<std::uint32_t>(h.channel()));
}

double resource_bw(const topo::Topology& t, std::uint32_t res) {
  std::size_t links = t.num_links();
  return res >= 2 * links ? t.vertex(static_cast<topo::VertexId>(res - 2 * links)).local_bw_gbps : t.link(res / 2).bw_gbps;
}

double resource_latency(const topo::Topology& t, std::uint32_t res) { return res >= 2 * t.num_links() ? 0.0 : t.link(res / 2).latency_us; }

// Rank pairs (sender, receiver with its NIC) with the resources of their routes, flat (pair i's
// are res[first[i] .. first[i + 1])): the plan's transfers, scanned once per generator checked.
struct Routes {
  std::vector<std::pair<int, int>> pairs;
  std::vector<std::uint32_t> first, res;
  PairIndex index;
  bool all_found = true;

  Routes(const topo::Topology& t, topo::RouteCache& cache, std::vector<std::pair<int, int>> sorted_pairs) : pairs(std::move(sorted_pairs)) {
    first.reserve(pairs.size() + 1);
    index.reserve(pairs.size());
    std::optional<NicRoutes> nr;
    std::optional<HostRoutes> hr;
    for (std::size_t i = 0; i < pairs.size();) {
      std::size_t j = i;
      std::vector<topo::VertexId> dsts;
      auto src = t.rank_vertex(static_cast<topo::Rank>(pairs[i].first));
      for (; j < pairs.size() && pairs[j].first == pairs[i].first; ++j)
        dsts.push_back(t.rank_vertex(static_cast<topo::Rank>(receiver_of(pairs[j].second))));
      auto found = cache.routes_to(src, dsts);
      for (std::size_t k = i; k < j; ++k) {
        first.push_back(static_cast<std::uint32_t>(res.size()));
        topo::Path through;
        const topo::Path* path = found[k - i];
        if (int nic = nic_of(pairs[k].second); nic >= 0) {
          if (!nr) nr.emplace(t, cache);
          through = nr->route(src, dsts[k - i], nic);
          path = &through;
        } else if (nic == kHostPath) {
          if (!hr) hr.emplace(t);
          through = hr->route(src, dsts[k - i]);
          path = &through;
        }
        all_found = all_found && path->found;
        for_resources(t, *path, [&](std::uint32_t r) { res.push_back(r); });
        index.emplace(PairIndex::key(pairs[k].first, pairs[k].second), static_cast<std::uint32_t>(k));
      }
      i = j;
    }
    first.push_back(static_cast<std::uint32_t>(res.size()));
  }
};

// Does g map every route onto the route of the image pair, resource for resource? Fills `map`
// (resource -> image; kUnset elsewhere, sized to all resources) when it does.
bool equivariant(const topo::Topology& t, const Gen& g, const Routes& routes, std::vector<std::uint32_t>& map) {
  if (!routes.all_found) return false;
  std::size_t n = 2 * t.num_links() + t.num_vertices();
  map.assign(n, kUnset);
  std::vector<std::uint32_t> back(n, kUnset);
  for (std::size_t i = 0; i < routes.pairs.size(); ++i) {
    auto [a, b] = routes.pairs[i];
    int gb = with_nic(g.rank[static_cast<std::size_t>(receiver_of(b))], nic_of(b));
    std::uint32_t j = routes.index.find(PairIndex::key(g.rank[static_cast<std::size_t>(a)], gb));
    if (j == kUnset) return false;
    std::uint32_t x = routes.first[i], xe = routes.first[i + 1], y = routes.first[j];
    if (xe - x != routes.first[j + 1] - y) return false;
    for (; x < xe; ++x, ++y) {
      std::uint32_t rx = routes.res[x], ry = routes.res[y];
      if (map[rx] == kUnset) {
        if (back[ry] != kUnset || resource_bw(t, rx) != resource_bw(t, ry) || resource_latency(t, rx) != resource_latency(t, ry))
          return false;
        map[rx] = ry;
        back[ry] = rx;
      } else if (map[rx] != ry) {
        return false;
      }
    }
  }
  return true;
}

std::uint64_t hash_pairs(const std::vector<std::pair<int, int>>& pairs) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ pairs.size();
  for (const auto& [a, b] : pairs) h = (h ^ PairIndex::key(a, b)) * 0x100000001b3ull;
  return h;
}

}  // namespace

struct FoldCache::Impl {
  struct Check {
    Map rank;
    bool ok = false;
    std::vector<std::uint32_t> map;  // empty when !ok
  };
  struct Entry {
    std::uint64_t hash = 0;
    std::shared_ptr<const Routes> routes;
    std::vector<Check> checks;  // the most recent last
  };
  // A handful of pair sets, the most recently used first: a compare's candidates and their knob
  // variants come back to the same few (each entry holds a resource map per check, about 1 MB
  // at 16k ranks, so neither list grows without end).
  static constexpr std::size_t kEntries = 6, kChecks = 8;
  std::weak_ptr<topo::RouteCache> routes;
  std::vector<Entry> entries;
  std::size_t lookups = 0, hits = 0;

  Entry& entry(const topo::Topology& t, topo::RouteCache& cache, std::vector<std::pair<int, int>> pairs) {
    ++lookups;
    std::uint64_t h = hash_pairs(pairs);
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (entries[i].hash == h && entries[i].routes->pairs == pairs) {
        ++hits;
        std::rotate(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(i),
                    entries.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        return entries.front();
      }
    if (entries.size() == kEntries) entries.pop_back();
    entries.insert(entries.begin(), Entry{h, std::make_shared<const Routes>(t, cache, std::move(pairs)), {}});
    return entries.front();
  }

  static bool equivariant(const topo::Topology& t, const Gen& g, Entry& e, std::vector<std::uint32_t>& map) {
    for (const Check& c : e.checks)
      if (c.rank == g.rank) {
        if (c.ok) map = c.map;
        return c.ok;
      }
    bool ok = sim::equivariant(t, g, *e.routes, map);
    if (e.checks.size() == kChecks) e.checks.erase(e.checks.begin());
    e.checks.push_back({g.rank, ok, ok ? map : std::vector<std::uint32_t>{}});
    return ok;
  }
};

FoldCache::FoldCache(const std::shared_ptr<topo::RouteCache>& routes) : impl(std::make_unique<Impl>()) { impl->routes = routes; }
FoldCache::~FoldCache() = default;
bool FoldCache::serves(const topo::RouteCache& routes) const {
  auto r = impl->routes.lock();
  return r && r.get() == &routes;
}
std::size_t FoldCache::lookups() const { return impl->lookups; }
std::size_t FoldCache::hits() const { return impl->hits; }

std::shared_ptr<FoldCache> fold_cache(const SimOptions& opt) {
  if (opt.folds && opt.routes && opt.folds->serves(*opt.routes)) return opt.folds;
  return std::make_shared<FoldCache>(opt.routes);
}

std::shared_ptr<topo::RouteCache> route_cache(const topo::Topology& topo, const SimOptions& opt) {
  if (opt.routes && &opt.routes->topology() == &topo) return opt.routes;
  return std::make_shared<topo::RouteCache>(topo);
}

std::optional<Fold> fold(const Plan& plan, const topo::Topology& topo, topo::RouteCache& cache, FoldCache* shared) {
  std::vector<SymmetryAxis> axes = plan.symmetries();
  int p = plan.nranks(), nch = std::max<int>(1, plan.info().channels);
  if (axes.empty() || p < 2) return std::nullopt;
  auto up = [](int x) { return static_cast<std::size_t>(x); };
  // The stated generators, checked to be permutations of the stated order that commute.
  std::vector<Gen> gens;
  for (const SymmetryAxis& ax : axes) {
    if (ax.order < 2 || ax.rank.size() != up(p) || ax.channel.size() != up(nch) || !is_permutation(ax.rank) || !is_permutation(ax.channel))
      return std::nullopt;
    Gen g{ax.rank, ax.channel, ax.order}, pw = identity(p, nch);
    for (int k = 0; k < ax.order; ++k) pw = compose(g, pw);
    Gen id = identity(p, nch);
    if (pw.rank != id.rank || pw.channel != id.channel) return std::nullopt;
    gens.push_back(std::move(g));
  }
  // Sends take the NIC their channel names, or the path through host memory: a generator must
  // keep it (the routes of both are checked below).
  const PlanInfo& info = plan.info();
  auto fold_nic = [&](int c) { return channel_path(info, c) == ChannelPath::Host ? kHostPath : channel_nic(info, c); };
  for (const Gen& g : gens)
    for (int c = 0; c < nch && (!info.channel_nics.empty() || !info.channel_paths.empty()); ++c)
      if (fold_nic(c) != fold_nic(g.channel[up(c)])) return std::nullopt;
  for (std::size_t i = 0; i < gens.size(); ++i)
    for (std::size_t j = i + 1; j < gens.size(); ++j) {
      Gen ab = compose(gens[i], gens[j]), ba = compose(gens[j], gens[i]);
      if (ab.rank != ba.rank || ab.channel != ba.channel) return std::nullopt;
    }

  // Orbits of threads under all the stated generators: the representatives' programs name the
  // rank pairs that talk, and their images under the generators all the others.
  std::size_t threads = up(p) * up(nch);
  std::vector<std::uint32_t> root(threads);
  std::iota(root.begin(), root.end(), 0u);
  auto find = [&](std::uint32_t x) {
    while (root[x] != x) x = root[x] = root[root[x]];
    return x;
  };
  for (const Gen& g : gens)
    for (int r = 0; r < p; ++r)
      for (int c = 0; c < nch; ++c) {
        auto a = find(static_cast<std::uint32_t>(r * nch + c)),
             b = find(static_cast<std::uint32_t>(g.rank[up(r)] * nch + g.channel[up(c)]));
        if (a != b) root[std::max(a, b)] = std::min(a, b);
      }
  std::vector<char> rep_rank(up(p), 0);
  for (std::uint32_t t = 0; t < threads; ++t)
    if (find(t) == t) rep_rank[t / static_cast<std::uint32_t>(nch)] = 1;
  std::vector<std::pair<int, int>> pairs;
  {
    PairSet seen(p);
    std::vector<std::pair<int, int>> frontier;
    for (int r = 0; r < p; ++r) {
      if (!rep_rank[up(r)]) continue;
      for (const Op& op : plan.program(r)) {
        if (op.channel >= nch) return std::nullopt;  // a channel the plan does not declare: no folding
        if (op.type != OpType::Send ||
            find(static_cast<std::uint32_t>(r * nch + op.channel)) != static_cast<std::uint32_t>(r * nch + op.channel))
          continue;
        if (op.peer < 0 || op.peer >= p) return std::nullopt;
        int to = with_nic(op.peer, fold_nic(op.channel));
        if (seen.insert(r, to)) frontier.emplace_back(r, to);
      }
    }
    // The closure under the generators: every pair seen is a pair of the plan's orbits.
    while (!frontier.empty()) {
      auto [a, b] = frontier.back();
      frontier.pop_back();
      for (const Gen& g : gens) {
        int ga = g.rank[up(a)], gb = with_nic(g.rank[up(receiver_of(b))], nic_of(b));
        if (seen.insert(ga, gb)) frontier.emplace_back(ga, gb);
      }
    }
    pairs = seen.sorted();
  }
  if (shared && !shared->serves(cache)) throw std::logic_error("fold: a fold cache for other routes");
  FoldCache::Impl::Entry* entry = nullptr;
  std::optional<Routes> own;
  if (shared) entry = &shared->impl->entry(topo, cache, std::move(pairs));
  else own.emplace(topo, cache, std::move(pairs));
  const Routes& routes = entry ? *entry->routes : *own;
  // Per axis, the smallest power of its generator that maps routes onto routes. Rank maps of
  // every element are kept, so the group stops growing at kMaxEntries of them: 16k ranks do not
  // take gigabytes (and axes past the bound are not checked). Nor does it grow once it has 64
  // elements and leaves at most kEnoughOps ops a representative thread set to run: simulating
  // those takes milliseconds, while each element more costs a rank map to build and every used
  // link's orbit to follow (16384-rank hier: 1024 elements took 0.4 s a fold, auto folds 9 plans).
  constexpr std::size_t kMaxEntries = std::size_t{1} << 24;
  constexpr double kEnoughOps = 1 << 17;
  double ops = static_cast<double>(plan.program(0).size()) * p;
  std::vector<Gen> kept;
  std::vector<std::vector<std::uint32_t>> maps;
  std::size_t size = 1;
  for (const Gen& g : gens) {
    if (size * 2 * up(p) > kMaxEntries || (size >= 64 && ops / static_cast<double>(size) <= kEnoughOps)) break;
    Gen pw = g;
    for (int k = 1; k < g.order; ++k, pw = compose(g, pw)) {
      if (g.order % k != 0) continue;
      std::vector<std::uint32_t> m;
      if (!(entry ? FoldCache::Impl::equivariant(topo, pw, *entry, m) : equivariant(topo, pw, routes, m))) continue;
      pw.order = g.order / k;
      kept.push_back(pw);
      maps.push_back(std::move(m));
      size *= up(pw.order);
      break;
    }
  }
  while (size > 1 && size * up(p) > kMaxEntries) {
    size /= up(kept.back().order);
    kept.pop_back();
    maps.pop_back();
  }
  if (size <= 1) return std::nullopt;

  Fold f;
  f.nch = nch;
  // Elements as mixed-radix products of the kept generators; element 0 the identity.
  f.rank.reserve(size);
  f.channel.reserve(size);
  std::vector<Gen> elems{identity(p, nch)};
  for (const Gen& g : kept) {
    std::vector<Gen> next;
    for (const Gen& e : elems) {
      Gen x = e;
      for (int k = 0; k < g.order; ++k, x = compose(g, x)) next.push_back(x);
    }
    elems = std::move(next);
  }
  // Every used resource's orbit must have |G| members (no element but the identity fixes it).
  // The used resources ascending, by marks (sorting every route's resources took a tenth of auto).
  std::vector<std::uint32_t> used;
  {
    std::vector<char> mark(2 * topo.num_links() + topo.num_vertices(), 0);
    for (std::uint32_t r : routes.res) mark[r] = 1;
    for (std::uint32_t r = 0; r < mark.size(); ++r)
      if (mark[r]) used.push_back(r);
  }
  std::vector<std::uint32_t> orbit;
  f.resource.assign(2 * topo.num_links() + topo.num_vertices(), Fold::kNoResource);
  for (std::uint32_t r : used) {
    if (f.resource[r] != Fold::kNoResource) continue;
    orbit.assign(1, r);
    f.resource[r] = r;  // marks it seen; the least member is written below
    for (std::size_t i = 0; i < orbit.size(); ++i)
      for (const auto& m : maps) {
        std::uint32_t img = m[orbit[i]];
        if (img == kUnset) return std::nullopt;
        if (f.resource[img] == Fold::kNoResource) {
          f.resource[img] = img;
          orbit.push_back(img);
        }
      }
    if (orbit.size() != size) return std::nullopt;
    std::uint32_t least = *std::min_element(orbit.begin(), orbit.end());
    for (std::uint32_t x : orbit) f.resource[x] = least;
  }
  // Thread orbits: the least thread of each is its representative; elem maps a thread onto it.
  // Element i has mixed-radix digits (the last generator least significant): its inverse has
  // the digits negated.
  std::vector<std::size_t> inverse(size);
  for (std::size_t i = 0; i < size; ++i) {
    std::size_t rest = i, inv = 0, scale = 1;
    for (std::size_t g = kept.size(); g-- > 0;) {
      auto n = up(kept[g].order);
      inv += ((n - rest % n) % n) * scale;
      rest /= n;
      scale *= n;
    }
    inverse[i] = inv;
  }
  f.rep.assign(threads, kUnset);
  f.elem.assign(threads, 0);
  // Rank by rank, as thread by thread in order would. A rank some element takes to a lower one
  // has every thread in the orbit of one of that rank's: nothing left to do. A rank no element
  // but the identity fixes has every thread a representative, each channel's orbit written
  // element by element along the channels (a row of the arrays at a time: thread by thread, the
  // orbits' writes land all over arrays of p x channels entries, 4.5 M on two GB200 NVL72 racks,
  // a cache miss each). Else thread by thread.
  for (int r = 0; r < p; ++r) {
    bool lower = false, fixed = false;
    for (std::size_t e = 1; e < size; ++e) {
      lower = lower || elems[e].rank[up(r)] < r;
      fixed = fixed || elems[e].rank[up(r)] == r;
    }
    if (lower) continue;
    if (!fixed) {
      for (std::size_t e = 0; e < size; ++e) {
        std::size_t row = up(elems[e].rank[up(r)]) * up(nch);
        const auto inv = static_cast<std::uint32_t>(inverse[e]);
        for (int c = 0; c < nch; ++c) {
          std::size_t u = row + up(elems[e].channel[up(c)]);
          if (f.rep[u] != kUnset) return std::nullopt;  // not a free action: two elements meet
          f.rep[u] = static_cast<std::uint32_t>(r * nch + c);
          f.elem[u] = inv;
        }
      }
      continue;
    }
    for (int c = 0; c < nch; ++c) {
      auto t = static_cast<std::uint32_t>(r * nch + c);
      if (f.rep[t] != kUnset) continue;
      for (std::size_t e = 0; e < size; ++e) {
        auto u = static_cast<std::uint32_t>(elems[e].rank[up(r)] * nch + elems[e].channel[up(c)]);
        if (f.rep[u] != kUnset) return std::nullopt;  // not a free action: two elements meet
        f.rep[u] = t;
        f.elem[u] = static_cast<std::uint32_t>(inverse[e]);
      }
    }
  }
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < nch; ++c)
      if (f.is_rep(static_cast<std::uint32_t>(r * nch + c))) {
        f.ranks.push_back(r);
        break;
      }
  for (Gen& e : elems) {
    f.rank.push_back(std::move(e.rank));
    f.channel.push_back(std::move(e.channel));
  }
  return f;
}

}  // namespace collkit::plan::sim

namespace collkit::plan {

std::shared_ptr<sim::FoldCache> fold_cache_for(const std::shared_ptr<topo::RouteCache>& routes) {
  return std::make_shared<sim::FoldCache>(routes);
}

}  // namespace collkit::plan
