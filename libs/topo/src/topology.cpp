#include "collkit/topo/topology.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>

#include "collkit/core/error.h"
#include "collkit/topo/routing.h"

namespace collkit::topo {

namespace {

// One table per enum, read both ways, so names in files and in code cannot drift apart.
constexpr std::array<std::pair<VertexKind, std::string_view>, 7> kVertexKinds{{
    {VertexKind::Gpu, "gpu"},
    {VertexKind::Cpu, "cpu"},
    {VertexKind::PciSwitch, "pci_switch"},
    {VertexKind::Nic, "nic"},
    {VertexKind::NvSwitch, "nvswitch"},
    {VertexKind::NetSwitch, "net_switch"},
    {VertexKind::Host, "host"},
}};

constexpr std::array<std::pair<LinkType, std::string_view>, 7> kLinkTypes{{
    {LinkType::NvLink, "nvlink"},
    {LinkType::Pcie, "pcie"},
    {LinkType::Xgmi, "xgmi"},
    {LinkType::C2c, "c2c"},
    {LinkType::Smp, "smp"},
    {LinkType::InfiniBand, "infiniband"},
    {LinkType::Ethernet, "ethernet"},
}};

// FNV-1a, 64 bit: stable across platforms and runs, unlike std::hash.
struct Fnv {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) { h ^= c[i]; h *= 1099511628211ull; }
  }
  void str(std::string_view s) { u64(s.size()); bytes(s.data(), s.size()); }
  void u64(std::uint64_t v) { bytes(&v, sizeof v); }
  // Bandwidths and latencies are hashed at a resolution of 1e-6 so that a JSON round trip,
  // which may print a double differently, keeps the fingerprint.
  // Past 9e12 the micro-units leave int64 (the cast was undefined: a 1e131 bandwidth from NCCL XML,
  // found by fuzz_nccl_xml); such a value, and NaN or infinity, hashes its bits.
  void real(double d) {
    if (std::fabs(d) < 9e12) u64(static_cast<std::uint64_t>(static_cast<std::int64_t>(d * 1e6 + (d >= 0 ? 0.5 : -0.5))));
    else u64(std::bit_cast<std::uint64_t>(d));
  }
};

}  // namespace

std::string_view to_string(VertexKind kind) {
  for (auto& [k, n] : kVertexKinds) if (k == kind) return n;
  return "?";
}

std::string_view to_string(LinkType type) {
  for (auto& [k, n] : kLinkTypes) if (k == type) return n;
  return "?";
}

std::optional<VertexKind> parse_vertex_kind(std::string_view text) {
  for (auto& [k, n] : kVertexKinds) if (n == text) return k;
  return std::nullopt;
}

std::optional<LinkType> parse_link_type(std::string_view text) {
  for (auto& [k, n] : kLinkTypes) if (n == text) return k;
  return std::nullopt;
}

VertexId Topology::add_vertex(Vertex v) {
  if (v.id.empty()) throw InputError("vertex id must not be empty");
  auto id = static_cast<VertexId>(vertices_.size());
  auto [it, inserted] = index_.emplace(v.id, id);
  if (!inserted) throw InputError("duplicate vertex id \"" + v.id + "\"");
  vertices_.push_back(std::move(v));
  adjacency_.emplace_back();
  return id;
}

LinkId Topology::add_link(const Link& l) {
  if (l.a >= vertices_.size() || l.b >= vertices_.size()) throw InputError("link endpoint out of range");
  auto what = [&] { return "link " + vertices_[l.a].id + " - " + vertices_[l.b].id; };
  if (l.a == l.b) throw InputError(what() + ": a link must join two different vertices");
  if (!(l.bw_gbps > 0)) throw InputError(what() + ": bandwidth must be > 0, got " + std::to_string(l.bw_gbps));
  if (!(l.latency_us >= 0)) throw InputError(what() + ": latency must be >= 0, got " + std::to_string(l.latency_us));
  if (l.lanes < 1) throw InputError(what() + ": lanes must be >= 1, got " + std::to_string(l.lanes));
  auto id = static_cast<LinkId>(links_.size());
  links_.push_back(l);
  adjacency_[l.a].push_back({l.b, id});
  adjacency_[l.b].push_back({l.a, id});
  return id;
}

Rank Topology::add_rank(VertexId endpoint) {
  if (endpoint >= vertices_.size()) throw InputError("rank endpoint out of range");
  ranks_.push_back(endpoint);
  return static_cast<Rank>(ranks_.size() - 1);
}

std::optional<VertexId> Topology::find(std::string_view id) const {
  auto it = index_.find(std::string(id));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

VertexId Topology::at(std::string_view id) const {
  auto v = find(id);
  if (!v) throw InputError("unknown vertex \"" + std::string(id) + "\"");
  return *v;
}

std::vector<Rank> Topology::ranks_at(VertexId v) const {
  std::vector<Rank> out;
  for (Rank r = 0; r < ranks_.size(); ++r) if (ranks_[r] == v) out.push_back(r);
  return out;
}

std::vector<std::string> Topology::hosts() const {
  std::vector<std::string> out;
  std::unordered_map<std::string_view, bool> seen;
  for (auto& v : vertices_) {
    if (v.host.empty()) continue;
    if (seen.emplace(v.host, true).second) out.push_back(v.host);
  }
  return out;
}

std::vector<Rank> Topology::ranks_on_host(std::string_view host) const {
  std::vector<Rank> out;
  for (Rank r = 0; r < ranks_.size(); ++r) if (vertices_[ranks_[r]].host == host) out.push_back(r);
  return out;
}

std::vector<VertexId> Topology::vertices_of(VertexKind kind) const {
  std::vector<VertexId> out;
  for (VertexId v = 0; v < vertices_.size(); ++v) if (vertices_[v].kind == kind) out.push_back(v);
  return out;
}

std::size_t Topology::count(VertexKind kind) const {
  return static_cast<std::size_t>(std::count_if(vertices_.begin(), vertices_.end(), [&](auto& v) { return v.kind == kind; }));
}

std::size_t Topology::count(LinkType type) const {
  return static_cast<std::size_t>(std::count_if(links_.begin(), links_.end(), [&](auto& l) { return l.type == type; }));
}

void Topology::check_connected() const {
  if (ranks_.empty()) throw InputError("the topology has no ranks");
  auto unreachable = [&](Rank r, Rank from) {
    return InputError("rank " + std::to_string(r) + " (" + vertices_[ranks_[r]].id + ") cannot be reached from rank " +
                      std::to_string(from) + " (" + vertices_[ranks_[from]].id + ")");
  };
  // Every rank from rank 0, by the routes' rules: a search, not the routes (at 16k GPUs finding
  // every route from rank 0 took most of a topology's load).
  auto from0 = Router(*this).reachable_from(ranks_[0]);
  for (Rank r = 1; r < ranks_.size(); ++r)
    if (!from0[ranks_[r]]) throw unreachable(r, 0);
  // And within each host, since routes between two ranks of one host may not leave it: a
  // breadth-first search from the host's first rank over that host's forwarding vertices.
  std::unordered_map<std::string_view, Rank> first;
  std::vector<char> seen(vertices_.size(), 0);
  for (Rank r = 0; r < ranks_.size(); ++r) {
    const Vertex& v = vertices_[ranks_[r]];
    auto [it, fresh] = first.emplace(v.host, r);
    if (!fresh || v.host.empty()) continue;
    std::vector<VertexId> queue{ranks_[r]};
    seen[ranks_[r]] = 1;
    for (std::size_t i = 0; i < queue.size(); ++i) {
      VertexId u = queue[i];
      if (u != ranks_[r] && !forwards(vertices_[u].kind)) continue;
      for (const Adjacent& a : adjacency_[u]) {
        if (seen[a.peer] || vertices_[a.peer].host != v.host) continue;
        seen[a.peer] = 1;
        queue.push_back(a.peer);
      }
    }
  }
  for (Rank r = 0; r < ranks_.size(); ++r) {
    const Vertex& v = vertices_[ranks_[r]];
    if (!v.host.empty() && !seen[ranks_[r]]) throw unreachable(r, first.at(v.host));
  }
}

std::uint64_t Topology::fingerprint() const {
  Fnv f;
  f.u64(vertices_.size());
  for (auto& v : vertices_) {
    f.str(v.id);
    f.u64(static_cast<std::uint64_t>(v.kind));
    f.str(v.host);
    f.real(v.local_bw_gbps);
    f.real(v.port_gbps);
  }
  f.u64(links_.size());
  for (auto& l : links_) {
    f.u64(l.a);
    f.u64(l.b);
    f.u64(static_cast<std::uint64_t>(l.type));
    f.real(l.bw_gbps);
    f.real(l.latency_us);
    f.u64(static_cast<std::uint64_t>(l.lanes));
  }
  f.u64(ranks_.size());
  for (auto r : ranks_) f.u64(r);
  return f.h;
}

std::string Topology::fingerprint_hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fingerprint()));
  return buf;
}

}  // namespace collkit::topo
