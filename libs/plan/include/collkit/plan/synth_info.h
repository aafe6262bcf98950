#pragma once
// What a synthesised plan (--algo synth, docs/synth.md) is made of, for `coll-plan synth-info`:
// its trees (k per root, depth, fan-out, chunks, the AllReduce form) or, for AlltoAll, its flow
// LP's optimum and relays; on a topology, the simulated time beside the bound and the optimum.

#include <string>

#include "collkit/plan/bounds.h"
#include "collkit/plan/plan.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/topology.h"

namespace collkit::plan {

struct SynthInfo {
  Request req;
  std::string topo_name;  ///< the topology the plan was made for (as recorded in it)
  // Trees (every collective but AlltoAll).
  int trees_per_root = 0;  ///< k
  int root = -1;           ///< the one root of every tree (Broadcast, Reduce, AllReduce as reduce-bcast); -1: k per rank
  int trees = 0;           ///< all of them
  int depth_max = 0;       ///< the deepest tree's depth (hops from its root to its farthest rank)
  double depth_mean = 0;   ///< the trees' depths, averaged
  int fanout_max = 0;      ///< the most children a rank has in one tree
  double fanout_mean = 0;  ///< children per rank with any, averaged over trees and such ranks
  int chunks = 0;          ///< chunks per tree (pipeline); AlltoAll: chunks per block
  /// One root's trees of unequal shares (param tree_chunks: their rates over the routes differ, a
  /// NIC slower than its rail's others): each tree's chunks, `chunks` on average; empty: equal.
  std::vector<int> tree_chunks;
  /// Every rank's trees of unequal shares (param tree_units): rank 0's trees' units of its slice
  /// (each tree in up to `chunks` steps); empty: equal.
  std::vector<int> tree_units;
  std::string allreduce;   ///< AllReduce: "rs-ag" or "reduce-bcast"
  // AlltoAll: the flow LP.
  double lp_gbps = 0;      ///< lambda*, per pair over every path a plan's sends may take (0: not recorded)
  double lp_us = 0;        ///< a block over lambda*
  bool lp_by_routes = false;  ///< lambda* is the straight routes' rate, at the cut bound: no LP solved (beyond 64 ranks)
  int relayed_paths = 0;   ///< (source, relay, destination) paths with chunks on them
  int relay_ranks = 0;     ///< distinct ranks that relay
  int relayed_chunks = 0;  ///< of all pairs' chunks, p (p - 1) m
  // On a topology (`topo` given).
  bool on_topology = false;
  std::string sim_topo_name;
  double time_us = 0;  ///< simulated
  Bound bound;
  /// Trees: a root's rate (AllGather and ReduceScatter: each root's at once; Broadcast and Reduce:
  /// the root's; AllReduce: a phase's) over every link (ForestColl's optimum, the bound's cut),
  /// over the links sends are routed on (the best routed sends can do), and what the plan's k
  /// trees were packed at; with the time a phase takes at each.
  double optimal_gbps = 0, routed_gbps = 0, packed_gbps = 0;
  /// Whether routed_gbps is over the routes through each NIC the plan's channels name
  /// (PlanInfo::channel_nics) rather than the topology's own routes.
  bool through_nics = false;
  /// A plan whose trees keep to the links joining two ranks (param arcs=direct, beside a host
  /// share): the optimal rate over those links alone (synth::direct_links); 0 otherwise.
  double direct_gbps = 0;
  double optimal_us = 0, routed_us = 0, packed_us = 0;
  /// The host share (param host_chunks, docs/synth.md "The PCIe path"): chunks of each root's
  /// slice sent straight to every rank staged through host memory beside its k m tree chunks,
  /// and the rate per root those stars reach (param host_gbps; 0: none).
  int host_chunks = 0;
  double host_gbps = 0;
  /// Tree arcs staged through host memory (param host_arcs, docs/synth.md "Host arcs"), and all
  /// the trees' arcs; with some, routed_gbps is over the routed links and the host paths together.
  int host_arcs = 0, tree_arcs = 0;
};

/// Reads a synthesised plan's parameters (checked as its programs check them) and, with a
/// topology, simulates it and computes its rates. Throws InputError for any other plan.
SynthInfo synth_info(const Plan& plan, const topo::Topology* topo, const SimOptions& opt);

/// synth_info() as `coll-plan synth-info` prints it, a few lines.
std::string describe_synth_info(const SynthInfo& info);

}  // namespace collkit::plan
