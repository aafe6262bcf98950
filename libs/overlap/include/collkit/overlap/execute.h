#pragma once
// coll-overlap run and calibrate (docs/overlap.md, "Measured"): a schedule the model chose,
// executed for real on every rank of an MPI job. Compute tasks run as GEMMs of the shapes the
// workload lists, chunked as the strategy says (--device cpu: single precision through OpenBLAS,
// one thread per rank; gpu: bfloat16 through cuBLAS on the rank's GPU); collectives run through
// libs/exec's mpi backend (gpu: nccl; collkit's plan, bfloat16 sums, every element checked as
// coll-run checks it) on one communication thread, in issue order; each side waits for the
// dependencies the schedule states. Every rank runs the same schedule (rank 0's), each
// collective among the ranks of its own group of the task's kind: the job is split into the
// layout's TP, EP, DP and expert-DP groups (World::split), so TP 2 x DP 2 on 4 ranks runs its TP
// collectives in two pairs and its DP ones in two others. No pipeline stages.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collkit/exec/world.h"
#include "collkit/overlap/calibration.h"
#include "collkit/overlap/overlap.h"
#include "collkit/topo/topology.h"

namespace collkit::overlap {

/// Where a rank computes and communicates: cpu (OpenBLAS GEMMs, the mpi backend) or gpu (cuBLAS
/// GEMMs on the rank's GPU, the nccl backend; refused with the reason where the build has no CUDA
/// or the rank sees no GPU).
enum class Device : std::uint8_t { Cpu, Gpu };
/// "cpu" or "gpu"; anything else is an InputError naming the flag.
Device parse_device(const std::string& s);

/// Checks that every rank can compute on `device` (gpu: a GPU of its own, a build with CUDA):
/// when one cannot, every rank throws the same exec::AgreedError (the first such rank's reason).
/// Collective call.
void check_device(exec::World& world, Device device, double timeout_s);

struct ExecOptions {
  int iters = 3;           ///< timed steps per mode (overlapped, compute alone, communication alone); the median is kept
  double timeout_s = 120;  ///< a collective without progress for this long stops the job
  Device device = Device::Cpu;
};

/// What the job measured for one schedule: rank 0's tasks of the median overlapped step, and
/// the same definitions as the model's (docs/overlap.md, "Metrics").
struct Measured {
  std::vector<Task> tasks;                ///< with measured start_us / end_us (from the step's start)
  double compute_alone_us = 0;            ///< the compute tasks run with no communication (median step)
  double comm_alone_us = 0;               ///< the collectives run with no compute (median step)
  double compute_actual_us = 0;           ///< compute task durations in the overlapped step
  double comm_actual_us = 0;              ///< collective durations in the overlapped step
  double step_us = 0;                     ///< rank 0's overlapped step (median)
  double step_max_rank_us = 0;            ///< the slowest rank's step in that iteration
  double step_min_us = 0, step_max_us = 0;  ///< rank 0's fastest and slowest overlapped step (the spread)
  double exposed_comm_us = 0;             ///< step - compute_actual
  double hidden_comm_us = 0;              ///< time when compute and a collective ran at once
  double overlap_ratio = 0;               ///< hidden / comm_actual (HTA's overlap %)
  double compute_slowdown = 1;            ///< compute_actual / compute_alone
  std::uint64_t collectives_checked = 0;  ///< collective runs whose output was checked, all ranks
  std::uint64_t wrong = 0;                ///< elements that differed, all ranks
  int dependency_violations = 0;          ///< tasks that started before a dependency ended (rank 0)
  int iters = 0;                          ///< timed steps of each mode (ExecOptions::iters)
  int warmup_iters = 0;                   ///< untimed steps before them (the checked one)
};

class Executor {
 public:
  /// Checks that the job can run the workload (rank count, groups, no pipeline) and plans its
  /// collectives on `topo` (rank 0 plans and verifies, every rank gets the plan). Collective call.
  Executor(exec::World& world, const Workload& w, const topo::Topology& topo, const ExecOptions& opt);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// What runs the GEMMs and the collectives, for the report's header.
  std::string describe() const;

  /// Every group of each kind with more than one rank, as the job was split (the ranks of each
  /// group in the job, in group order; groups sorted). The same on every rank.
  const std::map<Group, std::vector<std::vector<int>>>& groups() const;

  /// Runs `row`'s schedule: one checked step, then opt.iters steps of each mode. Collective call.
  Measured run(const StrategyResult& row);

  /// Measures what the model needs for the rows' schedules: each distinct GEMM shape's time, each
  /// distinct collective's time alone, and the slowdown of compute and of communication when both
  /// run at once (the largest collective beside the GEMM with the most compute time). Collective.
  /// `more`: schedules whose GEMM shapes and collectives are measured too (knob_schedules: every
  /// chunk size a calibrated model may choose, so that it predicts them from samples of their own
  /// rather than a line through other sizes).
  Calibration calibrate(const std::vector<StrategyResult>& rows, const std::vector<StrategyResult>& more = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The MPI job coll-overlap run works in: MPI initialised for threads (MPI_THREAD_SERIALIZED: a
/// step's collectives are called from its communication thread, everything else from the main
/// thread, never at once), then libs/exec's World on it. Finalises MPI when destroyed.
class ThreadedJob {
 public:
  ThreadedJob();
  ~ThreadedJob();
  ThreadedJob(const ThreadedJob&) = delete;
  ThreadedJob& operator=(const ThreadedJob&) = delete;
  exec::World& world() { return *world_; }

 private:
  std::unique_ptr<exec::World> world_;
};

struct RunContext;
struct Report;
/// collkit.overlap/1 (to_json) with "measured": per row (in the report's order) the measured
/// figures, the model's step beside them and the measured tasks with their dependencies; and
/// "calibration": the file the model was given, or null; "groups": the job's groups by kind
/// (Executor::groups()).
std::string measured_json(const Report& r, const RunContext& ctx, const std::vector<Measured>& measured, const Calibration* cal,
                          const std::string& calibration_file, const std::map<Group, std::vector<std::vector<int>>>& groups);
/// The measured step as a --trace timeline (same tracks and fields; otherData "simulated": false).
std::string measured_trace(const StrategyResult& predicted, const Measured& m, const RunContext& ctx);

/// Why `l` cannot run on a job of `ranks` ranks; empty when it can.
std::string cannot_execute(const Layout& l, int ranks);

}  // namespace collkit::overlap
