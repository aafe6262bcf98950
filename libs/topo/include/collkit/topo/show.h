#pragma once
// Human-readable views of a topology.

#include <cstdint>
#include <string>

#include "collkit/topo/topology.h"

namespace collkit::topo {

/// Counts of vertices and links by kind, hosts, ranks, per-rank bandwidth, notes.
std::string summary(const Topology& t);

/// A rank-by-rank matrix in the style of `nvidia-smi topo -m`: X, NV#, XGMI, C2C, PIX, PXB, PHB,
/// SYS, SHM (same endpoint), NET (other host), each with the route's bottleneck GB/s.
/// Ranks [first, first + count) only: big clusters show a window.
std::string matrix(const Topology& t, std::size_t first = 0, std::size_t count = 64);

/// The label nvidia-smi would give the route between two ranks ("NV18", "PIX", "NET", ...).
std::string connection_label(const Topology& t, Rank a, Rank b);

/// Graphviz DOT: hosts as clusters, links labelled with type and GB/s. With a window of ranks
/// [first, first + count), only the hosts holding them, those ranks' own vertices, the vertices
/// outside any host one link away from these (leaf switches), and the links among all of them.
std::string to_dot(const Topology& t, std::size_t first = 0, std::size_t count = SIZE_MAX);

}  // namespace collkit::topo
