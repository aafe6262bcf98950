#pragma once
// The optimal AllGather rate of a topology (ForestColl, arXiv 2402.06787, docs/synth.md): the
// largest x such that every root rank can broadcast at x to every other rank at once. It is the
// least, over vertex sets A holding some but not all ranks, of B+(A) / ranks(A), the same cut
// bounds::max_ratio_cut bounds AllGather by; here it is found by max flows alone.

#include <cstdint>

#include "collkit/topo/topology.h"

namespace collkit::plan::synth {

struct Rate {
  double per_root_gbps = 0;  ///< x*: each root's share of every rank's incoming bandwidth
  double cut_gbps = 0;       ///< B+(A) of the tightest cut A found
  double cut_ranks = 0;      ///< ranks(A) of that cut; x* = cut_gbps / cut_ranks
  std::int64_t trees = 0;    ///< k: trees per root so that every link holds a whole number of
                             ///< x*/k units (bandwidths taken in 0.001 GB/s); 0 if no cut
  int flows = 0;             ///< max flows run (one per rank vertex per iteration)
};

/// x* for the first p ranks by Dinkelbach's iteration over a max-flow oracle: from a super-source
/// feeding each rank vertex at x times its ranks, every rank vertex must receive p x; a vertex
/// that does not gives a cut A with B+(A)/ranks(A) < x, the next x. Exact: it stops on a cut's
/// own ratio. One rank vertex (or p <= 1): no cut, per_root_gbps is infinity.
Rate optimal_rate(const topo::Topology& t, int p);

/// The optimal Broadcast (and, reversed, Reduce) rate from rank `root` to the other first p ranks:
/// the least max flow from the root's vertex to another rank vertex over every link (Edmonds'
/// arborescence theorem: that many unit trees from the root pack), as plan::lower_bound bounds
/// Broadcast by. cut_gbps is that flow, cut_ranks 1, trees k so that every link holds a whole
/// number of x*/k units (x* = C / gcd(C, g) in 0.001 GB/s, g the gcd of all link bandwidths).
Rate broadcast_rate(const topo::Topology& t, int p, int root);

/// The best rate with exactly k trees per root: the largest unit u such that, each link holding
/// floor(bw / u) units, every rank vertex can receive p k units from a source giving each rank
/// vertex w(v) k (monotone in u, so bisection; then snapped down to the largest bw / m below it).
/// Returns k u, at most optimal_rate(t, p).per_root_gbps; 0 if no u works. With root >= 0 the
/// same for k trees rooted at rank `root` alone (Broadcast): the source feeds only its vertex,
/// k units, each rank vertex must receive k, and the most is broadcast_rate(t, p, root).
double rate_for_trees(const topo::Topology& t, int p, std::int64_t k, int root = -1);

}  // namespace collkit::plan::synth
