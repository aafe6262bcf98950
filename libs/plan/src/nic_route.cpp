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

}  // namespace collkit::plan::sim
