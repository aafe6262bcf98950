// The node presets in configs/nodes/: every figure they state, and the routes the planner will see
// through them. The expected numbers are the datasheet figures each preset cites in its sources.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"
#include "collkit/topo/topology.h"

using namespace collkit::topo;

namespace {

// ctest sets COLLKIT_CONFIGS; set it here too so the binary also runs by hand.
void use_source_configs() { setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1); }

const std::vector<std::string> kPresets = {"cpu-host",  "dgx-a100", "dgx-h100",    "dgx1-v100",
                                           "gb200-nvl72", "hgx-h200", "mi300x", "pcie-8gpu"};

// Default per-hop latencies of libs/topo/src/hw_rates.h, which every preset link uses.
double default_latency_us(LinkType type) {
  switch (type) {
    case LinkType::NvLink: return 0.15;
    case LinkType::Pcie: return 0.25;
    case LinkType::Smp: return 0.15;
    case LinkType::Xgmi: return 0.15;
    case LinkType::C2c: return 0.10;
    default: return -1;
  }
}

// Sum of the bandwidth of the links of `type` at vertex v (per direction).
double link_sum(const Topology& t, VertexId v, LinkType type) {
  double sum = 0;
  for (const Adjacent& adj : t.adjacent(v))
    if (t.link(adj.link).type == type) sum += t.link(adj.link).bw_gbps;
  return sum;
}

// Number of links (lanes) of `type` at vertex v.
int lane_sum(const Topology& t, VertexId v, LinkType type) {
  int sum = 0;
  for (const Adjacent& adj : t.adjacent(v))
    if (t.link(adj.link).type == type) sum += t.link(adj.link).lanes;
  return sum;
}

std::size_t hops_of(const Topology& t, const Path& p, LinkType type) {
  return static_cast<std::size_t>(std::count_if(p.hops.begin(), p.hops.end(),
                                                [&](const Hop& h) { return t.link(h.link).type == type; }));
}

std::size_t link_count(const Topology& t, LinkType type) { return t.count(type); }

Path route(const Topology& t, std::string_view a, std::string_view b) { return Router(t).route(t.at(a), t.at(b)); }

// Every rank pair has a route.
void check_all_rank_pairs_routed(const Topology& t) {
  Router r(t);
  std::size_t missing = 0;
  for (Rank a = 0; a < t.num_ranks(); ++a)
    for (Rank b = a + 1; b < t.num_ranks(); ++b)
      if (!r.route_ranks(a, b).found) ++missing;
  CHECK(missing == 0);
}

// The facts every preset must state (docs/presets.md and the presets' brief).
void check_stated_figures(const NodePreset& p, const std::string& name) {
  const Topology& t = p.node;
  CAPTURE(name);
  CHECK(p.name == name);
  CHECK(!p.description.empty());
  REQUIRE(!p.sources.empty());
  for (std::size_t i = 0; i < p.sources.size(); ++i) {
    CAPTURE(p.sources[i]);
    CHECK(p.sources[i].rfind("[" + std::to_string(i + 1) + "] ", 0) == 0);
  }

  std::vector<VertexId> gpus = t.vertices_of(VertexKind::Gpu);
  for (VertexId v : gpus) {
    const Vertex& g = t.vertex(v);
    CAPTURE(g.id);
    CHECK(g.index >= 0);
    CHECK(!g.label.empty());
    CHECK((g.attrs.count("sm") == 1 || g.attrs.count("arch") == 1));
    CHECK(g.attrs.count("mem_gb") == 1);
    CHECK(g.attrs.count("mem_bw_gbps") == 1);
    // V100 has no BF16: its preset states the FP16 Tensor Core figure instead.
    CHECK((g.attrs.count("peak_bf16_tflops") == 1 || g.attrs.count("peak_fp16_tflops") == 1));
  }
  std::vector<VertexId> nics = t.vertices_of(VertexKind::Nic);
  std::vector<int> rails;
  for (VertexId v : nics) {
    const Vertex& n = t.vertex(v);
    CAPTURE(n.id);
    CHECK(n.port_gbps > 0);
    REQUIRE(n.attrs.count("link_layer") == 1);
    CHECK((n.attrs.at("link_layer") == "infiniband" || n.attrs.at("link_layer") == "ethernet"));
    rails.push_back(n.index);
  }
  std::sort(rails.begin(), rails.end());
  for (std::size_t i = 0; i < rails.size(); ++i) CHECK(rails[i] == static_cast<int>(i));
  for (VertexId v : t.vertices_of(VertexKind::Cpu)) {
    const Vertex& c = t.vertex(v);
    CAPTURE(c.id);
    CHECK(c.numa >= 0);
    CHECK(!c.label.empty());
    CHECK(c.local_bw_gbps > 0);
  }
  for (const Link& l : t.links()) {
    CAPTURE(t.vertex(l.a).id);
    CAPTURE(t.vertex(l.b).id);
    CHECK(l.latency_us == doctest::Approx(default_latency_us(l.type)));
    CHECK(l.lanes >= 1);
  }
  // Ranks are the GPUs in index order (cpu-host has no GPUs; its ranks are CPU vertices).
  if (!gpus.empty()) {
    REQUIRE(t.num_ranks() == gpus.size());
    for (Rank r = 0; r < t.num_ranks(); ++r) {
      const Vertex& v = t.vertex(t.rank_vertex(r));
      CHECK(v.kind == VertexKind::Gpu);
      CHECK(v.index == static_cast<int>(r));
    }
  }
  check_all_rank_pairs_routed(t);
}

}  // namespace

TEST_CASE("presets: list_node_presets names all eight presets") {
  use_source_configs();
  std::vector<std::string> names = list_node_presets();
  for (const std::string& name : kPresets) {
    CAPTURE(name);
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  }
  CHECK(std::is_sorted(names.begin(), names.end()));
}

TEST_CASE("presets: every preset states its figures and routes every rank pair") {
  use_source_configs();
  for (const std::string& name : kPresets) check_stated_figures(load_node_preset(name), name);
  for (int gpus = 1; gpus <= 8; ++gpus) {
    std::string spec = "pcie-8gpu:gpus=" + std::to_string(gpus);
    check_stated_figures(load_node_preset(spec), "pcie-8gpu");
  }
  check_stated_figures(load_node_preset("cpu-host:ranks_per_socket=1"), "cpu-host");
}

TEST_CASE("preset dgx-a100: 8 A100 on one NVSwitch plane at 300 GB/s with 2 GPUs + 2 HDR NICs per PCIe switch") {
  use_source_configs();
  NodePreset p = load_node_preset("dgx-a100");
  const Topology& t = p.node;
  CHECK(t.count(VertexKind::Gpu) == 8);
  CHECK(t.count(VertexKind::Nic) == 8);
  CHECK(t.count(VertexKind::Cpu) == 2);
  CHECK(t.count(VertexKind::PciSwitch) == 4);
  REQUIRE(t.count(VertexKind::NvSwitch) == 1);
  CHECK(t.vertex(t.at("nvswitch")).attrs.at("chips") == "6");
  CHECK(link_count(t, LinkType::NvLink) == 8);
  CHECK(link_count(t, LinkType::Pcie) == 20);
  CHECK(link_count(t, LinkType::Smp) == 1);
  for (VertexId g : t.vertices_of(VertexKind::Gpu)) {
    CHECK(link_sum(t, g, LinkType::NvLink) == doctest::Approx(300));
    CHECK(lane_sum(t, g, LinkType::NvLink) == 12);
    CHECK(t.vertex(g).attrs.at("sm") == "80");
  }
  for (VertexId n : t.vertices_of(VertexKind::Nic)) {
    CHECK(t.vertex(n).port_gbps == doctest::Approx(25));
    CHECK(t.vertex(n).attrs.at("link_layer") == "infiniband");
  }
  Path p07 = route(t, "gpu0", "gpu7");
  CHECK(p07.bottleneck_gbps == doctest::Approx(300));
  CHECK(p07.hops.size() == 2);
  // GPU1 and NIC0/NIC1 share GPU0's PCIe switch.
  CHECK(route(t, "gpu1", "nic0").bottleneck_gbps == doctest::Approx(31.5));
  CHECK(route(t, "gpu1", "nic0").hops.size() == 2);
}

TEST_CASE("preset dgx-h100: 8 H100 on one NVSwitch plane at 450 GB/s with one NDR NIC per GPU") {
  use_source_configs();
  NodePreset p = load_node_preset("dgx-h100");
  const Topology& t = p.node;
  CHECK(t.count(VertexKind::Gpu) == 8);
  CHECK(t.count(VertexKind::Nic) == 8);
  CHECK(t.count(VertexKind::PciSwitch) == 8);
  REQUIRE(t.count(VertexKind::NvSwitch) == 1);
  CHECK(t.vertex(t.at("nvswitch")).attrs.at("chips") == "4");
  CHECK(link_count(t, LinkType::NvLink) == 8);
  CHECK(link_count(t, LinkType::Pcie) == 24);
  CHECK(link_count(t, LinkType::Smp) == 1);
  for (VertexId g : t.vertices_of(VertexKind::Gpu)) {
    CHECK(link_sum(t, g, LinkType::NvLink) == doctest::Approx(450));
    CHECK(lane_sum(t, g, LinkType::NvLink) == 18);
  }
  for (VertexId n : t.vertices_of(VertexKind::Nic)) CHECK(t.vertex(n).port_gbps == doctest::Approx(50));
  Router r(t);
  for (Rank a = 0; a < 8; ++a)
    for (Rank b = a + 1; b < 8; ++b) {
      Path path = r.route_ranks(a, b);
      CHECK(path.bottleneck_gbps == doctest::Approx(450));
      REQUIRE(path.hops.size() == 2);
      CHECK(path.vertices(t)[1] == t.at("nvswitch"));
    }
  Path rail = route(t, "gpu5", "nic5");
  CHECK(rail.bottleneck_gbps == doctest::Approx(63.0));
  CHECK(rail.hops.size() == 2);
}

TEST_CASE("preset hgx-h200: 8 H200 141GB at 450 GB/s NVLink with 2 GPUs + 2 NICs per PCIe switch") {
  use_source_configs();
  NodePreset p = load_node_preset("hgx-h200");
  const Topology& t = p.node;
  CHECK(t.count(VertexKind::Gpu) == 8);
  CHECK(t.count(VertexKind::Nic) == 8);
  CHECK(t.count(VertexKind::PciSwitch) == 4);
  CHECK(t.count(VertexKind::NvSwitch) == 1);
  CHECK(link_count(t, LinkType::NvLink) == 8);
  CHECK(link_count(t, LinkType::Pcie) == 20);
  for (VertexId g : t.vertices_of(VertexKind::Gpu)) {
    CHECK(link_sum(t, g, LinkType::NvLink) == doctest::Approx(450));
    CHECK(t.vertex(g).attrs.at("mem_gb") == "141");
    CHECK(t.vertex(g).attrs.at("mem_bw_gbps") == "4800");
  }
  CHECK(route(t, "gpu0", "gpu7").bottleneck_gbps == doctest::Approx(450));
  CHECK(route(t, "gpu2", "nic3").bottleneck_gbps == doctest::Approx(63.0));
}

TEST_CASE("preset gb200-nvl72: 72 B200 on one NVLink5 domain at 900 GB/s with Grace C2C and one NIC per GPU") {
  use_source_configs();
  NodePreset p = load_node_preset("gb200-nvl72");
  const Topology& t = p.node;
  CHECK(t.count(VertexKind::Gpu) == 72);
  CHECK(t.count(VertexKind::Cpu) == 36);
  CHECK(t.count(VertexKind::Nic) == 72);
  CHECK(t.count(VertexKind::PciSwitch) == 0);
  REQUIRE(t.count(VertexKind::NvSwitch) == 1);
  CHECK(t.vertex(t.at("nvswitch")).attrs.at("chips") == "18");
  CHECK(link_count(t, LinkType::NvLink) == 72);
  CHECK(link_count(t, LinkType::C2c) == 72);
  CHECK(link_count(t, LinkType::Pcie) == 72);
  CHECK(t.num_ranks() == 72);
  for (VertexId g : t.vertices_of(VertexKind::Gpu)) {
    CHECK(link_sum(t, g, LinkType::NvLink) == doctest::Approx(900));
    CHECK(lane_sum(t, g, LinkType::NvLink) == 18);
    CHECK(t.vertex(g).attrs.at("sm") == "100");
  }
  // One Grace serves two GPUs over the superchip's 900 GB/s bidirectional C2C.
  for (VertexId c : t.vertices_of(VertexKind::Cpu)) CHECK(link_sum(t, c, LinkType::C2c) == doctest::Approx(450));
  Path far = route(t, "gpu0", "gpu71");
  CHECK(far.bottleneck_gbps == doctest::Approx(900));
  CHECK(far.hops.size() == 2);
  // GPUDirect RDMA to the GPU's NIC goes GPU -C2C-> Grace -PCIe-> NIC.
  Path rail = route(t, "gpu37", "nic37");
  CHECK(rail.bottleneck_gbps == doctest::Approx(63.0));
  REQUIRE(rail.hops.size() == 2);
  CHECK(t.link(rail.hops[0].link).type == LinkType::C2c);
  CHECK(rail.vertices(t)[1] == t.at("cpu18"));
}

TEST_CASE("preset mi300x: 8 MI300X in an xGMI full mesh of 7 x 64 GB/s per GPU") {
  use_source_configs();
  NodePreset p = load_node_preset("mi300x");
  const Topology& t = p.node;
  CHECK(t.count(VertexKind::Gpu) == 8);
  CHECK(t.count(VertexKind::Nic) == 8);
  CHECK(t.count(VertexKind::NvSwitch) == 0);
  CHECK(link_count(t, LinkType::Xgmi) == 28);
  CHECK(link_count(t, LinkType::NvLink) == 0);
  CHECK(link_count(t, LinkType::Pcie) == 20);
  CHECK(link_count(t, LinkType::Smp) == 1);
  for (VertexId g : t.vertices_of(VertexKind::Gpu)) {
    CHECK(link_sum(t, g, LinkType::Xgmi) == doctest::Approx(448));
    CHECK(lane_sum(t, g, LinkType::Xgmi) == 7);
    CHECK(t.vertex(g).attrs.at("arch") == "gfx942");
  }
  for (VertexId n : t.vertices_of(VertexKind::Nic)) CHECK(t.vertex(n).attrs.at("link_layer") == "ethernet");
  Router r(t);
  for (Rank a = 0; a < 8; ++a)
    for (Rank b = a + 1; b < 8; ++b) {
      Path path = r.route_ranks(a, b);
      CHECK(path.bottleneck_gbps == doctest::Approx(64));
      REQUIRE(path.hops.size() == 1);
      CHECK(t.link(path.hops[0].link).type == LinkType::Xgmi);
    }
}

TEST_CASE("preset dgx1-v100: hybrid cube-mesh with 6 NVLinks per GPU and GPU0-GPU5 over PCIe") {
  use_source_configs();
  NodePreset p = load_node_preset("dgx1-v100");
  const Topology& t = p.node;
  CHECK(t.count(VertexKind::Gpu) == 8);
  CHECK(t.count(VertexKind::Nic) == 4);
  CHECK(t.count(VertexKind::PciSwitch) == 4);
  CHECK(t.count(VertexKind::NvSwitch) == 0);
  CHECK(link_count(t, LinkType::NvLink) == 16);
  CHECK(link_count(t, LinkType::Pcie) == 16);
  CHECK(link_count(t, LinkType::Smp) == 1);
  for (VertexId g : t.vertices_of(VertexKind::Gpu)) {
    CAPTURE(t.vertex(g).id);
    CHECK(lane_sum(t, g, LinkType::NvLink) == 6);
    CHECK(link_sum(t, g, LinkType::NvLink) == doctest::Approx(150));
    CHECK(t.vertex(g).attrs.at("sm") == "70");
  }
  for (VertexId n : t.vertices_of(VertexKind::Nic)) CHECK(t.vertex(n).port_gbps == doctest::Approx(12.5));
  // Doubled pairs, single pairs, and a pair with no NVLink at all.
  CHECK(route(t, "gpu0", "gpu3").bottleneck_gbps == doctest::Approx(50));
  CHECK(route(t, "gpu0", "gpu4").bottleneck_gbps == doctest::Approx(50));
  CHECK(route(t, "gpu0", "gpu1").bottleneck_gbps == doctest::Approx(25));
  CHECK(route(t, "gpu2", "gpu6").bottleneck_gbps == doctest::Approx(25));
  Path p05 = route(t, "gpu0", "gpu5");
  REQUIRE(p05.found);
  CHECK(hops_of(t, p05, LinkType::NvLink) == 0);
  CHECK(hops_of(t, p05, LinkType::Smp) == 1);
  CHECK(p05.bottleneck_gbps == doctest::Approx(15.75));
  // 16 GPU pairs are NVLinked: the cube's 12 edges and the diagonals of two faces.
  std::size_t linked = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      Path path = route(t, "gpu" + std::to_string(a), "gpu" + std::to_string(b));
      if (hops_of(t, path, LinkType::NvLink) == 1 && path.hops.size() == 1) ++linked;
    }
  CHECK(linked == 16);
}

TEST_CASE("preset pcie-8gpu: no NVLink and GPUs split evenly over two sockets for gpus 1 to 8") {
  use_source_configs();
  {
    NodePreset p = load_node_preset("pcie-8gpu");
    CHECK(p.node.count(VertexKind::Gpu) == 8);
  }
  NodePreset p4 = load_node_preset("pcie-8gpu:gpus=4");
  const Topology& t = p4.node;
  CHECK(t.count(VertexKind::Gpu) == 4);
  CHECK(t.num_ranks() == 4);
  CHECK(t.count(VertexKind::Nic) == 2);
  CHECK(link_count(t, LinkType::NvLink) == 0);
  CHECK(link_count(t, LinkType::Pcie) == 8);
  Path same = route(t, "gpu0", "gpu1");
  CHECK(same.bottleneck_gbps == doctest::Approx(31.5));
  CHECK(same.hops.size() == 2);
  Path cross = route(t, "gpu1", "gpu2");
  CHECK(cross.bottleneck_gbps == doctest::Approx(31.5));
  CHECK(hops_of(t, cross, LinkType::Smp) == 1);

  for (int gpus = 1; gpus <= 8; ++gpus) {
    CAPTURE(gpus);
    NodePreset p = load_node_preset("pcie-8gpu:gpus=" + std::to_string(gpus));
    const Topology& n = p.node;
    CHECK(n.count(VertexKind::Gpu) == static_cast<std::size_t>(gpus));
    CHECK(link_count(n, LinkType::NvLink) == 0);
    std::map<std::string, int> per_switch;
    for (VertexId g : n.vertices_of(VertexKind::Gpu))
      for (const Adjacent& adj : n.adjacent(g)) ++per_switch[n.vertex(adj.peer).id];
    CHECK(per_switch["pcisw0"] == (gpus + 1) / 2);
    CHECK(per_switch["pcisw1"] == gpus / 2);
  }
}

TEST_CASE("preset cpu-host: ranks_per_socket ranks share each EPYC socket") {
  use_source_configs();
  NodePreset p = load_node_preset("cpu-host");
  const Topology& t = p.node;
  CHECK(t.count(VertexKind::Gpu) == 0);
  CHECK(t.count(VertexKind::Cpu) == 2);
  CHECK(t.count(VertexKind::Nic) == 1);
  CHECK(link_count(t, LinkType::Smp) == 1);
  REQUIRE(t.num_ranks() == 8);
  for (Rank r = 0; r < 8; ++r) CHECK(t.rank_vertex(r) == t.at(r < 4 ? "cpu0" : "cpu1"));
  Router router(t);
  Path local = router.route_ranks(0, 3);
  CHECK(local.found);
  CHECK(local.hops.empty());
  CHECK(local.bottleneck_gbps == doctest::Approx(460.8));
  CHECK(router.route_ranks(0, 4).bottleneck_gbps == doctest::Approx(256));

  NodePreset two = load_node_preset("cpu-host:ranks_per_socket=2");
  REQUIRE(two.node.num_ranks() == 4);
  CHECK(two.node.rank_vertex(1) == two.node.at("cpu0"));
  CHECK(two.node.rank_vertex(2) == two.node.at("cpu1"));
}
