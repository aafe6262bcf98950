#pragma once
// Choosing among algorithms by simulation: `auto`, and the size sweep that becomes a tuning table.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/topology.h"

namespace collkit::plan {

/// One algorithm's prediction for one request, at the best of the knob settings tried.
struct Candidate {
  std::string algorithm;
  bool applicable = false;
  std::string why_not;  ///< when not applicable
  double time_us = 0;
  double busbw_gbps = 0;
  std::string knobs;  ///< the knobs searched and the values chosen, "channels=8 pipeline=4"; empty: none
  std::string not_searched;  ///< why its knobs were not searched ("11.2 x the best"); empty: they were, or it has none
  int tried = 0;      ///< plans simulated for it
  std::unique_ptr<Plan> plan;
};

/// How `auto` searches: every algorithm at the given options, then the best `search_top` of
/// them (those within `search_within` of the best) over their knobs (Algorithm::knobs, one knob at a time, keeping what helps), stopping
/// once the best is within `close_enough` of the bound. `on_plan` (when set) hears of each plan
/// simulated, for progress reports.
struct SearchOptions {
  int search_top = 3;
  double close_enough = 0.01;
  /// A candidate more than this many times the best at the given options is not searched over
  /// its knobs (Candidate::not_searched says so): no knob of any algorithm here has moved a plan
  /// by half that (results/plan_gaps.md), and at 16384 ranks a tree's pipeline search, 11 x the
  /// best, took longer than everything else auto did.
  double search_within = 4.0;
  std::function<void(int done)> on_plan;
};

/// Every registered algorithm simulated (those with more ops than sim.op_budget, estimated as rank
/// 0's program x ranks, are left out with the reason) for the request on the topology (its first req.nranks
/// ranks), in registry order, plus the bound. Plans get predicted_us, bound_us and the topology's
/// name and fingerprint.
struct Evaluation {
  std::vector<Candidate> candidates;
  Bound bound;
  /// Index of the fastest applicable candidate; -1 when none applies.
  int best = -1;
  int tried = 0;  ///< plans simulated in all
  /// Why the best won, in one line: its knobs, time and gap, the runner-up, what was tried.
  std::string why() const;
};
Evaluation evaluate(const Request& req, const topo::Topology& topo, const AlgoOptions& opt = {}, const SimOptions& sim = {},
                    const SearchOptions& search = {});

/// Generates `name` ("auto" = the fastest by simulation) for the request; with a topology the
/// plan carries its prediction and bound.
std::unique_ptr<Plan> plan_for(std::string_view name, const Request& req, const topo::Topology* topo, const AlgoOptions& opt = {},
                               const SimOptions& sim = {}, const SearchOptions& search = {}, std::string* why = nullptr);

/// One row of a sweep: the request size and the evaluation at it.
struct SweepRow {
  std::uint64_t bytes = 0;
  Evaluation eval;
};
/// Sizes from `min_bytes` to `max_bytes` multiplying by `factor` (nccl-tests' -b -e -f).
std::vector<SweepRow> sweep(Collective coll, int nranks, int root, std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                            const topo::Topology& topo, const AlgoOptions& opt = {}, const SimOptions& sim = {},
                            const SearchOptions& search = {});

/// The tuning table (JSON text, schema collkit.tuning/1, collkit/plan/tuning.h): size ranges mapped
/// to the winning algorithm and its channels, and to the fastest of the algorithms NCCL has (its
/// tuner plugin's choice), adjacent sizes with the same choices merged.
std::string tuning_table_json(const std::vector<SweepRow>& rows, Collective coll, int nranks, const topo::Topology& topo);

}  // namespace collkit::plan
