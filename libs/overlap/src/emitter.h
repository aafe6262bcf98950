#pragma once
// Internal: turns segments into tasks. It keeps the program order (the `tail` every next op
// follows), the gates the next op must also wait for, and the collectives still in flight.
// Strategies call it to emit their segments their way; the rest are emitted serially here.

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "collkit/overlap/cost.h"
#include "collkit/overlap/timeline.h"
#include "collkit/overlap/workload.h"

namespace collkit::overlap {

class Emitter {
 public:
  Emitter(std::vector<Task>& tasks, ComputeModel& cm, CommModel& comm) : tasks_(&tasks), cm_(&cm), comm_(&comm) {}

  /// What the next op in program order waits for: the tail and the gates.
  std::vector<int> ready() const;
  /// A compute op (or `fraction` of it, chunk `chunk`) after ready() plus `extra`; becomes the tail.
  int compute(const Segment& s, const ComputeOp& op, double fraction = 1, int chunk = -1, std::vector<int> extra = {});
  /// A collective on its group's stream after `deps`, not blocking the program.
  /// It pays `fraction` of the calibrated wait for the slowest rank (a chunk's share of its
  /// collective's), or `wait_share` of it where that is given (a gradient bucket's share of the
  /// step's gradients), and a further meeting's cost for the rest (CommEstimate::chunk_sync_us).
  int comm_async(const Segment& s, const CommOp& op, std::vector<int> deps, double fraction = 1, int chunk = -1, double wait_share = -1);
  /// A collective the program waits for: after ready(), becomes the tail.
  int comm_blocking(const Segment& s, const CommOp& op);
  /// The next op waits for `task` too.
  void gate(int task) { gates_.push_back(task); }
  /// Per-chunk gates: chunk i of the next op may start once task i has ended (a row-split pipeline
  /// carried from one op to the next, as Domino does). Until a strategy takes them they act as gates.
  void set_chunk_gates(std::vector<int> tasks) { chunk_gates_ = std::move(tasks); }
  /// The chunk gates, handed over and cleared.
  std::vector<int> take_chunk_gates() { return std::exchange(chunk_gates_, {}); }
  std::size_t chunk_gate_count() const { return chunk_gates_.size(); }
  /// The step end waits for `task`.
  void in_flight(int task) { in_flight_.push_back(task); }

  /// Gradient bytes not yet reduced, per (group, collective): the serial rule reduces them all at
  /// the step end; dp-bucket launches them in buckets.
  struct Pending {
    std::map<std::pair<Group, plan::Collective>, std::uint64_t> bytes;
    std::uint64_t total() const;
  };
  Pending& pending() { return pending_; }
  /// Launches the pending gradients as one collective per group after `deps`; returns the tasks.
  /// Each pays the wait for the slowest rank in proportion to its share of the step's gradients of
  /// its group (count_gradients): the serial step's one reduction all of it, dp-bucket's buckets
  /// each their part.
  std::vector<int> flush_pending(const Segment& s, std::vector<int> deps);
  /// The step's gradient bytes per (group, collective): every gradient-reduction segment's.
  void count_gradients(const std::vector<Segment>& segments);
  /// `bytes` of gradients of (group, collective) over the step's (1 where none were counted).
  double gradient_share(Group g, plan::Collective c, std::uint64_t bytes) const;

  /// Program-order marks a strategy can keep (fsdp-prefetch: the tail at each parameter gather).
  std::vector<int>& marks() { return marks_; }

  /// The serial rule for any segment.
  void emit_serial(const Segment& s);
  /// The step end: pending gradients reduced (blocking), then everything in flight waited for.
  void emit_step_end(const Segment& s);

  int tail() const { return tail_; }

 private:
  int add(Task t);
  /// A task on the compute stream of `work_us` after ready() plus `extra`; becomes the tail.
  int compute_task(const Segment& s, std::string name, double work_us, int chunk, std::vector<int> extra);
  Stream stream_of(const CommOp& op) const;

  std::vector<Task>* tasks_;
  ComputeModel* cm_;
  CommModel* comm_;
  int tail_ = -1;
  std::vector<int> gates_, chunk_gates_, in_flight_, marks_;
  Pending pending_;
  Pending gradients_;  // the step's, all of them (count_gradients)
};

}  // namespace collkit::overlap
