#pragma once
// coll-run autotune (AutoCCL's idea, docs/adapt.md): every applicable algorithm and the model's
// `auto` choice measured per size in the first iterations, the fastest kept, written as a tuning
// table, with what it gains over the model's choice.

#include <cstdint>
#include <string>
#include <vector>

#include "collkit/exec/harness.h"
#include "collkit/plan/tuning.h"

namespace collkit::exec {

struct TunedSize {
  std::uint64_t bytes = 0;
  std::string model_choice;    ///< what `auto` (the simulator) chose: algorithm
  double model_choice_us = 0;  ///< its measured time
  std::string best;            ///< the fastest measured: algorithm
  int best_channels = 1;
  double best_us = 0;
  double best_predicted_us = 0;
  std::string best_nccl;  ///< the fastest of those NCCL has (ring, tree); empty when none ran
  int best_nccl_channels = 0;
  double best_nccl_us = 0;
  /// model's choice / best: how much faster the measured choice is (1: the model chose right).
  double gain() const { return best_us > 0 ? model_choice_us / best_us : 0; }
};

/// Per size of a run of `auto` beside every algorithm (one collective): the winners. The `auto`
/// table is the one whose Table::algorithm is "auto"; InputError when the results hold none. Where
/// auto's own row ran fastest, or the fastest candidate is auto's algorithm, the model's choice is
/// the best (gain 1).
std::vector<TunedSize> tune_from(const Results& r);

/// The measured winners as a tuning table (collkit.tuning/1): a range per size, ranges with the
/// same choices merged; NCCL's choice from the fastest of ring and tree measured.
plan::TuningTable tuning_table(const std::vector<TunedSize>& sizes, plan::Collective coll, int nranks, const std::string& topology);

}  // namespace collkit::exec
