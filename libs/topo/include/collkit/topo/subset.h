#pragma once
// A topology seen by a subset of its ranks: the same graph (so routes between the chosen ranks
// cross the same links and switches), with only those ranks, renumbered 0..n-1 in the order given.
// libs/plan simulates a collective on "the first n ranks" of a topology; this is how a caller
// plans for a group such as a data-parallel group strided across hosts.

#include <span>

#include "collkit/topo/topology.h"

namespace collkit::topo {

/// A copy of `t` whose rank i is `ranks[i]` of `t`. Throws InputError when a rank is out of range,
/// repeated, or the list is empty. The name gets the suffix "[r0,r1,...]" (abbreviated past 8).
Topology with_ranks(const Topology& t, std::span<const Rank> ranks);

}  // namespace collkit::topo
