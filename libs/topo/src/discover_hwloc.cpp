// The local host through hwloc: NUMA nodes as CPU vertices, the PCI tree down to GPUs and NICs.

#include <fmt/format.h>
#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "collkit/core/error.h"
#include "discover_internal.h"
#include "hw_rates.h"

namespace collkit::topo::detail {

namespace {

// When neither hwloc nor sysfs knows a PCIe link, it is taken as Gen4 x16.
constexpr double kDefaultPcieGts = 16.0;
constexpr int kDefaultPcieLanes = 16;

constexpr unsigned kVendorNvidia = 0x10de;
constexpr unsigned kVendorAmd = 0x1002;

using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

// An info string of hwloc's, without the padding CPUID model names carry.
std::string info(hwloc_obj_t obj, const char* name) {
  const char* v = obj ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
  std::string s = v ? v : "";
  s.erase(s.find_last_not_of(" \t") + 1);
  s.erase(0, s.find_first_not_of(" \t"));
  return s;
}

bool is_gpu(const PciAttr& pci) {
  if (pci.vendor_id != kVendorNvidia && pci.vendor_id != kVendorAmd) return false;
  // 0x0300 VGA, 0x0302 3D controller (NVIDIA data-centre parts); 0x0380 display "other" and 0x1200
  // processing accelerator are what AMD Instinct boards report.
  switch (pci.class_id) {
    case 0x0300: case 0x0302: case 0x0380: case 0x1200: return true;
    default: return false;
  }
}

std::string busid_of(const PciAttr& pci) {
  return pci_busid(pci.domain, pci.bus, pci.dev, pci.func);
}

// Network port speed from /sys/class/net/<if>/speed (Mb/s; -1 or unreadable when unknown).
double netdev_gbps(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  long mbps = 0;
  if (!(in >> mbps) || mbps <= 0) return 0;
  return static_cast<double>(mbps) / 8000.0;
}

// What the PCI walk found, before vertices are numbered: GPUs and NICs get their numbers in bus
// id order, so the walk collects first and the vertices are added afterwards.
struct PciItem {
  VertexKind kind = VertexKind::PciSwitch;
  std::string busid;
  std::string label;
  std::map<std::string, std::string> attrs;
  double port_gbps = 0;
  int parent_item = -1;   // index into the item list, or -1: hangs from parent_cpu
  VertexId parent_cpu = 0;
  float hwloc_gbps = 0;   // hwloc's linkspeed of the link to the parent, 0 = unknown
};

class Walker {
 public:
  Walker(hwloc_topology_t topo, HostScan& out, const std::vector<std::pair<int, VertexId>>& numa_cpu)
      : topo_(topo), out_(out), numa_cpu_(numa_cpu) {}

  void run() {
    walk_normal(hwloc_get_root_obj(topo_));
    add_vertices();
  }

 private:
  // The CPU vertex an I/O subtree hanging from `obj` belongs to: the first NUMA node in its nodeset.
  VertexId cpu_for(hwloc_obj_t obj) const {
    for (auto& [numa, v] : numa_cpu_)
      if (obj->nodeset && hwloc_bitmap_isset(obj->nodeset, static_cast<unsigned>(numa))) return v;
    return numa_cpu_.front().second;
  }

  void walk_normal(hwloc_obj_t obj) {
    for (hwloc_obj_t io = obj->io_first_child; io; io = io->next_sibling) walk_io(io, -1, cpu_for(obj));
    for (hwloc_obj_t c = obj->first_child; c; c = c->next_sibling) walk_normal(c);
  }

  // True when a GPU or NIC lies below `obj`: only bridges leading to one become vertices.
  static bool leads_to_endpoint(hwloc_obj_t obj) {
    if (obj->type == HWLOC_OBJ_PCI_DEVICE && (is_gpu(obj->attr->pcidev) || is_nic(obj))) return true;
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling)
      if (leads_to_endpoint(c)) return true;
    return false;
  }

  static bool is_nic(hwloc_obj_t pcidev) {
    for (hwloc_obj_t c = pcidev->io_first_child; c; c = c->next_sibling)
      if (c->type == HWLOC_OBJ_OS_DEVICE &&
          (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK || c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS))
        return true;
    return false;
  }

  void walk_io(hwloc_obj_t obj, int parent_item, VertexId parent_cpu) {
    if (obj->type == HWLOC_OBJ_BRIDGE) {
      const auto& br = obj->attr->bridge;
      if (br.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
        // A host bridge is the CPU's root complex: its children hang from the CPU vertex.
        for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) walk_io(c, parent_item, parent_cpu);
        return;
      }
      if (!leads_to_endpoint(obj)) return;
      PciItem item;
      item.kind = VertexKind::PciSwitch;
      item.busid = busid_of(br.upstream.pci);
      item.label = "PCI bridge " + item.busid;
      item.hwloc_gbps = br.upstream.pci.linkspeed;
      item.parent_item = parent_item;
      item.parent_cpu = parent_cpu;
      items_.push_back(std::move(item));
      int self = static_cast<int>(items_.size() - 1);
      for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) walk_io(c, self, parent_cpu);
      return;
    }
    if (obj->type != HWLOC_OBJ_PCI_DEVICE) return;
    const auto& pci = obj->attr->pcidev;
    PciItem item;
    item.busid = busid_of(pci);
    item.hwloc_gbps = pci.linkspeed;
    item.parent_item = parent_item;
    item.parent_cpu = parent_cpu;
    char id[16];
    std::snprintf(id, sizeof id, "%04x:%04x", pci.vendor_id, pci.device_id);
    item.attrs["pci_id"] = id;
    std::string device_name = info(obj, "PCIDevice");
    if (is_gpu(pci)) {
      item.kind = VertexKind::Gpu;
      item.label = device_name.empty() ? std::string("PCI ") + id : device_name;
      item.attrs["vendor"] = pci.vendor_id == kVendorNvidia ? "nvidia" : "amd";
    } else if (is_nic(obj)) {
      item.kind = VertexKind::Nic;
      std::string netdev, ibdev;
      for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && ibdev.empty()) ibdev = c->name;
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && netdev.empty()) netdev = c->name;
      }
      if (!netdev.empty()) {
        item.attrs["netdev"] = netdev;
        item.port_gbps = netdev_gbps(netdev);  // the verbs scan, when it sees the port, overrides it
      }
      if (!ibdev.empty()) {
        item.attrs["ibdev"] = ibdev;
        item.label = ibdev;  // the verbs scan fills link layer, rate and state
      } else {
        item.label = netdev;
        item.attrs["link_layer"] = "ethernet";
      }
    } else {
      return;  // storage, USB, ...: not part of the communication topology
    }
    items_.push_back(std::move(item));
  }

  void add_vertices() {
    // Number GPUs and NICs by bus id, as nvidia-smi and CUDA_DEVICE_ORDER=PCI_BUS_ID do.
    std::map<std::string, int> gpu_no, nic_no;
    for (const PciItem& it : items_) {
      if (it.kind == VertexKind::Gpu) gpu_no[it.busid] = 0;
      if (it.kind == VertexKind::Nic) nic_no[it.busid] = 0;
    }
    int n = 0;
    for (auto& [busid, no] : gpu_no) no = n++;
    n = 0;
    for (auto& [busid, no] : nic_no) no = n++;

    const std::string& host = out_.hostname;
    bool defaulted = false;
    std::vector<VertexId> vertex_of(items_.size());
    for (std::size_t i = 0; i < items_.size(); ++i) {
      PciItem& it = items_[i];
      Vertex v;
      v.kind = it.kind;
      v.host = host;
      v.busid = it.busid;
      v.label = it.label;
      v.attrs = it.attrs;
      v.port_gbps = it.port_gbps;
      VertexId parent = it.parent_item >= 0 ? vertex_of[static_cast<std::size_t>(it.parent_item)] : it.parent_cpu;
      v.numa = out_.t.vertex(parent).numa;
      if (it.kind == VertexKind::Gpu) v.id = host + "/gpu" + std::to_string(gpu_no[it.busid]);
      else if (it.kind == VertexKind::Nic) v.id = host + "/nic" + std::to_string(nic_no[it.busid]);
      else v.id = host + "/pci-" + it.busid;
      vertex_of[i] = out_.t.add_vertex(std::move(v));

      Link l;
      l.a = parent;
      l.b = vertex_of[i];
      l.type = LinkType::Pcie;
      l.latency_us = hw::kPcieLatencyUs;
      PcieLinkInfo sys = sysfs_pcie_link(it.busid);
      l.lanes = sys.lanes > 0 ? sys.lanes : kDefaultPcieLanes;
      // hwloc keeps the figure as a float: rounded to 1e-6 GB/s so files show 63.015385, not its float noise.
      if (it.hwloc_gbps > 0) l.bw_gbps = std::round(static_cast<double>(it.hwloc_gbps) * 1e6) / 1e6;
      else if (sys.gbps > 0) l.bw_gbps = sys.gbps;
      else {
        l.bw_gbps = hw::pcie_gbps(kDefaultPcieGts, kDefaultPcieLanes);
        l.lanes = kDefaultPcieLanes;
        defaulted = true;
      }
      out_.t.add_link(l);
    }
    if (defaulted)
      out_.notes.push_back(fmt::format("PCIe link speed unknown to hwloc and sysfs for some devices: taken as Gen4 x16 ({:.1f} GB/s)",
                                       hw::pcie_gbps(kDefaultPcieGts, kDefaultPcieLanes)));
  }

  hwloc_topology_t topo_;
  HostScan& out_;
  const std::vector<std::pair<int, VertexId>>& numa_cpu_;
  std::vector<PciItem> items_;
};

// One CPU vertex per NUMA node that has CPUs (nodes without, such as CXL memory or a Grace Hopper
// GPU's memory, are not CPUs); returns (NUMA os index, vertex) pairs.
std::vector<std::pair<int, VertexId>> add_cpus(hwloc_topology_t topo, HostScan& out) {
  std::vector<std::pair<int, VertexId>> numa_cpu;
  const int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  const int packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  bool bw_missing = false;
  std::string vendor;
  for (int i = 0; i < nodes; ++i) {
    hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (!node || !node->cpuset || hwloc_bitmap_iszero(node->cpuset)) continue;
    hwloc_obj_t package = nullptr;
    for (int p = 0; p < packages && !package; ++p) {
      hwloc_obj_t cand = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(p));
      if (cand && hwloc_bitmap_intersects(cand->cpuset, node->cpuset)) package = cand;
    }
    Vertex v;
    v.kind = VertexKind::Cpu;
    v.host = out.hostname;
    v.id = out.hostname + "/cpu" + std::to_string(numa_cpu.size());
    v.numa = static_cast<int>(node->os_index);
    v.label = info(package, "CPUModel");
    if (v.label.empty()) v.label = "NUMA node " + std::to_string(node->os_index);
    if (vendor.empty()) vendor = info(package, "CPUVendor");
    v.attrs["cores"] = std::to_string(hwloc_get_nbobjs_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_CORE));
    if (package) v.attrs["package"] = std::to_string(package->logical_index);

    hwloc_location initiator{};
    initiator.type = HWLOC_LOCATION_TYPE_CPUSET;
    initiator.location.cpuset = node->cpuset;
    hwloc_uint64_t mib_per_s = 0;
    if (hwloc_memattr_get_value(topo, HWLOC_MEMATTR_ID_BANDWIDTH, node, &initiator, 0, &mib_per_s) == 0 &&
        mib_per_s > 0) {
      // hwloc gives the memory's bandwidth (ACPI HMAT); a copy both reads and writes every byte,
      // so ranks sharing the node copy at half of it.
      v.local_bw_gbps = static_cast<double>(mib_per_s) * 1048576.0 / 1e9 / 2.0;
    } else {
      bw_missing = true;
    }
    numa_cpu.emplace_back(v.numa, out.t.add_vertex(std::move(v)));
  }
  if (numa_cpu.empty()) {
    // No NUMA information at all: the machine as one CPU.
    Vertex v;
    v.kind = VertexKind::Cpu;
    v.host = out.hostname;
    v.id = out.hostname + "/cpu0";
    v.numa = 0;
    v.label = info(hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0), "CPUModel");
    if (v.label.empty()) v.label = "CPU";
    numa_cpu.emplace_back(0, out.t.add_vertex(std::move(v)));
    bw_missing = true;
    out.notes.push_back("hwloc reports no NUMA node with CPUs: the host is one CPU vertex");
  }
  if (bw_missing)
    out.notes.push_back("hwloc gives no memory bandwidth (no ACPI HMAT): copy bandwidth within a CPU vertex unknown");

  if (numa_cpu.size() > 1) {
    // hwloc states no bandwidth between sockets: the per-vendor figure of hw_rates.h, noted.
    const hw::SmpRate& smp = hw::smp_rate(vendor);
    const double gbps = smp.gbps;
    for (std::size_t i = 0; i < numa_cpu.size(); ++i)
      for (std::size_t j = i + 1; j < numa_cpu.size(); ++j) {
        Link l;
        l.a = numa_cpu[i].second;
        l.b = numa_cpu[j].second;
        l.type = LinkType::Smp;
        l.bw_gbps = gbps;
        l.latency_us = hw::kSmpLatencyUs;
        l.lanes = smp.links;
        out.t.add_link(l);
      }
    out.notes.push_back(fmt::format("SMP links between NUMA nodes: hwloc states no bandwidth, taken as the {} default {:g} GB/s per direction",
                                    vendor.empty() ? "unknown vendor" : vendor, gbps));
  }
  return numa_cpu;
}

void map_cores(hwloc_topology_t topo, HostScan& out, const std::vector<std::pair<int, VertexId>>& numa_cpu) {
  int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  hwloc_obj_type_t type = HWLOC_OBJ_CORE;
  if (cores <= 0) {
    type = HWLOC_OBJ_PU;
    cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  }
  for (int i = 0; i < cores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, type, static_cast<unsigned>(i));
    VertexId cpu = numa_cpu.front().second;
    for (auto& [numa, v] : numa_cpu) {
      hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(numa));
      if (core && node && node->cpuset && hwloc_bitmap_intersects(node->cpuset, core->cpuset)) {
        cpu = v;
        break;
      }
    }
    out.core_cpu.push_back(cpu);
  }
}

}  // namespace

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

HostScan scan_hwloc() {
  HostScan out;
  out.hostname = local_hostname();
  out.t.name = out.hostname;
  out.t.source = "discover";

  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw SystemError(std::string("hwloc_topology_init: ") + std::strerror(errno));
  TopologyPtr topo(raw);
  // Bridges, PCI devices and OS devices that matter (GPUs, NICs, storage), not every function.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // hwloc's GPU plugins would initialise the drivers that discover_gpu.cpp queries itself (and
  // "gl" opens X displays); GPUs are found here by PCI class. On Linux the "linux" component reads
  // the PCI tree from sysfs, so the libpciaccess plugin adds nothing there but a leak that
  // LeakSanitizer reports. Components that are not installed are ignored.
  for (const char* name : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"})
    hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);
#ifdef __linux__
  hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
#endif
  if (hwloc_topology_load(raw) != 0) throw SystemError(std::string("hwloc_topology_load: ") + std::strerror(errno));

  auto numa_cpu = add_cpus(raw, out);
  map_cores(raw, out, numa_cpu);
  Walker(raw, out, numa_cpu).run();
  if (hwloc_get_next_pcidev(raw, nullptr) == nullptr)
    out.notes.push_back("hwloc sees no PCI devices (no /sys/bus/pci here?): GPUs and NICs only from CUDA and ibverbs");
  return out;
}

}  // namespace collkit::topo::detail
