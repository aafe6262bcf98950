#include "collkit/topo/show.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "collkit/topo/queries.h"
#include "collkit/topo/routing.h"

namespace collkit::topo {

namespace {

std::string gbps(double v) { return v > 0 ? fmt::format("{:.4g}", v) : "?"; }

}  // namespace

std::string summary(const Topology& t) {
  std::string out;
  out += fmt::format("topology {}  (source: {}, fingerprint {})\n", t.name.empty() ? "(unnamed)" : t.name,
                     t.source.empty() ? "file" : t.source, t.fingerprint_hex());
  auto hosts = t.hosts();
  out += fmt::format("  {} host(s), {} rank(s), {} vertices, {} links\n", hosts.size(), t.num_ranks(), t.num_vertices(), t.num_links());
  out += "  vertices:";
  for (auto kind : {VertexKind::Gpu, VertexKind::Cpu, VertexKind::PciSwitch, VertexKind::Nic, VertexKind::NvSwitch,
                    VertexKind::NetSwitch, VertexKind::Host})
    if (auto n = t.count(kind)) out += fmt::format(" {} {}", n, to_string(kind));
  out += "\n  links:";
  for (auto type : {LinkType::NvLink, LinkType::Xgmi, LinkType::C2c, LinkType::Pcie, LinkType::Smp, LinkType::InfiniBand,
                    LinkType::Ethernet}) {
    std::size_t n = 0;
    double lo = 0, hi = 0;
    for (const Link& l : t.links()) {
      if (l.type != type) continue;
      lo = n == 0 ? l.bw_gbps : std::min(lo, l.bw_gbps);
      hi = n == 0 ? l.bw_gbps : std::max(hi, l.bw_gbps);
      ++n;
    }
    if (n == 0) continue;
    out += lo == hi ? fmt::format(" {} {} ({} GB/s)", n, to_string(type), gbps(lo))
                    : fmt::format(" {} {} ({}-{} GB/s)", n, to_string(type), gbps(lo), gbps(hi));
  }
  out += "\n";
  // Per-rank endpoint bandwidth: shown once per distinct value, since clusters are regular.
  std::map<std::pair<std::string, double>, std::size_t> distinct;
  for (Rank r = 0; r < t.num_ranks(); ++r) {
    const Vertex& v = t.vertex(t.rank_vertex(r));
    distinct[{v.label.empty() ? std::string(to_string(v.kind)) : v.label, rank_bandwidth(t, r).egress_gbps}]++;
  }
  for (auto& [key, n] : distinct)
    out += fmt::format("  {} rank(s) on {}: {} GB/s egress per rank\n", n, key.first, gbps(key.second));
  if (hosts.size() > 1 && hosts.size() <= 8) {
    for (auto& g : ranks_by_host(t)) out += fmt::format("  host {}: ranks {}-{}\n", g.host, g.ranks.empty() ? 0 : g.ranks.front(), g.ranks.empty() ? 0 : g.ranks.back());
  }
  for (const auto& n : t.notes) out += "  note: " + n + "\n";
  return out;
}

namespace {

// The label of a route already computed (matrix() reuses one routes_from() per row).
std::string label_of(const Topology& t, Rank a, Rank b, const Path& p) {
  if (a == b) return "X";
  VertexId va = t.rank_vertex(a), vb = t.rank_vertex(b);
  if (va == vb) return "SHM";
  if (t.vertex(va).host != t.vertex(vb).host) return "NET";
  if (!p.found) return "-";
  int pci_switches = 0, cpus = 0, nvlink_lanes = 0;
  bool smp = false, xgmi = false, c2c = false, pcie = false, net = false, all_nvlink = true;
  for (const Hop& h : p.hops) {
    const Link& l = t.link(h.link);
    switch (l.type) {
      case LinkType::NvLink: nvlink_lanes = nvlink_lanes == 0 ? l.lanes : std::min(nvlink_lanes, l.lanes); break;
      case LinkType::Xgmi: xgmi = true; break;
      case LinkType::C2c: c2c = true; break;
      case LinkType::Smp: smp = true; break;
      case LinkType::Pcie: pcie = true; break;
      default: net = true; break;
    }
    if (l.type != LinkType::NvLink) all_nvlink = false;
  }
  auto vs = p.vertices(t);
  for (std::size_t i = 1; i + 1 < vs.size(); ++i) {
    auto kind = t.vertex(vs[i]).kind;
    if (kind == VertexKind::PciSwitch) ++pci_switches;
    if (kind == VertexKind::Cpu) ++cpus;
  }
  // nvidia-smi topo -m's legend: NV# bonded NVLinks; PIX at most one PCIe bridge; PXB several
  // bridges, no host bridge; PHB a PCIe host bridge (a CPU); SYS the SMP link between NUMA nodes.
  if (all_nvlink && nvlink_lanes > 0) return fmt::format("NV{}", nvlink_lanes);
  if (xgmi && !pcie && !smp) return "XGMI";
  if (c2c && !pcie && !smp) return "C2C";
  if (net) return "NET";
  if (smp || cpus > 1) return "SYS";
  if (cpus == 1) return "PHB";
  if (pci_switches > 1) return "PXB";
  return "PIX";
}

}  // namespace

std::string connection_label(const Topology& t, Rank a, Rank b) {
  return label_of(t, a, b, Router(t).route_ranks(a, b));
}

std::string matrix(const Topology& t, std::size_t first, std::size_t count) {
  std::size_t end = std::min(t.num_ranks(), first + count);
  if (first >= end) return "";
  Router router(t);
  std::string out = fmt::format("{:>8}", "");
  for (std::size_t b = first; b < end; ++b) out += fmt::format(" {:>10}", fmt::format("r{}", b));
  out += "\n";
  for (std::size_t a = first; a < end; ++a) {
    out += fmt::format("{:>8}", fmt::format("r{}", a));
    auto routes = router.routes_from(t.rank_vertex(static_cast<Rank>(a)));
    for (std::size_t b = first; b < end; ++b) {
      const Path& p = routes[t.rank_vertex(static_cast<Rank>(b))];
      std::string cell = label_of(t, static_cast<Rank>(a), static_cast<Rank>(b), p);
      if (cell != "X") cell += "/" + gbps(p.bottleneck_gbps);
      out += fmt::format(" {:>10}", cell);
    }
    out += fmt::format("   {}\n", t.vertex(t.rank_vertex(static_cast<Rank>(a))).id);
  }
  out += "\nLegend: X self, SHM same endpoint (shared memory), NV# NVLink (# bonded links), XGMI, C2C,\n"
         "PIX at most one PCIe switch, PXB several PCIe switches, PHB through a CPU root complex,\n"
         "SYS across the SMP link between sockets, NET through the network; /N = bottleneck GB/s per direction.\n";
  if (end - first < t.num_ranks())
    out += fmt::format("(ranks {}-{} of {}: use --first/--count for others)\n", first, end - 1, t.num_ranks());
  return out;
}

std::string to_dot(const Topology& t, std::size_t first, std::size_t count) {
  std::string out = "graph collkit {\n  graph [rankdir=TB, fontname=\"Helvetica\"];\n  node [fontname=\"Helvetica\", fontsize=10];\n"
                    "  edge [fontname=\"Helvetica\", fontsize=8];\n";
  auto shape = [](VertexKind k) {
    switch (k) {
      case VertexKind::Gpu: return "box, style=filled, fillcolor=\"#c6e5b3\"";
      case VertexKind::Cpu: return "box, style=filled, fillcolor=\"#b3cde5\"";
      case VertexKind::Nic: return "ellipse, style=filled, fillcolor=\"#f5d6a8\"";
      case VertexKind::NvSwitch: return "hexagon, style=filled, fillcolor=\"#9fd98f\"";
      case VertexKind::NetSwitch: return "hexagon, style=filled, fillcolor=\"#e5b3b3\"";
      default: return "ellipse";
    }
  };
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += (c == '"' ? std::string("\\\"") : std::string(1, c));
    return q + "\"";
  };
  // The vertices drawn: all, or the window's hosts, its rank vertices and the hostless vertices
  // next to them.
  std::vector<char> drawn(t.num_vertices(), 1);
  std::size_t end = first >= t.num_ranks() ? first : first + std::min(count, t.num_ranks() - first);
  if (first > 0 || end < t.num_ranks()) {
    std::fill(drawn.begin(), drawn.end(), 0);
    std::set<std::string> hosts;
    for (std::size_t r = first; r < end; ++r) {
      VertexId v = t.rank_vertex(static_cast<Rank>(r));
      drawn[v] = 1;
      if (!t.vertex(v).host.empty()) hosts.insert(t.vertex(v).host);
    }
    for (VertexId v = 0; v < t.num_vertices(); ++v)
      if (hosts.count(t.vertex(v).host)) drawn[v] = 1;
    std::vector<char> inner = drawn;
    for (VertexId v = 0; v < t.num_vertices(); ++v)
      if (inner[v])
        for (const Adjacent& a : t.adjacent(v))
          if (t.vertex(a.peer).host.empty()) drawn[a.peer] = 1;
    out += fmt::format("  // ranks {}-{} of {}: their hosts and the switches next to them\n", first, end == 0 ? 0 : end - 1, t.num_ranks());
  }
  std::map<std::string, std::vector<VertexId>> by_host;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (drawn[v]) by_host[t.vertex(v).host].push_back(v);
  std::size_t cluster = 0;
  for (auto& [host, vs] : by_host) {
    std::string indent = host.empty() ? "  " : "    ";
    if (!host.empty()) out += fmt::format("  subgraph cluster_{} {{\n    label={};\n", cluster++, quoted(host));
    for (VertexId v : vs) {
      const Vertex& x = t.vertex(v);
      std::string label = x.id.substr(x.host.empty() ? 0 : x.host.size() + 1);
      auto ranks = t.ranks_at(v);
      if (!ranks.empty()) label += ranks.size() == 1 ? fmt::format("\\nrank {}", ranks.front()) : fmt::format("\\n{} ranks", ranks.size());
      out += fmt::format("{}{} [label={}, shape={}];\n", indent, quoted(x.id), quoted(label), shape(x.kind));
    }
    if (!host.empty()) out += "  }\n";
  }
  for (const Link& l : t.links())
    if (drawn[l.a] && drawn[l.b])
      out += fmt::format("  {} -- {} [label=\"{} {}\"];\n", quoted(t.vertex(l.a).id), quoted(t.vertex(l.b).id), to_string(l.type),
                         gbps(l.bw_gbps));
  out += "}\n";
  return out;
}

}  // namespace collkit::topo
