#pragma once
// Ring orders chosen from the topology: NVLink neighbours first, one NIC crossing per host,
// rails aligned across hosts, a different rail per channel, the channels spread over the
// host's links (ring_search.h) and, on a torus, over the router links (ring_hosts.h). Without
// a topology: identity.

#include <vector>

#include "collkit/plan/collective.h"

namespace collkit::topo {
class Topology;
}

namespace collkit::plan {

/// The rings (position -> rank) of channels 0..channels-1 of a request on `topo` (null:
/// identity), chosen together so that they share link directions as little as the links allow.
/// `bidirectional`: the caller runs the odd channels' rings backwards, and they are chosen for that.
/// On a torus odd channels run their pair's host cycle the other way round either way: when not
/// bidirectional their orders come back reversed.
std::vector<std::vector<int>> ring_orders(const Request& req, const topo::Topology* topo, int channels, bool bidirectional = false);

/// Channel `channel` of ring_orders(req, topo, channel + 1): channel 0 is the single best ring.
std::vector<int> ring_order(const Request& req, const topo::Topology* topo, int channel);

}  // namespace collkit::plan
