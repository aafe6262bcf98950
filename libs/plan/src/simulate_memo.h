#pragma once
// The simulated times of generated plans, kept while one search runs on one topology: the
// planner's knob values lay some plans out more than once (synth's own searches among them:
// `auto` on 2 x dgx-h100 ran 108 synth simulations, 45 of them plans simulated before), and the
// planner simulates again the plan each synth search returns.

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

#include "collkit/plan/plan.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/topology.h"

namespace collkit::plan::sim {

/// In force on the thread that made it, for one topology (by address: the search holds it and does
/// not change it), until it is destroyed; a memo made while another is in force for the same
/// topology leaves that one in force (a search inside a search shares it). Only plans made from
/// their PlanInfo are kept (not explicit ones, whose programs may have been edited): the key is
/// everything program() and the simulator read from the plan, and the options that change a time.
class TimeMemo {
 public:
  explicit TimeMemo(const topo::Topology& topo);
  /// The same, for a search whose candidates are simulated with `search` (kept by address: the
  /// search outlives the memo): layouts that search among plans of their own (synth) simulate
  /// them with those options (search_options()), so that they keep the plan fastest under the
  /// link model and overheads the user asked for.
  TimeMemo(const topo::Topology& topo, const SimOptions& search);
  ~TimeMemo();
  TimeMemo(const TimeMemo&) = delete;
  TimeMemo& operator=(const TimeMemo&) = delete;

  /// The memo in force on this thread for `topo`, or null.
  static TimeMemo* in_force(const topo::Topology& topo);
  /// The key of `plan` under `opt`; empty for a plan that is not kept (explicit).
  static std::string key(const Plan& plan, const SimOptions& opt);
  std::optional<double> find(const std::string& key) const;
  void keep(std::string key, double time_us);
  /// Lookups answered from the memo (for tests).
  std::size_t hits() const { return hits_; }

 private:
  friend SimOptions search_options(const topo::Topology& topo);
  const topo::Topology* topo_;
  const SimOptions* search_ = nullptr;
  TimeMemo* outer_;
  bool installed_ = false;
  std::unordered_map<std::string, double> times_;
  mutable std::size_t hits_ = 0;
};

/// The options of the search in force on this thread for `topo` (the memo in force, when it was
/// made with them: evaluate(), plan_for()), as a time-only simulation reads them; the defaults
/// when none. What a layout's own search simulates its candidates with.
SimOptions search_options(const topo::Topology& topo);

}  // namespace collkit::plan::sim
