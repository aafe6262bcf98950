#pragma once
// Lower bounds on a collective's time on a topology: they hold for every plan the simulator can
// run (docs/plan.md, "Lower bounds", proves each).

#include "collkit/plan/collective.h"
#include "collkit/topo/topology.h"

namespace collkit::plan {

struct Bound {
  double bandwidth_us = 0;  ///< bytes that must cross a cut / the cut's bandwidth, maximised over the cuts tried
  double latency_us = 0;    ///< the largest smallest-path latency between two ranks that data must flow between
  /// AllReduce only: twice the ReduceScatter cut bound, which holds only for plans shaped as a
  /// ReduceScatter then an AllGather (a tree can beat it); shown beside the bound, never in time_us()
  double rs_ag_us = 0;
  double time_us() const { return bandwidth_us > latency_us ? bandwidth_us : latency_us; }
  std::string witness;  ///< the cut that gave the bandwidth bound, described
};

/// The bound for the request on the topology's first req.nranks ranks.
Bound lower_bound(const Request& req, const topo::Topology& topo);

/// Gap of a prediction over the bound, in percent (0 when no bound).
double gap_percent(double predicted_us, const Bound& b);

}  // namespace collkit::plan
