#pragma once
// Hosts whose cuts mirror another host's, for the ForestColl cut search (bounds.cpp).

#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::plan::detail {

/// Per vertex: true when it lies in a host h for which an automorphism of the topology (keeping
/// kinds, link bandwidths and the rank weights `w`) maps h onto a host that is not marked. Any
/// cut leaving out a rank of h is then mirrored by a cut of equal weight and bandwidth leaving
/// out a rank of an unmarked host, so a search over left-out ranks may skip marked hosts
/// exactly. Found in two steps, each checked, never guessed:
///  - twins: hosts whose vertices, matched in id order, have equal kinds and weights, links
///    inside between the same positions and links out to the very same vertices (hosts under
///    the same leaves of a rail-optimised fat-tree); swapping two twins is an automorphism;
///  - groups of twins of the same shape (a leaf group of a fat-tree and another): the candidate
///    swaps the groups host by host and their outside neighbours (the leaves) link by link, and
///    is kept only if every link it moves maps onto a link of equal bandwidth.
std::vector<char> mirrored_hosts(const topo::Topology& t, const std::vector<double>& w);

}  // namespace collkit::plan::detail
