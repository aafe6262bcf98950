#include <doctest/doctest.h>

#include "collkit/core/error.h"
#include "collkit/topo/queries.h"
#include "fixtures.h"

using namespace collkit::topo;
using collkit::topo::testing::mini_cluster;

TEST_CASE("ranks group by host and by nearest switch") {
  Topology t = mini_cluster(4, "fat-tree:rails=2,leaf_radix=4");
  auto hosts = ranks_by_host(t);
  REQUIRE(hosts.size() == 4);
  CHECK(hosts[2].host == "n2");
  CHECK(hosts[2].ranks == std::vector<Rank>{8, 9, 10, 11});
  // GPUs 0,1 sit on the PCIe switch of NIC 0 (rail 0), GPUs 2,3 on NIC 1's (rail 1).
  CHECK(t.vertex(*nearest_switch(t, 0, VertexKind::NetSwitch)).id == "fabric/leaf0.0");
  CHECK(t.vertex(*nearest_switch(t, 3, VertexKind::NetSwitch)).id == "fabric/leaf1.0");
  CHECK(t.vertex(*nearest_switch(t, 12, VertexKind::NetSwitch)).id == "fabric/leaf0.1");
  CHECK(share_switch(t, 0, 5, VertexKind::NetSwitch));    // n0/gpu0 and n1/gpu1: rail 0, leaf 0
  CHECK_FALSE(share_switch(t, 0, 2, VertexKind::NetSwitch));
  CHECK(share_switch(t, 0, 3, VertexKind::NvSwitch));
  CHECK_FALSE(share_switch(t, 0, 4, VertexKind::NvSwitch));
  auto leaves = ranks_by_switch(t, VertexKind::NetSwitch);
  REQUIRE(leaves.size() == 4);
  CHECK(leaves[0].ranks == std::vector<Rank>{0, 1, 4, 5});
  CHECK_FALSE(nearest_switch(mini_cluster(1, ""), 0, VertexKind::NetSwitch).has_value());
}

TEST_CASE("per-rank bandwidth sums the endpoint's links, split among co-located ranks") {
  Topology t = mini_cluster(1, "");
  auto bw = rank_bandwidth(t, 0);
  CHECK(bw.egress_gbps == 450 + 63);
  CHECK(bw.ingress_gbps == 450 + 63);
  Topology c;
  VertexId cpu = c.add_vertex(testing::vertex("cpu", VertexKind::Cpu, "h"));
  VertexId nic = c.add_vertex(testing::vertex("nic", VertexKind::Nic, "h"));
  c.add_link({cpu, nic, LinkType::Pcie, 32, 0.25, 16});
  for (int i = 0; i < 4; ++i) c.add_rank(cpu);
  CHECK(rank_bandwidth(c, 2).egress_gbps == 8);
}

TEST_CASE("cuts, boundaries and max flow") {
  Topology t = mini_cluster(2, "single-switch");
  auto host0 = endpoints(t, t.ranks_on_host("n0"));
  auto host1 = endpoints(t, t.ranks_on_host("n1"));
  REQUIRE(host0.size() == 4);
  // The GPUs alone: each has NVLink 450 + PCIe 63.
  CHECK(boundary_gbps(t, host0) == doctest::Approx(4 * (450 + 63)));
  CHECK(cut_gbps(t, host0, host1) == 0);
  std::vector<VertexId> nics0{t.at("n0/nic0"), t.at("n0/nic1")};
  std::vector<VertexId> sw{t.at("fabric/switch")};
  CHECK(cut_gbps(t, nics0, sw) == 100);
  // Host 0's GPUs to host 1's: two 50 GB/s NICs are the min cut.
  CHECK(max_flow_gbps(t, host0, host1) == doctest::Approx(100));
  // Inside a host, GPU 0 to GPU 3: the NVSwitch link (450) plus the PCIe path (63).
  CHECK(max_flow_gbps(t, {t.at("n0/gpu0")}, {t.at("n0/gpu3")}) == doctest::Approx(450 + 63));
  CHECK_THROWS_WITH_AS(max_flow_gbps(t, host0, host0), "max flow: vertex \"n0/gpu0\" is in both sets", collkit::InputError);
  CHECK_THROWS_WITH_AS(max_flow_gbps(t, {}, host0), "max flow: both vertex sets must be non-empty", collkit::InputError);
}
