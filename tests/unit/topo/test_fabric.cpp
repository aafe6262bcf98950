#include <doctest/doctest.h>

#include "collkit/core/error.h"
#include "collkit/topo/queries.h"
#include "collkit/topo/routing.h"
#include "fixtures.h"

using namespace collkit::topo;
using collkit::InputError;
using collkit::topo::testing::mini_cluster;

TEST_CASE("single switch: every NIC on one switch") {
  Topology t = mini_cluster(3, "single-switch");
  CHECK(t.count(VertexKind::NetSwitch) == 1);
  CHECK(t.count(LinkType::InfiniBand) == 6);
  CHECK(t.hosts() == std::vector<std::string>{"n0", "n1", "n2"});
  t.check_connected();
}

TEST_CASE("fat-tree: rails, leaves, spines and oversubscription") {
  // 8 hosts x 2 NICs, leaf radix 8 (4 down, 4 up): each rail has 8 ports -> 2 leaves per rail.
  Topology t = mini_cluster(8, "fat-tree:rails=2,oversub=1,leaf_radix=8");
  CHECK(t.vertices_of(VertexKind::NetSwitch).size() == 4 + 4);
  CHECK(t.count(LinkType::InfiniBand) == 16 + 4 * 4);
  // Leaf uplinks carry exactly the downlink bandwidth: 4 x 50 over 4 spines.
  Router r(t);
  Path p = r.route(t.at("n0/nic0"), t.at("n7/nic0"));
  CHECK(p.hops.size() == 4);
  CHECK(p.bottleneck_gbps == doctest::Approx(50));
  auto spines = [](const Topology& x) {
    std::vector<VertexId> s;
    for (VertexId v : x.vertices_of(VertexKind::NetSwitch))
      if (x.vertex(v).id.find("spine") != std::string::npos) s.push_back(v);
    return s;
  };
  CHECK(spines(t).size() == 4);
  CHECK(cut_gbps(t, {t.at("fabric/leaf0.0")}, spines(t)) == doctest::Approx(200));

  // 2:1 oversubscription halves the leaf's uplink bandwidth (2 uplinks of 50 to 2 spines).
  Topology o = mini_cluster(8, "fat-tree:rails=2,oversub=2,leaf_radix=8");
  CHECK(o.vertices_of(VertexKind::NetSwitch).size() == 4 + 2);
  CHECK(spines(o).size() == 2);
  CHECK(cut_gbps(o, {o.at("fabric/leaf0.0")}, spines(o)) == doctest::Approx(100));
  CHECK(o.notes.back() ==
        "fabric fat-tree: 2 rail(s), 4 leaves of 8 ports (4 of 4 down in use, 2 up), oversubscription 2:1, 2 spines, 1 uplink(s) of "
        "50 GB/s from each leaf to each");

  // One rail: both NICs of a host on the same leaf.
  Topology one = mini_cluster(2, "fat-tree:rails=1");
  CHECK(one.count(VertexKind::NetSwitch) == 1);
  CHECK(one.notes.back() ==
        "fabric fat-tree: 1 rail(s), 1 leaves of 64 ports (4 of 32 down in use, 4 up), oversubscription 1:1, one leaf holds every port: no "
        "spine");
}

TEST_CASE("fat-tree: leaf uplinks run at port rate however few ports a leaf uses") {
  // 2 hosts x 2 NICs on 2 rails: each leaf serves 2 ports of its 32. It used to spread those
  // 2 x 50 GB/s over 32 spines of 3.125 GB/s, so cross-rail traffic crawled (or detoured
  // through the hosts' PCIe and CPUs).
  Topology t = mini_cluster(2, "fat-tree:rails=2");
  std::size_t uplinks = 0;
  for (const Link& l : t.links()) {
    bool a_leaf = t.vertex(l.a).id.find("leaf") != std::string::npos, b_spine = t.vertex(l.b).id.find("spine") != std::string::npos;
    if (!a_leaf || !b_spine) continue;
    ++uplinks;
    CHECK(l.bw_gbps == doctest::Approx(50));
    CHECK(l.lanes == 1);
  }
  CHECK(uplinks == 2 * 2);  // 2 leaves x 2 spines
  CHECK(t.notes.back() ==
        "fabric fat-tree: 2 rail(s), 2 leaves of 64 ports (2 of 32 down in use, 2 up), oversubscription 1:1, 2 spines, 1 uplink(s) "
        "of 50 GB/s from each leaf to each");
  // A cross-rail route climbs one spine at port rate.
  Path p = Router(t).route(t.at("n0/nic0"), t.at("n1/nic1"));
  CHECK(p.hops.size() == 4);
  CHECK(p.bottleneck_gbps == doctest::Approx(50));

  // 2:1 halves the uplinks, not their rate; uplink_gbps sets the rate; fewer spines take more lanes.
  Topology o = mini_cluster(4, "fat-tree:rails=2,oversub=2");
  CHECK(o.notes.back() ==
        "fabric fat-tree: 2 rail(s), 2 leaves of 64 ports (4 of 32 down in use, 2 up), oversubscription 2:1, 2 spines, 1 uplink(s) "
        "of 50 GB/s from each leaf to each");
  Topology f = mini_cluster(4, "fat-tree:rails=2,uplink_gbps=100,spines=1");
  CHECK(f.notes.back() ==
        "fabric fat-tree: 2 rail(s), 2 leaves of 64 ports (4 of 32 down in use, 4 up), oversubscription 1:1, 1 spines, 4 uplink(s) "
        "of 100 GB/s from each leaf to each");
  CHECK(Router(f).route(f.at("n0/nic0"), f.at("n1/nic1")).bottleneck_gbps == doctest::Approx(50));
  CHECK(cut_gbps(f, {f.at("fabric/leaf0.0")}, {f.at("fabric/spine0")}) == doctest::Approx(400));
  CHECK_THROWS_WITH_AS(mini_cluster(2, "fat-tree:uplink_gbps=0"), "fabric fat-tree: uplink_gbps must be > 0", InputError);
}

TEST_CASE("torus: one router per host, wrap-around links") {
  Topology t = mini_cluster(12, "torus:dims=3x4");
  CHECK(t.count(VertexKind::NetSwitch) == 12);
  // 2D torus of 3x4: each router has 4 torus links, 12*4/2 = 24, plus 24 NIC links.
  CHECK(t.count(LinkType::InfiniBand) == 24 + 24);
  Router r(t);
  // Host 0 (0,0) to host 2 (2,0): one hop backwards around the ring of 3.
  Path p = r.route(t.at("fabric/router0"), t.at("fabric/router2"));
  CHECK(p.hops.size() == 1);
  // Default link bandwidth balances injection: 2 NICs x 50 over 4 directions.
  CHECK(p.bottleneck_gbps == doctest::Approx(25));
  Topology two = mini_cluster(4, "torus:dims=2x2,link_gbps=40");
  CHECK(two.count(LinkType::InfiniBand) == 8 + 4);
  // In a ring of 2 the + and - ports reach the same neighbour: one edge of both ports' rate.
  CHECK(Router(two).route(two.at("fabric/router0"), two.at("fabric/router1")).bottleneck_gbps == doctest::Approx(80));
  Topology cube = mini_cluster(8, "torus:dims=2x2x2");
  CHECK(cube.count(LinkType::InfiniBand) == 16 + 12);
  // Default: 100 GB/s of NICs over 6 ports, two a neighbour.
  CHECK(Router(cube).route(cube.at("fabric/router0"), cube.at("fabric/router1")).bottleneck_gbps == doctest::Approx(100.0 / 3));
  // A dimension of 1 wires no port: 4x1 splits the NICs over the 2 ports of its ring of 4.
  Topology line = mini_cluster(4, "torus:dims=4x1");
  CHECK(line.count(LinkType::InfiniBand) == 8 + 4);
  CHECK(Router(line).route(line.at("fabric/router0"), line.at("fabric/router1")).bottleneck_gbps == doctest::Approx(50));
}

TEST_CASE("fabric specs are checked") {
  CHECK_THROWS_WITH_AS(mini_cluster(2, "mesh"), "unknown fabric \"mesh\" (known: single-switch, fat-tree, torus)", InputError);
  CHECK_THROWS_WITH_AS(mini_cluster(2, "fat-tree:rails=0"), "fabric fat-tree: rails=0: expected an integer >= 1", InputError);
  CHECK_THROWS_WITH_AS(mini_cluster(2, "fat-tree:oversub=0.5"), "fabric fat-tree: oversub=0.5: expected a number >= 1", InputError);
  CHECK_THROWS_WITH_AS(mini_cluster(2, "fat-tree:raisl=2"),
                       "fabric fat-tree: unknown parameter \"raisl\" (it takes: rails, oversub, leaf_radix, spines, uplink_gbps)",
                       InputError);
  CHECK_THROWS_WITH_AS(mini_cluster(6, "torus:dims=2x2"), "fabric torus: dims=2x2 holds 4 hosts, the cluster has 6", InputError);
  CHECK_THROWS_WITH_AS(mini_cluster(4, "torus"), "fabric torus: give dims, e.g. torus:dims=4x4 or torus:dims=4x4x8", InputError);
  CHECK_THROWS_WITH_AS(mini_cluster(4, "torus:dims=4"), "fabric torus: dims=4: a torus here has 2 or 3 dimensions", InputError);
  CHECK_THROWS_WITH_AS(parse_spec("fat-tree:rails"), "invalid spec \"fat-tree:rails\": expected key=value, got \"rails\"", InputError);
  CHECK_THROWS_WITH_AS(parse_spec(":x=1"), "invalid spec \":x=1\": empty name", InputError);
  // A host without NICs cannot be joined.
  Topology t;
  t.add_vertex(testing::vertex("a/gpu", VertexKind::Gpu, "a"));
  t.add_vertex(testing::vertex("b/gpu", VertexKind::Gpu, "b"));
  CHECK_THROWS_WITH_AS(add_fabric(t, parse_spec("single-switch"), {"a", "b"}),
                       "host \"a\" has no NIC: a fabric can only join hosts through their NICs", InputError);
}
