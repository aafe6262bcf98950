#pragma once
// The artifacts of a run: collkit.overlap/1 JSON (docs/overlap.md) and a Chrome trace-event
// timeline that opens in Perfetto (one track per stream, one event per chunk).

#include <string>

#include "collkit/overlap/overlap.h"
#include "collkit/topo/topology.h"

namespace collkit::overlap {

inline constexpr int kOverlapSchemaMajor = 1;

struct RunContext {
  const Workload* workload;
  const topo::Topology* topo;
  const ComputeModel* compute;
  CommModel* comm;  ///< not const: reports may ask it for sizes not yet planned (cached)
  double contention;
};

/// collkit.overlap/1 text: inputs, the collectives planned, every summary row, and the last row's schedule.
std::string to_json(const Report& r, const RunContext& ctx);
/// The "strategies" rows (name, knobs) of collkit.overlap/1 text: the schedules a run predicted
/// or measured. InputError "<file>: <pointer>: <what>" (an unknown strategy, a knob out of range,
/// no rows).
std::vector<NamedSchedule> parse_schedules(const std::string& text, const std::string& file);
std::vector<NamedSchedule> load_schedules(const std::string& file);
/// Chrome trace-event JSON of one row's schedule: pid 0 = rank 0, tid = stream, ts/dur in us.
/// `measured`: the tasks' times were measured by coll-overlap run (otherData "simulated": false).
std::string to_trace(const StrategyResult& row, const RunContext& ctx, bool measured = false);

}  // namespace collkit::overlap
