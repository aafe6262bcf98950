// Import of NCCL topology XML (libs/topo/src/import_nccl_xml.cpp, docs/import-nccl-xml.md).
// Fixtures in tests/fixtures/nccl-xml/ are hand-written for these tests.

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/topo/import.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/topology.h"

using namespace collkit::topo;

namespace {

std::string fixture(const std::string& name) { return std::string(COLLKIT_FIXTURES) + "/nccl-xml/" + name; }

Topology load_fixture(const std::string& name) { return import_nccl_xml_file(fixture(name)); }

// A malformed fixture read under its short name, so messages read as the user would see them.
Topology load_bad(const std::string& name) { return import_nccl_xml(collkit::read_file(fixture("bad/" + name)), name); }

// The link joining two vertices (either way round), if any.
std::optional<Link> link_between(const Topology& t, const std::string& a, const std::string& b) {
  const VertexId va = t.at(a);
  const VertexId vb = t.at(b);
  for (const Adjacent& adj : t.adjacent(va))
    if (adj.peer == vb) return t.link(adj.link);
  return std::nullopt;
}

std::vector<std::string> rank_ids(const Topology& t) {
  std::vector<std::string> out;
  for (VertexId v : t.rank_vertices()) out.push_back(t.vertex(v).id);
  return out;
}

// A one-socket file around the given <pci> elements.
std::string one_cpu(const std::string& body) {
  return "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\">\n" + body + "  </cpu>\n</system>\n";
}

std::string gpu_pci(const std::string& busid, const std::string& gpu_attrs, const std::string& inner = "") {
  return "    <pci busid=\"" + busid + "\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">\n      <gpu " +
         gpu_attrs + (inner.empty() ? "/>\n" : ">\n" + inner + "      </gpu>\n") + "    </pci>\n";
}

constexpr double kGen5x16 = 63.0;
constexpr double kGen4x16 = 31.5;
constexpr double kGen3x16 = 15.75;

}  // namespace

TEST_CASE("nccl xml: DGX-H100-like dump, NVSwitch plane") {
  const Topology t = load_fixture("dgx-h100.xml");
  CHECK(t.name == "dgx-h100");
  CHECK(t.source == "import:nccl-xml");
  CHECK(t.hosts() == std::vector<std::string>{"node0"});

  CHECK(t.count(VertexKind::Cpu) == 2);
  CHECK(t.count(VertexKind::PciSwitch) == 4);
  CHECK(t.count(VertexKind::Gpu) == 8);
  CHECK(t.count(VertexKind::Nic) == 8);
  CHECK(t.count(VertexKind::NvSwitch) == 1);
  CHECK(t.num_vertices() == 23);
  CHECK(t.count(LinkType::NvLink) == 8);
  CHECK(t.count(LinkType::Pcie) == 20);
  CHECK(t.count(LinkType::Smp) == 1);
  CHECK(t.num_links() == 29);

  const Vertex& gpu3 = t.vertex(t.at("node0/gpu3"));
  CHECK(gpu3.busid == "0000:4f:00.0");
  CHECK(gpu3.index == 3);
  CHECK(gpu3.numa == 0);
  CHECK(gpu3.attrs.at("sm") == "90");
  CHECK(t.vertex(t.at("node0/cpu1")).numa == 1);
  CHECK(t.vertex(t.at("node0/pci-0000:9a:00.0")).kind == VertexKind::PciSwitch);

  // 18 NVLink4 links x 25 GB/s to the switch plane.
  for (int g = 0; g < 8; ++g) {
    auto l = link_between(t, "node0/gpu" + std::to_string(g), "node0/nvswitch");
    REQUIRE(l);
    CHECK(l->type == LinkType::NvLink);
    CHECK(l->bw_gbps == doctest::Approx(450.0));
    CHECK(l->lanes == 18);
  }
  // Gen5 x16 everywhere on the PCIe side.
  auto up = link_between(t, "node0/pci-0000:15:00.0", "node0/gpu0");
  REQUIRE(up);
  CHECK(up->type == LinkType::Pcie);
  CHECK(up->bw_gbps == doctest::Approx(kGen5x16).epsilon(0.001));
  CHECK(up->lanes == 16);
  auto smp = link_between(t, "node0/cpu0", "node0/cpu1");
  REQUIRE(smp);
  CHECK(smp->type == LinkType::Smp);
  CHECK(smp->bw_gbps == doctest::Approx(62.4));
  CHECK(smp->lanes == 3);

  const Vertex& nic5 = t.vertex(t.at("node0/nic5"));
  CHECK(nic5.label == "mlx5_5");
  CHECK(nic5.index == 5);
  CHECK(nic5.busid == "0000:aa:00.0");
  CHECK(nic5.port_gbps == doctest::Approx(50.0));  // 400000 Mb/s
  CHECK(nic5.attrs.at("link_layer") == "infiniband");
  CHECK(nic5.attrs.at("guid") == "0x946dae0300f105e4");
  CHECK(nic5.attrs.at("port") == "1");

  CHECK(rank_ids(t) == std::vector<std::string>{"node0/gpu0", "node0/gpu1", "node0/gpu2", "node0/gpu3", "node0/gpu4",
                                                "node0/gpu5", "node0/gpu6", "node0/gpu7"});
  CHECK(t.notes == std::vector<std::string>{
                       "the file describes one host: no inter-host fabric (use --fabric when merging)",
                       "the NVSwitches are one vertex, node0/nvswitch: the file gives each GPU's NVLinks to the switch plane, not the switch chips",
                       "the file gives no bandwidth between CPUs: the SMP links assume 62.4 GB/s (Intel: 3 UPI links x 20.8 GB/s) per direction",
                       "PCI devices not modelled: 0000:05:00.0 (class 0x068000)",
                   });

  Router router(t);
  for (Rank a = 0; a < 8; ++a)
    for (Rank b = 0; b < 8; ++b) {
      if (a == b) continue;
      const Path p = router.route_ranks(a, b);
      REQUIRE(p.found);
      CHECK(p.bottleneck_gbps == doctest::Approx(450.0));
      REQUIRE(p.hops.size() == 2);
      CHECK(t.vertex(p.vertices(t)[1]).id == "node0/nvswitch");
    }
  const Path to_nic = router.route(t.at("node0/gpu0"), t.at("node0/nic0"));
  REQUIRE(to_nic.found);
  CHECK(to_nic.hops.size() == 2);  // through the shared PCIe switch
  CHECK(to_nic.bottleneck_gbps == doctest::Approx(kGen5x16).epsilon(0.001));
}

TEST_CASE("nccl xml: PCIe-only cloud file with bare pci GPUs and NICs") {
  const Topology t = load_fixture("cloud-pcie.xml");
  CHECK(t.name == "cloud-pcie");
  CHECK(t.count(VertexKind::Gpu) == 4);
  CHECK(t.count(VertexKind::Nic) == 2);
  CHECK(t.count(VertexKind::PciSwitch) == 2);
  CHECK(t.count(LinkType::NvLink) == 0);
  CHECK(t.count(LinkType::Pcie) == 8);
  CHECK(t.count(LinkType::Smp) == 1);

  // Bare GPUs numbered in document order: 0x030200, 0x0302 (short form), 0x030000 (VGA), 0x030200.
  CHECK(rank_ids(t) == std::vector<std::string>{"node0/gpu0", "node0/gpu1", "node0/gpu2", "node0/gpu3"});
  CHECK(t.vertex(t.at("node0/gpu1")).busid == "0000:02:00.0");
  CHECK(t.vertex(t.at("node0/gpu2")).busid == "0000:81:00.0");
  CHECK(t.vertex(t.at("node0/gpu2")).numa == 1);

  // 0000:02:00.0 states no link: it takes its switch's Gen4 x16.
  auto inherited = link_between(t, "node0/pci-0000:00:01.1", "node0/gpu1");
  REQUIRE(inherited);
  CHECK(inherited->bw_gbps == doctest::Approx(kGen4x16).epsilon(0.001));
  CHECK(inherited->lanes == 16);
  auto x8 = link_between(t, "node0/pci-0000:80:01.1", "node0/gpu3");
  REQUIRE(x8);
  CHECK(x8->bw_gbps == doctest::Approx(kGen4x16 / 2).epsilon(0.001));
  CHECK(x8->lanes == 8);
  // The Ethernet NIC under the CPU states nothing, and nothing is above it: Gen3 x16, noted.
  auto assumed = link_between(t, "node0/cpu1", "node0/nic1");
  REQUIRE(assumed);
  CHECK(assumed->bw_gbps == doctest::Approx(kGen3x16).epsilon(0.001));

  CHECK(t.vertex(t.at("node0/nic0")).attrs.at("link_layer") == "infiniband");
  CHECK(t.vertex(t.at("node0/nic1")).attrs.at("link_layer") == "ethernet");
  CHECK(t.vertex(t.at("node0/nic1")).port_gbps == 0);
  CHECK(link_between(t, "node0/cpu0", "node0/cpu1")->bw_gbps == doctest::Approx(128.0));

  CHECK(t.notes == std::vector<std::string>{
                       "the file describes one host: no inter-host fabric (use --fabric when merging)",
                       "no NVLink in the file: GPUs talk over PCIe",
                       "the file gives no bandwidth between CPUs: the SMP links assume 128 GB/s (AMD: 4 xGMI links x 32 GB/s) per direction",
                       "no PCIe link_speed in the file for 0000:90:00.0 (nor above): assumed 8 GT/s (Gen3)",
                       "no PCIe link_width in the file for 0000:90:00.0 (nor above): assumed x16",
                       "GPUs known only by their PCI class, numbered in document order after the <gpu dev> ones; sm, rank and NVLinks "
                       "unknown: 0000:01:00.0, 0000:02:00.0, 0000:81:00.0, 0000:82:00.0",
                       "NICs known only by their PCI class, numbered in document order after the <net dev> ones; port speed unknown: "
                       "0000:03:00.0, 0000:90:00.0",
                       "no <gpu rank> attributes: ranks follow the GPU dev index",
                       "PCI devices not modelled: 0000:91:00.0 (class 0x010802)",
                   });

  // Across sockets: PCIe up, SMP, PCIe down; the x8 switch uplink is the bottleneck.
  const Path p = Router(t).route_ranks(0, 3);
  REQUIRE(p.found);
  CHECK(p.hops.size() == 5);
  CHECK(p.bottleneck_gbps == doctest::Approx(kGen4x16 / 2).epsilon(0.001));
}

TEST_CASE("nccl xml: DGX-1-V100-like hybrid cube-mesh") {
  const Topology t = load_fixture("dgx1-v100.xml");
  CHECK(t.count(VertexKind::Gpu) == 8);
  CHECK(t.count(VertexKind::Nic) == 4);
  CHECK(t.count(VertexKind::NvSwitch) == 0);
  // Each pair is listed on both GPUs and becomes one link: 8 GPUs x 4 peers / 2.
  CHECK(t.count(LinkType::NvLink) == 16);
  CHECK(t.count(LinkType::Pcie) == 16);

  auto double_link = link_between(t, "node0/gpu0", "node0/gpu3");
  REQUIRE(double_link);
  CHECK(double_link->bw_gbps == doctest::Approx(50.0));  // 2 x NVLink2 25 GB/s
  CHECK(double_link->lanes == 2);
  auto single = link_between(t, "node0/gpu0", "node0/gpu1");
  REQUIRE(single);
  CHECK(single->bw_gbps == doctest::Approx(25.0));
  CHECK(single->lanes == 1);
  CHECK(link_between(t, "node0/gpu4", "node0/gpu0")->lanes == 2);  // across the cube
  CHECK_FALSE(link_between(t, "node0/gpu0", "node0/gpu5"));

  // Six NVLinks per V100.
  for (VertexId g : t.vertices_of(VertexKind::Gpu)) {
    int lanes = 0;
    for (const Adjacent& a : t.adjacent(g))
      if (t.link(a.link).type == LinkType::NvLink) lanes += t.link(a.link).lanes;
    CHECK(lanes == 6);
  }
  CHECK(link_between(t, "node0/pci-0000:03:00.0", "node0/gpu0")->bw_gbps == doctest::Approx(kGen3x16).epsilon(0.001));
  CHECK(t.vertex(t.at("node0/nic2")).port_gbps == doctest::Approx(12.5));  // EDR 100 Gb/s

  CHECK(t.notes == std::vector<std::string>{
                       "the file describes one host: no inter-host fabric (use --fabric when merging)",
                       "the file gives no bandwidth between CPUs: the SMP links assume 62.4 GB/s (Intel: 3 UPI links x 20.8 GB/s) per direction",
                       "no <gpu rank> attributes: ranks follow the GPU dev index",
                   });

  Router router(t);
  const Path direct = router.route_ranks(0, 3);
  CHECK(direct.hops.size() == 1);
  CHECK(direct.bottleneck_gbps == doctest::Approx(50.0));
  // GPUs do not forward, so 0 -> 5 (no NVLink) goes over PCIe and the SMP link.
  const Path indirect = router.route_ranks(0, 5);
  REQUIRE(indirect.found);
  CHECK(indirect.bottleneck_gbps == doctest::Approx(kGen3x16).epsilon(0.001));
  CHECK(indirect.hops.size() == 5);
}

TEST_CASE("nccl xml: GH200-like file with NVLink-C2C and a dual-port NIC") {
  const Topology t = load_fixture("gh200.xml");
  CHECK(t.count(VertexKind::Gpu) == 1);
  CHECK(t.count(VertexKind::Nic) == 3);
  CHECK(t.count(LinkType::C2c) == 1);
  // Two links join the GPU and its CPU, PCIe and C2C: look at all of them.
  int found = 0;
  for (const Adjacent& a : t.adjacent(t.at("node0/gpu0"))) {
    const Link& l = t.link(a.link);
    if (l.type != LinkType::C2c) continue;
    ++found;
    CHECK(t.vertex(a.peer).id == "node0/cpu0");
    CHECK(l.bw_gbps == doctest::Approx(450.0));  // 45000 MB/s x 10 links
    CHECK(l.lanes == 10);
  }
  CHECK(found == 1);

  // The two ports share the adapter's PCIe link behind a PCI vertex.
  const Vertex& adapter = t.vertex(t.at("node0/pci-0002:01:00.0"));
  CHECK(adapter.kind == VertexKind::PciSwitch);
  CHECK(adapter.label == "NIC with 2 ports");
  REQUIRE(link_between(t, "node0/pci-0002:01:00.0", "node0/nic1"));
  REQUIRE(link_between(t, "node0/pci-0002:01:00.0", "node0/nic2"));
  CHECK(t.vertex(t.at("node0/nic2")).attrs.at("port") == "2");
  CHECK(t.vertex(t.at("node0/nic2")).attrs.at("link_layer") == "ethernet");
  CHECK(t.vertex(t.at("node0/nic2")).port_gbps == doctest::Approx(25.0));

  CHECK(t.notes == std::vector<std::string>{
                       "the file describes one host: no inter-host fabric (use --fabric when merging)",
                       "NIC ports that share one PCIe link: 0002:01:00.0 (2 ports)",
                   });

  // GPU to NIC goes over C2C (450) rather than the GPU's Gen4 PCIe link.
  const Path p = Router(t).route(t.at("node0/gpu0"), t.at("node0/nic0"));
  REQUIRE(p.found);
  REQUIRE(p.hops.size() == 2);
  CHECK(t.link(p.hops[0].link).type == LinkType::C2c);
  CHECK(p.bottleneck_gbps == doctest::Approx(kGen5x16).epsilon(0.001));
}

TEST_CASE("nccl xml: rank order") {
  SUBCASE("by the rank attribute") {
    const Topology t = import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" rank=\"2\"") +
                                               gpu_pci("0000:02:00.0", "dev=\"1\" rank=\"0\"") +
                                               gpu_pci("0000:03:00.0", "dev=\"2\" rank=\"1\"")),
                                       "ranks.xml");
    CHECK(rank_ids(t) == std::vector<std::string>{"node0/gpu1", "node0/gpu2", "node0/gpu0"});
    CHECK(std::count(t.notes.begin(), t.notes.end(), "no NVLink in the file: GPUs talk over PCIe") == 1);
  }
  SUBCASE("global ranks of a later host are renumbered from 0") {
    const Topology t = import_nccl_xml(
        one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" rank=\"9\"") + gpu_pci("0000:02:00.0", "dev=\"1\" rank=\"8\"")), "node1.xml");
    CHECK(rank_ids(t) == std::vector<std::string>{"node0/gpu1", "node0/gpu0"});
    CHECK(t.notes.back() == "the <gpu rank> attributes are not 0..N-1: ranks renumbered from 0 in their order");
  }
  SUBCASE("without rank, by dev, not document order") {
    const Topology t =
        import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"1\"") + gpu_pci("0000:02:00.0", "dev=\"0\"")), "devs.xml");
    CHECK(rank_ids(t) == std::vector<std::string>{"node0/gpu0", "node0/gpu1"});
    CHECK(t.vertex(t.rank_vertex(0)).busid == "0000:02:00.0");
    CHECK(t.notes.back() == "no <gpu rank> attributes: ranks follow the GPU dev index");
  }
  SUBCASE("GPUs without rank come after the ranked ones") {
    const Topology t = import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\"") + gpu_pci("0000:02:00.0", "dev=\"1\" rank=\"0\"")),
                                       "mixed.xml");
    CHECK(rank_ids(t) == std::vector<std::string>{"node0/gpu1", "node0/gpu0"});
    CHECK(t.notes.back() == "1 of 2 GPUs have no rank attribute: ranked after the others, by dev");
  }
  SUBCASE("bare GPUs take the devs the explicit ones leave free") {
    const Topology t = import_nccl_xml(
        one_cpu("    <pci busid=\"0000:01:00.0\" class=\"0x0302\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"/>\n" +
                gpu_pci("0000:02:00.0", "dev=\"0\"")),
        "bare.xml");
    CHECK(t.vertex(t.at("node0/gpu1")).busid == "0000:01:00.0");
    CHECK(rank_ids(t) == std::vector<std::string>{"node0/gpu0", "node0/gpu1"});
  }
  SUBCASE("no GPU: one rank per cpu") {
    const Topology t = import_nccl_xml(
        "<system version=\"1\">\n  <cpu numaid=\"0\" vendor=\"GenuineIntel\"/>\n  <cpu numaid=\"1\" vendor=\"GenuineIntel\"/>\n</system>\n",
        "cpus.xml");
    CHECK(rank_ids(t) == std::vector<std::string>{"node0/cpu0", "node0/cpu1"});
    CHECK(std::count(t.notes.begin(), t.notes.end(), "no GPU in the file: one rank per <cpu>") == 1);
    CHECK(std::count(t.notes.begin(), t.notes.end(), "no NIC in the file") == 1);
  }
}

TEST_CASE("nccl xml: NVLink pairs and targets") {
  SUBCASE("counts that disagree: the larger, noted") {
    const Topology t = import_nccl_xml(
        one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" sm=\"80\"", "        <nvlink target=\"0000:02:00.0\" count=\"12\" tclass=\"0x030200\"/>\n") +
                gpu_pci("0000:02:00.0", "dev=\"1\" sm=\"80\"", "        <nvlink target=\"0000:01:00.0\" count=\"4\" tclass=\"0x030200\"/>\n")),
        "pair.xml");
    CHECK(t.count(LinkType::NvLink) == 1);
    auto l = link_between(t, "node0/gpu0", "node0/gpu1");
    REQUIRE(l);
    CHECK(l->lanes == 12);
    CHECK(l->bw_gbps == doctest::Approx(300.0));
    CHECK(std::count(t.notes.begin(), t.notes.end(),
                     "NVLink counts between node0/gpu0 and node0/gpu1 disagree (12 listed on node0/gpu0, 4 on node0/gpu1): took 12") == 1);
  }
  SUBCASE("without tclass: a GPU of the file, else an NVSwitch as NCCL assumes; bus ids compared case-blind") {
    const Topology t = import_nccl_xml(
        one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" sm=\"100\"",
                        "        <nvlink target=\"00000000:02:00.0\" count=\"2\"/>\n        <nvlink target=\"0000:c0:00.0\" count=\"16\"/>\n") +
                gpu_pci("0000:02:00.0", "dev=\"1\" sm=\"100\"", "        <nvlink target=\"0000:01:00.0\" count=\"2\"/>\n")),
        "mixed.xml");
    auto pair = link_between(t, "node0/gpu0", "node0/gpu1");
    REQUIRE(pair);
    CHECK(pair->bw_gbps == doctest::Approx(100.0));  // 2 x NVLink5 50 GB/s
    auto plane = link_between(t, "node0/gpu0", "node0/nvswitch");
    REQUIRE(plane);
    CHECK(plane->bw_gbps == doctest::Approx(800.0));
    CHECK(std::count(t.notes.begin(), t.notes.end(),
                     "<nvlink> targets without tclass that are no GPU of the file are taken as NVSwitches, as NCCL does") == 1);
  }
  SUBCASE("to the CPU (tclass 0x068001)") {
    const Topology t = import_nccl_xml(
        one_cpu(gpu_pci("0035:03:00.0", "dev=\"0\" sm=\"70\"", "        <nvlink target=\"ffff:ff:ff.0\" count=\"3\" tclass=\"0x068001\"/>\n")),
        "power9.xml");
    CHECK(t.count(LinkType::NvLink) == 1);
    bool found = false;
    for (const Adjacent& a : t.adjacent(t.at("node0/gpu0")))
      if (t.link(a.link).type == LinkType::NvLink) {
        found = true;
        CHECK(t.vertex(a.peer).id == "node0/cpu0");
        CHECK(t.link(a.link).bw_gbps == doctest::Approx(75.0));
      }
    CHECK(found);
  }
}

TEST_CASE("nccl xml: a <nic> straight under a <cpu>, a <net> without dev, elements not modelled") {
  const Topology t = import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" rank=\"0\"") +
                                             "    <nic>\n      <net name=\"veth0\" dev=\"0\"/>\n      <net name=\"veth1\"/>\n    </nic>\n"
                                             "    <pcilink target=\"0000:02:00.0\"/>\n"),
                                     "virt.xml");
  CHECK(t.count(VertexKind::Nic) == 1);
  const Vertex& nic = t.vertex(t.at("node0/nic0"));
  CHECK(nic.label == "veth0");
  CHECK(nic.busid.empty());
  CHECK(nic.attrs.count("link_layer") == 0);
  auto l = link_between(t, "node0/cpu0", "node0/nic0");
  REQUIRE(l);
  CHECK(l->bw_gbps == doctest::Approx(kGen3x16).epsilon(0.001));
  CHECK(t.notes == std::vector<std::string>{
                       "the file describes one host: no inter-host fabric (use --fabric when merging)",
                       "no PCIe link_speed in the file for <nic> at line 6 (nor above): assumed 8 GT/s (Gen3)",
                       "no PCIe link_width in the file for <nic> at line 6 (nor above): assumed x16",
                       "no net speed in the file: port bandwidth unknown for node0/nic0 (veth0)",
                       "<net> without dev skipped, as NCCL does: veth1 (line 8)",
                       "elements not modelled: <pcilink>",
                   });
}

TEST_CASE("nccl xml: malformed fixtures, messages word for word") {
  CHECK_THROWS_WITH_AS(load_bad("unclosed.xml"), "unclosed.xml: line 5: malformed XML: Start-end tags mismatch", collkit::InputError);
  CHECK_THROWS_WITH_AS(load_bad("root.xml"), "root.xml: line 2: the root element is <graphs>, expected <system>", collkit::InputError);
  CHECK_THROWS_WITH_AS(load_bad("gpu-no-dev.xml"), "gpu-no-dev.xml: line 4: <gpu> has no \"dev\" attribute", collkit::InputError);
  CHECK_THROWS_WITH_AS(load_bad("nvlink-no-target.xml"), "nvlink-no-target.xml: line 10: <nvlink> has no \"target\" attribute",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(load_bad("nvlink-unknown-target.xml"),
                       "nvlink-unknown-target.xml: line 5: <nvlink> target \"0000:1a:00.0\" is not a GPU in the file", collkit::InputError);
  CHECK_THROWS_WITH_AS(load_bad("link-speed.xml"), "link-speed.xml: line 4: <pci> link_speed \"fast\" is not of the form \"16.0 GT/s PCIe\"",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(load_bad("non-numeric.xml"), "non-numeric.xml: line 5: <nvlink> attribute \"count\" is not an integer: \"twelve\"",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(
      load_bad("no-sm.xml"),
      "no-sm.xml: line 4: <gpu> dev 0 has <nvlink> elements but no \"sm\" attribute: the NVLink bandwidth cannot be derived",
      collkit::InputError);
  // Through the file API the message names the path as given.
  const std::string path = fixture("bad/root.xml");
  CHECK_THROWS_WITH_AS(import_nccl_xml_file(path), (path + ": line 2: the root element is <graphs>, expected <system>").c_str(),
                       collkit::InputError);
}

TEST_CASE("nccl xml: other errors") {
  CHECK_THROWS_AS(import_nccl_xml_file(fixture("no-such-file.xml")), collkit::SystemError);
  CHECK_THROWS_WITH_AS(import_nccl_xml("", "empty.xml"), "empty.xml: line 1: malformed XML: No document element found",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml("<system version=\"2\">\n</system>\n", "v2.xml"),
                       "v2.xml: line 1: <system> version \"2\" is not supported (expected 1)", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml("<system version=\"1\">\n</system>\n", "nocpu.xml"),
                       "nocpu.xml: line 1: <system> has no <cpu> element", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml("<system version=\"1\">\n  <cpu numaid=\"zero\"/>\n</system>\n", "numa.xml"),
                       "numa.xml: line 2: <cpu> attribute \"numaid\" is not an integer: \"zero\"", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"-1\"")), "neg.xml"),
                       "neg.xml: line 4: <gpu> attribute \"dev\" must be >= 0, got -1", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\"") + gpu_pci("0000:02:00.0", "dev=\"0\"")), "dup.xml"),
                       "dup.xml: line 7: <gpu> dev 0 appears twice (first at line 4)", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\"") + gpu_pci("0000:01:00.0", "dev=\"1\"")), "bus.xml"),
                       "bus.xml: line 6: <pci> busid \"0000:01:00.0\" appears twice (first at line 3)", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu("    <pci busid=\"0000:01:00.0\" class=\"GPU\"/>\n"), "class.xml"),
                       "class.xml: line 3: <pci> class \"GPU\" is not a PCI class code", collkit::InputError);
  CHECK_THROWS_WITH_AS(
      import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" sm=\"90\"",
                                      "        <nvlink target=\"0000:02:00.0\" count=\"4\" tclass=\"0x010802\"/>\n")),
                      "tclass.xml"),
      "tclass.xml: line 5: <nvlink> tclass \"0x010802\" is not a GPU (0x03...), an NVSwitch (0x068000) or a CPU (0x068001)",
      collkit::InputError);
  CHECK_THROWS_WITH_AS(
      import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" sm=\"50\"",
                                      "        <nvlink target=\"0000:02:00.0\" count=\"4\" tclass=\"0x068000\"/>\n")),
                      "maxwell.xml"),
      "maxwell.xml: line 4: <gpu> dev 0: no NVLink rate is known for sm 50", collkit::InputError);
  CHECK_THROWS_WITH_AS(
      import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" sm=\"90\"",
                                      "        <nvlink target=\"0000:01:00.0\" count=\"4\" tclass=\"0x030200\"/>\n")),
                      "self.xml"),
      "self.xml: line 5: <nvlink> target \"0000:01:00.0\" is the GPU itself", collkit::InputError);
  CHECK_THROWS_WITH_AS(
      import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\" sm=\"90\"", "        <c2c count=\"10\"/>\n")), "c2c.xml"),
      "c2c.xml: line 5: <c2c> has no \"bw\" attribute", collkit::InputError);
}

TEST_CASE("nccl xml: what pugixml accepts and the format does not") {
  // 10,000 nested switches once overflowed the stack of the recursive walk.
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "<pci busid=\"0000:00:00." + std::to_string(i) + "\">";
  for (int i = 0; i < 10000; ++i) deep += "</pci>";
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu(deep + "\n"), "deep.xml"),
                       "deep.xml: line 3: elements nested deeper than 64 levels (the limit on XML depth)", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu("    <pci busid=\"0000:01:00.0\" busid=\"0000:02:00.0\"/>\n"), "attr.xml"),
                       "attr.xml: line 3: <pci> has the attribute \"busid\" twice", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu("") + "<system version=\"1\"/>\n", "roots.xml"),
                       "roots.xml: line 5: a second root element <system>: the file holds one <system>", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu("    <!-- \x01 -->\n"), "ctl.xml"),
                       "ctl.xml: line 3: control byte 0x01 (XML allows only tab, newline and carriage return)", collkit::InputError);
  CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu("") + std::string(1, '\0'), "nul.xml"),
                       "nul.xml: line 5: control byte 0x00 (XML allows only tab, newline and carriage return)", collkit::InputError);
  // A stray byte, an overlong "/", a surrogate, past U+10FFFF, a truncated sequence.
  const std::pair<std::string, std::string> bad_utf8[] = {
      {"\xff", "ff"}, {"\xc0\xaf", "c0"}, {"\xed\xa0\x80", "ed"}, {"\xf4\x90\x80\x80", "f4"}, {"\xe2\x82 ", "e2"}};
  for (const auto& [bytes, first] : bad_utf8)
    CHECK_THROWS_WITH_AS(import_nccl_xml(one_cpu("    <!-- " + bytes + " -->\n"), "utf8.xml"),
                         ("utf8.xml: line 3: invalid UTF-8 (byte 0x" + first + ")").c_str(), collkit::InputError);
  // Valid UTF-8 in a comment still imports.
  CHECK_NOTHROW(import_nccl_xml(one_cpu(gpu_pci("0000:01:00.0", "dev=\"0\"") + "    <!-- caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 -->\n"),
                                "ok.xml"));
}
