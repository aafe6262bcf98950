#pragma once
// The part of a topology that rank-to-rank traffic is routed over (topo/routing.h). The optimal
// rate lets any vertex relay over any link, e.g. GPU to GPU through PCIe and the CPU beside the
// NVSwitch; but a plan's sends go rank to rank along the topology's routes, which take no such
// detour, so trees packed at that rate would ask the routed links for more than they have.
// Synthesising on the routed links alone gives trees that the routes carry (docs/synth.md).

#include "collkit/topo/topology.h"

namespace collkit::plan::synth {

/// A copy of t (same vertices, ids and ranks) with only the links on the route between some two
/// of the first p ranks' vertices.
topo::Topology routed_links(const topo::Topology& t, int p);

}  // namespace collkit::plan::synth
