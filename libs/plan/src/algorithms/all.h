#pragma once
// Factories of every algorithm (one file each in this folder). A new algorithm adds its factory
// here and to the list in all.cpp.

#include <vector>

#include "collkit/plan/algorithm.h"

namespace collkit::plan {

using AlgorithmFactory = const Algorithm* (*)();

const Algorithm* make_ring();

/// Every factory, in the registry's order.
std::vector<AlgorithmFactory> algorithm_factories();

}  // namespace collkit::plan
