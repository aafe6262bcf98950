#include <doctest/doctest.h>

#include "collkit/topo/io.h"
#include "collkit/topo/show.h"
#include "fixtures.h"

using namespace collkit::topo;
using collkit::topo::testing::mini_cluster;

TEST_CASE("connection labels follow nvidia-smi topo -m") {
  Topology t = mini_cluster(2, "single-switch");
  CHECK(connection_label(t, 0, 0) == "X");
  CHECK(connection_label(t, 0, 3) == "NV18");
  CHECK(connection_label(t, 0, 4) == "NET");

  // Without the NVSwitch: GPUs 0,1 share a PCIe switch (PIX), 0 and 2 cross the sockets (SYS).
  NodePreset p = testing::mini_node();
  Topology bare;
  for (const Vertex& v : p.node.vertices()) bare.add_vertex(v);
  for (const Link& l : p.node.links())
    if (l.type != LinkType::NvLink) bare.add_link(l);
  for (VertexId v : p.node.rank_vertices()) bare.add_rank(v);
  CHECK(connection_label(bare, 0, 1) == "PIX");
  CHECK(connection_label(bare, 0, 2) == "SYS");

  // A root complex between two GPUs is PHB; two PCIe switches without one is PXB.
  Topology phb;
  VertexId cpu = phb.add_vertex(testing::vertex("cpu", VertexKind::Cpu, "h"));
  VertexId g0 = phb.add_vertex(testing::vertex("g0", VertexKind::Gpu, "h"));
  VertexId g1 = phb.add_vertex(testing::vertex("g1", VertexKind::Gpu, "h"));
  phb.add_link({g0, cpu, LinkType::Pcie, 31.5, 0.25, 16});
  phb.add_link({g1, cpu, LinkType::Pcie, 31.5, 0.25, 16});
  phb.add_rank(g0);
  phb.add_rank(g1);
  phb.add_rank(g1);
  CHECK(connection_label(phb, 0, 1) == "PHB");
  CHECK(connection_label(phb, 1, 2) == "SHM");
  Topology pxb;
  VertexId s0 = pxb.add_vertex(testing::vertex("s0", VertexKind::PciSwitch, "h"));
  VertexId s1 = pxb.add_vertex(testing::vertex("s1", VertexKind::PciSwitch, "h"));
  VertexId h0 = pxb.add_vertex(testing::vertex("g0", VertexKind::Gpu, "h"));
  VertexId h1 = pxb.add_vertex(testing::vertex("g1", VertexKind::Gpu, "h"));
  pxb.add_link({s0, s1, LinkType::Pcie, 63, 0.25, 16});
  pxb.add_link({h0, s0, LinkType::Pcie, 63, 0.25, 16});
  pxb.add_link({h1, s1, LinkType::Pcie, 63, 0.25, 16});
  pxb.add_rank(h0);
  pxb.add_rank(h1);
  CHECK(connection_label(pxb, 0, 1) == "PXB");
}

TEST_CASE("the matrix shows labels with bottleneck bandwidth, the summary counts") {
  Topology t = load(std::string(COLLKIT_DOCS_DIR) + "/examples/topology.json");
  std::string m = matrix(t);
  CHECK(m.find("NV18/450") != std::string::npos);
  CHECK(m.find("NET/50") != std::string::npos);
  std::string s = summary(t);
  CHECK(s.find("2 host(s), 4 rank(s), 11 vertices, 12 links") != std::string::npos);
  CHECK(s.find("4 nvlink (450 GB/s)") != std::string::npos);
  CHECK(s.find("note: hand-written example of docs/topology.md") != std::string::npos);
  std::string window = matrix(t, 1, 2);
  CHECK(window.find("(ranks 1-2 of 4: use --first/--count for others)") != std::string::npos);
  std::string dot = to_dot(t);
  CHECK(dot.rfind("graph collkit {", 0) == 0);
  CHECK(dot.find("subgraph cluster_0") != std::string::npos);
  CHECK(dot.find("\"a/nic0\" -- \"fabric/switch\" [label=\"infiniband 50\"];") != std::string::npos);
}
