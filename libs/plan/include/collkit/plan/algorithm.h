#pragma once
// Collective algorithms: one per file under libs/plan/src/algorithms/, behind this interface,
// found by name in one registry. An algorithm turns a request (and, when given, a topology) into
// a PlanInfo whose params hold every choice it made (ring order, tree shape), then expands any
// rank's program from that PlanInfo alone, so a plan file never needs the topology to replay.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/plan/plan.h"

namespace collkit::topo {
class Topology;
}

namespace collkit::plan {

/// Knobs common to algorithms; each algorithm ignores what it does not use.
struct AlgoOptions {
  int channels = 0;    ///< parallel channels (rings, trees); 0 = the algorithm's default
  int pipeline = 0;    ///< chunks per rank-slice for pipelining; 0 = default
  bool bidirectional = false;  ///< ring: half the data each way
  std::string inter;           ///< hier: the inter-host AllReduce ("ring", "rhd", "rd", "tree"); empty = by host count
};

/// One knob `auto` may turn for an algorithm: an AlgoOptions field by name ("channels",
/// "pipeline", "bidirectional", "inter") and the values worth trying, the default first.
struct Knob {
  std::string name;
  std::vector<std::string> values;
};

/// `opt` with knob `name` set to `value` (as the CLI flag of the same name would); InputError for
/// an unknown knob or a malformed value.
AlgoOptions with_knob(AlgoOptions opt, const std::string& name, const std::string& value);

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  /// Registry name ("ring", "tree", ...: docs/algorithms.md lists them all).
  virtual std::string_view name() const = 0;
  /// One line: the textbook alpha-beta cost, as docs/algorithms.md states it.
  virtual std::string_view formula(Collective c) const = 0;
  /// Can it do this request on this topology (null: no topology)? When not, `why` says so.
  virtual bool supports(const Request& req, const topo::Topology* topo, std::string* why) const = 0;
  /// Whether `auto` weighs it for this request: it supports it, and laying it out is fast enough to
  /// try beside every other (`auto` lays each candidate out several times); when not, `why` says
  /// so. By default, whenever it supports it.
  virtual bool in_auto(const Request& req, const topo::Topology* topo, std::string* why) const { return supports(req, topo, why); }
  /// Chooses chunking, channels and parameters. The topology, when given, informs choices
  /// (ring order: NVLink neighbours first, one NIC crossing per host, rails aligned).
  virtual PlanInfo layout(const Request& req, const topo::Topology* topo, const AlgoOptions& opt) const = 0;
  /// The knobs `auto` searches for this request (those the algorithm reads from AlgoOptions and
  /// whose best value depends on the topology and size); none by default.
  virtual std::vector<Knob> knobs(const Request&, const topo::Topology*) const { return {}; }
  /// Rank r's program under a PlanInfo this algorithm laid out (possibly read back from a file).
  virtual std::vector<Op> program(const PlanInfo& info, int rank) const = 0;
  /// Only channel c of that program (Plan::channel_program()); by default program() filtered.
  virtual std::vector<Op> channel_program(const PlanInfo& info, int rank, int channel) const {
    return only_channel(program(info, rank), channel);
  }
  /// Symmetries its programs hold under this PlanInfo (plan.h, SymmetryAxis): each must hold op
  /// for op (tests/unit/plan/test_symmetry.cpp checks them all); none by default.
  virtual std::vector<SymmetryAxis> symmetries(const PlanInfo&) const { return {}; }
  /// Plan::channel_images() of its plans; none by default.
  virtual std::vector<std::vector<int>> channel_images(const PlanInfo&) const { return {}; }
};

/// Every algorithm, in a fixed order.
const std::vector<const Algorithm*>& algorithms();
/// By name; throws InputError listing the known names.
const Algorithm& algorithm(std::string_view name);
/// Every algorithm's name, in the registry's order, joined by `sep` (for help texts and errors).
std::string algorithm_names(std::string_view sep);

/// A generated plan: PlanInfo + its algorithm; programs expanded on demand.
class GeneratedPlan final : public Plan {
 public:
  GeneratedPlan(PlanInfo info, const Algorithm& algo) : Plan(std::move(info)), algo_(&algo) {}
  std::vector<Op> program(int rank) const override { return algo_->program(info_, rank); }
  std::vector<Op> channel_program(int rank, int channel) const override { return algo_->channel_program(info_, rank, channel); }
  bool is_explicit() const override { return false; }
  std::vector<SymmetryAxis> symmetries() const override { return algo_->symmetries(info_); }
  std::vector<std::vector<int>> channel_images() const override { return algo_->channel_images(info_); }
  const Algorithm& algo() const { return *algo_; }

 private:
  const Algorithm* algo_;
};

/// Lays out `name` for the request: the one-call way to get a plan.
std::unique_ptr<Plan> generate(std::string_view name, const Request& req, const topo::Topology* topo,
                               const AlgoOptions& opt = {});

}  // namespace collkit::plan
