#pragma once
// Synthetic clusters: node presets from configs/nodes/*.json (docs/presets.md) joined by a
// fabric built from a spec such as "fat-tree:rails=8,oversub=1".

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::topo {

/// Where configs/ lives: $COLLKIT_CONFIGS, else <dir of the executable>/../../configs or
/// ../share/collkit/configs, else the source tree's configs/ this build was made from.
std::string config_dir();

/// "name" or "name:key=value,key=value" (presets take parameters, e.g. "pcie-8gpu:gpus=4").
/// Also used for fabric specs. Throws InputError on malformed text.
struct Spec {
  std::string name;
  std::map<std::string, std::string> params;
};
Spec parse_spec(std::string_view text);

/// A node preset loaded from configs/nodes/<name>.json with its parameters bound.
struct NodePreset {
  std::string name;
  std::string description;
  std::vector<std::string> sources;  ///< the datasheets its figures come from
  Topology node;                     ///< one host; vertex ids relative ("gpu0"), host "" until placed
};

/// Names of the node presets found in config_dir()/nodes, sorted.
std::vector<std::string> list_node_presets();

/// Loads a preset by spec ("dgx-h100", "pcie-8gpu:gpus=4"), or from a file of one's own when the
/// name has a '/' or ends in ".json" ("./mynode.json:gpus=4"); InputError lists the known names
/// when the preset does not exist, and names file and JSON pointer when it is malformed.
NodePreset load_node_preset(std::string_view spec);
/// Parses a preset from text (for tests and user files); `file` names it in errors.
NodePreset parse_node_preset(const std::string& text, const std::string& file,
                             const std::map<std::string, std::string>& params = {});

/// Copies `node` into `t` as host `host`: vertex ids become "<host>/<id>", Vertex::host = host,
/// and the node's ranks are appended in order.
void place_node(Topology& t, const Topology& node, const std::string& host);

/// Joins hosts' NICs with a fabric. Kinds (docs/topology.md):
///  - "single-switch": every NIC port on one switch;
///  - "fat-tree:rails=R,oversub=O[,leaf_radix=K,spines=S]": rail-optimised two-tier Clos, NIC i of
///    each host on rail i % R, leaves of K ports (K/2 down), leaf uplink bandwidth = down / O;
///  - "torus:dims=AxB[xC]": a 2D/3D torus of hosts, one router per host, wrap-around links.
/// Hosts must have NICs (Vertex::kind Nic with port_gbps > 0); the fabric's link type follows
/// the NICs' attrs "link_layer" ("infiniband" | "ethernet"). Notes on what was assumed are appended to t.notes.
void add_fabric(Topology& t, const Spec& fabric, const std::vector<std::string>& hosts);

struct SynthRequest {
  std::string node = "dgx-h100";   ///< preset spec
  int nodes = 1;
  std::string fabric;              ///< spec; empty: none for one node, "fat-tree:rails=<nics>,oversub=1" otherwise
};
Topology synth(const SynthRequest& req);

}  // namespace collkit::topo
