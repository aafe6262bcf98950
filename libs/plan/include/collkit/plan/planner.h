#pragma once
// Choosing among algorithms by simulation: `auto`, and the size sweep that becomes a tuning table.

#include <memory>
#include <string>
#include <vector>

#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/topology.h"

namespace collkit::plan {

/// One algorithm's prediction for one request.
struct Candidate {
  std::string algorithm;
  bool applicable = false;
  std::string why_not;  ///< when not applicable
  double time_us = 0;
  double busbw_gbps = 0;
  std::unique_ptr<Plan> plan;
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
};
Evaluation evaluate(const Request& req, const topo::Topology& topo, const AlgoOptions& opt = {},
                    const SimOptions& sim = {});

/// Generates `name` ("auto" = the fastest by simulation) for the request; with a topology the
/// plan carries its prediction and bound.
std::unique_ptr<Plan> plan_for(std::string_view name, const Request& req, const topo::Topology* topo,
                               const AlgoOptions& opt = {}, const SimOptions& sim = {});

/// One row of a sweep: the request size and the evaluation at it.
struct SweepRow {
  std::uint64_t bytes = 0;
  Evaluation eval;
};
/// Sizes from `min_bytes` to `max_bytes` multiplying by `factor` (nccl-tests' -b -e -f).
std::vector<SweepRow> sweep(Collective coll, int nranks, int root, std::uint64_t min_bytes, std::uint64_t max_bytes,
                            std::uint64_t factor, const topo::Topology& topo, const AlgoOptions& opt = {},
                            const SimOptions& sim = {});

/// The tuning table (JSON text, schema collkit.tuning/1): size ranges mapped to the winning
/// algorithm and its channels, adjacent sizes with the same winner merged.
std::string tuning_table_json(const std::vector<SweepRow>& rows, Collective coll, int nranks, const topo::Topology& topo);

}  // namespace collkit::plan
