#pragma once
// Routes through a chosen NIC (plan.h, PlanInfo::channel_nics; docs/plan.md "channel_nics"): a
// send between hosts on a channel that names NIC n goes from its rank's vertex to NIC n of the
// sender's host, from there to NIC n of the receiver's host, and on to the receiver, each leg the
// topology's route (topo/routing.h), joined. A host's NICs are numbered in vertex order among
// those with a link out of the host.

#include <string>
#include <unordered_map>
#include <vector>

#include "collkit/topo/routing.h"

namespace collkit::plan::sim {

class NicRoutes {
 public:
  NicRoutes(const topo::Topology& t, topo::RouteCache& cache);
  /// The route from src to dst through NIC `nic` of both hosts: the plain route when nic < 0
  /// or the two share a host (or either has none); found false, with `why`, when a host has no
  /// NIC of that number or a leg has no route.
  topo::Path route(topo::VertexId src, topo::VertexId dst, int nic, std::string* why = nullptr) const;
  /// NIC `nic` of v's host, or nullptr when it has fewer.
  const topo::VertexId* nic_of(topo::VertexId v, int nic) const;

 private:
  const topo::Topology& t_;
  topo::RouteCache& cache_;
  std::unordered_map<std::string, std::vector<topo::VertexId>> nics_;  // host -> its NICs out of it
};

/// Sends staged through host memory (plan.h, PlanInfo::channel_paths; docs/plan.md
/// "channel_paths"): from the sender's vertex over PCIe to its nearest CPU (fewest hops, then the
/// lowest vertex id), then from that CPU over PCIe and socket links to the receiver: the path of
/// a copy into a pinned host buffer and a copy out of it. Only PCIe, SMP and NVLink-C2C links of
/// the sender's host are taken (C2C: a Grace CPU's memory and its GPUs), and no GPU or NIC is
/// passed through.
class HostRoutes {
 public:
  explicit HostRoutes(const topo::Topology& t) : t_(t) {}
  /// found false, with `why`, when the two are on different hosts or no such path joins them.
  topo::Path route(topo::VertexId src, topo::VertexId dst, std::string* why = nullptr) const;

 private:
  /// The fewest-hop path over host links from `from` to the first vertex `want` accepts (BFS in
  /// vertex-id order among equals); empty hops and false when none.
  bool leg(topo::VertexId from, bool (*want)(const topo::Topology&, topo::VertexId, topo::VertexId), topo::VertexId target,
           topo::Path& out) const;
  const topo::Topology& t_;
};

/// A channel's route code in the simulator: the NIC it names (>= 0), -1 for the route's own, or
/// kHostPath for a send staged through host memory.
inline constexpr int kHostPath = -2;

}  // namespace collkit::plan::sim
