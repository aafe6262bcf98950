#pragma once
// How far the simulator's predictions are from what coll-run measured: per row of a
// collkit.results/1 file, measured vs predicted and the error, with the median and worst |error|
// over all rows (issue #13's fidelity goal: median at most 10%, worst at most 30%).

#include <cstdint>
#include <string>
#include <vector>

#include "collkit/plan/simulate.h"
#include "collkit/topo/topology.h"

namespace collkit::exec {

struct FidelityRow {
  std::string collective;
  std::string algorithm;
  std::string type;  ///< the datatype measured
  std::uint64_t bytes = 0;
  double measured_us = 0;   ///< out-of-place time as coll-run reported it (its mean or block median)
  double predicted_us = 0;  ///< recorded with the run, or simulated again on the topology given
  /// (predicted - measured) / measured, in percent: negative when the model is optimistic
  double error_percent() const { return measured_us > 0 ? (predicted_us - measured_us) / measured_us * 100.0 : 0; }
};

struct Fidelity {
  std::vector<FidelityRow> rows;
  int skipped = 0;  ///< rows with no measurement or no prediction
  double median_abs_error_percent = 0;
  double worst_abs_error_percent = 0;
  std::size_t worst_row = 0;  ///< index into rows of the worst |error|
};

/// Which measured time a row is judged by: coll-run's `time_us` (the slowest rank's mean per
/// iteration) or `block_median_us` (the median over the timed blocks: what an undisturbed run
/// takes, as the simulator predicts; docs/run.md).
enum class Measured { Mean, BlockMedian };

/// Reads a collkit.results/1 text (`file` names it in errors). With a topology, every row's plan
/// (stored in the row) is simulated on it with `sim` (a calibrated topology, a different link
/// model); without one the prediction recorded at run time is used. InputError naming the file
/// and field for anything malformed, and when no row has both a measurement and a prediction.
/// With Measured::BlockMedian a measured row without `block_median_us` (an older coll-run's) is an
/// InputError naming it.
Fidelity compare_results(const std::string& file, const std::string& text, const topo::Topology* topo, const plan::SimOptions& sim = {},
                         Measured measured = Measured::Mean);

/// |error| figures of a set of rows (used by compare_results; rows must be non-empty).
void summarise(Fidelity& f);

}  // namespace collkit::exec
