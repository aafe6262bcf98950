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
  std::vector<int> deps;      ///< indices of earlier tasks
  std::uint64_t bytes = 0;    ///< communication tasks
  /// Communication tasks with the same key cross the same links: while n of them run (on
  /// different streams), each progresses at 1/n of its speed. -1: shares with nothing.
  int share = -1;
  int layer = -1, microbatch = 0, chunk = -1;
  bool backward = false;
  double start_us = 0, end_us = 0;  ///< filled by simulate()
};

struct TimelineStats {
  double makespan_us = 0;
  double compute_alone_us = 0;   ///< sum of compute work
  double compute_actual_us = 0;  ///< sum of compute durations as run (slowed under overlap)
  double comm_us = 0;            ///< sum of communication work
  double exposed_comm_us = 0;    ///< makespan - compute_actual: the compute stream waiting
};

/// Runs the tasks (filling start/end) and measures. Throws collkit::Error on a dependency on a
/// later task (a cycle) or a negative duration.
TimelineStats simulate(std::vector<Task>& tasks, double contention);

}  // namespace collkit::overlap
