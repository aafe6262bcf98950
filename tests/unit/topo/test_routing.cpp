#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"
#include "fixtures.h"

using namespace collkit::topo;
using collkit::topo::testing::mini_cluster;

namespace {
std::vector<std::string> ids(const Topology& t, const Path& p) {
  std::vector<std::string> out;
  for (VertexId v : p.vertices(t)) out.push_back(t.vertex(v).id);
  return out;
}
}  // namespace

TEST_CASE("routes inside a node take the widest path, then the fewest hops") {
  Topology t = mini_cluster(1, "");
  Router r(t);
  Path p = r.route_ranks(0, 3);
  REQUIRE(p.found);
  CHECK(ids(t, p) == std::vector<std::string>{"n0/gpu0", "n0/nvswitch", "n0/gpu3"});
  CHECK(p.bottleneck_gbps == 450);
  CHECK(p.latency_us == doctest::Approx(0.30));
  // GPU to NIC on the other socket: PCIe up, across the SMP link, PCIe down.
  Path q = r.route(t.at("n0/gpu0"), t.at("n0/nic1"));
  CHECK(ids(t, q) == std::vector<std::string>{"n0/gpu0", "n0/pcisw0", "n0/cpu0", "n0/cpu1", "n0/pcisw1", "n0/nic1"});
  CHECK(q.bottleneck_gbps == 60);
  CHECK(q.latency_us == doctest::Approx(0.25 * 4 + 0.15));
}

TEST_CASE("GPUs never forward traffic") {
  // gpu0 - gpu1 - gpu2 in a line by NVLink: gpu0 cannot reach gpu2 through gpu1.
  Topology t;
  for (int i = 0; i < 3; ++i) t.add_vertex(testing::vertex("gpu" + std::to_string(i), VertexKind::Gpu, "h"));
  t.add_link({0, 1, LinkType::NvLink, 100, 0.1, 4});
  t.add_link({1, 2, LinkType::NvLink, 100, 0.1, 4});
  Router r(t);
  CHECK_FALSE(r.route(0, 2).found);
  CHECK(r.route(0, 1).found);
  // With a PCIe switch under all three, gpu0 reaches gpu2 through it.
  VertexId sw = t.add_vertex(testing::vertex("sw", VertexKind::PciSwitch, "h"));
  for (VertexId g = 0; g < 3; ++g) t.add_link({g, sw, LinkType::Pcie, 31.5, 0.25, 16});
  Path p = Router(t).route(0, 2);
  CHECK(p.found);
  CHECK(p.bottleneck_gbps == 31.5);
  CHECK(p.hops.size() == 2);
}

TEST_CASE("routes between two ranks of a host never leave it, routes between hosts cross no third host") {
  Topology t = mini_cluster(3, "single-switch");
  Router r(t);
  // n0/gpu0 to n0/gpu3 without the NVSwitch would be tempted by nothing outside; cut the NVSwitch
  // path by asking for the GPU to the far NIC: it must stay inside n0.
  Path p = r.route(t.at("n0/gpu0"), t.at("n0/nic1"));
  for (VertexId v : p.vertices(t)) CHECK(t.vertex(v).host == "n0");
  Path q = r.route_ranks(0, 4);  // n0/gpu0 -> n1/gpu0
  REQUIRE(q.found);
  CHECK(ids(t, q) == std::vector<std::string>{"n0/gpu0", "n0/pcisw0", "n0/nic0", "fabric/switch", "n1/nic0", "n1/pcisw0", "n1/gpu0"});
  CHECK(q.bottleneck_gbps == 50);
  for (VertexId v : q.vertices(t)) CHECK(t.vertex(v).host != "n2");
}

TEST_CASE("a route from a vertex to itself is the vertex's local copy bandwidth") {
  Topology t = mini_cluster(1, "");
  Path p = Router(t).route(t.at("n0/cpu1"), t.at("n0/cpu1"));
  CHECK(p.found);
  CHECK(p.hops.empty());
  CHECK(p.bottleneck_gbps == 200);
}

TEST_CASE("routes_from agrees with route for every destination") {
  Topology t = mini_cluster(4, "fat-tree:rails=2,leaf_radix=4");
  Router r(t);
  for (VertexId src : {t.at("n0/gpu1"), t.at("n2/nic0"), t.at("fabric/spine0")}) {
    auto all = r.routes_from(src);
    for (VertexId dst = 0; dst < t.num_vertices(); ++dst) {
      Path one = r.route(src, dst);
      CAPTURE(t.vertex(dst).id);
      CHECK(all[dst].found == one.found);
      CHECK(all[dst].bottleneck_gbps == one.bottleneck_gbps);
      CHECK(all[dst].hops.size() == one.hops.size());
      CHECK(all[dst].latency_us == doctest::Approx(one.latency_us));
    }
  }
}

TEST_CASE("a route cache returns the router's routes and searches each pair once") {
  Topology t = mini_cluster(4, "fat-tree:rails=2,leaf_radix=4");
  Router r(t);
  RouteCache cache(t);
  std::vector<VertexId> dsts;
  for (VertexId v = 0; v < t.num_vertices(); v += 3) dsts.push_back(v);
  std::size_t checked = 0;
  for (VertexId src : {t.at("n0/gpu1"), t.at("n2/nic0"), t.at("fabric/spine0")}) {
    auto kept = cache.routes_to(src, dsts);
    std::size_t size = cache.size();
    auto again = cache.routes_to(src, dsts);
    CHECK(cache.size() == size);  // nothing searched twice
    REQUIRE(kept.size() == dsts.size());
    for (std::size_t i = 0; i < dsts.size(); ++i) {
      Path one = r.route(src, dsts[i]);
      CAPTURE(t.vertex(dsts[i]).id);
      CHECK(kept[i] == again[i]);
      CHECK(kept[i]->found == one.found);
      CHECK(kept[i]->vertices(t) == one.vertices(t));
      CHECK(kept[i]->latency_us == one.latency_us);
      ++checked;
    }
  }
  CHECK(checked == 3 * dsts.size());
}

TEST_CASE("routes to many vertices of one far host are those found one at a time, hop for hop") {
  // A far host's search stops at the first destination asked for; the others of that host (and
  // entry set) are found final, or searched again to the end: the same routes either way.
  Topology t = mini_cluster(4, "fat-tree:rails=2,leaf_radix=4");
  std::vector<VertexId> gpus;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (t.vertex(v).kind == VertexKind::Gpu) gpus.push_back(v);
  REQUIRE(gpus.size() >= 8);
  std::size_t checked = 0;
  for (bool backwards : {false, true}) {
    Router batch(t);
    for (VertexId src : gpus) {
      std::vector<VertexId> dsts(t.num_vertices());
      for (VertexId v = 0; v < t.num_vertices(); ++v) dsts[v] = v;  // GPUs, NICs, switches, CPUs
      if (backwards) std::reverse(dsts.begin(), dsts.end());
      std::vector<Path> all = batch.routes_to(src, dsts);
      REQUIRE(all.size() == dsts.size());
      for (std::size_t i = 0; i < dsts.size(); ++i) {
        Path one = Router(t).route(src, dsts[i]);
        CAPTURE(t.vertex(src).id);
        CAPTURE(t.vertex(dsts[i]).id);
        CHECK(all[i].found == one.found);
        CHECK(all[i].vertices(t) == one.vertices(t));
        CHECK(all[i].latency_us == one.latency_us);
        ++checked;
      }
    }
  }
  CHECK(checked == 2 * gpus.size() * t.num_vertices());
}

TEST_CASE("a route cache answers destinations out of order, repeated and partly kept") {
  Topology t = mini_cluster(4, "fat-tree:rails=2,leaf_radix=4");
  Router r(t);
  RouteCache cache(t);
  VertexId src = t.at("n1/gpu0");
  // Every third vertex kept first; then all of them, backwards, each asked twice.
  std::vector<VertexId> some, all;
  for (VertexId v = 0; v < t.num_vertices(); v += 3) some.push_back(v);
  cache.routes_to(src, some);
  for (VertexId v = static_cast<VertexId>(t.num_vertices()); v-- > 0;) {
    all.push_back(v);
    all.push_back(v);
  }
  auto got = cache.routes_to(src, all);
  REQUIRE(got.size() == all.size());
  std::size_t checked = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    Path one = r.route(src, all[i]);
    CAPTURE(t.vertex(all[i]).id);
    REQUIRE(got[i] != nullptr);
    CHECK(got[i]->dst == all[i]);
    CHECK(got[i]->found == one.found);
    CHECK(got[i]->vertices(t) == one.vertices(t));
    if (i % 2 == 1) CHECK(got[i] == got[i - 1]);
    ++checked;
  }
  CHECK(checked == 2 * t.num_vertices());
  CHECK(cache.size() == t.num_vertices());
}

TEST_CASE("equal-cost paths enumerate the spines of a fat-tree") {
  // 4 hosts x 2 NICs, leaves of radix 4 (2 down, 2 up): rail 0 has 2 leaves, so n0 -> n3 on
  // rail 0 climbs to one of the 2 spines.
  Topology t = mini_cluster(4, "fat-tree:rails=2,leaf_radix=4");
  Router r(t);
  auto paths = r.equal_cost_paths(t.at("n0/nic0"), t.at("n3/nic0"));
  REQUIRE(paths.size() == 2);
  CHECK(ids(t, paths[0])[2] != ids(t, paths[1])[2]);
  for (auto& p : paths) {
    CHECK(p.hops.size() == 4);
    CHECK(p.bottleneck_gbps == doctest::Approx(r.route(p.src, p.dst).bottleneck_gbps));
  }
  CHECK(r.equal_cost_paths(t.at("n0/nic0"), t.at("n3/nic0"), 1).size() == 1);
  // Same leaf: a single path.
  CHECK(r.equal_cost_paths(t.at("n0/nic0"), t.at("n1/nic0")).size() == 1);
}

TEST_CASE("hops name link directions as distinct channels") {
  Topology t = mini_cluster(1, "");
  Router r(t);
  Path there = r.route_ranks(0, 1), back = r.route_ranks(1, 0);
  REQUIRE(there.hops.size() == 2);
  CHECK(there.hops[0].link == back.hops[1].link);
  CHECK(there.hops[0].channel() != back.hops[1].channel());
}

namespace {

// Routes from every vertex to every vertex by two routers of t: the same, to the bit. Returns how
// many were compared; `into_gpus` (when given) counts those found into a GPU of another host.
std::size_t require_same_routes(const Topology& t, const Router& a, const Router& b, std::size_t* into_gpus = nullptr) {
  std::vector<VertexId> all(t.num_vertices());
  for (VertexId v = 0; v < t.num_vertices(); ++v) all[v] = v;
  std::size_t compared = 0;
  for (VertexId src = 0; src < t.num_vertices(); ++src) {
    auto x = a.routes_to(src, all), y = b.routes_to(src, all);
    for (VertexId dst = 0; dst < t.num_vertices(); ++dst) {
      CAPTURE(t.vertex(src).id);
      CAPTURE(t.vertex(dst).id);
      REQUIRE(x[dst].found == y[dst].found);
      REQUIRE(x[dst].bottleneck_gbps == y[dst].bottleneck_gbps);
      REQUIRE(x[dst].latency_us == y[dst].latency_us);
      REQUIRE(x[dst].hops.size() == y[dst].hops.size());
      for (std::size_t k = 0; k < x[dst].hops.size(); ++k) REQUIRE(x[dst].hops[k].channel() == y[dst].hops[k].channel());
      ++compared;
      if (into_gpus && x[dst].found && t.vertex(src).host != t.vertex(dst).host && t.vertex(dst).kind == VertexKind::Gpu) ++*into_gpus;
    }
  }
  return compared;
}

}  // namespace

TEST_CASE("routes between hosts through fabric tables are the plain searches' routes, to the bit") {
  // Every source vertex to every vertex, on fabrics with spines (ECMP choices), one switch, a
  // torus of routers, and nodes of several shapes.
  std::vector<Topology> topos;
  topos.push_back(mini_cluster(4, "fat-tree:rails=2,leaf_radix=4"));
  topos.push_back(mini_cluster(3, "single-switch"));
  topos.push_back(synth({"dgx-h100", 6, "fat-tree:rails=8,leaf_radix=8"}));
  topos.push_back(synth({"dgx1-v100", 4, "fat-tree:rails=2,oversub=2,leaf_radix=4"}));
  topos.push_back(synth({"dgx-a100", 4, "torus:dims=2x2"}));
  topos.push_back(synth({"pcie-8gpu", 3, "fat-tree:rails=1,leaf_radix=4"}));
  topos.push_back(synth({"mi300x", 3, "single-switch"}));
  topos.push_back(synth({"gb200-nvl72", 2, ""}));
  for (const Topology& t : topos) {
    Router tables(t), plain(t);
    plain.use_fabric_tables(false);
    CHECK(require_same_routes(t, tables, plain) == std::size_t{t.num_vertices()} * t.num_vertices());
  }
}

TEST_CASE("routes into a host entered at one NIC, from the searches shared by all sources, are each source's own, to the bit") {
  // Rail affinity lets a route into a GPU's host enter only at the GPU's NIC: the host is then
  // crossed from that NIC alone, the same search for every source (FabricTables::FromEntry).
  // Fabrics with spines, one switch, a torus, nodes of several shapes, and a slower NIC (other
  // bottleneck levels).
  std::vector<Topology> topos;
  topos.push_back(synth({"dgx-h100", 6, "fat-tree:rails=8,leaf_radix=8"}));
  topos.push_back(synth({"dgx-a100", 4, "torus:dims=2x2"}));
  topos.push_back(synth({"dgx1-v100", 4, "fat-tree:rails=2,oversub=2,leaf_radix=4"}));
  topos.push_back(synth({"mi300x", 3, "single-switch"}));
  topos.push_back(synth({"pcie-8gpu", 3, "fat-tree:rails=1,leaf_radix=4"}));
  topos.push_back(mini_cluster(4, "fat-tree:rails=2,leaf_radix=4"));
  Topology slow = synth({"dgx-h100", 3, "fat-tree:rails=8"});
  for (LinkId l = 0; l < slow.num_links(); ++l)
    if (slow.vertex(slow.link(l).a).id == "node1/nic2" || slow.vertex(slow.link(l).b).id == "node1/nic2") slow.mutable_link(l).bw_gbps /= 2;
  topos.push_back(std::move(slow));
  std::size_t compared = 0, across = 0, by_tables = 0;
  for (const Topology& t : topos) {
    Router shared(t), own(t);
    own.use_entry_tables(false);
    compared += require_same_routes(t, shared, own, &across);
    CHECK(own.routes_by_entry_tables() == 0);
    by_tables += shared.routes_by_entry_tables();
  }
  // Routes into a GPU of another host (from another or from the fabric) nearly all through the
  // tables (those into a NIC or a CPU too, where they enter at one vertex).
  CHECK(compared > 60000);
  CHECK(across > 10000);
  CHECK(by_tables * 10 >= across * 9);
}

TEST_CASE("routes between hosts leave and enter through the GPUs' own NICs") {
  // DGX A100: GPUs 2k and 2k+1 share a PCIe switch with NICs 2k and 2k+1. Both NICs tie on
  // every route; a hash used to pick, so two GPUs' traffic shared one NIC while the other idled.
  Topology t = synth({"dgx-a100", 2, "fat-tree:rails=8"});
  Router r(t);
  auto nic_hops = [&](const Path& p) {
    std::vector<std::string> nics;
    for (VertexId v : p.vertices(t))
      if (t.vertex(v).kind == VertexKind::Nic) nics.push_back(t.vertex(v).id);
    return nics;
  };
  std::size_t checked = 0;
  for (int g = 0; g < 8; ++g)
    for (int h = 0; h < 8; ++h) {
      Path p = r.route(t.at("node0/gpu" + std::to_string(g)), t.at("node1/gpu" + std::to_string(h)));
      REQUIRE(p.found);
      CAPTURE(g);
      CAPTURE(h);
      CHECK(nic_hops(p) == std::vector<std::string>{"node0/nic" + std::to_string(g), "node1/nic" + std::to_string(h)});
      // Same rail: one leaf; across rails: up a spine, at port rate (25 GB/s HDR).
      CHECK(p.hops.size() == (g == h ? 6u : 8u));
      CHECK(p.bottleneck_gbps == doctest::Approx(25));
      ++checked;
    }
  CHECK(checked == 64);
  const NicAffinity& aff = r.affinity();
  CHECK(aff.nics[t.at("node0/gpu1")] == std::vector<VertexId>{t.at("node0/nic1")});
  // The alternatives route() chooses among keep to the same NICs.
  for (const Path& p : r.equal_cost_paths(t.at("node0/gpu1"), t.at("node1/gpu5")))
    CHECK(nic_hops(p) == std::vector<std::string>{"node0/nic1", "node1/nic5"});
}

TEST_CASE("a rail-only network still connects rails, through any NIC") {
  // Two hosts, each rail its own switch and no spine: GPU0's NIC cannot reach rail 1, so the
  // route to the far GPU1 takes the NIC that can (through the host's PCIe), rather than none.
  Topology t = mini_cluster(2, "");
  for (int rail = 0; rail < 2; ++rail) {
    VertexId sw = t.add_vertex(testing::vertex("rail" + std::to_string(rail), VertexKind::NetSwitch, ""));
    for (int h = 0; h < 2; ++h)
      t.add_link({t.at("n" + std::to_string(h) + "/nic" + std::to_string(rail)), sw, LinkType::InfiniBand, 50, 0.6, 1});
  }
  Router r(t);
  Path same = r.route(t.at("n0/gpu0"), t.at("n1/gpu0"));
  CHECK(ids(t, same) == std::vector<std::string>{"n0/gpu0", "n0/pcisw0", "n0/nic0", "rail0", "n1/nic0", "n1/pcisw0", "n1/gpu0"});
  Path cross = r.route(t.at("n0/gpu0"), t.at("n1/gpu3"));
  REQUIRE(cross.found);
  CHECK(cross.bottleneck_gbps == doctest::Approx(50));
  t.check_connected();
}

TEST_CASE("flows to the ports of one leaf climb distinct spines (destination-based ECMP)") {
  // 16 hosts x 8 NICs, leaves of 8 ports (4 down): rail r has 4 leaves, and each leaf has 4
  // uplinks to the 4 spines. From one source, the 4 hosts behind another leaf of its rail must
  // be reached over 4 different spines: one hashed choice per source sent them all up one.
  Topology t = synth({"dgx-h100", 16, "fat-tree:rails=8,leaf_radix=8"});
  Router r(t);
  std::vector<VertexId> dsts;
  for (int h = 4; h < 8; ++h) dsts.push_back(t.at("node" + std::to_string(h) + "/gpu0"));
  std::size_t checked = 0;
  for (int src = 0; src < 4; ++src) {
    auto paths = r.routes_to(t.at("node" + std::to_string(src) + "/gpu0"), dsts);
    std::set<std::string> spines;
    for (const Path& p : paths) {
      REQUIRE(p.hops.size() == 8);
      for (VertexId v : p.vertices(t))
        if (t.vertex(v).id.find("spine") != std::string::npos) spines.insert(t.vertex(v).id);
      ++checked;
    }
    CHECK(spines.size() == 4);
  }
  CHECK(checked == 16);
}

TEST_CASE("routes in a torus take dimension order, and every torus link carries as many routes") {
  // A 3x3 torus of one GPU a host: the four diagonal neighbours of a host are two hops away, by
  // either dimension first. In dimension order every route first crosses x, so the routes between
  // all 72 pairs load each of the 36 torus link directions with 3 (4 direct: 1 each; 4 diagonal:
  // 2 hops each); a tie broken by hashing loaded some with 4 and others with 2.
  Topology t = synth({"pcie-8gpu:gpus=1", 9, "torus:dims=3x3"});
  CHECK(t.vertex(t.at("fabric/router4")).attrs.at("torus_coord") == "1,1");
  Router r(t);
  auto coord = [&](VertexId v) { return t.vertex(v).attrs.at("torus_coord"); };
  std::map<std::size_t, int> load;
  std::size_t routes = 0;
  bool ordered = true;
  for (int a = 0; a < 9; ++a)
    for (int b = 0; b < 9; ++b) {
      if (a == b) continue;
      Path p = r.route_ranks(static_cast<Rank>(a), static_cast<Rank>(b));
      REQUIRE(p.found);
      std::vector<VertexId> routers;
      for (VertexId v : p.vertices(t))
        if (t.vertex(v).attrs.count("torus_coord")) routers.push_back(v);
      // x (the first coordinate) changes only before y does.
      bool y_moved = false;
      for (std::size_t i = 0; i + 1 < routers.size(); ++i) {
        std::string x = coord(routers[i]), z = coord(routers[i + 1]);
        bool x_step = x.substr(0, x.find(',')) != z.substr(0, z.find(','));
        ordered = ordered && !(x_step && y_moved);
        y_moved = y_moved || !x_step;
      }
      for (const Hop& h : p.hops) {
        const Link& l = t.link(h.link);
        if (t.vertex(l.a).attrs.count("torus_coord") && t.vertex(l.b).attrs.count("torus_coord")) ++load[h.channel()];
      }
      ++routes;
    }
  CHECK(ordered);
  CHECK(routes == 72);
  REQUIRE(load.size() == 36);
  for (const auto& [dir, n] : load) CHECK(n == 3);
  // A 4x4 torus: a pair two apart in a ring of 4 ties both ways round; sources of even
  // coordinate go up, odd ones down, so the 240 pairs' 512 hops put 8 on each of the 64 torus
  // link directions.
  Topology t4 = synth({"pcie-8gpu:gpus=1", 16, "torus:dims=4x4"});
  Router r4(t4);
  std::map<std::size_t, int> load4;
  int hops = 0;
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b) {
      if (a == b) continue;
      Path p = r4.route_ranks(static_cast<Rank>(a), static_cast<Rank>(b));
      REQUIRE(p.found);
      for (const Hop& h : p.hops) {
        const Link& l = t4.link(h.link);
        if (t4.vertex(l.a).attrs.count("torus_coord") && t4.vertex(l.b).attrs.count("torus_coord")) {
          ++load4[h.channel()];
          ++hops;
        }
      }
    }
  CHECK(hops == 512);
  REQUIRE(load4.size() == 64);
  for (const auto& [dir, n] : load4) CHECK(n == 8);
}

TEST_CASE("reachable_from is exactly where routes_from finds a route, from every vertex") {
  // check_connected() asks reachable_from() (one search) instead of every route from rank 0; the
  // two must agree, including where links are missing: the fabrics above, a rail-only network,
  // GPUs joined only through another GPU, and clusters with some links cut.
  std::vector<Topology> topos;
  topos.push_back(mini_cluster(4, "fat-tree:rails=2,leaf_radix=4"));
  topos.push_back(mini_cluster(3, "single-switch"));
  topos.push_back(synth({"dgx-h100", 6, "fat-tree:rails=8,leaf_radix=8"}));
  topos.push_back(synth({"dgx1-v100", 4, "fat-tree:rails=2,oversub=2,leaf_radix=4"}));
  topos.push_back(synth({"dgx-a100", 4, "torus:dims=2x2"}));
  topos.push_back(synth({"pcie-8gpu", 3, "fat-tree:rails=1,leaf_radix=4"}));
  topos.push_back(synth({"mi300x", 3, "single-switch"}));
  topos.push_back(synth({"gb200-nvl72", 2, ""}));
  {
    Topology t = mini_cluster(2, "");
    for (int rail = 0; rail < 2; ++rail) {
      VertexId sw = t.add_vertex(testing::vertex("rail" + std::to_string(rail), VertexKind::NetSwitch, ""));
      for (int h = 0; h < 2; ++h)
        t.add_link({t.at("n" + std::to_string(h) + "/nic" + std::to_string(rail)), sw, LinkType::InfiniBand, 50, 0.6, 1});
    }
    topos.push_back(std::move(t));
  }
  {
    Topology t;
    for (int i = 0; i < 3; ++i) t.add_vertex(testing::vertex("gpu" + std::to_string(i), VertexKind::Gpu, "h"));
    t.add_link({0, 1, LinkType::NvLink, 100, 0.1, 4});
    t.add_link({1, 2, LinkType::NvLink, 100, 0.1, 4});
    topos.push_back(std::move(t));
  }
  // The same clusters with every third link (then every fifth) left out: parts fall apart.
  for (int every : {3, 5})
    for (const char* fabric : {"fat-tree:rails=2,leaf_radix=4", "single-switch"}) {
      Topology full = mini_cluster(3, fabric), cut;
      for (const Vertex& v : full.vertices()) cut.add_vertex(v);
      for (LinkId l = 0; l < full.num_links(); ++l)
        if (l % static_cast<LinkId>(every) != 1) cut.add_link(full.link(l));
      topos.push_back(std::move(cut));
    }
  std::size_t pairs = 0, unreachable = 0;
  for (const Topology& t : topos) {
    Router r(t);
    for (VertexId src = 0; src < t.num_vertices(); ++src) {
      auto routes = r.routes_from(src);
      auto seen = r.reachable_from(src);
      REQUIRE(seen.size() == t.num_vertices());
      for (VertexId dst = 0; dst < t.num_vertices(); ++dst) {
        CAPTURE(t.vertex(src).id);
        CAPTURE(t.vertex(dst).id);
        REQUIRE(static_cast<bool>(seen[dst]) == routes[dst].found);
        ++pairs;
        unreachable += routes[dst].found ? 0 : 1;
      }
    }
  }
  CHECK(pairs > 10000);
  CHECK(unreachable > 100);  // the cut clusters and the GPU line do leave pairs apart
}
