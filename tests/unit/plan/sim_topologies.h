#pragma once
// Small topologies built in code for the simulator and bound tests: every number in their
// expected results can be worked out by hand.

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"
#include "collkit/topo/topology.h"

namespace collkit::plan::testing {

/// A preset cluster as `coll-topo synth --node NODE --nodes N [--fabric F]` makes it, from the
/// source tree's configs.
inline topo::Topology preset(const std::string& node, int nodes, const std::string& fabric = "") {
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  return topo::synth({node, nodes, fabric});
}

/// The link joining two vertices named by id (the first: a NIC has one fabric link); throws
/// std::invalid_argument where none does.
inline topo::LinkId link_between(const topo::Topology& t, const std::string& a, const std::string& b) {
  topo::VertexId va = t.at(a), vb = t.at(b);
  for (topo::LinkId l = 0; l < t.num_links(); ++l)
    if ((t.link(l).a == va && t.link(l).b == vb) || (t.link(l).a == vb && t.link(l).b == va)) return l;
  throw std::invalid_argument("no link between " + a + " and " + b);
}

/// Whether some arc of `tree` (parents by rank, -1 at the root) is routed over link l.
inline bool tree_crosses(const topo::Topology& t, const std::vector<int>& tree, topo::LinkId l) {
  topo::Router router(t);
  for (std::size_t c = 0; c < tree.size(); ++c)
    if (tree[c] >= 0)
      for (const topo::Hop& h : router.route_ranks(static_cast<topo::Rank>(tree[c]), static_cast<topo::Rank>(c)).hops)
        if (h.link == l) return true;
  return false;
}

/// A copy of t whose rank on vertex `id` is left out (its GPU idle; the ranks after it renumbered
/// in order): a host short of a GPU, as a job that does not use it has it.
inline topo::Topology without_rank(const topo::Topology& t, const std::string& id) {
  topo::Topology out;
  out.name = t.name;
  for (topo::VertexId v = 0; v < t.num_vertices(); ++v) out.add_vertex(t.vertex(v));
  for (topo::LinkId l = 0; l < t.num_links(); ++l) out.add_link(t.link(l));
  for (topo::Rank r = 0; r < t.num_ranks(); ++r)
    if (t.rank_vertex(r) != t.at(id)) out.add_rank(t.rank_vertex(r));
  return out;
}

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

/// ForestColl's MI250 nodes (bench/topologies/forestcoll_mi250.py, the same graph): per node 16
/// GCDs on an xGMI mesh (50 GB/s a link, 1, 2 or 4 links a pair), a CPU joined to every GCD at
/// 0.001 GB/s (so that every pair has a route; collkit never relays through a GPU), and with more
/// than one node a NIC of 16 GB/s a GCD on one InfiniBand switch. Ranks node by node.
inline topo::Topology mi250_nodes(int nodes) {
  struct Pair {
    int a, b, links;
  };
  constexpr Pair kPairs[] = {{0, 1, 4},   {0, 4, 2},   {0, 8, 1},   {1, 5, 1},   {1, 9, 1},   {1, 10, 1},  {2, 3, 4},
                             {2, 6, 1},   {2, 9, 1},   {2, 10, 1},  {3, 7, 2},   {3, 11, 1},  {4, 5, 4},   {4, 6, 1},
                             {5, 6, 1},   {5, 7, 1},   {6, 7, 4},   {8, 9, 4},   {8, 12, 2},  {9, 13, 1},  {10, 11, 4},
                             {10, 14, 1}, {11, 15, 2}, {12, 13, 4}, {12, 14, 1}, {13, 14, 1}, {13, 15, 1}, {14, 15, 4}};
  auto link = [](topo::VertexId a, topo::VertexId b, topo::LinkType type, double bw, double lat) {
    topo::Link l = make_link(a, b, bw, lat);
    l.type = type;
    return l;
  };
  topo::Topology t;
  t.name = "mi250x" + std::to_string(nodes);
  topo::VertexId ib = 0;
  if (nodes > 1) ib = t.add_vertex(make_vertex("ib", topo::VertexKind::NetSwitch));
  for (int n = 0; n < nodes; ++n) {
    std::string host = "n" + std::to_string(n);
    topo::VertexId cpu = t.add_vertex(make_vertex(host + "/cpu", topo::VertexKind::Cpu, host));
    std::vector<topo::VertexId> gcd;
    for (int g = 0; g < 16; ++g) {
      gcd.push_back(t.add_vertex(make_vertex(host + "/gcd" + std::to_string(g), topo::VertexKind::Gpu, host)));
      t.add_rank(gcd.back());
      t.add_link(link(gcd.back(), cpu, topo::LinkType::Pcie, 0.001, 1.0));
      if (nodes > 1) {
        topo::Vertex v = make_vertex(host + "/nic" + std::to_string(g), topo::VertexKind::Nic, host);
        v.port_gbps = 16;
        topo::VertexId nic = t.add_vertex(v);
        t.add_link(link(gcd.back(), nic, topo::LinkType::Pcie, 16, 0.5));
        t.add_link(link(nic, ib, topo::LinkType::InfiniBand, 16, 1.0));
      }
    }
    for (const Pair& pr : kPairs)
      t.add_link(
          link(gcd[static_cast<std::size_t>(pr.a)], gcd[static_cast<std::size_t>(pr.b)], topo::LinkType::Xgmi, 50.0 * pr.links, 0.7));
  }
  return t;
}

}  // namespace collkit::plan::testing
