#pragma once
// The direct (one-shot) exchange that `direct`, `twoshot` and `reducescatter_gather` share:
// every transfer straight from the rank that has the data to the rank that needs it, all at
// once. Ranks are named by position v = 0..p-1 (`at(v)` is the rank there); the transfers between
// positions v and v+s run on lane (s-1) mod lanes, both ways, so transfers to different peers
// proceed concurrently (NVSwitch, xGMI mesh) instead of one after another on one channel.

#include <cstdint>
#include <functional>
#include <vector>

#include "collkit/plan/plan.h"

namespace collkit::topo {
class Topology;
}

namespace collkit::plan::algo {

/// True when ranks 0..nranks-1 all sit on one host of `topo`: one switch-connected domain, where
/// a rank may talk to every other at once. Across hosts each rank would push p-1 messages through
/// its NIC at once.
bool on_one_host(int nranks, const topo::Topology& topo);

/// The lane of the transfers between positions v and v+s (mod p), s = 1..p-1.
inline std::uint16_t direct_lane(int s, int lanes) { return static_cast<std::uint16_t>((s - 1) % lanes); }

/// Direct reduce-scatter at position v of p: sends `piece(q)` (`count` chunks of the input) to
/// position q for every q != v, all at once, then sums its own piece(v) and the p-1 pieces for v
/// that arrive into `dst`, each sum waiting for the one before so no two write `dst` at once
/// (with one rank: a copy). Returns the index in `ops` of the last op that writes `dst`.
std::uint32_t direct_reduce_scatter(std::vector<Op>& ops, int p, int v, const std::function<int(int)>& at,
                                    const std::function<ChunkRef(int)>& piece, std::uint32_t count, ChunkRef dst, int lanes);

}  // namespace collkit::plan::algo
