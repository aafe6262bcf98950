#pragma once
// Private to libs/topo: discovery in three scans, one per source, and one pure step that joins them.
//
//   scan_hwloc()  discover_hwloc.cpp    CPUs/NUMA nodes, the PCI tree, GPUs and NICs as PCI devices
//   scan_gpus()   discover_gpu.cpp      CUDA devices (order, compute capability) and NVLinks (NVML)
//   scan_rdma()   discover_ibverbs.cpp  RDMA ports: rate, link layer, state
//   assemble_host()  discover.cpp       the host topology with its ranks, from the three
//   measure_copy_gbps()  discover_measure.cpp  what no source gives: a CPU's copy bandwidth
//
// The scans only report what they saw; every decision (which vertex a CUDA device is, where a NIC
// hangs, what the ranks are) is taken in assemble_host(), which tests drive with made-up scans.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/topo/discover.h"
#include "collkit/topo/topology.h"

namespace collkit::topo::detail {

// ---- PCI bus ids ---------------------------------------------------------------------------

/// The canonical form used in Vertex::busid: "dddd:bb:dd.f", lower-case hex (as in sysfs).
std::string pci_busid(unsigned domain, unsigned bus, unsigned device, unsigned function);
/// Canonicalises a bus id as NVML ("00000000:1A:00.0"), CUDA ("0000:1A:00.0") or sysfs writes it;
/// a missing function ("0000:1a:00") reads as 0. nullopt when the text is not a bus id.
std::optional<std::string> normalize_busid(std::string_view text);

/// A PCIe link as sysfs states it (/sys/bus/pci/devices/<busid>/current_link_{speed,width}).
struct PcieLinkInfo {
  double gbps = 0;  ///< per direction, 0 = unknown
  int lanes = 0;    ///< 0 = unknown
};
PcieLinkInfo sysfs_pcie_link(const std::string& busid);

// ---- hwloc -----------------------------------------------------------------------------------

/// The local host as hwloc sees it: vertices "<host>/cpuN" (one per NUMA node with CPUs),
/// "<host>/pci-<busid>" (PCI bridges leading to a GPU or NIC), "<host>/gpuN" and "<host>/nicN"
/// (numbered in PCI bus id order, like nvidia-smi), with PCIe and SMP links. No ranks.
struct HostScan {
  std::string hostname;
  Topology t;
  /// One entry per core (hwloc logical order): the CPU vertex of the core's NUMA node.
  std::vector<VertexId> core_cpu;
  std::vector<std::string> notes;
};
/// Throws SystemError when hwloc cannot load the topology.
HostScan scan_hwloc();
/// gethostname(), or "localhost" when it fails.
std::string local_hostname();

// ---- CUDA + NVML -----------------------------------------------------------------------------

struct FoundGpu {
  int cuda_index = -1;
  std::string busid;  ///< canonical
  std::string name;   ///< "NVIDIA H100 80GB HBM3"
  int sm = 0;         ///< compute capability major*10 + minor
};

/// Active NVLinks of one GPU towards one remote PCI device, as NVML reports them from `busid`'s
/// side (each GPU-GPU pair is usually reported from both sides).
struct FoundNvLink {
  std::string busid;
  std::string remote_busid;
  int links = 0;
};

struct GpuScan {
  std::vector<FoundGpu> gpus;  ///< CUDA order
  std::vector<FoundNvLink> nvlinks;
  /// Why there are no GPUs, when there are none ("no GPU driver (...)"); empty otherwise.
  std::string absent_reason;
  std::vector<std::string> notes;
};
/// Never throws for a missing driver or library: that is reported in absent_reason / notes.
GpuScan scan_gpus();

// ---- ibverbs ---------------------------------------------------------------------------------

/// Lanes of an ibv_port_attr::active_width code (1, 2, 4, 8, 16 -> 1x, 4x, 8x, 12x, 2x); 0 = unknown.
int ib_width_lanes(int active_width);
/// Per-lane Gb/s of an active_speed / active_speed_ex code (1 SDR 2.5 ... 128 NDR 100, 256 XDR 200);
/// 0 = unknown.
double ib_lane_gbit(std::uint32_t speed);
/// Port bandwidth per direction in GB/s: lanes x per-lane Gb/s / 8, using speed_ex when it is
/// non-zero (rdma-core sets it for XDR and above). 0 when a code is unknown. 4x NDR = 50 GB/s.
double ib_port_gbps(int active_width, int active_speed, std::uint32_t active_speed_ex);

/// One port of an RDMA device.
struct FoundNic {
  std::string device;   ///< "mlx5_0"
  int index = -1;       ///< position in ibv_get_device_list
  int port = 1;         ///< 1-based
  double port_gbps = 0; ///< 0 = unknown (port not active, or rate code unknown)
  std::string link_layer = "infiniband";  ///< "infiniband" | "ethernet"
  std::string guid;     ///< node GUID, "xxxx:xxxx:xxxx:xxxx"
  std::string state;    ///< "active", "down", ...
  std::string busid;    ///< canonical; empty when the device is not a PCI function (soft-RoCE)
  /// Bus ids from the root port down to the device's parent (from the sysfs device path).
  std::vector<std::string> pci_path;
  PcieLinkInfo pcie;    ///< the device's own PCIe link, from sysfs
};

struct NicScan {
  std::vector<FoundNic> nics;
  std::vector<std::string> notes;
};
/// Never throws for missing devices: "no RDMA devices" goes to notes.
NicScan scan_rdma();

// ---- joining ---------------------------------------------------------------------------------

/// The host topology with ranks: CUDA GPUs matched to hwloc's GPU vertices by bus id (added under
/// the first CPU when hwloc did not see them), NVLinks as one link per GPU pair (lanes = links)
/// and one "<host>/nvswitch" vertex for links to anything else, RDMA ports matched to hwloc's NIC
/// vertices by bus id or hung under their nearest PCI ancestor, then ranks: one per CUDA GPU in
/// CUDA order (or opt.ranks_per_host spread over them), else one per core (or opt.ranks_per_host)
/// on the core's CPU vertex. Pure: reads nothing from the machine.
/// Checks the options against their bounds (limits::kRanksPerHost) before anything is scanned.
void check_options(const DiscoverOptions& opt);

Topology assemble_host(HostScan host, const GpuScan& gpus, const NicScan& nics, const DiscoverOptions& opt);

// ---- measuring ---------------------------------------------------------------------------------

/// Copy bandwidth of this thread in GB/s: memcpy of `bytes` between two buffers (pages touched
/// first), the best of `reps` timed copies. What ranks sharing a CPU vertex copy at, when hwloc
/// gives no memory bandwidth (no ACPI HMAT, as in most VMs and containers).
double measure_copy_gbps(std::size_t bytes, int reps);

/// Sets local_bw_gbps of every CPU vertex that has none from `copy_gbps` (0: measured here with
/// measure_copy_gbps) and says so in the notes, replacing hwloc's "unknown" note. Does nothing
/// when every CPU vertex has a figure.
void fill_copy_bandwidth(Topology& t, double copy_gbps = 0);

}  // namespace collkit::topo::detail

namespace collkit::topo::detail {

// ---- network interfaces (sysfs + tc) ---------------------------------------------------------

/// A network interface that can join this host to others: not loopback, operstate "up", with an
/// IPv4 address. Found from /sys/class/net, so veth, bonds, VLANs and IPoIB count as well as PCI NICs.
struct FoundNetdev {
  std::string name;         ///< "eth0"
  std::string kind;         ///< "physical" | "veth" | "bridge" | "bond" | "vlan" | "ipoib" | "virtual"
  std::string busid;        ///< canonical PCI bus id when the interface is a PCI function, else empty
  double gbps = 0;          ///< per direction, GB/s; 0 = unknown
  std::string rate_source;  ///< "tc tbf" | "sysfs speed" | "" (unknown)
};

struct NetdevScan {
  std::vector<FoundNetdev> netdevs;
  std::vector<std::string> notes;
};

/// The smallest tbf rate in `tc -j qdisc show dev IF` output, in bytes/s; 0 when there is no tbf.
/// Throws InputError when the text is not tc's JSON.
double tc_tbf_rate_bytes(std::string_view tc_json);

/// The interfaces under `sys_class_net` (a /sys/class/net or a test's copy of one): `with_ipv4`
/// names those with an IPv4 address, `tc_json(name)` returns tc's JSON for an interface (or "").
/// The rate is the tc tbf rate when shaped, else sysfs speed; unknown (0) otherwise. Pure but for
/// reading the directory.
NetdevScan read_netdevs(const std::string& sys_class_net, const std::vector<std::string>& with_ipv4,
                        const std::function<std::string(const std::string&)>& tc_json);

/// This host's: /sys/class/net, getifaddrs(), `tc -j qdisc show` when tc is installed.
NetdevScan scan_netdevs();

/// assemble_host() and NICs from network interfaces: a netdev whose PCI function is a NIC vertex
/// without a port rate gives it one; one that is no PCI NIC (veth, bond, ...) becomes a NIC vertex
/// of its own under the first CPU, with attrs kind/netdev. An unknown rate is taken as
/// kDefaultNetdevGbps, with a note.
inline constexpr double kDefaultNetdevGbps = 1.25;  // 10 Gbit/s
Topology assemble_host(HostScan host, const GpuScan& gpus, const NicScan& nics, const NetdevScan& netdevs, const DiscoverOptions& opt);

}  // namespace collkit::topo::detail
