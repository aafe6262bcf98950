// discover_local(): the three scans of this host joined into one topology with ranks.

#include "collkit/topo/discover.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>

#include "collkit/core/error.h"
#include "collkit/core/limits.h"
#include "discover_internal.h"
#include "hw_rates.h"

namespace collkit::topo {

namespace detail {

namespace {

// A GPU or NIC whose PCIe link nobody reported is taken as Gen4 x16 (stated in the notes).
constexpr double kDefaultPcieGts = 16.0;
constexpr int kDefaultPcieLanes = 16;

// "<host>/<stem>N" with the smallest N not taken.
std::string free_id(const Topology& t, const std::string& host, const std::string& stem) {
  for (int n = 0;; ++n) {
    std::string id = host + "/" + stem + std::to_string(n);
    if (!t.find(id)) return id;
  }
}

Link pcie_link(VertexId a, VertexId b, const PcieLinkInfo& info, bool* defaulted) {
  Link l;
  l.a = a;
  l.b = b;
  l.type = LinkType::Pcie;
  l.latency_us = hw::kPcieLatencyUs;
  if (info.gbps > 0) {
    l.bw_gbps = info.gbps;
    l.lanes = std::max(info.lanes, 1);
  } else {
    l.bw_gbps = hw::pcie_gbps(kDefaultPcieGts, kDefaultPcieLanes);
    l.lanes = kDefaultPcieLanes;
    *defaulted = true;
  }
  return l;
}

class Assembler {
 public:
  Assembler(HostScan& host, const DiscoverOptions& opt) : host_(host), t_(host.t), opt_(opt) {
    auto cpus = t_.vertices_of(VertexKind::Cpu);
    if (cpus.empty()) throw Error("discovery of " + host.hostname + " found no CPU vertex");
    cpu0_ = cpus.front();
    for (VertexId v : t_.vertices_of(VertexKind::Gpu))
      if (!t_.vertex(v).busid.empty()) gpu_at_[t_.vertex(v).busid] = v;
  }

  void add_gpus(const GpuScan& gpus) {
    for (const FoundGpu& g : gpus.gpus) {
      VertexId v;
      if (auto it = gpu_at_.find(g.busid); it != gpu_at_.end()) {
        v = it->second;
      } else {
        Vertex nv;
        nv.id = free_id(t_, host_.hostname, "gpu");
        nv.kind = VertexKind::Gpu;
        nv.host = host_.hostname;
        nv.busid = g.busid;
        nv.numa = t_.vertex(cpu0_).numa;
        v = t_.add_vertex(std::move(nv));
        t_.add_link(pcie_link(cpu0_, v, {}, &pcie_defaulted_));
        if (!g.busid.empty()) gpu_at_[g.busid] = v;
        notes_.push_back("CUDA device " + std::to_string(g.cuda_index) + " (" + g.busid +
                         ") not seen on PCI by hwloc: attached to " + t_.vertex(cpu0_).id);
      }
      Vertex& x = t_.mutable_vertex(v);
      x.index = g.cuda_index;
      x.label = g.name;
      x.attrs["sm"] = std::to_string(g.sm);
      x.attrs["vendor"] = "nvidia";
      cuda_.push_back(v);
    }
    std::size_t unranked = 0;
    for (VertexId v : t_.vertices_of(VertexKind::Gpu)) unranked += t_.vertex(v).index < 0 ? 1 : 0;
    if (unranked > 0 && !cuda_.empty())
      notes_.push_back(fmt::format("{} GPU(s) on PCI not visible to CUDA (CUDA_VISIBLE_DEVICES, or not NVIDIA): no ranks on them",
                                   unranked));
    else if (unranked > 0)
      notes_.push_back(fmt::format("{} GPU(s) on PCI but none usable through CUDA: no ranks on them", unranked));
    add_nvlinks(gpus);
  }

  void add_nics(const NicScan& nics) {
    std::map<std::string, VertexId> nic_at;
    for (VertexId v : t_.vertices_of(VertexKind::Nic))
      if (!t_.vertex(v).busid.empty()) nic_at[t_.vertex(v).busid] = v;
    std::set<VertexId> claimed;
    for (const FoundNic& n : nics.nics) {
      VertexId v;
      auto it = n.busid.empty() ? nic_at.end() : nic_at.find(n.busid);
      if (it != nic_at.end() && !claimed.count(it->second)) {
        v = it->second;
      } else {
        // Not seen by hwloc, or a further port of a device hwloc shows once: a vertex of its own
        // under the device's nearest PCI ancestor that hwloc kept.
        VertexId parent = cpu0_;
        bool found = false;
        for (auto b = n.pci_path.rbegin(); b != n.pci_path.rend() && !found; ++b)
          if (auto p = t_.find(host_.hostname + "/pci-" + *b)) {
            parent = *p;
            found = true;
          }
        v = add_nic_under(parent, n.pcie);
        if (!found)
          notes_.push_back(n.device + ": " +
                           (n.busid.empty() ? std::string("not a PCI device (soft-RoCE?)") : "PCI parent of " + n.busid + " not seen by hwloc") +
                           ": attached to " + t_.vertex(parent).id);
      }
      claimed.insert(v);
      Vertex& x = t_.mutable_vertex(v);
      x.label = n.device;
      x.index = n.index;
      x.busid = n.busid;
      x.port_gbps = n.port_gbps;
      x.attrs["link_layer"] = n.link_layer;
      x.attrs["port"] = std::to_string(n.port);
      x.attrs["guid"] = n.guid;
      x.attrs["state"] = n.state;
    }
  }

  // A new NIC vertex of this host on a PCIe link from `parent`.
  VertexId add_nic_under(VertexId parent, const PcieLinkInfo& pcie) {
    Vertex nv;
    nv.id = free_id(t_, host_.hostname, "nic");
    nv.kind = VertexKind::Nic;
    nv.host = host_.hostname;
    nv.numa = t_.vertex(parent).numa;
    VertexId v = t_.add_vertex(std::move(nv));
    t_.add_link(pcie_link(parent, v, pcie, &pcie_defaulted_));
    return v;
  }

  // After add_nics(): RDMA ports have their rates; a PCI NIC without one takes its netdev's rate,
  // and a netdev that is no PCI NIC vertex becomes one of its own.
  void add_netdevs(const NetdevScan& netdevs) {
    std::map<std::string, VertexId> nic_at;
    for (VertexId v : t_.vertices_of(VertexKind::Nic))
      if (!t_.vertex(v).busid.empty()) nic_at[t_.vertex(v).busid] = v;
    std::vector<std::string> defaulted;
    for (const FoundNetdev& n : netdevs.netdevs) {
      auto it = n.busid.empty() ? nic_at.end() : nic_at.find(n.busid);
      VertexId v;
      if (it != nic_at.end()) {
        v = it->second;
        if (t_.vertex(v).port_gbps > 0) continue;  // an RDMA port states its rate
      } else {
        // Not on PCI (or on a PCI function hwloc did not show): hung under the first CPU with a
        // Gen4 x16 link, which no NIC's port rate comes near.
        v = add_nic_under(cpu0_, {hw::pcie_gbps(kDefaultPcieGts, kDefaultPcieLanes), kDefaultPcieLanes});
        notes_.push_back(fmt::format("network interface {} ({}{}): attached to {}", n.name, n.kind,
                                     n.busid.empty() ? ", not a PCI device" : ", PCI " + n.busid + " not seen by hwloc",
                                     t_.vertex(cpu0_).id));
      }
      Vertex& x = t_.mutable_vertex(v);
      if (x.label.empty()) x.label = n.name;
      x.port_gbps = n.gbps > 0 ? n.gbps : kDefaultNetdevGbps;
      x.attrs["link_layer"] = n.kind == "ipoib" ? "infiniband" : "ethernet";
      x.attrs["netdev"] = n.name;
      x.attrs["kind"] = n.kind;
      x.attrs["rate_source"] = n.gbps > 0 ? n.rate_source : "default";
      if (!(n.gbps > 0)) defaulted.push_back(n.name);
    }
    if (!defaulted.empty()) {
      std::string names;
      for (const auto& d : defaulted) names += (names.empty() ? "" : ", ") + d;
      notes_.push_back(fmt::format("warning: rate of network interface(s) {} unknown (no sysfs speed, no tc tbf): taken as {:.0f} Gbit/s",
                                   names, kDefaultNetdevGbps * 8));
    }
  }

  void add_ranks(const std::string& gpu_absent_reason) {
    if (!cuda_.empty()) {
      const std::size_t n = opt_.ranks_per_host > 0 ? static_cast<std::size_t>(opt_.ranks_per_host) : cuda_.size();
      for (std::size_t i = 0; i < n; ++i) t_.add_rank(cuda_[i % cuda_.size()]);
      return;
    }
    std::vector<VertexId> cores = host_.core_cpu;
    if (cores.empty()) cores.push_back(cpu0_);
    const std::size_t n = opt_.ranks_per_host > 0 ? static_cast<std::size_t>(opt_.ranks_per_host) : cores.size();
    for (std::size_t i = 0; i < n; ++i) t_.add_rank(cores[i % cores.size()]);
    std::string why = gpu_absent_reason.empty() ? "no GPU" : gpu_absent_reason;
    notes_.push_back(opt_.ranks_per_host > 0 ? fmt::format("{}: CPU ranks, {} as asked", why, n)
                                             : fmt::format("{}: CPU ranks, one per core ({})", why, n));
  }

  std::vector<std::string> take_notes() {
    if (pcie_defaulted_)
      notes_.push_back(fmt::format("PCIe link of some GPUs/NICs unknown: taken as Gen4 x16 ({:.1f} GB/s)",
                                   hw::pcie_gbps(kDefaultPcieGts, kDefaultPcieLanes)));
    return std::move(notes_);
  }

 private:
  void add_nvlinks(const GpuScan& gpus) {
    // Each GPU pair is usually reported from both ends: the pair's lanes are the larger count.
    std::map<std::pair<VertexId, VertexId>, int> pairs;
    std::map<VertexId, int> to_switch;
    std::set<std::string> unknown;
    for (const FoundNvLink& l : gpus.nvlinks) {
      auto a = gpu_at_.find(l.busid);
      if (a == gpu_at_.end()) {
        unknown.insert(l.busid);
        continue;
      }
      auto b = gpu_at_.find(l.remote_busid);
      if (b == gpu_at_.end()) {
        to_switch[a->second] += l.links;
      } else {
        auto key = std::minmax(a->second, b->second);
        int& lanes = pairs[{key.first, key.second}];
        lanes = std::max(lanes, l.links);
      }
    }
    for (const std::string& b : unknown)
      notes_.push_back("NVML GPU " + b + " is unknown to hwloc and CUDA: its NVLinks are left out");

    int any_sm = 0;
    for (const FoundGpu& g : gpus.gpus) any_sm = any_sm ? any_sm : g.sm;
    auto per_link = [&](VertexId a, VertexId b) -> std::optional<double> {
      for (VertexId v : {a, b}) {
        auto& attrs = t_.vertex(v).attrs;
        if (auto it = attrs.find("sm"); it != attrs.end()) return hw::nvlink_gbps_per_link(std::stoi(it->second));
      }
      return hw::nvlink_gbps_per_link(any_sm);
    };
    auto add = [&](VertexId a, VertexId b, int lanes, VertexId gpu) {
      auto gbps = per_link(a, b);
      if (!gbps) {
        notes_.push_back("NVLink generation of " + t_.vertex(gpu).id + " unknown: its NVLinks are left out");
        return;
      }
      Link l;
      l.a = a;
      l.b = b;
      l.type = LinkType::NvLink;
      l.lanes = lanes;
      l.bw_gbps = lanes * *gbps;
      l.latency_us = hw::kNvlinkLatencyUs;
      t_.add_link(l);
    };
    for (auto& [key, lanes] : pairs) add(key.first, key.second, lanes, key.first);
    if (to_switch.empty()) return;
    Vertex sw;
    sw.id = host_.hostname + "/nvswitch";
    sw.kind = VertexKind::NvSwitch;
    sw.host = host_.hostname;
    sw.label = "NVSwitch";
    VertexId s = t_.add_vertex(std::move(sw));
    for (auto& [gpu, lanes] : to_switch) add(gpu, s, lanes, gpu);
    notes_.push_back("NVLinks to anything but a GPU are taken as one NVSwitch plane (" + host_.hostname + "/nvswitch)");
  }

  HostScan& host_;
  Topology& t_;
  const DiscoverOptions& opt_;
  VertexId cpu0_ = 0;
  std::map<std::string, VertexId> gpu_at_;
  std::vector<VertexId> cuda_;  // CUDA order
  std::vector<std::string> notes_;
  bool pcie_defaulted_ = false;
};

}  // namespace

// Before any scan: --ranks-per-host 1e9 once ran into bad_alloc making the ranks.
void check_options(const DiscoverOptions& opt) {
  if (opt.ranks_per_host < 0) throw InputError("ranks per host must be >= 0, got " + std::to_string(opt.ranks_per_host));
  if (opt.ranks_per_host > limits::kRanksPerHost)
    throw InputError("ranks per host must be at most " + std::to_string(limits::kRanksPerHost) + " (the limit on ranks per host), got " +
                     std::to_string(opt.ranks_per_host));
}

Topology assemble_host(HostScan host, const GpuScan& gpus, const NicScan& nics, const DiscoverOptions& opt) {
  return assemble_host(std::move(host), gpus, nics, NetdevScan{}, opt);
}

Topology assemble_host(HostScan host, const GpuScan& gpus, const NicScan& nics, const NetdevScan& netdevs, const DiscoverOptions& opt) {
  check_options(opt);
  Assembler a(host, opt);
  a.add_gpus(gpus);
  a.add_nics(nics);
  a.add_netdevs(netdevs);
  a.add_ranks(gpus.absent_reason);

  std::vector<std::string> own = a.take_notes();

  Topology t = std::move(host.t);
  t.name = host.hostname;
  t.source = "discover";
  t.notes = std::move(host.notes);
  for (auto* more : {&gpus.notes, &nics.notes, &netdevs.notes}) t.notes.insert(t.notes.end(), more->begin(), more->end());
  t.notes.insert(t.notes.end(), own.begin(), own.end());
  t.check_connected();
  return t;
}

}  // namespace detail

namespace {

// This process's index among its host's ranks as the launcher states it (Open MPI, MPICH's hydra,
// srun); 0 when started alone or when no launcher says.
int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 0 && n <= INT_MAX) return static_cast<int>(n);
  }
  return 0;
}

}  // namespace

Topology discover_local(const DiscoverOptions& opt) {
  detail::check_options(opt);
  Topology t = detail::assemble_host(detail::scan_hwloc(), detail::scan_gpus(), detail::scan_rdma(), detail::scan_netdevs(), opt);
  // Under a launcher the host's first rank supplies its vertices (merge_hosts): it alone measures,
  // so that the host's other ranks do not share its memory bandwidth while it does.
  if (opt.measure && launcher_local_rank() == 0) detail::fill_copy_bandwidth(t);
  return t;
}

}  // namespace collkit::topo
