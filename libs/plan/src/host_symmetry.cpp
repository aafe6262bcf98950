#include "host_symmetry.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <string_view>

namespace collkit::plan::detail {

namespace {

using topo::Topology;
using topo::VertexId;

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

struct Host {
  std::string_view name;
  std::vector<VertexId> vertices;  // in id order
};

// A host's signature: per vertex its kind, weight and sorted links, a link inside named by the
// peer's position (tagged), a link out by `outside(peer)`.
template <class Outside>
std::vector<std::uint64_t> signature(const Topology& t, const std::vector<double>& w, const Host& h,
                                     const std::vector<std::uint32_t>& local, Outside outside) {
  std::vector<std::uint64_t> sig;
  std::vector<std::array<std::uint64_t, 2>> links;
  for (VertexId v : h.vertices) {
    sig.push_back(static_cast<std::uint64_t>(t.vertex(v).kind));
    sig.push_back(bits(w[v]));
    links.clear();
    for (const topo::Adjacent& a : t.adjacent(v)) {
      bool inside = t.vertex(a.peer).host == h.name;
      links.push_back({inside ? (std::uint64_t{1} << 63) | local[a.peer] : outside(a.peer), bits(t.link(a.link).bw_gbps)});
    }
    std::sort(links.begin(), links.end());
    sig.push_back(links.size());
    for (const auto& l : links) sig.insert(sig.end(), l.begin(), l.end());
  }
  return sig;
}

// Links as a multiset of (lower end, upper end, bandwidth).
struct LinkKey {
  VertexId a, b;
  std::uint64_t bw;
  bool operator==(const LinkKey&) const = default;
};
LinkKey key(VertexId a, VertexId b, double bw) { return {std::min(a, b), std::max(a, b), bits(bw)}; }

// How many links each LinkKey has, by open addressing: built once per bound over every link
// (100 k at 16384 GPUs, where a node-based map's allocations and teardown cost more than the
// swaps checked against it).
class LinkCounts {
 public:
  explicit LinkCounts(const Topology& t) {
    std::size_t cap = 64;
    while (cap < 2 * t.num_links()) cap *= 2;
    keys_.resize(cap);
    counts_.assign(cap, 0);
    for (const topo::Link& l : t.links()) {
      std::size_t i = slot(key(l.a, l.b, l.bw_gbps));
      keys_[i] = key(l.a, l.b, l.bw_gbps);
      ++counts_[i];
    }
  }
  /// Links with this key (0: none).
  int count(const LinkKey& k) const { return counts_[slot(k)]; }

 private:
  std::size_t slot(const LinkKey& k) const {
    std::size_t mask = keys_.size() - 1;
    auto i =
        static_cast<std::size_t>(((std::uint64_t{k.a} << 32 | k.b) * 0x9e3779b97f4a7c15ull ^ k.bw) * 0xbf58476d1ce4e5b9ull >> 20) & mask;
    while (counts_[i] != 0 && !(keys_[i] == k)) i = (i + 1) & mask;
    return i;
  }
  std::vector<LinkKey> keys_;
  std::vector<int> counts_;  // 0: a free slot
};

// Whether swapping twin groups `x` and `y` (hosts in order, vertices by position, outside
// neighbours by the matching link) is an automorphism that keeps kinds and weights.
// `host_of`: each vertex's host number (-1: none); `sigma`: scratch of every vertex's image,
// kNoImage throughout (and left so).
constexpr VertexId kNoImage = ~VertexId{0};

bool swap_is_automorphism(const Topology& t, const std::vector<double>& w, const std::vector<Host>& hosts, const std::vector<int>& x,
                          const std::vector<int>& y, const LinkCounts& links, const std::vector<int>& host_of,
                          std::vector<VertexId>& sigma) {
  if (x.size() != y.size()) return false;
  std::vector<VertexId> touched;  // the vertices sigma maps, to reset it
  struct Reset {
    std::vector<VertexId>& sigma;
    std::vector<VertexId>& touched;
    ~Reset() {
      for (VertexId v : touched) sigma[v] = kNoImage;
    }
  } reset{sigma, touched};
  auto pair_up = [&](VertexId a, VertexId b) {
    if (a == b) return sigma[a] == kNoImage || sigma[a] == a;
    VertexId ia = sigma[a], ib = sigma[b];
    if (ia != kNoImage || ib != kNoImage) return ia != kNoImage && ib != kNoImage && ia == b && ib == a;
    sigma[a] = b;
    sigma[b] = a;
    touched.push_back(a);
    touched.push_back(b);
    return true;
  };
  std::vector<std::pair<std::uint64_t, VertexId>> out_a, out_b;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Host &ha = hosts[static_cast<std::size_t>(x[i])], &hb = hosts[static_cast<std::size_t>(y[i])];
    if (ha.vertices.size() != hb.vertices.size()) return false;
    for (std::size_t k = 0; k < ha.vertices.size(); ++k) {
      VertexId va = ha.vertices[k], vb = hb.vertices[k];
      if (!pair_up(va, vb)) return false;
      // Outside neighbours in order of bandwidth, then adjacency: the k-th link out of one is
      // matched with the k-th link out of the other.
      out_a.clear();
      out_b.clear();
      for (const topo::Adjacent& a : t.adjacent(va))
        if (host_of[a.peer] != x[i]) out_a.push_back({bits(t.link(a.link).bw_gbps), a.peer});
      for (const topo::Adjacent& a : t.adjacent(vb))
        if (host_of[a.peer] != y[i]) out_b.push_back({bits(t.link(a.link).bw_gbps), a.peer});
      if (out_a.size() != out_b.size()) return false;
      std::stable_sort(out_a.begin(), out_a.end(), [](auto& p, auto& q) { return p.first < q.first; });
      std::stable_sort(out_b.begin(), out_b.end(), [](auto& p, auto& q) { return p.first < q.first; });
      for (std::size_t j = 0; j < out_a.size(); ++j)
        if (out_a[j].first != out_b[j].first || !pair_up(out_a[j].second, out_b[j].second)) return false;
    }
  }
  auto image = [&](VertexId v) { return sigma[v] == kNoImage ? v : sigma[v]; };
  for (VertexId v : touched) {
    VertexId u = sigma[v];
    if (t.vertex(v).kind != t.vertex(u).kind || w[v] != w[u]) return false;
    for (const topo::Adjacent& a : t.adjacent(v)) {
      double bw = t.link(a.link).bw_gbps;
      // The image link must exist as often (count 0: not at all).
      if (links.count(key(u, image(a.peer), bw)) != links.count(key(v, a.peer, bw))) return false;
    }
  }
  return true;
}

}  // namespace

// Kept groups of a shape a group is tried against (see below).
constexpr std::size_t kMirrorTries = 4;

std::vector<char> mirrored_hosts(const Topology& t, const std::vector<double>& w) {
  std::size_t n = t.num_vertices();
  std::vector<Host> hosts;
  {
    std::map<std::string_view, std::vector<VertexId>> by_name;
    for (VertexId v = 0; v < n; ++v)
      if (!t.vertex(v).host.empty()) by_name[t.vertex(v).host].push_back(v);
    for (auto& [name, vs] : by_name) hosts.push_back({name, std::move(vs)});
  }
  std::vector<std::uint32_t> local(n, 0);
  for (const Host& h : hosts)
    for (std::uint32_t k = 0; k < h.vertices.size(); ++k) local[h.vertices[k]] = k;
  std::vector<char> marked(n, 0);
  auto mark = [&](int h) {
    for (VertexId v : hosts[static_cast<std::size_t>(h)].vertices) marked[v] = 1;
  };

  // Twins: the same signature with outside neighbours named exactly. Each group keeps its first.
  std::map<std::vector<std::uint64_t>, std::size_t> group_of;
  std::vector<std::vector<int>> groups;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    auto sig = signature(t, w, hosts[h], local, [](VertexId u) { return std::uint64_t{u}; });
    auto [it, fresh] = group_of.emplace(std::move(sig), groups.size());
    if (fresh) groups.emplace_back();
    else mark(static_cast<int>(h));
    groups[it->second].push_back(static_cast<int>(h));
  }

  // Groups of one shape (outside neighbours named by kind only): a group mirrored onto an
  // earlier unmarked group of its shape by a checked swap is skipped whole.
  if (groups.size() < 2) return marked;
  LinkCounts links(t);
  std::vector<int> host_of(n, -1);
  for (std::size_t h = 0; h < hosts.size(); ++h)
    for (VertexId v : hosts[h].vertices) host_of[v] = static_cast<int>(h);
  std::vector<VertexId> sigma(n, kNoImage);
  std::map<std::vector<std::uint64_t>, std::vector<std::size_t>> by_shape;  // shape -> unmarked groups
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Host& first = hosts[static_cast<std::size_t>(groups[g].front())];
    auto shape = signature(t, w, first, local, [&](VertexId u) { return std::uint64_t{1} << 62 | static_cast<std::uint64_t>(t.vertex(u).kind); });
    shape.push_back(groups[g].size());
    auto& kept = by_shape[std::move(shape)];
    // Only the first few kept groups are tried: where groups mirror at all (the leaf groups of a
    // fat-tree), the first one does; where none does (a torus, every host its own router), trying
    // them all is quadratic in hosts for nothing. Skipping is optional, so the bound stays exact.
    bool mirrored = false;
    for (std::size_t i = 0; i < std::min(kept.size(), kMirrorTries) && !mirrored; ++i)
      mirrored = swap_is_automorphism(t, w, hosts, groups[kept[i]], groups[g], links, host_of, sigma);
    if (mirrored)
      for (int h : groups[g]) mark(h);
    else
      kept.push_back(g);
  }
  return marked;
}

}  // namespace collkit::plan::detail
