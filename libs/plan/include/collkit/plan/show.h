#pragma once
// Human-readable views of a plan, for `coll-plan show`.

#include <string>

#include "collkit/plan/plan.h"

namespace collkit::plan {

/// A summary line, then ranks [first_rank, first_rank + count) (clipped to the plan) op by op in
/// program order, one line each:
///   rank 0 ch 0  #3 send -> 1  output[4..5]  deps 1
/// `count` < 0 means every rank from first_rank on.
std::string describe_plan(const Plan& plan, int first_rank, int count);

/// One op as describe_plan() prints it after "#i ": "recv_reduce <- 3  input[2] -> output[2]".
std::string describe_op(const Op& op);

/// ", shares 74,74,36,36 of a slice" for a plan whose channels carry unequal shares (a ring's
/// param weights: docs/algorithms.md, "Weighted channels"), ", tree shares 137,68,... chunks"
/// for one root's synthesised trees (param tree_chunks: docs/synth.md), for the summary lines;
/// "" otherwise.
std::string weights_note(const PlanInfo& info);

}  // namespace collkit::plan
