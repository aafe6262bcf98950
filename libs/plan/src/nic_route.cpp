// Routes through a chosen NIC (nic_route.h).

#include "nic_route.h"

#include <algorithm>

namespace collkit::plan::sim {

NicRoutes::NicRoutes(const topo::Topology& t, topo::RouteCache& cache) : t_(t), cache_(cache) {
  for (std::size_t v = 0; v < t.num_vertices(); ++v) {
    const topo::Vertex& x = t.vertex(static_cast<topo::VertexId>(v));
    if (x.kind != topo::VertexKind::Nic || x.host.empty()) continue;
    bool out = false;
    for (const topo::Adjacent& a : t.adjacent(static_cast<topo::VertexId>(v))) out = out || t.vertex(a.peer).host != x.host;
    if (out) nics_[x.host].push_back(static_cast<topo::VertexId>(v));  // vertices ascending
  }
}

const topo::VertexId* NicRoutes::nic_of(topo::VertexId v, int nic) const {
  auto it = nics_.find(t_.vertex(v).host);
  if (nic < 0 || it == nics_.end() || static_cast<std::size_t>(nic) >= it->second.size()) return nullptr;
  return &it->second[static_cast<std::size_t>(nic)];
}

topo::Path NicRoutes::route(topo::VertexId src, topo::VertexId dst, int nic, std::string* why) const {
  const std::string &hs = t_.vertex(src).host, &hd = t_.vertex(dst).host;
  if (nic < 0 || src == dst || hs.empty() || hd.empty() || hs == hd) return *cache_.routes_to(src, {dst}).front();
  topo::Path out;
  out.src = src;
  out.dst = dst;
  const topo::VertexId *a = nic_of(src, nic), *b = nic_of(dst, nic);
  if (!a || !b) {
    if (why) *why = "host \"" + (a ? hd : hs) + "\" has no NIC " + std::to_string(nic) + " with a link out of it";
    return out;
  }
  out.bottleneck_gbps = 0;
  bool first = true;
  for (auto [x, y] : {std::pair{src, *a}, std::pair{*a, *b}, std::pair{*b, dst}}) {
    if (x == y) continue;
    const topo::Path& leg = *cache_.routes_to(x, {y}).front();
    if (!leg.found) {
      if (why) *why = "no route from \"" + t_.vertex(x).id + "\" to \"" + t_.vertex(y).id + "\"";
      return out;
    }
    out.hops.insert(out.hops.end(), leg.hops.begin(), leg.hops.end());
    out.latency_us += leg.latency_us;
    out.bottleneck_gbps = first ? leg.bottleneck_gbps : std::min(out.bottleneck_gbps, leg.bottleneck_gbps);
    first = false;
  }
  out.found = true;
  return out;
}

namespace {

// NVLink-C2C joins a Grace CPU's memory to its GPUs as PCIe does a host's (GB200: a GPU stages
// through its Grace's LPDDR5X over C2C).
bool host_link(topo::LinkType type) { return type == topo::LinkType::Pcie || type == topo::LinkType::Smp || type == topo::LinkType::C2c; }
bool is_cpu(const topo::Topology& t, topo::VertexId v, topo::VertexId) { return t.vertex(v).kind == topo::VertexKind::Cpu; }
bool is_target(const topo::Topology&, topo::VertexId v, topo::VertexId target) { return v == target; }

}  // namespace

bool HostRoutes::leg(topo::VertexId from, bool (*want)(const topo::Topology&, topo::VertexId, topo::VertexId), topo::VertexId target,
                     topo::Path& out) const {
  if (want(t_, from, target)) return true;
  const std::string& host = t_.vertex(from).host;
  std::vector<topo::Hop> via(t_.num_vertices(), topo::Hop{0, false});
  std::vector<char> seen(t_.num_vertices(), 0);
  std::vector<topo::VertexId> frontier{from};
  seen[from] = 1;
  while (!frontier.empty()) {
    std::vector<topo::VertexId> next;
    for (topo::VertexId u : frontier) {
      // Transit only through CPUs and PCIe switches: a GPU or NIC passes nothing on.
      topo::VertexKind kind = t_.vertex(u).kind;
      if (u != from && kind != topo::VertexKind::Cpu && kind != topo::VertexKind::PciSwitch) continue;
      for (const topo::Adjacent& a : t_.adjacent(u)) {
        const topo::Link& l = t_.link(a.link);
        if (seen[a.peer] || !host_link(l.type) || t_.vertex(a.peer).host != host) continue;
        seen[a.peer] = 1;
        via[a.peer] = topo::Hop{a.link, l.a == u};
        next.push_back(a.peer);
      }
    }
    std::sort(next.begin(), next.end());
    for (topo::VertexId v : next) {
      if (!want(t_, v, target)) continue;
      std::vector<topo::Hop> hops;
      for (topo::VertexId x = v; x != from;) {
        const topo::Hop& h = via[x];
        hops.push_back(h);
        const topo::Link& l = t_.link(h.link);
        x = h.forward ? l.a : l.b;
      }
      for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
        const topo::Link& l = t_.link(it->link);
        out.latency_us += l.latency_us;
        out.bottleneck_gbps = out.hops.empty() ? l.bw_gbps : std::min(out.bottleneck_gbps, l.bw_gbps);
        out.hops.push_back(*it);
      }
      out.dst = v;
      return true;
    }
    frontier = std::move(next);
  }
  return false;
}

topo::Path HostRoutes::route(topo::VertexId src, topo::VertexId dst, std::string* why) const {
  topo::Path out;
  out.src = src;
  out.dst = dst;
  const std::string &hs = t_.vertex(src).host, &hd = t_.vertex(dst).host;
  if (hs.empty() || hs != hd) {
    if (why) *why = "\"" + t_.vertex(src).id + "\" and \"" + t_.vertex(dst).id + "\" are not on one host";
    return out;
  }
  if (!leg(src, is_cpu, src, out)) {
    if (why) *why = "no CPU reachable over PCIe from \"" + t_.vertex(src).id + "\"";
    return out;
  }
  topo::VertexId cpu = out.hops.empty() ? src : out.dst;
  if (!leg(cpu, is_target, dst, out)) {
    if (why) *why = "no PCIe path from \"" + t_.vertex(cpu).id + "\" to \"" + t_.vertex(dst).id + "\"";
    return out;
  }
  out.src = src;
  out.dst = dst;
  out.found = true;
  return out;
}

}  // namespace collkit::plan::sim
