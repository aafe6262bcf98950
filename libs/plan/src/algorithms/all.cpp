#include "all.h"

namespace collkit::plan {

std::vector<AlgorithmFactory> algorithm_factories() {
  return {
      make_ring,
      make_hier,
      make_tree,
      make_rd,
      make_rhd,
      make_bruck,
      make_pairwise,
      make_direct,
      make_twoshot,
      make_scatter_allgather,
      make_reducescatter_gather,
      make_straggler,
      make_synth_front,
  };
}

}  // namespace collkit::plan
