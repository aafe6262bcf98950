#pragma once
// coll-run's harness, nccl-tests' shape: for every collective, algorithm, datatype, operator and
// size asked for, it sets the plan up on a backend, times out-of-place and in-place runs, checks
// every element outside the timed loop, and runs the backend's native collective beside it.
// Rank 0 plans (or loads the plan) and gives every rank the same plan; every rank checks its own
// output and the counts are added up.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "collkit/exec/backend.h"
#include "collkit/exec/datatype.h"
#include "collkit/plan/collective.h"

namespace collkit::exec {

struct Results;

struct RunOptions {
  std::string plan_file;                     ///< a collkit.plan/1 file; or plan on the fly:
  std::vector<plan::Collective> collectives = {plan::Collective::AllReduce};
  std::vector<std::string> algorithms = {"auto"};  ///< registry names, "auto", or "all" (every applicable one)
  std::string topo_file;                     ///< plan for and predict on this topology; empty = discover (or none)
  bool discover = true;                      ///< without --topo, discover the job's hosts to plan on
  int channels = 0;
  std::vector<DataType> types = {DataType::Float32};
  std::vector<RedOp> ops = {RedOp::Sum};
  int root = 0;
  std::uint64_t min_bytes = 32ull << 20, max_bytes = 32ull << 20;  ///< nccl-tests' defaults
  std::uint64_t factor = 2;
  std::uint64_t step_bytes = 0;  ///< -i: add this between rows instead of multiplying by factor (0: -f)
  bool sizes_given = false;  ///< -b/-e given (with --plan: else the plan's own size)
  int iters = 20, warmup = 5;
  int check = 1;  ///< -c N: checked runs per placement, each on fresh inputs (0: none)
  bool baseline = true;
  double timeout_s = 60;
  /// Rank 0 only: hears the results so far (the table being measured included, Results::complete
  /// false) after every row, so that a run stopped by a failed peer still leaves its rows.
  std::function<void(const Results&)> on_row;
};

/// One placement's measurement.
struct Timing {
  bool ran = false;
  double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;
  /// The median over the timed blocks of the slowest rank's time per iteration in each block
  /// (time_us is their mean over all iterations, as nccl-tests reports): a block that other work
  /// on the host preempted moves the mean, not this. What the simulator predicts is one
  /// undisturbed collective; `coll-plan compare --measured block-median` and calibrate's fit use it.
  double block_median_us = 0;
  std::uint64_t wrong = 0;
  bool checked = false;
};

struct Row {
  plan::Collective coll = plan::Collective::AllReduce;
  std::string algorithm;  ///< the plan's ("ring"), for auto the one chosen
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;
  int root = -1;          ///< -1 when the collective has none (nccl-tests prints -1)
  std::uint64_t bytes = 0, count = 0;
  std::string in_place_note;  ///< "staged: <why>" when in-place could not run on overlapping buffers
  Timing out_of_place, in_place;
  Timing native_out_of_place, native_in_place;
  std::string native_note;   ///< why the native collective did not run
  double predicted_us = 0;   ///< simulator, with --topo
  double bound_us = 0;
  std::string plan_json;     ///< the plan run at this size (collkit.plan/1)
};

/// A table: one (collective, algorithm, datatype, operator) over sizes.
struct Table {
  plan::Collective coll = plan::Collective::AllReduce;
  std::string algorithm;  ///< as asked ("auto", "ring", a plan file's algorithm)
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;
  std::string native_name;
  std::vector<Row> rows;
  std::vector<std::string> notes;  ///< sizes skipped and why
};

struct Results {
  std::string backend, library_version;
  int nranks = 0;
  std::vector<std::string> hosts;
  std::string topology;  ///< name of the topology planned on, if any
  std::vector<Table> tables;
  std::uint64_t total_wrong = 0;
  int iters = 0, warmup_iters = 0;  ///< timed and untimed iterations per measurement (RunOptions')
  bool complete = true;  ///< false in RunOptions::on_row's snapshots: the run goes on (or was stopped)
};

/// Runs everything asked; rank 0 prints each table to `out` as it completes (others print
/// nothing). Throws InputError, identically on every rank, for a request no rank can run (a plan
/// for another rank count, an unsupported datatype) before any communication of data.
Results run(const RunOptions& opt, Backend& backend, World& world, std::ostream& out);

/// collkit.results/1.
std::string to_json(const Results& r);
/// The same rows as CSV, one line per row and a header (`--csv`): for spreadsheets and plots.
std::string to_csv(const Results& r);

}  // namespace collkit::exec
