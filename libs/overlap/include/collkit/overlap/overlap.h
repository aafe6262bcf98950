#pragma once
// Overlap schedules: strategies (each its own file under src/strategies/) turn the step's
// segments into tasks; `auto` searches the knobs of every applicable one. The entry point.

#include <optional>
#include <string>
#include <vector>

#include "collkit/overlap/cost.h"
#include "collkit/overlap/timeline.h"
#include "collkit/overlap/workload.h"

namespace collkit::overlap {

/// Facts about a strategy, for listings and errors.
struct StrategyInfo {
  std::string name;     ///< "dp-bucket"
  std::string knob;     ///< "bucket_mb"
  std::string summary;  ///< one line
};
/// Every strategy except none and auto, in a fixed order.
std::vector<StrategyInfo> strategies();

/// A strategy with its knob value.
struct Choice {
  std::string strategy;
  int knob = 0;
};

/// Contention: compute slows by this fraction while communication runs beside it. Default 0.189:
/// the mean compute slowdown under overlap measured on A100/H100/MI250/MI210 by "Characterizing
/// Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning: Performance and
/// Power Implications" (arXiv 2507.03114, 2025): 18.9% on average, 40.0% at most.
inline constexpr double kDefaultContention = 0.189;

/// One row of the summary.
struct StrategyResult {
  std::string name;             ///< "none", "tp-decompose", "auto", "tp-decompose+dp-bucket"
  std::vector<Choice> choices;  ///< with their knobs
  TimelineStats stats;
  double bubble_us = 0;         ///< pipeline fill and drain: (pp - 1) x one micro-batch's compute
  double step_us = 0;           ///< makespan + bubble
  double overlap_ratio = 0;     ///< hidden / total communication
  double slowdown = 1;          ///< compute as run / compute alone
  double speedup = 1;           ///< none's step / this step
  double speedup_no_contention = 1;  ///< the same knobs with contention 0: what contention costs
  std::vector<Task> tasks;      ///< the schedule
};

/// The largest knob a strategy takes (docs/errors.md, "Limits"): chunks per GEMM or per expert
/// step, a bucket's MB, a prefetch depth. Each unit of a knob is a task per segment; past a few
/// dozen chunks launches cost more than they hide, and no bucket needs to pass 1 GiB.
inline constexpr int kMaxKnob = 1024;

struct Request {
  std::vector<std::string> strategies = {"auto"};  ///< several combine; "auto" searches all
  std::vector<Choice> fixed;    ///< knob values given by the user (not searched)
  double contention = kDefaultContention;
  double comm_contention = 0;    ///< communication slowdown while compute runs (Contention::comm)
  bool one_comm_stream = false;  ///< every collective on one stream (coll-overlap run's CPU executor)
  Contention timeline() const { return {contention, comm_contention, one_comm_stream}; }
};

struct Report {
  std::vector<StrategyResult> rows;  ///< none, each strategy alone, then the requested one (last)
  std::vector<std::string> skipped;  ///< "moe-pipeline: the model has no MoE layer"
};

/// Lays out the tasks of `choices` and simulates them.
StrategyResult evaluate(const Workload& w, ComputeModel& cm, CommModel& comm, const std::vector<Choice>& choices, double contention);
StrategyResult evaluate(const Workload& w, ComputeModel& cm, CommModel& comm, const std::vector<Choice>& choices,
                        const Contention& contention);
/// Every applicable strategy alone at each knob value `auto` may try (Strategy::candidates; a knob
/// the request fixes: that one), evaluated: the schedules a calibrated model may choose, whose
/// chunk sizes and GEMM shapes coll-overlap calibrate measures beside the rows'.
std::vector<StrategyResult> knob_schedules(const Workload& w, ComputeModel& cm, CommModel& comm, const Request& req);
/// A schedule by name and knobs, as a collkit.overlap/1 file's "strategies" rows state it.
struct NamedSchedule {
  std::string name;
  std::vector<Choice> choices;
};
/// The rows of `schedules` (names kept) evaluated under `req`'s contention, speedups against the
/// first: a recorded run's schedules predicted again by this model (coll-overlap run
/// --predict-only --schedules), whatever knobs the model would choose itself now.
Report evaluate_schedules(const Workload& w, ComputeModel& cm, CommModel& comm, const std::vector<NamedSchedule>& schedules,
                          const Request& req);
/// The summary rows for the request. Throws InputError for an unknown strategy or a strategy
/// asked for explicitly that does not apply.
Report run(const Workload& w, ComputeModel& cm, CommModel& comm, const Request& req);

}  // namespace collkit::overlap
