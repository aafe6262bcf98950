#pragma once
// Small topologies built in code for the simulator and bound tests: every number in their
// expected results can be worked out by hand.

#include <string>

#include "collkit/topo/topology.h"

namespace collkit::plan::testing {

inline topo::Vertex make_vertex(std::string id, topo::VertexKind kind, std::string host = "") {
  topo::Vertex v;
  v.id = std::move(id);
  v.kind = kind;
  v.host = std::move(host);
  return v;
}

inline topo::Link make_link(topo::VertexId a, topo::VertexId b, double bw_gbps, double latency_us) {
  topo::Link l;
  l.a = a;
  l.b = b;
  l.type = topo::LinkType::NvLink;
  l.bw_gbps = bw_gbps;
  l.latency_us = latency_us;
  return l;
}

/// p GPUs "g0".."g<p-1>" (ranks 0..p-1), each with one link of bw / latency to switch "sw".
/// Link i joins g<i> (end a) to sw (end b).
inline topo::Topology uniform(int p, double bw_gbps, double latency_us) {
  topo::Topology t;
  t.name = "uniform";
  topo::VertexId sw = t.add_vertex(make_vertex("sw", topo::VertexKind::NetSwitch));
  for (int i = 0; i < p; ++i) {
    topo::VertexId g = t.add_vertex(make_vertex("g" + std::to_string(i), topo::VertexKind::Gpu));
    t.add_link(make_link(g, sw, bw_gbps, latency_us));
    t.add_rank(g);
  }
  return t;
}

/// p GPUs "g0".."g<p-1>" (ranks 0..p-1) in a ring, each link bw GB/s and 1 us, no switch.
inline topo::Topology ring_of(int p, double bw_gbps) {
  topo::Topology t;
  t.name = "ring";
  for (int i = 0; i < p; ++i) t.add_rank(t.add_vertex(make_vertex("g" + std::to_string(i), topo::VertexKind::Gpu)));
  for (int i = 0; i < p; ++i) t.add_link(make_link(static_cast<topo::VertexId>(i), static_cast<topo::VertexId>((i + 1) % p), bw_gbps, 1));
  return t;
}

/// Two hosts "a" and "b", each a switch with `gpus` GPUs on links of `gpu_bw` / `gpu_lat`; the
/// two switches joined by one link of `host_bw` / `host_lat`. Ranks: a's GPUs, then b's.
inline topo::Topology two_hosts(int gpus, double gpu_bw, double gpu_lat, double host_bw, double host_lat) {
  topo::Topology t;
  t.name = "two-hosts";
  topo::VertexId sw[2];
  for (int h = 0; h < 2; ++h) {
    std::string host = h == 0 ? "a" : "b";
    sw[h] = t.add_vertex(make_vertex(host + "/sw", topo::VertexKind::NvSwitch, host));
    for (int i = 0; i < gpus; ++i) {
      topo::VertexId g = t.add_vertex(make_vertex(host + "/g" + std::to_string(i), topo::VertexKind::Gpu, host));
      t.add_link(make_link(g, sw[h], gpu_bw, gpu_lat));
      t.add_rank(g);
    }
  }
  t.add_link(make_link(sw[0], sw[1], host_bw, host_lat));
  return t;
}

/// A two-level fat-tree: `leaves` leaf switches with `per_leaf` GPUs each (links of `bw`), every
/// leaf joined to each of `spines` spines by a link of per_leaf * bw / (spines * oversub).
inline topo::Topology fat_tree(int leaves, int per_leaf, int spines, double bw, double oversub) {
  topo::Topology t;
  t.name = "fat-tree";
  std::vector<topo::VertexId> spine;
  for (int s = 0; s < spines; ++s) spine.push_back(t.add_vertex(make_vertex("spine" + std::to_string(s), topo::VertexKind::NetSwitch)));
  for (int l = 0; l < leaves; ++l) {
    topo::VertexId leaf = t.add_vertex(make_vertex("leaf" + std::to_string(l), topo::VertexKind::NetSwitch));
    for (topo::VertexId s : spine) t.add_link(make_link(leaf, s, per_leaf * bw / (spines * oversub), 1.0));
    for (int i = 0; i < per_leaf; ++i) {
      topo::VertexId g = t.add_vertex(make_vertex("g" + std::to_string(l * per_leaf + i), topo::VertexKind::Gpu));
      t.add_link(make_link(g, leaf, bw, 0.5));
      t.add_rank(g);
    }
  }
  return t;
}

}  // namespace collkit::plan::testing
