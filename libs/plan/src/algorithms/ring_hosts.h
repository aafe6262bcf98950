#pragma once
// The order in which ring channels visit the hosts (ring_order.cpp supplies the hosts and lays
// out each host's ranks): on a direct network, where every host reaches the fabric through a
// router of its own (a torus), consecutive hosts in topology order sit behind the same router
// links, so every channel would cross them; the channels instead take different host cycles,
// chosen with the in-host search (ring_search.h) over the routes between the hosts' routers.

#include <vector>

namespace collkit::topo {
class Topology;
struct NicAffinity;
}  // namespace collkit::topo

namespace collkit::plan::algo {

/// `cycles` Hamiltonian cycles of the hosts (indices into `hosts`, each beginning at host 0)
/// such that, with each cycle run both ways round (by a pair of channels), the busiest fabric
/// link direction carries as few ring hops per GB/s as the search finds. Empty unless every
/// fabric switch is one host's own (hosts sharing a leaf or a single switch, or private leaves
/// under spines: topology order is best there, each hop staying under one leaf), and where there
/// is nothing to choose (fewer than 3 hosts).
/// `hosts`: each host's ranks; the routes run between the NICs of each host's first rank.
std::vector<std::vector<int>> fabric_cycles(const topo::Topology& t, const std::vector<std::vector<int>>& hosts,
                                            const topo::NicAffinity& aff, int cycles);

}  // namespace collkit::plan::algo
