#pragma once
// The plans a coll-run job runs: rank 0 makes each one (from --plan, or with libs/plan's planner
// on the --topo or discovered topology), proves it correct and decides how it runs in place, and
// every rank receives the same plan. A decision rank 0 alone can make (a bad topology, an
// algorithm that cannot do the request) reaches every rank as the same error.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collkit/exec/harness.h"
#include "collkit/plan/plan.h"
#include "collkit/topo/topology.h"

namespace collkit::exec {

struct PlannedSize {
  std::unique_ptr<plan::Plan> plan;  ///< null when this size is skipped
  std::string skipped;               ///< why
  Job job;
  InPlaceMode in_place = InPlaceMode::Direct;
  std::string in_place_note;
  double predicted_us = 0, bound_us = 0;
  std::string plan_json;
};

class Planner {
 public:
  /// Every rank: loads --plan (checking its rank count); rank 0 loads --topo or discovers.
  Planner(const RunOptions& opt, int nranks, World& world);
  ~Planner();

  std::string topology_name() const { return topo_name_; }
  /// A --plan file's size; 0 without one.
  std::uint64_t file_plan_bytes() const;
  std::vector<plan::Collective> collectives() const;
  /// The algorithms to run for `c`: --plan's, or --algo's list with "all" expanded to those that
  /// can do it (collective call).
  std::vector<std::string> algorithms(plan::Collective c) const;
  /// The plan for one size, on every rank (collective call).
  PlannedSize plan(plan::Collective c, const std::string& algo, DataType type, RedOp op, std::uint64_t bytes, int root);

 private:
  std::string make(plan::Collective c, const std::string& algo, DataType type, std::uint64_t bytes, int root);

  const RunOptions& opt_;
  int nranks_;
  World& world_;
  std::unique_ptr<plan::Plan> file_plan_;
  std::optional<topo::Topology> topo_;  // rank 0 only
  std::string topo_name_;
  struct Proofs {
    std::string error;     ///< why the plan is wrong; empty when verified
    std::string in_place;  ///< "" when it runs in place directly, else why it is staged
  };
  std::map<std::string, Proofs> proofs_;  // by plan shape (rank 0)
  // Rank 0's answers for the request last asked about, by size.
  std::string decided_for_;
  std::map<std::uint64_t, std::string> decided_;
};

}  // namespace collkit::exec
