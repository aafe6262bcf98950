#pragma once
// Nominal link rates and default per-hop latencies shared by discovery and import, so that a
// discovered host, an imported NCCL XML and a preset describe the same hardware with the same
// numbers. Bandwidths are per direction, GB/s (10^9 B/s), after line coding, before protocol
// overhead; collkit models protocol efficiency in the planner, not in the topology.

#include <optional>
#include <string_view>

namespace collkit::topo::hw {

/// NVLink bandwidth per link and direction by GPU compute capability (sm = major*10 + minor):
/// P100 NVLink1 20 GB/s (P100 whitepaper: 4 links, 160 GB/s bidirectional), V100 NVLink2 25 GB/s
/// (V100 whitepaper: 6 links, 300 GB/s), A100 NVLink3 25 GB/s (A100 datasheet: 12 links,
/// 600 GB/s), GA10x 14.0625 GB/s (RTX A6000: 112.5 GB/s bidirectional over 4 links), H100 NVLink4
/// 25 GB/s (H100 datasheet: 18 links, 900 GB/s), B200/GB200 NVLink5 50 GB/s (Blackwell datasheet:
/// 18 links, 1.8 TB/s). nullopt for unknown generations.
std::optional<double> nvlink_gbps_per_link(int sm);

/// PCIe bandwidth per direction from the per-lane transfer rate in GT/s and the width:
/// Gen1/2 use 8b/10b coding, Gen3-5 128b/130b, Gen6 FLIT mode (242 of 256 bytes payload).
/// Gen4 x16 = 31.5 GB/s, Gen5 x16 = 63.0 GB/s.
double pcie_gbps(double gts_per_lane, int width);

/// Bandwidth between two CPU sockets, which neither hwloc nor NCCL's XML states. Intel: three UPI
/// links at 10.4 GT/s, 20.8 GB/s each per direction (Xeon Scalable 1st/2nd gen datasheets), the
/// common two-socket floor; Sapphire Rapids and later have four faster UPI 2.0 links, so this
/// under-states them. AMD: four xGMI links x16 at 16 GT/s, 32 GB/s each (EPYC 7002/7003
/// two-socket). Others (arm64, unknown vendor): a conservative figure below both.
struct SmpRate {
  int links;
  double gbps;
  const char* why;
};
/// By CPU vendor string as CPUID reports it ("GenuineIntel", "AuthenticAMD").
const SmpRate& smp_rate(std::string_view vendor);

// Default one-hop latencies (us) for links whose source states none. They are wire + switch
// figures, not software overheads (those belong to the planner's cost model):
inline constexpr double kNvlinkLatencyUs = 0.15;   // NVLink hop incl. NVSwitch traversal
inline constexpr double kPcieLatencyUs = 0.25;     // PCIe switch / root port hop
inline constexpr double kSmpLatencyUs = 0.15;      // UPI / xGMI socket hop
inline constexpr double kXgmiLatencyUs = 0.15;     // GPU xGMI hop
inline constexpr double kC2cLatencyUs = 0.10;      // NVLink-C2C
inline constexpr double kNicLatencyUs = 0.60;      // NIC + cable to the first switch
inline constexpr double kSwitchLatencyUs = 0.13;   // InfiniBand HDR/NDR switch port-to-port (Quantum: 130 ns)

}  // namespace collkit::topo::hw
