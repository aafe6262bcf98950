#pragma once
// Ring orders chosen from the topology: NVLink neighbours first, one NIC crossing per host,
// rails aligned across hosts, a different rail per channel. Without a topology: identity.

#include <vector>

#include "collkit/plan/collective.h"

namespace collkit::topo {
class Topology;
}

namespace collkit::plan {

/// The ring (position -> rank) for channel `channel` of a request on `topo` (null: identity).
std::vector<int> ring_order(const Request& req, const topo::Topology* topo, int channel);

}  // namespace collkit::plan
