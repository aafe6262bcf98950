#pragma once
// Small topologies built in code for the unit tests.

#include <string>

#include "collkit/topo/synth.h"
#include "collkit/topo/topology.h"

namespace collkit::topo::testing {

inline Vertex vertex(std::string id, VertexKind kind, std::string host) {
  Vertex v;
  v.id = std::move(id);
  v.kind = kind;
  v.host = std::move(host);
  return v;
}

// A node of two sockets: each socket has one PCIe switch with two GPUs and one 400G NIC; the
// four GPUs share one NVSwitch. Small enough to reason about every route by hand.
inline const char* kMiniNode = R"({
  "schema": "collkit.node/1",
  "name": "mini",
  "description": "2 sockets, 2 PCIe switches, 4 GPUs on an NVSwitch, 2 NICs",
  "params": {"gpus": 4},
  "vertices": [
    {"id": "cpu{s}", "for": "s in 0..1", "kind": "cpu", "numa": "{s}", "local_bw_gbps": 200},
    {"id": "pcisw{s}", "for": "s in 0..1", "kind": "pci_switch"},
    {"id": "gpu{i}", "for": "i in 0..gpus-1", "kind": "gpu", "index": "{i}", "label": "G"},
    {"id": "nvswitch", "kind": "nvswitch"},
    {"id": "nic{s}", "for": "s in 0..1", "kind": "nic", "index": "{s}", "port_gbps": 50, "attrs": {"link_layer": "infiniband"}}
  ],
  "links": [
    {"a": "cpu0", "b": "cpu1", "type": "smp", "bw_gbps": 60, "latency_us": 0.15},
    {"a": "pcisw{s}", "b": "cpu{s}", "for": "s in 0..1", "type": "pcie", "bw_gbps": 63, "latency_us": 0.25, "lanes": 16},
    {"a": "gpu{i}", "b": "pcisw{i*2/gpus}", "for": "i in 0..gpus-1", "type": "pcie", "bw_gbps": 63, "latency_us": 0.25, "lanes": 16},
    {"a": "nic{s}", "b": "pcisw{s}", "for": "s in 0..1", "type": "pcie", "bw_gbps": 63, "latency_us": 0.25, "lanes": 16},
    {"a": "gpu{i}", "b": "nvswitch", "for": "i in 0..gpus-1", "type": "nvlink", "bw_gbps": 450, "latency_us": 0.15, "lanes": 18}
  ],
  "ranks": {"id": "gpu{i}", "for": "i in 0..gpus-1"}
})";

inline NodePreset mini_node(const std::map<std::string, std::string>& params = {}) {
  return parse_node_preset(kMiniNode, "mini.json", params);
}

// `nodes` copies of the mini node joined by `fabric` (empty: none).
inline Topology mini_cluster(int nodes, const std::string& fabric) {
  Topology t;
  std::vector<std::string> hosts;
  NodePreset p = mini_node();
  for (int n = 0; n < nodes; ++n) {
    hosts.push_back("n" + std::to_string(n));
    place_node(t, p.node, hosts.back());
  }
  if (!fabric.empty()) add_fabric(t, parse_spec(fabric), hosts);
  return t;
}

}  // namespace collkit::topo::testing
