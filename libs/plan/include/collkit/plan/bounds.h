#pragma once
// Lower bounds on a collective's time on a topology.

#include "collkit/plan/collective.h"
#include "collkit/topo/topology.h"

namespace collkit::plan {

struct Bound {
  double bandwidth_us = 0;  ///< cut bound: bytes that must cross a cut / the cut's bandwidth, maximised
  double latency_us = 0;    ///< rounds x the smallest route latency along the worst needed path
  double time_us() const { return bandwidth_us > latency_us ? bandwidth_us : latency_us; }
  std::string witness;      ///< the cut that gave the bandwidth bound, described
};

/// The bound for the request on the topology's first req.nranks ranks.
Bound lower_bound(const Request& req, const topo::Topology& topo);

/// Gap of a prediction over the bound, in percent (0 when no bound).
double gap_percent(double predicted_us, const Bound& b);

}  // namespace collkit::plan
