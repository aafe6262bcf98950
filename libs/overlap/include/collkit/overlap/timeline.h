#pragma once
// Tasks on streams, simulated: each stream runs its tasks in the order given (as a CUDA stream
// does), a task starts when its stream is free and its dependencies have ended. While any
// communication task runs, compute progresses at 1/(1 + contention) of its speed: communication
// kernels take SMs and memory bandwidth from it. Collectives of one group running at once on
// different streams split its links evenly.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/overlap/workload.h"

namespace collkit::overlap {

/// DP traffic has two streams, as PyTorch FSDP and Megatron-Core keep them: parameter gathers
/// (Dp) and gradient reductions (DpReduce), so that a prefetch never queues behind a reduction.
enum class Stream : std::uint8_t { Compute, Tp, Ep, Dp, DpReduce, Pp };
inline constexpr int kStreams = 6;
std::string_view to_string(Stream s);

struct Task {
  std::string name;
  Stream stream = Stream::Compute;
  double work_us = 0;         ///< duration when run alone
  /// Communication tasks: the part of work_us that is the calibrated wait for the slowest rank
  /// (CommEstimate::sync_us, this task's share). Paid in the step, where ranks meet after
  /// computing apart; not part of the collective's time alone (a run with the compute skipped
  /// has no such wait), so TimelineStats counts it apart.
  double wait_us = 0;
  std::vector<int> deps;      ///< indices of earlier tasks
  std::uint64_t bytes = 0;    ///< communication tasks
  /// Communication tasks with the same key cross the same links: while n of them run (on
  /// different streams), each progresses at 1/n of its speed. -1: shares with nothing.
  int share = -1;
  int layer = -1, microbatch = 0, chunk = -1;
  bool backward = false;
  double start_us = 0, end_us = 0;  ///< filled by simulate()
  /// What coll-overlap run executes: compute tasks run `fraction` of `op`'s rows, communication
  /// tasks run `coll` of `bytes` over rank 0's `group` (op is empty for them).
  ComputeOp op;
  double fraction = 1;
  Group group = Group::Tp;
  plan::Collective coll = plan::Collective::AllReduce;
};

/// How tasks slow each other. `compute`: compute progresses at 1/(1 + compute) of its speed while
/// any communication runs; `comm`: communication at 1/(1 + comm) while compute runs (0 on a GPU,
/// where collectives have their own copy engines and SMs; measured by coll-overlap calibrate on a
/// CPU, where both share the cores). `one_comm_stream`: every collective goes on one stream in
/// issue order, as coll-overlap run's one communication thread executes them.
struct Contention {
  double compute = 0;
  double comm = 0;
  bool one_comm_stream = false;
};

struct TimelineStats {
  double makespan_us = 0;
  double compute_alone_us = 0;   ///< sum of compute work
  double compute_actual_us = 0;  ///< sum of compute durations as run (slowed under overlap)
  double comm_us = 0;            ///< sum of communication work alone (work_us - wait_us): the collectives without compute
  double comm_wait_us = 0;       ///< sum of the communication tasks' wait_us: the waits for the slowest rank a step pays
  double exposed_comm_us = 0;    ///< makespan - compute_actual: the compute stream waiting
};

/// Runs the tasks (filling start/end) and measures. Throws collkit::Error on a dependency on a
/// later task (a cycle) or a negative duration.
TimelineStats simulate(std::vector<Task>& tasks, double contention);
TimelineStats simulate(std::vector<Task>& tasks, const Contention& contention);

}  // namespace collkit::overlap
