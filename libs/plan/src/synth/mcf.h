#pragma once
// AlltoAll as a maximum concurrent flow (docs/synth.md, "AlltoAll"): every ordered pair of ranks
// (s, d) is a commodity that must ship the same amount, and the LP finds the largest rate lambda
// at which all of them ship at once. A plan's sends go rank to rank along the topology's routes
// (topo/routing.h), so the LP's arcs are those routes, each loading the links it crosses, and a
// commodity's flow may go straight (s -> d) or through one relay rank (s -> c -> d, two sends):
// every flow the LP finds is one a plan of sends can carry, which keeps the simulated time within
// chunk rounding of the LP's. Solved with GLPK's simplex by column generation: the relays start
// out of the LP and enter only where the links' duals price them below the straight route.

#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::plan::synth {

/// Part of commodity (src, dst) sent through rank `via`: `share` of the commodity's bytes.
struct Relay {
  int src = 0;
  int via = 0;
  int dst = 0;
  double share = 0;
};

/// Which paths, besides the router's route and relays through one rank, a commodity may take.
struct FlowPaths {
  /// Between hosts, straight through any NIC of the two hosts, as a channel naming its NIC does
  /// (PlanInfo::channel_nics; sim::NicRoutes, NIC n of both): each NIC both hosts have.
  bool every_nic = false;
  /// Between ranks on one host, straight staged through host memory, as a "host" channel does
  /// (PlanInfo::channel_paths; sim::HostRoutes).
  bool host_paths = false;
};

struct ConcurrentFlow {
  double rate_gbps = 0;       ///< lambda*: the rate every ordered pair ships at, at once
  std::vector<Relay> relays;  ///< by (src, dst, via); a commodity's straight share is 1 - its relays' (and its other paths')
  int paths = 0;              ///< the other straight paths (FlowPaths) offered to the LP
  int rows = 0;               ///< the LP's rows (link directions + pairs) and columns at the end
  int columns = 0;
  int rounds = 0;  ///< simplex solves: column generation rounds, plus one to trim relays
};

/// The maximum concurrent flow among the first p ranks (p >= 2), over the routes between them,
/// each link carrying its bandwidth per direction, ranks on one vertex copying through its
/// local_bw_gbps (infinity when no pair crosses anything of known bandwidth). The optimal rate is exact (to the
/// simplex's tolerance); among the flows at that rate it returns one that relays as little as it
/// can (a second LP), so that straight sends carry what they can. With `also`, a commodity may
/// split its straight part over those paths too (they enter by the same pricing as relays): the
/// optimum over every plan of sends whose channels name NICs or host paths, which the plan a
/// layout makes of the relays alone may not reach. Throws InputError when two ranks have no
/// route, Error when GLPK fails.
ConcurrentFlow max_concurrent_flow(const topo::Topology& t, int p, const FlowPaths& also = {});

}  // namespace collkit::plan::synth
