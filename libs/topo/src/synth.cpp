// coll-topo synth: node presets placed N times and joined by a fabric.

#include "collkit/topo/synth.h"

#include <cstdint>

#include "collkit/core/error.h"
#include "collkit/core/limits.h"

namespace collkit::topo {

void place_node(Topology& t, const Topology& node, const std::string& host) {
  VertexId base = static_cast<VertexId>(t.num_vertices());
  for (const Vertex& v : node.vertices()) {
    Vertex c = v;
    c.id = host + "/" + v.id;
    c.host = host;
    t.add_vertex(std::move(c));
  }
  for (const Link& l : node.links()) {
    Link c = l;
    c.a += base;
    c.b += base;
    t.add_link(c);
  }
  for (VertexId v : node.rank_vertices()) t.add_rank(base + v);
}

Topology synth(const SynthRequest& req) {
  if (req.nodes < 1) throw InputError("--nodes must be >= 1, got " + std::to_string(req.nodes));
  NodePreset preset = load_node_preset(req.node);
  // Checked before any node is placed: --nodes 1000000000 once ran until memory ran out.
  const auto per_node = static_cast<std::int64_t>(preset.node.num_vertices());
  if (static_cast<std::int64_t>(req.nodes) * per_node > limits::kTopologyVertices)
    throw InputError("--nodes " + std::to_string(req.nodes) + ": " + std::to_string(req.nodes) + " nodes of " + std::to_string(per_node) +
                     " vertices exceed the limit of " + std::to_string(limits::kTopologyVertices) + " vertices in a topology");
  Topology t;
  t.source = "synth";
  t.name = preset.name + (req.nodes > 1 ? "x" + std::to_string(req.nodes) : "");
  std::vector<std::string> hosts;
  for (int n = 0; n < req.nodes; ++n) {
    hosts.push_back("node" + std::to_string(n));
    place_node(t, preset.node, hosts.back());
  }
  if (req.nodes > 1) {
    std::string fabric = req.fabric;
    if (fabric.empty()) {
      fabric = "fat-tree";
      t.notes.push_back("no --fabric given: a rail-optimised fat-tree without oversubscription joins the nodes");
    }
    Spec spec = parse_spec(fabric);
    add_fabric(t, spec, hosts);
    t.name += "-" + spec.name;
  } else if (!req.fabric.empty()) {
    t.notes.push_back("one node: --fabric " + req.fabric + " has nothing to join");
  }
  t.notes.insert(t.notes.begin(), "node preset " + preset.name + ": " + preset.description);
  t.check_connected();
  return t;
}

}  // namespace collkit::topo
