#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>

#include "collkit/core/error.h"
#include "collkit/topo/discover.h"
#include "collkit/topo/io.h"
#include "collkit/topo/routing.h"
// The private interface between the scans and the joining step (libs/topo/src).
#include "discover_internal.h"

using namespace collkit::topo;
using collkit::InputError;

namespace {

bool any_note(const Topology& t, std::initializer_list<std::string_view> words) {
  return std::any_of(t.notes.begin(), t.notes.end(), [&](const std::string& n) {
    return std::all_of(words.begin(), words.end(), [&](std::string_view w) { return n.find(w) != std::string::npos; });
  });
}

Vertex make(std::string id, VertexKind kind, const std::string& host, std::string busid = "", int numa = -1) {
  Vertex v;
  v.id = host + "/" + std::move(id);
  v.kind = kind;
  v.host = host;
  v.busid = std::move(busid);
  v.numa = numa;
  return v;
}

Link link(VertexId a, VertexId b, LinkType type, double bw, int lanes = 1) {
  Link l;
  l.a = a;
  l.b = b;
  l.type = type;
  l.bw_gbps = bw;
  l.lanes = lanes;
  return l;
}

// What hwloc would report for a two-socket host: cpu0 - pci switch - {gpu0, gpu1, nic0}, cpu1
// with two cores each; gpu2 hangs from cpu1 directly.
detail::HostScan fake_gpu_host(const std::string& host) {
  detail::HostScan s;
  s.hostname = host;
  Topology& t = s.t;
  VertexId cpu0 = t.add_vertex(make("cpu0", VertexKind::Cpu, host, "", 0));
  VertexId cpu1 = t.add_vertex(make("cpu1", VertexKind::Cpu, host, "", 1));
  VertexId sw = t.add_vertex(make("pci-0000:10:00.0", VertexKind::PciSwitch, host, "0000:10:00.0", 0));
  VertexId g0 = t.add_vertex(make("gpu0", VertexKind::Gpu, host, "0000:11:00.0", 0));
  VertexId g1 = t.add_vertex(make("gpu1", VertexKind::Gpu, host, "0000:12:00.0", 0));
  VertexId g2 = t.add_vertex(make("gpu2", VertexKind::Gpu, host, "0000:81:00.0", 1));
  VertexId n0 = t.add_vertex(make("nic0", VertexKind::Nic, host, "0000:13:00.0", 0));
  t.add_link(link(cpu0, cpu1, LinkType::Smp, 62.4));
  t.add_link(link(cpu0, sw, LinkType::Pcie, 63, 16));
  for (VertexId v : {g0, g1, n0}) t.add_link(link(sw, v, LinkType::Pcie, 63, 16));
  t.add_link(link(cpu1, g2, LinkType::Pcie, 63, 16));
  s.core_cpu = {cpu0, cpu0, cpu1, cpu1};
  s.notes.push_back("from hwloc");
  return s;
}

// A host without GPUs: two NUMA nodes of two cores, one RDMA NIC of 400 Gb/s under cpu0.
detail::HostScan fake_cpu_host(const std::string& host) {
  detail::HostScan s;
  s.hostname = host;
  Topology& t = s.t;
  VertexId cpu0 = t.add_vertex(make("cpu0", VertexKind::Cpu, host, "", 0));
  VertexId cpu1 = t.add_vertex(make("cpu1", VertexKind::Cpu, host, "", 1));
  Vertex nic = make("nic0", VertexKind::Nic, host, "0000:13:00.0", 0);
  nic.port_gbps = 50;
  nic.attrs["link_layer"] = "infiniband";
  VertexId n0 = t.add_vertex(nic);
  t.add_link(link(cpu0, cpu1, LinkType::Smp, 62.4));
  t.add_link(link(cpu0, n0, LinkType::Pcie, 31.5, 16));
  s.core_cpu = {cpu0, cpu0, cpu1, cpu1};
  return s;
}

// The link joining a and b directly.
const Link& between(const Topology& t, VertexId a, VertexId b) {
  for (const Adjacent& x : t.adjacent(a))
    if (x.peer == b) return t.link(x.link);
  throw InputError("no link");
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

detail::GpuScan no_gpus() {
  detail::GpuScan g;
  g.absent_reason = "no GPU driver (fake)";
  return g;
}

Topology cpu_rank_topology(const std::string& host) {
  return detail::assemble_host(fake_cpu_host(host), no_gpus(), {}, {});
}

}  // namespace

TEST_CASE("discover: this machine") {
  Topology t = discover_local({});
  CHECK(t.source == "discover");
  CHECK(t.name == detail::local_hostname());
  CHECK(t.count(VertexKind::Cpu) >= 1);
  CHECK(t.hosts() == std::vector<std::string>{detail::local_hostname()});
  t.check_connected();
  bool gpu_ranks = t.num_ranks() > 0 && t.vertex(t.rank_vertex(0)).kind == VertexKind::Gpu;
  if (!gpu_ranks) {
    // No usable GPU: one rank per core, each on a CPU vertex, and the notes say why.
    CHECK(t.num_ranks() == detail::scan_hwloc().core_cpu.size());
    for (VertexId v : t.rank_vertices()) CHECK(t.vertex(v).kind == VertexKind::Cpu);
    CHECK(any_note(t, {"GPU", "CPU ranks"}));
  }
  // What it writes, it reads back.
  Topology back = from_json(to_json(t), "discovered.json");
  CHECK(back.fingerprint() == t.fingerprint());

  if (!gpu_ranks) {
    Topology three = discover_local({3, ""});
    CHECK(three.num_ranks() == 3);
    CHECK(any_note(three, {"CPU ranks, 3 as asked"}));
  }
  CHECK_THROWS_WITH_AS(discover_local({-1, ""}), "ranks per host must be >= 0, got -1", InputError);
  // Once bad_alloc making the ranks; refused before any scan.
  CHECK_THROWS_WITH_AS(discover_local({1000000000, ""}),
                       "ranks per host must be at most 65536 (the limit on ranks per host), got 1000000000", InputError);
}

TEST_CASE("discover: hwloc walk of a two-socket GPU host") {
  // hwloc reads the host from XML instead of this machine (HWLOC_XMLFILE, hwloc's own switch).
  ScopedEnv xml("HWLOC_XMLFILE", std::string(COLLKIT_FIXTURES) + "/hwloc/two-socket-gpu.xml");
  detail::HostScan s = detail::scan_hwloc();
  const Topology& t = s.t;
  const std::string h = s.hostname + "/";
  auto id = [&](VertexId v) { return t.vertex(v).id; };

  // One CPU per NUMA node, joined by an SMP link of Intel's default figure.
  REQUIRE(t.count(VertexKind::Cpu) == 2);
  const Vertex& cpu0 = t.vertex(t.at(h + "cpu0"));
  CHECK(cpu0.label == "Intel(R) Xeon(R) Platinum 8480C");
  CHECK(cpu0.numa == 0);
  CHECK(t.vertex(t.at(h + "cpu1")).numa == 1);
  CHECK(between(t, t.at(h + "cpu0"), t.at(h + "cpu1")).type == LinkType::Smp);
  CHECK(between(t, t.at(h + "cpu0"), t.at(h + "cpu1")).bw_gbps == 62.4);
  CHECK(s.core_cpu == std::vector<VertexId>{t.at(h + "cpu0"), t.at(h + "cpu0"), t.at(h + "cpu1"), t.at(h + "cpu1")});

  // Bridges leading to GPUs or NICs are PCI switches; the NVMe drive's root port is not kept.
  CHECK(t.count(VertexKind::PciSwitch) == 3);
  CHECK_FALSE(t.find(h + "pci-00ab:00:02.0"));
  VertexId root = t.at(h + "pci-00ab:00:01.0"), sw = t.at(h + "pci-00ab:10:00.0");
  CHECK(between(t, t.at(h + "cpu0"), root).bw_gbps == doctest::Approx(63.015385));
  CHECK(between(t, root, sw).type == LinkType::Pcie);

  // GPUs numbered by bus id, NIC with both of its OS devices.
  REQUIRE(t.count(VertexKind::Gpu) == 3);
  CHECK(t.vertex(t.at(h + "gpu0")).busid == "00ab:11:00.0");
  CHECK(t.vertex(t.at(h + "gpu1")).busid == "00ab:12:00.0");
  CHECK(t.vertex(t.at(h + "gpu2")).busid == "00ab:81:00.0");
  CHECK(t.vertex(t.at(h + "gpu2")).numa == 1);
  CHECK(t.vertex(t.at(h + "gpu0")).attrs.at("vendor") == "nvidia");
  CHECK(id(t.adjacent(t.at(h + "gpu0"))[0].peer) == h + "pci-00ab:10:00.0");
  CHECK(id(t.adjacent(t.at(h + "gpu2"))[0].peer) == h + "pci-00ab:80:01.0");
  const Vertex& nic = t.vertex(t.at(h + "nic0"));
  CHECK(nic.label == "mlx5_0");
  CHECK(nic.busid == "00ab:13:00.0");
  CHECK(nic.attrs.at("ibdev") == "mlx5_0");
  CHECK(nic.attrs.at("netdev") == "ib0");
  CHECK(between(t, sw, t.at(h + "nic0")).bw_gbps == doctest::Approx(31.507692));
  CHECK(t.count(VertexKind::Nic) == 1);

  // What hwloc did not say is noted: no HMAT bandwidth, no link speed for gpu2, the SMP default.
  CHECK(cpu0.local_bw_gbps == 0);
  CHECK(between(t, t.at(h + "pci-00ab:80:01.0"), t.at(h + "gpu2")).bw_gbps == doctest::Approx(31.5077).epsilon(1e-4));
  Topology joined;
  joined.notes = s.notes;
  CHECK(any_note(joined, {"no memory bandwidth"}));
  CHECK(any_note(joined, {"taken as Gen4 x16"}));
  CHECK(any_note(joined, {"GenuineIntel default 62.4 GB/s"}));

  // Without a GPU driver the host gets one rank per core, and is connected.
  Topology cpu = detail::assemble_host(s, no_gpus(), {}, {});
  CHECK(cpu.num_ranks() == 4);

  // What hwloc did not give is filled in for both CPU vertices, and the note says so instead.
  detail::fill_copy_bandwidth(cpu, 12.5);
  CHECK(cpu.vertex(cpu.at(h + "cpu0")).local_bw_gbps == 12.5);
  CHECK(cpu.vertex(cpu.at(h + "cpu1")).local_bw_gbps == 12.5);
  CHECK_FALSE(any_note(cpu, {"copy bandwidth within a CPU vertex unknown"}));
  CHECK(any_note(cpu, {"copy bandwidth within 2 CPU vertices set to 12.5 GB/s"}));
  // A vertex with a figure keeps it; with every vertex known nothing changes.
  cpu.mutable_vertex(cpu.at(h + "cpu1")).local_bw_gbps = 40;
  cpu.mutable_vertex(cpu.at(h + "cpu0")).local_bw_gbps = 0;
  detail::fill_copy_bandwidth(cpu, 7);
  CHECK(cpu.vertex(cpu.at(h + "cpu0")).local_bw_gbps == 7);
  CHECK(cpu.vertex(cpu.at(h + "cpu1")).local_bw_gbps == 40);
  auto notes = cpu.notes;
  detail::fill_copy_bandwidth(cpu, 3);
  CHECK(cpu.notes == notes);
}

TEST_CASE("discover: this host's copy bandwidth is measured, never 0") {
  // 16 MiB twice: the figure is whatever this machine does, but a copy always takes some time.
  double gbps = detail::measure_copy_gbps(16 << 20, 2);
  CHECK(gbps > 0);
  CHECK(gbps < 10000);
  CHECK(detail::measure_copy_gbps(0, 2) == 0);
  CHECK(detail::measure_copy_gbps(1024, 0) == 0);
}

TEST_CASE("discover: ibverbs rate codes") {
  // Lanes by active_width.
  CHECK(detail::ib_width_lanes(1) == 1);
  CHECK(detail::ib_width_lanes(2) == 4);
  CHECK(detail::ib_width_lanes(4) == 8);
  CHECK(detail::ib_width_lanes(8) == 12);
  CHECK(detail::ib_width_lanes(16) == 2);
  CHECK(detail::ib_width_lanes(0) == 0);
  CHECK(detail::ib_width_lanes(3) == 0);
  // Per-lane Gb/s by active_speed(_ex).
  CHECK(detail::ib_lane_gbit(1) == 2.5);
  CHECK(detail::ib_lane_gbit(2) == 5.0);
  CHECK(detail::ib_lane_gbit(4) == 10.0);
  CHECK(detail::ib_lane_gbit(8) == 10.0);
  CHECK(detail::ib_lane_gbit(16) == 14.0);
  CHECK(detail::ib_lane_gbit(32) == 25.0);
  CHECK(detail::ib_lane_gbit(64) == 50.0);
  CHECK(detail::ib_lane_gbit(128) == 100.0);
  CHECK(detail::ib_lane_gbit(256) == 200.0);
  CHECK(detail::ib_lane_gbit(0) == 0);
  CHECK(detail::ib_lane_gbit(3) == 0);
  // Port GB/s = lanes x Gb/s / 8.
  CHECK(detail::ib_port_gbps(2, 128, 0) == 50.0);   // 4x NDR = 400 Gb/s
  CHECK(detail::ib_port_gbps(2, 64, 0) == 25.0);    // 4x HDR = 200 Gb/s
  CHECK(detail::ib_port_gbps(2, 32, 0) == 12.5);    // 4x EDR = 100 Gb/s
  CHECK(detail::ib_port_gbps(2, 16, 0) == 7.0);     // 4x FDR = 56 Gb/s
  CHECK(detail::ib_port_gbps(2, 8, 0) == 5.0);      // 4x FDR10 = 40 Gb/s
  CHECK(detail::ib_port_gbps(2, 4, 0) == 5.0);      // 4x QDR = 40 Gb/s
  CHECK(detail::ib_port_gbps(2, 2, 0) == 2.5);      // 4x DDR = 20 Gb/s
  CHECK(detail::ib_port_gbps(2, 1, 0) == 1.25);     // 4x SDR = 10 Gb/s
  CHECK(detail::ib_port_gbps(1, 32, 0) == 3.125);   // 1x EDR = 25 Gb/s (a 25G RoCE port)
  CHECK(detail::ib_port_gbps(4, 128, 0) == 100.0);  // 8x NDR = 800 Gb/s
  CHECK(detail::ib_port_gbps(8, 64, 0) == 75.0);    // 12x HDR = 600 Gb/s
  CHECK(detail::ib_port_gbps(16, 64, 0) == 12.5);   // 2x HDR = 100 Gb/s
  // active_speed_ex, when non-zero, wins over active_speed: 4x XDR = 800 Gb/s.
  CHECK(detail::ib_port_gbps(2, 0, 256) == 100.0);
  CHECK(detail::ib_port_gbps(2, 32, 256) == 100.0);
  CHECK(detail::ib_port_gbps(2, 32, 128) == 50.0);
  // Unknown codes: unknown rate.
  CHECK(detail::ib_port_gbps(3, 128, 0) == 0);
  CHECK(detail::ib_port_gbps(2, 0, 0) == 0);
}

TEST_CASE("discover: PCI bus ids") {
  CHECK(detail::pci_busid(0, 0x1a, 0, 0) == "0000:1a:00.0");
  CHECK(detail::normalize_busid("00000000:1A:00.0") == "0000:1a:00.0");  // NVML
  CHECK(detail::normalize_busid("0000:1A:00.0") == "0000:1a:00.0");      // CUDA
  CHECK(detail::normalize_busid("0001:c1:1f.7") == "0001:c1:1f.7");      // sysfs
  CHECK(detail::normalize_busid("0000:1a:00") == "0000:1a:00.0");
  CHECK_FALSE(detail::normalize_busid("pci0000:00"));
  CHECK_FALSE(detail::normalize_busid("0000:1a"));
  CHECK_FALSE(detail::normalize_busid("0000:1a:00.0x"));
  CHECK_FALSE(detail::normalize_busid("0000:1a:20.0"));  // device numbers stop at 0x1f
  CHECK_FALSE(detail::normalize_busid(""));
}

TEST_CASE("discover: joining GPU, NVLink and NIC scans") {
  detail::GpuScan gpus;
  // CUDA order differs from bus order (CUDA_DEVICE_ORDER=FASTEST_FIRST): CUDA 0 is gpu1.
  gpus.gpus = {{0, "0000:12:00.0", "NVIDIA H100", 90}, {1, "0000:11:00.0", "NVIDIA H100", 90}};
  // gpu0-gpu1 with 4 links, seen from both ends; 2 links each to an NVSwitch; gpu2 is hidden from
  // CUDA but still an NVLink peer of gpu0.
  gpus.nvlinks = {{"0000:11:00.0", "0000:12:00.0", 4}, {"0000:12:00.0", "0000:11:00.0", 4},
                  {"0000:11:00.0", "0000:c0:00.0", 2}, {"0000:12:00.0", "0000:c1:00.0", 2},
                  {"0000:11:00.0", "0000:81:00.0", 1}, {"0000:99:00.0", "0000:11:00.0", 1}};
  detail::NicScan nics;
  detail::FoundNic ib;
  ib.device = "mlx5_0";
  ib.index = 0;
  ib.port_gbps = 50;
  ib.guid = "0c42:a103:0062:a6bc";
  ib.state = "active";
  ib.busid = "0000:13:00.0";
  ib.pci_path = {"0000:10:00.0"};
  detail::FoundNic second = ib;  // a second port of the same device
  second.port = 2;
  second.pcie = {31.5, 16};
  detail::FoundNic rxe;
  rxe.device = "rxe0";
  rxe.index = 1;
  rxe.link_layer = "ethernet";
  rxe.state = "active";
  rxe.port_gbps = 3.125;
  nics.nics = {ib, second, rxe};

  Topology t = detail::assemble_host(fake_gpu_host("h"), gpus, nics, {});
  CHECK(t.name == "h");
  CHECK(t.source == "discover");
  // Ranks by CUDA order, on the vertices matched by bus id.
  REQUIRE(t.num_ranks() == 2);
  CHECK(t.vertex(t.rank_vertex(0)).id == "h/gpu1");
  CHECK(t.vertex(t.rank_vertex(1)).id == "h/gpu0");
  CHECK(t.vertex(t.at("h/gpu1")).index == 0);
  CHECK(t.vertex(t.at("h/gpu1")).attrs.at("sm") == "90");
  CHECK(t.vertex(t.at("h/gpu1")).label == "NVIDIA H100");
  CHECK(t.vertex(t.at("h/gpu2")).index == -1);
  CHECK(any_note(t, {"1 GPU(s) on PCI not visible to CUDA"}));

  // NVLinks: one link per GPU pair (lanes = links, 25 GB/s each on sm 90), the rest to one NVSwitch.
  CHECK(t.count(LinkType::NvLink) == 4);
  CHECK(between(t, t.at("h/gpu0"), t.at("h/gpu1")).type == LinkType::NvLink);
  CHECK(between(t, t.at("h/gpu0"), t.at("h/gpu1")).lanes == 4);
  CHECK(between(t, t.at("h/gpu0"), t.at("h/gpu1")).bw_gbps == 100.0);
  CHECK(between(t, t.at("h/gpu0"), t.at("h/gpu2")).bw_gbps == 25.0);
  Path p = Router(t).route(t.at("h/gpu1"), t.at("h/gpu0"));
  CHECK(p.hops.size() == 1);
  VertexId sw = t.at("h/nvswitch");
  CHECK(t.vertex(sw).kind == VertexKind::NvSwitch);
  CHECK(t.adjacent(sw).size() == 2);
  CHECK(t.link(t.adjacent(sw)[0].link).lanes == 2);
  CHECK(any_note(t, {"0000:99:00.0", "left out"}));

  // NICs: port 1 takes hwloc's vertex, port 2 gets its own under the same switch, rxe0 (no PCI)
  // hangs from cpu0.
  const Vertex& n0 = t.vertex(t.at("h/nic0"));
  CHECK(n0.label == "mlx5_0");
  CHECK(n0.port_gbps == 50);
  CHECK(n0.attrs.at("link_layer") == "infiniband");
  CHECK(n0.attrs.at("port") == "1");
  CHECK(n0.attrs.at("guid") == "0c42:a103:0062:a6bc");
  CHECK(n0.attrs.at("state") == "active");
  const Vertex& n1 = t.vertex(t.at("h/nic1"));
  CHECK(n1.label == "mlx5_0");
  CHECK(n1.attrs.at("port") == "2");
  CHECK(t.adjacent(t.at("h/nic1"))[0].peer == t.at("h/pci-0000:10:00.0"));
  CHECK(t.link(t.adjacent(t.at("h/nic1"))[0].link).bw_gbps == 31.5);
  const Vertex& n2 = t.vertex(t.at("h/nic2"));
  CHECK(n2.label == "rxe0");
  CHECK(n2.attrs.at("link_layer") == "ethernet");
  CHECK(t.adjacent(t.at("h/nic2"))[0].peer == t.at("h/cpu0"));
  CHECK(any_note(t, {"rxe0", "attached to h/cpu0"}));
  CHECK(any_note(t, {"from hwloc"}));

  // More ranks than GPUs: spread over them in CUDA order.
  Topology five = detail::assemble_host(fake_gpu_host("h"), gpus, nics, {5, ""});
  CHECK(five.num_ranks() == 5);
  CHECK(five.vertex(five.rank_vertex(4)).id == "h/gpu1");
}

TEST_CASE("discover: a CUDA GPU hwloc did not see") {
  detail::GpuScan gpus;
  gpus.gpus = {{0, "0000:55:00.0", "NVIDIA A100", 80}};
  Topology t = detail::assemble_host(fake_cpu_host("h"), gpus, {}, {});
  REQUIRE(t.num_ranks() == 1);
  CHECK(t.vertex(t.rank_vertex(0)).id == "h/gpu0");
  CHECK(t.vertex(t.rank_vertex(0)).busid == "0000:55:00.0");
  CHECK(any_note(t, {"CUDA device 0 (0000:55:00.0) not seen on PCI by hwloc: attached to h/cpu0"}));
  CHECK(any_note(t, {"taken as Gen4 x16"}));
}

TEST_CASE("discover: CPU ranks without GPUs") {
  Topology t = cpu_rank_topology("h");
  REQUIRE(t.num_ranks() == 4);
  CHECK(t.vertex(t.rank_vertex(0)).id == "h/cpu0");
  CHECK(t.vertex(t.rank_vertex(3)).id == "h/cpu1");
  CHECK(any_note(t, {"no GPU driver (fake): CPU ranks, one per core (4)"}));
}

TEST_CASE("discover: merge_hosts, two ranks on one host") {
  Topology one = cpu_rank_topology("h1");
  Topology t = merge_hosts({one, one}, {0, 2}, "");
  CHECK(t.hosts() == std::vector<std::string>{"h1"});
  CHECK(t.num_vertices() == one.num_vertices());
  CHECK(t.num_links() == one.num_links());
  REQUIRE(t.num_ranks() == 2);
  CHECK(t.vertex(t.rank_vertex(0)).id == "h1/cpu0");  // local rank 0: core 0
  CHECK(t.vertex(t.rank_vertex(1)).id == "h1/cpu1");  // local rank 2: core 2
  CHECK(t.name == "h1");
  CHECK(t.source == "discover");
  CHECK(t.notes == one.notes);

  // GPU hosts: local rank modulo the GPUs, in CUDA order.
  detail::GpuScan gpus;
  gpus.gpus = {{0, "0000:12:00.0", "G", 90}, {1, "0000:11:00.0", "G", 90}};
  Topology g = detail::assemble_host(fake_gpu_host("g"), gpus, {}, {});
  Topology m = merge_hosts({g, g, g}, {0, 1, 2}, "");
  REQUIRE(m.num_ranks() == 3);
  CHECK(m.vertex(m.rank_vertex(0)).id == "g/gpu1");
  CHECK(m.vertex(m.rank_vertex(1)).id == "g/gpu0");
  CHECK(m.vertex(m.rank_vertex(2)).id == "g/gpu1");
}

TEST_CASE("discover: merge_hosts, two hosts need a fabric") {
  Topology a = cpu_rank_topology("h1");
  Topology b = cpu_rank_topology("h2");
  CHECK_THROWS_WITH_AS(merge_hosts({a, b}, {0, 0}, ""),
                       "cluster spans 2 hosts: give --fabric to join them (e.g. fat-tree:rails=8,oversub=1)", InputError);
  CHECK_THROWS_WITH_AS(merge_hosts({a}, {0, 1}, ""), "merge: 1 rank topologies but 2 local ranks", InputError);
  CHECK_THROWS_AS(merge_hosts({}, {}, ""), InputError);
}

TEST_CASE("discover: merge_hosts, two hosts joined by a fabric") {
  Topology a = cpu_rank_topology("h1");
  Topology b = cpu_rank_topology("h2");
  Topology t = merge_hosts({a, a, b, b}, {0, 1, 0, 1}, "single-switch");
  CHECK(t.hosts() == std::vector<std::string>{"h1", "h2"});
  REQUIRE(t.num_ranks() == 4);
  CHECK(t.host_of(0) == "h1");
  CHECK(t.host_of(3) == "h2");
  CHECK(t.count(VertexKind::NetSwitch) == 1);
  CHECK(t.count(LinkType::InfiniBand) == 2);
  CHECK(Router(t).route_ranks(0, 3).found);
  CHECK(any_note(t, {"h2: no GPU driver (fake)"}));
}
