#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "collkit/core/error.h"
#include "collkit/topo/discover.h"
// The private interface between the scans and the joining step (libs/topo/src).
#include "discover_internal.h"

using namespace collkit::topo;
namespace fs = std::filesystem;

namespace {

// A fake /sys/class/net in a fresh temporary directory, removed at the end of the test.
struct FakeSysfs {
  fs::path root;
  FakeSysfs() {
    root = fs::temp_directory_path() /
           ("collkit-netdev-" + std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::remove_all(root);
    fs::create_directories(root / "class/net");
    fs::create_directories(root / "devices/pci0000:00/0000:00:03.0/virtio2");
  }
  ~FakeSysfs() { fs::remove_all(root); }
  fs::path net() const { return root / "class/net"; }
  void add(const std::string& name, std::map<std::string, std::string> files, bool pci = false,
           std::initializer_list<std::string> subdirs = {}) {
    fs::path d = net() / name;
    fs::create_directories(d);
    for (auto& [f, text] : files) std::ofstream(d / f) << text << "\n";
    for (const auto& s : subdirs) fs::create_directories(d / s);
    if (pci) fs::create_directory_symlink(root / "devices/pci0000:00/0000:00:03.0/virtio2", d / "device");
  }
};

std::function<std::string(const std::string&)> tc_of(std::map<std::string, std::string> by_name) {
  return [by_name](const std::string& n) {
    auto it = by_name.find(n);
    return it == by_name.end() ? std::string() : it->second;
  };
}

const detail::FoundNetdev* find(const detail::NetdevScan& s, const std::string& name) {
  for (const auto& n : s.netdevs)
    if (n.name == name) return &n;
  return nullptr;
}

detail::HostScan cpu_host(const std::string& host) {
  detail::HostScan s;
  s.hostname = host;
  Vertex c;
  c.id = host + "/cpu0";
  c.kind = VertexKind::Cpu;
  c.host = host;
  c.numa = 0;
  s.core_cpu.push_back(s.t.add_vertex(std::move(c)));
  return s;
}

}  // namespace

TEST_CASE("tc_tbf_rate_bytes: the tbf rate from tc's JSON, the smallest when there are several") {
  CHECK(detail::tc_tbf_rate_bytes(
            R"([{"kind":"tbf","handle":"1:","root":true,"refcnt":3,"options":{"rate":125000000,"burst":125000,"lat":20000}}])") ==
        125000000.0);
  CHECK(
      detail::tc_tbf_rate_bytes(
          R"([{"kind":"tbf","handle":"1:","root":true,"options":{"rate":1250000000}},{"kind":"netem","handle":"10:","parent":"1:1","options":{}},{"kind":"tbf","handle":"20:","parent":"10:1","options":{"rate":12500000}}])") ==
      12500000.0);
  CHECK(detail::tc_tbf_rate_bytes(R"([{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}])") == 0.0);
  CHECK(detail::tc_tbf_rate_bytes("") == 0.0);
  CHECK_THROWS_AS(detail::tc_tbf_rate_bytes("Cannot find device \"eth9\""), collkit::InputError);
  CHECK_THROWS_AS(detail::tc_tbf_rate_bytes(R"({"kind":"tbf"})"), collkit::InputError);
}

TEST_CASE("read_netdevs: up interfaces with IPv4, their kind, and rate from tc before sysfs speed") {
  FakeSysfs s;
  s.add("lo", {{"type", "772"}, {"operstate", "unknown"}, {"ifindex", "1"}, {"iflink", "1"}});
  s.add("eth0", {{"type", "1"}, {"operstate", "up"}, {"ifindex", "2"}, {"iflink", "7"}, {"speed", "10000"}});  // veth
  s.add("ens3", {{"type", "1"}, {"operstate", "up"}, {"ifindex", "3"}, {"iflink", "3"}, {"speed", "25000"}}, true);
  s.add("br0", {{"type", "1"}, {"operstate", "up"}, {"ifindex", "4"}, {"iflink", "4"}}, false, {"bridge"});
  s.add("bond0", {{"type", "1"}, {"operstate", "up"}, {"ifindex", "5"}, {"iflink", "5"}, {"speed", "-1"}}, false, {"bonding"});
  s.add("vlan7", {{"type", "1"}, {"operstate", "up"}, {"ifindex", "6"}, {"iflink", "3"}, {"uevent", "DEVTYPE=vlan\nINTERFACE=vlan7"}});
  s.add("ib0", {{"type", "32"}, {"operstate", "up"}, {"ifindex", "8"}, {"iflink", "8"}, {"speed", "100000"}});
  s.add("eth1", {{"type", "1"}, {"operstate", "down"}, {"ifindex", "9"}, {"iflink", "10"}});
  s.add("eth2", {{"type", "1"}, {"operstate", "up"}, {"ifindex", "11"}, {"iflink", "12"}});  // no IPv4

  auto scan = detail::read_netdevs(
      s.net().string(), {"lo", "eth0", "ens3", "br0", "bond0", "vlan7", "ib0", "eth1"},
      tc_of({{"eth0", R"([{"kind":"tbf","handle":"1:","root":true,"options":{"rate":125000000}}])"}, {"vlan7", "garbage"}}));
  std::vector<std::string> names;
  for (const auto& n : scan.netdevs) names.push_back(n.name);
  CHECK(names == std::vector<std::string>{"bond0", "br0", "ens3", "eth0", "ib0", "vlan7"});  // lo, down, no IPv4: out

  auto* eth0 = find(scan, "eth0");
  REQUIRE(eth0);
  CHECK(eth0->kind == "veth");
  CHECK(eth0->busid.empty());
  CHECK(eth0->gbps == doctest::Approx(0.125));  // the tc shaping, not veth's nominal 10000 Mb/s
  CHECK(eth0->rate_source == "tc tbf");

  auto* ens3 = find(scan, "ens3");
  REQUIRE(ens3);
  CHECK(ens3->kind == "physical");
  CHECK(ens3->busid == "0000:00:03.0");
  CHECK(ens3->gbps == doctest::Approx(25.0 / 8));
  CHECK(ens3->rate_source == "sysfs speed");

  CHECK(find(scan, "br0")->kind == "bridge");
  CHECK(find(scan, "bond0")->kind == "bond");
  CHECK(find(scan, "bond0")->gbps == 0);  // speed -1: unknown
  CHECK(find(scan, "vlan7")->kind == "vlan");
  CHECK(find(scan, "ib0")->kind == "ipoib");
  CHECK(std::any_of(scan.notes.begin(), scan.notes.end(),
                    [](const std::string& n) { return n.find("vlan7") != std::string::npos && n.find("ignored") != std::string::npos; }));
}

TEST_CASE("read_netdevs: a directory that cannot be read is a note, not a crash") {
  auto scan = detail::read_netdevs("/nonexistent/collkit/class/net", {}, tc_of({}));
  CHECK(scan.netdevs.empty());
  REQUIRE(scan.notes.size() == 1);
  CHECK(scan.notes[0].find("cannot read") != std::string::npos);
}

TEST_CASE("assemble_host: a veth becomes a NIC with its shaped rate, an unknown rate is defaulted with a warning") {
  detail::NetdevScan nd;
  nd.netdevs.push_back({"eth0", "veth", "", 0.125, "tc tbf"});
  nd.netdevs.push_back({"bond0", "bond", "", 0, ""});
  DiscoverOptions opt;
  opt.ranks_per_host = 2;
  Topology t = detail::assemble_host(cpu_host("ckh1"), {}, {}, nd, opt);
  auto nics = t.vertices_of(VertexKind::Nic);
  REQUIRE(nics.size() == 2);
  const Vertex& a = t.vertex(nics[0]);
  CHECK(a.id == "ckh1/nic0");
  CHECK(a.label == "eth0");
  CHECK(a.port_gbps == doctest::Approx(0.125));
  CHECK(a.attrs.at("kind") == "veth");
  CHECK(a.attrs.at("link_layer") == "ethernet");
  CHECK(a.attrs.at("rate_source") == "tc tbf");
  const Vertex& b = t.vertex(nics[1]);
  CHECK(b.port_gbps == doctest::Approx(detail::kDefaultNetdevGbps));
  CHECK(b.attrs.at("rate_source") == "default");
  CHECK(std::any_of(t.notes.begin(), t.notes.end(),
                    [](const std::string& n) { return n.find("warning") != std::string::npos && n.find("bond0") != std::string::npos; }));
  CHECK(t.num_ranks() == 2);
}

TEST_CASE("assemble_host: a netdev on a PCI NIC hwloc saw gives that NIC its rate, no second vertex") {
  detail::HostScan h = cpu_host("n1");
  Vertex nic;
  nic.id = "n1/nic0";
  nic.kind = VertexKind::Nic;
  nic.host = "n1";
  nic.busid = "0000:00:03.0";
  VertexId v = h.t.add_vertex(std::move(nic));
  Link l;
  l.a = 0;
  l.b = v;
  l.type = LinkType::Pcie;
  l.bw_gbps = 31.5;
  l.lanes = 16;
  h.t.add_link(l);
  detail::NetdevScan nd;
  nd.netdevs.push_back({"ens3", "physical", "0000:00:03.0", 3.125, "sysfs speed"});
  DiscoverOptions opt;
  opt.ranks_per_host = 1;
  Topology t = detail::assemble_host(std::move(h), {}, {}, nd, opt);
  auto nics = t.vertices_of(VertexKind::Nic);
  REQUIRE(nics.size() == 1);
  CHECK(t.vertex(nics[0]).port_gbps == doctest::Approx(3.125));
  CHECK(t.vertex(nics[0]).attrs.at("netdev") == "ens3");
}

TEST_CASE("two veth hosts merge into one cluster joined through their NICs") {
  detail::NetdevScan nd;
  nd.netdevs.push_back({"eth0", "veth", "", 0.125, "tc tbf"});
  DiscoverOptions opt;
  opt.ranks_per_host = 2;
  std::vector<Topology> per_rank;
  for (const char* h : {"ckh1", "ckh1", "ckh2", "ckh2"}) per_rank.push_back(detail::assemble_host(cpu_host(h), {}, {}, nd, opt));
  Topology m = merge_hosts(per_rank, {0, 1, 0, 1}, "single-switch");
  CHECK(m.hosts().size() == 2);
  CHECK(m.num_ranks() == 4);
  CHECK(m.vertices_of(VertexKind::Nic).size() == 2);
}

TEST_CASE("two hosts without a network interface still cannot be joined: the error names the host") {
  DiscoverOptions opt;
  opt.ranks_per_host = 1;
  std::vector<Topology> per_rank;
  for (const char* h : {"h1", "h2"}) per_rank.push_back(detail::assemble_host(cpu_host(h), {}, {}, detail::NetdevScan{}, opt));
  CHECK_THROWS_WITH_AS(merge_hosts(per_rank, {0, 0}, "single-switch"), doctest::Contains("host \"h1\" has no NIC"), collkit::InputError);
}
