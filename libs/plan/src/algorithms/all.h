#pragma once
// Factories of every algorithm (one file each in this folder). A new algorithm adds its factory
// here and to the list in all.cpp.

#include <vector>

#include "collkit/plan/algorithm.h"

namespace collkit::plan {

using AlgorithmFactory = const Algorithm* (*)();

const Algorithm* make_ring();
const Algorithm* make_hier();
const Algorithm* make_tree();
const Algorithm* make_rd();
const Algorithm* make_rhd();
const Algorithm* make_bruck();
const Algorithm* make_pairwise();
const Algorithm* make_direct();
const Algorithm* make_twoshot();
const Algorithm* make_straggler();
const Algorithm* make_scatter_allgather();
const Algorithm* make_reducescatter_gather();
const Algorithm* make_synth();
/// "synth" as registered: AlltoAll's flow LP (synth_alltoall.cpp) in front of make_synth()'s trees.
const Algorithm* make_synth_front();

/// Every factory, in the registry's order.
std::vector<AlgorithmFactory> algorithm_factories();

}  // namespace collkit::plan
