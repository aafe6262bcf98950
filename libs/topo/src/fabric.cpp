// Fabrics joining hosts: single switch, rail-optimised two-tier fat-tree, 2D/3D torus.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "collkit/core/error.h"
#include "collkit/topo/synth.h"
#include "hw_rates.h"

namespace collkit::topo {

namespace {

// NVIDIA Quantum-2 QM9700 (datasheet, 2022): 64 ports of 400 Gb/s NDR; the usual leaf of
// rail-optimised H100/H200 clusters. Ethernet leaves of the same generation (Spectrum-4 SN5600)
// also have 64 ports of 800G, split into 128 x 400G: 64 is the conservative default either way.
constexpr int kDefaultLeafRadix = 64;

struct HostNics {
  std::string host;
  std::vector<VertexId> nics;  // by Vertex::index, then id
};

std::vector<HostNics> collect_nics(const Topology& t, const std::vector<std::string>& hosts) {
  std::map<std::string, std::vector<VertexId>, std::less<>> by_host;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (t.vertex(v).kind == VertexKind::Nic) by_host[t.vertex(v).host].push_back(v);
  std::vector<HostNics> out;
  for (const auto& h : hosts) {
    auto it = by_host.find(h);
    if (it == by_host.end() || it->second.empty())
      throw InputError("host \"" + h + "\" has no NIC: a fabric can only join hosts through their NICs");
    auto nics = it->second;
    std::stable_sort(nics.begin(), nics.end(), [&](VertexId a, VertexId b) { return t.vertex(a).index < t.vertex(b).index; });
    for (VertexId n : nics)
      if (!(t.vertex(n).port_gbps > 0))
        throw InputError("NIC \"" + t.vertex(n).id + "\" has no port bandwidth (port_gbps): the fabric cannot size its link");
    out.push_back({h, std::move(nics)});
  }
  return out;
}

LinkType fabric_link_type(const Topology& t, VertexId nic) {
  auto it = t.vertex(nic).attrs.find("link_layer");
  return it != t.vertex(nic).attrs.end() && it->second == "ethernet" ? LinkType::Ethernet : LinkType::InfiniBand;
}

double param_real(const Spec& s, const std::string& key, double fallback, double min) {
  auto it = s.params.find(key);
  if (it == s.params.end()) return fallback;
  double v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || !(v >= min))
    throw InputError("fabric " + s.name + ": " + key + "=" + it->second + ": expected a number >= " + std::to_string(static_cast<int>(min)));
  return v;
}

int param_int(const Spec& s, const std::string& key, int fallback, int min) {
  auto it = s.params.find(key);
  if (it == s.params.end()) return fallback;
  int v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || v < min)
    throw InputError("fabric " + s.name + ": " + key + "=" + it->second + ": expected an integer >= " + std::to_string(min));
  return v;
}

void check_params(const Spec& s, std::initializer_list<std::string_view> known) {
  for (auto& [key, value] : s.params) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw InputError("fabric " + s.name + ": unknown parameter \"" + key + "\" (it takes: " + (list.empty() ? "none" : list) + ")");
  }
}

std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

VertexId add_switch(Topology& t, const std::string& id, const std::string& label) {
  Vertex v;
  v.id = id;
  v.kind = VertexKind::NetSwitch;
  v.label = label;
  return t.add_vertex(std::move(v));
}

void nic_link(Topology& t, VertexId nic, VertexId sw) {
  t.add_link({nic, sw, fabric_link_type(t, nic), t.vertex(nic).port_gbps, hw::kNicLatencyUs, 1});
}

void single_switch(Topology& t, const Spec& s, const std::vector<HostNics>& hosts) {
  check_params(s, {});
  VertexId sw = add_switch(t, "fabric/switch", "single switch");
  std::size_t ports = 0;
  for (auto& h : hosts)
    for (VertexId n : h.nics) {
      nic_link(t, n, sw);
      ++ports;
    }
  t.notes.push_back("fabric single-switch: " + std::to_string(ports) + " NIC ports on one non-blocking switch");
}

// Rail-optimised two-tier Clos (the layout of NVIDIA's DGX SuperPOD reference architecture):
// NIC i of every host goes to a leaf of rail i % rails, so same-rail traffic crosses one leaf
// and only cross-rail or cross-leaf traffic climbs to the spines, which every leaf reaches.
//
// A switch port runs at its line rate whatever the fabric's size: uplinks run at the rate of
// the NIC ports they serve (or uplink_gbps), and oversubscription means fewer uplinks, not
// slower ones. Every leaf is cabled alike, with enough uplinks for the fullest leaf's ports in
// use over the oversubscription; a small cluster (2 hosts: 2 ports a leaf) thus gets 2 spines at
// port rate, not the 32 thin links of a half-empty 64-port leaf's full complement.
void fat_tree(Topology& t, const Spec& s, const std::vector<HostNics>& hosts) {
  check_params(s, {"rails", "oversub", "leaf_radix", "spines", "uplink_gbps"});
  std::size_t max_nics = 0;
  for (auto& h : hosts) max_nics = std::max(max_nics, h.nics.size());
  int rails = param_int(s, "rails", static_cast<int>(max_nics), 1);
  double oversub = param_real(s, "oversub", 1.0, 1.0);
  int radix = param_int(s, "leaf_radix", kDefaultLeafRadix, 2);
  double uplink_gbps = param_real(s, "uplink_gbps", 0.0, 0.0);
  if (s.params.count("uplink_gbps") && !(uplink_gbps > 0)) throw InputError("fabric fat-tree: uplink_gbps must be > 0");
  int down = radix / 2;  // NIC-facing ports per leaf

  // Ports of each rail, in host order.
  std::vector<std::vector<VertexId>> rail_ports(static_cast<std::size_t>(rails));
  for (auto& h : hosts)
    for (std::size_t i = 0; i < h.nics.size(); ++i) rail_ports[i % static_cast<std::size_t>(rails)].push_back(h.nics[i]);

  struct Leaf {
    VertexId id;
    std::size_t ports = 0;  // NIC ports in use
    double port_gbps = 0;   // the fastest of them: the rate its uplinks run at
  };
  std::vector<Leaf> leaves;
  std::size_t fullest = 0;
  for (int r = 0; r < rails; ++r) {
    auto& ports = rail_ports[static_cast<std::size_t>(r)];
    for (std::size_t first = 0, k = 0; first < ports.size(); first += static_cast<std::size_t>(down), ++k) {
      Leaf leaf{add_switch(t, "fabric/leaf" + std::to_string(r) + "." + std::to_string(k),
                           "rail " + std::to_string(r) + " leaf " + std::to_string(k))};
      for (std::size_t p = first; p < std::min(ports.size(), first + static_cast<std::size_t>(down)); ++p) {
        nic_link(t, ports[p], leaf.id);
        ++leaf.ports;
        leaf.port_gbps = std::max(leaf.port_gbps, t.vertex(ports[p]).port_gbps);
      }
      fullest = std::max(fullest, leaf.ports);
      leaves.push_back(leaf);
    }
  }
  // Uplink ports per leaf: the fullest leaf's downlinks over the oversubscription, at least one.
  int up = std::max(1, static_cast<int>(std::ceil(static_cast<double>(fullest) / oversub - 1e-9)));
  std::string note = "fabric fat-tree: " + std::to_string(rails) + " rail(s), " + std::to_string(leaves.size()) + " leaves of " +
                     std::to_string(radix) + " ports (" + std::to_string(fullest) + " of " + std::to_string(down) + " down in use, " +
                     std::to_string(up) + " up), oversubscription " + fmt_num(oversub) + ":1";
  if (leaves.size() == 1) {
    t.notes.push_back(note + ", one leaf holds every port: no spine");
    return;
  }
  int spines = param_int(s, "spines", up, 1);
  // One link per (leaf, spine) stands for the uplink ports between them: each leaf spreads its
  // uplinks evenly over the spines, at least one port to each.
  int lanes = std::max(1, (up + spines - 1) / spines);
  LinkType type = fabric_link_type(t, hosts.front().nics.front());
  std::vector<VertexId> spine_ids;
  for (int k = 0; k < spines; ++k) spine_ids.push_back(add_switch(t, "fabric/spine" + std::to_string(k), "spine " + std::to_string(k)));
  for (const Leaf& leaf : leaves) {
    double rate = uplink_gbps > 0 ? uplink_gbps : leaf.port_gbps;
    for (VertexId sp : spine_ids) t.add_link({leaf.id, sp, type, rate * lanes, hw::kSwitchLatencyUs, lanes});
  }
  note += ", " + std::to_string(spines) + " spines, " + std::to_string(lanes) + " uplink(s) of " +
          fmt_num(uplink_gbps > 0 ? uplink_gbps : leaves.front().port_gbps) + " GB/s from each leaf to each";
  if (lanes * spines > up)
    note += " (" + std::to_string(lanes * spines) + " uplinks in all: spines do not divide " + std::to_string(up) + ")";
  if (static_cast<int>(leaves.size()) * lanes > radix)
    note += " (each spine needs " + std::to_string(leaves.size() * static_cast<std::size_t>(lanes)) +
            " ports: modelled as a modular director switch)";
  t.notes.push_back(note);
}

// A 2D/3D torus of hosts: one router per host takes the host's NICs and links to the next host
// in each dimension, wrapping around (TPU-pod and Trainium-style direct networks).
void torus(Topology& t, const Spec& s, const std::vector<HostNics>& hosts) {
  check_params(s, {"dims", "link_gbps"});
  auto it = s.params.find("dims");
  if (it == s.params.end()) throw InputError("fabric torus: give dims, e.g. torus:dims=4x4 or torus:dims=4x4x8");
  std::vector<int> dims;
  std::string_view text = it->second;
  while (!text.empty()) {
    auto x = text.find('x');
    std::string_view part = text.substr(0, x);
    int d = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (ec != std::errc() || p != part.data() + part.size() || d < 1)
      throw InputError("fabric torus: dims=" + it->second + ": expected sizes like 4x4 or 4x4x8");
    dims.push_back(d);
    if (x == std::string_view::npos) break;
    text = text.substr(x + 1);
  }
  if (dims.size() < 2 || dims.size() > 3) throw InputError("fabric torus: dims=" + it->second + ": a torus here has 2 or 3 dimensions");
  std::size_t product = 1;
  for (int d : dims) product *= static_cast<std::size_t>(d);
  if (product != hosts.size())
    throw InputError("fabric torus: dims=" + it->second + " holds " + std::to_string(product) + " hosts, the cluster has " +
                     std::to_string(hosts.size()));
  // Each router splits the host's injection bandwidth evenly over the torus ports it wires (two a
  // dimension, its + and - neighbours; none in a dimension of 1) unless link_gbps says otherwise:
  // injection and torus bandwidth then balance.
  int ports = 0;
  for (int d : dims) ports += d > 1 ? 2 : 0;
  double inject = 0;
  for (VertexId n : hosts.front().nics) inject += t.vertex(n).port_gbps;
  double link_gbps = param_real(s, "link_gbps", inject / static_cast<double>(std::max(ports, 1)), 0.0);
  if (!(link_gbps > 0)) throw InputError("fabric torus: link_gbps must be > 0");
  LinkType type = fabric_link_type(t, hosts.front().nics.front());

  std::vector<VertexId> routers;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    routers.push_back(add_switch(t, "fabric/router" + std::to_string(h), "torus router of " + hosts[h].host));
    for (VertexId n : hosts[h].nics) nic_link(t, n, routers.back());
  }
  auto coord = [&](std::size_t h) {
    std::vector<int> c;
    for (int d : dims) {
      c.push_back(static_cast<int>(h % static_cast<std::size_t>(d)));
      h /= static_cast<std::size_t>(d);
    }
    return c;
  };
  auto index = [&](const std::vector<int>& c) {
    std::size_t h = 0;
    for (std::size_t i = dims.size(); i-- > 0;) h = h * static_cast<std::size_t>(dims[i]) + static_cast<std::size_t>(c[i]);
    return h;
  };
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    auto c = coord(h);
    // The router's place in the torus: routes take dimension order by it (routing.h).
    std::string at;
    for (int x : c) at += (at.empty() ? "" : ",") + std::to_string(x);
    t.mutable_vertex(routers[h]).attrs["torus_coord"] = at;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1) continue;
      // The +1 neighbour only, so each ring edge is made once. In a ring of 2 the + and - ports
      // of both reach the same neighbour: one edge carrying both, at twice the rate.
      if (dims[d] == 2 && c[d] == 1) continue;
      auto n = c;
      n[d] = (c[d] + 1) % dims[d];
      double bw = dims[d] == 2 ? 2 * link_gbps : link_gbps;
      t.add_link({routers[h], routers[index(n)], type, bw, hw::kSwitchLatencyUs, 1});
    }
  }
  std::string shape;
  for (int d : dims) shape += (shape.empty() ? "" : "x") + std::to_string(d);
  bool pairs = std::find(dims.begin(), dims.end(), 2) != dims.end();
  t.notes.push_back("fabric torus " + shape + ": one router per host, " + fmt_num(link_gbps) + " GB/s per torus link and direction" +
                    (pairs ? " (twice that between the two hosts of a dimension of 2, joined by both ports)" : ""));
}

}  // namespace

void add_fabric(Topology& t, const Spec& fabric, const std::vector<std::string>& hosts) {
  if (hosts.size() < 2) return;
  auto nics = collect_nics(t, hosts);
  if (fabric.name == "single-switch") single_switch(t, fabric, nics);
  else if (fabric.name == "fat-tree") fat_tree(t, fabric, nics);
  else if (fabric.name == "torus") torus(t, fabric, nics);
  else throw InputError("unknown fabric \"" + fabric.name + "\" (known: single-switch, fat-tree, torus)");
}

}  // namespace collkit::topo
