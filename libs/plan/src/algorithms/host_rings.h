#pragma once
// Topology facts the ring-shaped algorithms share (ring_order.cpp, hier.cpp): ranks grouped by
// host, each host's ranks in a cycle whose neighbours share the widest routes, and rails.

#include <cstdint>
#include <vector>

namespace collkit::topo {
class Topology;
struct NicAffinity;
}

namespace collkit::plan::algo {

/// Ranks 0..nranks-1 grouped by host, hosts in topology order. Within a host the ranks form a
/// cycle in which consecutive ranks (the last and the first included) share the widest routes
/// the host allows: the maximum-bottleneck Hamiltonian cycle, ties broken by fewer hops (an
/// NVLink ring on DGX-1's hybrid cube-mesh, PCIe-switch neighbours on PCIe servers). Each cycle
/// starts at its host's lowest rank. Empty when the topology cannot group them: fewer ranks in
/// the topology than `nranks`, or a rank on no host.
std::vector<std::vector<int>> host_cycles(int nranks, const topo::Topology& topo);

/// A rank's rail: the device index of its NIC (the first of its rail affinity, topo/affinity.h,
/// whose routes to other hosts leave through it), else 1000000 + the id of its nearest network
/// switch, else -1. Ranks of different hosts with the same rail reach each other through one
/// leaf switch on a rail-optimised fabric.
std::int64_t rail_of(const topo::Topology& topo, const topo::NicAffinity& aff, int rank);

}  // namespace collkit::plan::algo
