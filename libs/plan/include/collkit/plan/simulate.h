#pragma once
// Event-driven simulation of a plan on a topology: every transfer follows its route, paying per
// hop latency plus size over bandwidth, with links shared between concurrent transfers.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collkit/plan/plan.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/topology.h"

namespace collkit::plan {

enum class LinkModel : std::uint8_t {
  Queue,    ///< fast: each link direction serves transfers first come, first served; cut-through across hops
  MaxMin,   ///< max-min fair sharing of every link direction among the flows crossing it
};

namespace sim {
class FoldCache;  // simulate_symmetry.h
}

struct SimOptions {
  LinkModel model = LinkModel::Queue;
  double per_message_us = 0.0;  ///< fixed software overhead per send (NCCL/MPI launch), added once per transfer
  double reduce_gbps = 0.0;     ///< local reduction throughput; 0 = free
  /// Sends of one (rank, channel) on their way at once: a send completes, for its rank's
  /// program, once its last byte has left, while its data arrives a route latency later; one
  /// more send than this waits for the oldest to arrive. NCCL keeps NCCL_STEPS = 8 slots in
  /// flight per channel, which is what lets a pipelined ring hide hop latency.
  int max_in_flight = 8;
  /// Queue model: a message of at most this many bytes may wait whole in front of a busy hop
  /// while the hops before it serve the messages behind it (a switch stores it); a larger one
  /// moves on all of its hops at once, at the least of what they have left (back-pressure).
  /// Without it pipelined trees across 8 or more hosts simulated 1.15-1.25 x what MaxMin gives
  /// (docs/plan.md, "Link models"); with every message stored, incast (many senders into one
  /// NIC) grew worse than MaxMin, a message pushed early holding a link another needed.
  double queue_store_bytes = 256 * 1024;
  /// Run one thread per orbit of the plan's stated symmetries where the topology has them too
  /// (docs/plan.md, "Symmetry"); the same result, in a fraction of the time and memory.
  bool fold_symmetry = true;
  std::size_t top_links = 5;    ///< how many busiest links to report
  /// Trace the chain of ops that ended last (SimResult::critical_path). Without it the
  /// simulation keeps no per-op end times: the planner's searches read only the time.
  bool critical_path = true;
  /// planner's evaluate(): a candidate with more ops is not simulated (at a few million simulated
  /// ops per second it would take minutes; a flat ring over 16k ranks has half a billion)
  double op_budget = 64e6;
  /// The same for a candidate that does not fold (docs/plan.md, "Symmetry"): it runs every op.
  double unfolded_op_budget = 8e6;
  /// One that does not fold and has more ops than unfolded_op_budget, up to this many, is
  /// simulated once, at the options given, and its knobs are not searched: on a cluster edited
  /// out of its symmetry (128 DGX H100, one NIC at half rate) the ring's 16-33 M ops take 3-7 s
  /// and 0.6-1.1 GB, and without it auto answered hier at 2.2-2.6 x the bound beside the ring's
  /// 1.4-1.5 (docs/plan.md, "Symmetry").
  double unfolded_once_op_budget = 40e6;
  /// ... where its ops carry this many bytes or more (the request's bytes over rank 0's ops):
  /// one of smaller ops is deep and latency-bound (a ring on 576 GB200 GPUs at 1 MiB: 4.5 s
  /// simulated once, 14 x behind bruck).
  double unfolded_once_min_bytes = 4096;
  /// When set, hears (ops simulated, ops in all) now and then: a 1152-rank ring that does not
  /// fold runs for seconds (for progress reports).
  std::function<void(std::size_t done, std::size_t total)> progress;
  /// Routes found by earlier simulations on the same topology, kept for later ones (the planner's
  /// candidates share one: at 16k ranks, finding routes was most of a simulation). Null: each
  /// simulation finds its own. One made for another topology is not used.
  std::shared_ptr<topo::RouteCache> routes;
  /// Symmetry checks done by earlier simulations with the same `routes` (the planner's candidates
  /// and a shell session share one: a plan's knob variants use the same rank pairs, whose routes
  /// and equivariance checks are then looked up once). Null, or one kept for other routes: each
  /// simulation checks afresh. The results are the same either way.
  std::shared_ptr<sim::FoldCache> folds;
};

/// A cache of symmetry checks for simulations that use `routes` (SimOptions::folds).
std::shared_ptr<sim::FoldCache> fold_cache_for(const std::shared_ptr<topo::RouteCache>& routes);

struct LinkLoad {
  topo::LinkId link;
  bool forward;
  std::uint64_t bytes;
  double busy_us;
};

struct SimResult {
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::size_t events = 0;          ///< transfers + local ops simulated
  std::size_t folded = 1;          ///< threads each simulated thread stood for (1: none folded)
  std::vector<LinkLoad> busiest;   ///< by busy time
  std::vector<std::string> critical_path;  ///< the chain of ops that ended last, described
};

/// Throws InputError when an option is not a finite number >= 0 (a NaN overhead would make
/// every event time NaN). simulate() checks too; callers check first to blame the flag, not a file.
void check_options(const SimOptions& opt);

/// Simulates; throws InputError when the plan's rank count exceeds the topology's ranks or a route
/// is missing, and when the plan deadlocks.
SimResult simulate(const Plan& plan, const topo::Topology& topo, const SimOptions& opt = {});

/// `opt` for a simulation whose time alone is read: no busiest links, no critical path (the
/// simulator then keeps no per-link tally and no per-op end times). The time is the same.
SimOptions time_only(SimOptions opt);

/// simulate()'s time alone, under time_only(opt): what a search's candidate simulations read.
double simulated_us(const Plan& plan, const topo::Topology& topo, const SimOptions& opt);
/// The same under the options of the search in force on this thread for `topo` (the link model
/// and overheads `evaluate()` or `plan_for()` was asked for, with its route and fold caches;
/// simulate_memo.h), the defaults outside one: what a layout that simulates plans of its own to
/// choose among (synth) reads, so that it keeps the plan fastest under the options asked for.
double simulated_us(const Plan& plan, const topo::Topology& topo);

/// Whether `plan`'s working set on some rank vertex (its ranks' input, output and scratch) is
/// larger than the topology's calibrated last-level cache (topo::Calibration::cache_bytes): the
/// simulator then moves the bytes past it at beyond_cache_factor x the fitted rates.
bool past_cache(const Plan& plan, const topo::Topology& topo);

}  // namespace collkit::plan
