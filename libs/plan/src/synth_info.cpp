// coll-plan synth-info: a synthesised plan's trees or flow LP, and on a topology its simulated
// time beside the bound and the optimal rate (docs/synth.md).

#include "collkit/plan/synth_info.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "algorithms/common.h"
#include "algorithms/synth_read.h"
#include "bounds_internal.h"
#include "collkit/core/error.h"
#include "collkit/core/size.h"
#include "synth/rate.h"
#include "synth/routed.h"

namespace collkit::plan {

namespace {

/// Depth, most and mean fan-out of the trees into `s`.
void measure_trees(const std::vector<std::vector<int>>& trees, SynthInfo& s) {
  double depth_sum = 0, fanout_sum = 0;
  int parents = 0;
  for (const std::vector<int>& parent : trees) {
    // Trees are checked to lead every rank to the root (read_synth_trees), so chains end.
    int depth = 0;
    std::vector<int> children(parent.size(), 0);
    for (std::size_t r = 0; r < parent.size(); ++r) {
      int d = 0;
      for (int at = static_cast<int>(r); parent[static_cast<std::size_t>(at)] >= 0; at = parent[static_cast<std::size_t>(at)]) ++d;
      depth = std::max(depth, d);
      if (parent[r] >= 0) ++children[static_cast<std::size_t>(parent[r])];
    }
    for (int c : children) {
      if (c == 0) continue;
      s.fanout_max = std::max(s.fanout_max, c);
      fanout_sum += c;
      ++parents;
    }
    s.depth_max = std::max(s.depth_max, depth);
    depth_sum += depth;
  }
  if (!trees.empty()) s.depth_mean = depth_sum / static_cast<double>(trees.size());
  if (parents > 0) s.fanout_mean = fanout_sum / parents;
}

/// Bytes one root's trees carry in one phase: a rank's slice (every rank's trees) or the whole
/// vector (one root's).
double phase_bytes(const SynthInfo& s) {
  auto n = static_cast<double>(s.req.bytes);
  return s.root >= 0 ? n : n / s.req.nranks;
}

double time_at(double bytes, double gbps) { return gbps > 0 ? bytes / gbps * bounds::kUsPerByteGbps : 0; }

std::string us(double v) { return fmt::format("{:.2f}", v); }

}  // namespace

SynthInfo synth_info(const Plan& plan, const topo::Topology* t, const SimOptions& opt) {
  const PlanInfo& info = plan.info();
  if (info.algorithm != "synth")
    throw InputError("not a synthesised plan (algorithm " + info.algorithm + "); synth-info reads plans made by --algo synth");
  SynthInfo s;
  s.req = info.req;
  s.topo_name = info.topo_name;
  int p = info.req.nranks;
  if (info.req.coll == Collective::AlltoAll) {
    SynthRelays r = read_synth_relays(info);
    s.chunks = r.m;
    s.lp_gbps = algo::param_positive(info, "lp_gbps", 0);
    s.lp_us = algo::param_positive(info, "lp_us", 0);
    s.lp_by_routes = info.params.count("lp") > 0 && info.params.at("lp") == "routes";
    std::set<int> via;
    for (const SynthRelay& h : r.relays) {
      via.insert(h.via);
      s.relayed_chunks += h.chunks;
    }
    s.relayed_paths = static_cast<int>(r.relays.size());
    s.relay_ranks = static_cast<int>(via.size());
    s.host_chunks = algo::param_int(info, "host_chunks", 0);
    s.host_gbps = s.host_chunks > 0 ? algo::param_positive(info, "host_gbps", 0) : 0;
  } else {
    SynthTrees st = read_synth_trees(info);
    s.trees_per_root = st.k;
    s.chunks = st.m;
    s.tree_chunks = st.chunks;
    if (!st.units.empty()) s.tree_units.assign(st.units.begin(), st.units.begin() + std::min<std::ptrdiff_t>(st.k, std::ssize(st.units)));
    s.root = st.root;
    s.allreduce = st.allreduce;
    s.host_chunks = st.host;
    s.host_gbps = st.host > 0 ? algo::param_positive(info, "host_gbps", 0) : 0;
    s.trees = static_cast<int>(st.trees.size());
    for (std::size_t tr = 0; tr < st.trees.size(); ++tr)
      for (std::size_t r = 0; r < st.trees[tr].size(); ++r) {
        s.tree_arcs += st.trees[tr][r] >= 0;
        s.host_arcs += !st.host_arcs.empty() && st.host_arcs[tr][r];
      }
    measure_trees(st.trees, s);
  }
  if (!t) return s;
  s.on_topology = true;
  s.sim_topo_name = t->name;
  s.time_us = simulated_us(plan, *t, opt);
  s.bound = lower_bound(info.req, *t);
  if (info.req.coll == Collective::AlltoAll || p < 2) return s;
  // A symmetric or torus plan beyond the general solver's 32 ranks: the three rates take max flows over
  // the whole topology per rank (and routes between every two ranks), minutes at 1024 ranks; the
  // simulated time and the bound are printed, the rates left out.
  if (p > 32 && (info.params.count("sym_grid") || info.params.count("sym_torus"))) return s;
  // A plan whose channels name their NIC may load the routes through each of them.
  std::vector<int> nics(info.channel_nics.begin(), info.channel_nics.end());
  std::sort(nics.begin(), nics.end());
  nics.erase(std::unique(nics.begin(), nics.end()), nics.end());
  s.through_nics = nics.size() > 1;
  topo::Topology routed = s.through_nics    ? synth::routed_links(*t, p, nics)
                          : s.host_arcs > 0 ? synth::routed_host_links(*t, p)
                                            : synth::routed_links(*t, p);
  if (s.root >= 0) {
    s.optimal_gbps = synth::broadcast_rate(*t, p, s.root).per_root_gbps;
    s.routed_gbps = synth::broadcast_rate(routed, p, s.root).per_root_gbps;
    s.packed_gbps = synth::rate_for_trees(routed, p, s.trees_per_root, s.root);
  } else {
    s.optimal_gbps = synth::optimal_rate(*t, p).per_root_gbps;
    s.routed_gbps = synth::optimal_rate(routed, p).per_root_gbps;
    s.packed_gbps = synth::rate_for_trees(routed, p, s.trees_per_root);
  }
  // The rate the trees were packed at, as the plan records it (packing that keeps to the routes
  // may stay below rate_for_trees over the routed links); plans from before it: that rate.
  s.packed_gbps = algo::param_positive(info, "packed_gbps", s.packed_gbps);
  if (s.root < 0 && info.params.count("arcs") && info.params.at("arcs") == "direct")
    s.direct_gbps = synth::optimal_rate(synth::direct_links(*t, p), p).per_root_gbps;
  double bytes = phase_bytes(s);
  s.optimal_us = time_at(bytes, s.optimal_gbps);
  s.routed_us = time_at(bytes, s.routed_gbps);
  s.packed_us = time_at(bytes, s.packed_gbps);
  return s;
}

std::string describe_synth_info(const SynthInfo& s) {
  const Request& req = s.req;
  bool a2a = req.coll == Collective::AlltoAll;
  std::string o = fmt::format("synth {} of {} on {} ranks{}: {}\n", to_string(req.coll), format_size_bytes(req.bytes), req.nranks,
                              s.topo_name.empty() ? "" : ", made for " + s.topo_name,
                              !a2a             ? "packed spanning trees"
                              : s.lp_by_routes ? "straight routes at the cut bound"
                                               : "maximum concurrent flow LP");
  if (a2a) {
    if (s.lp_gbps > 0 && s.lp_by_routes)
      o += fmt::format("  optimum {} GB/s per pair, the straight routes' (they reach the cut bound; no LP solved): {} us\n",
                       fmt::format("{:.4g}", s.lp_gbps), us(s.lp_us));
    else if (s.lp_gbps > 0)
      o += fmt::format("  LP optimum {} GB/s per pair (routes through any NIC, host paths, relays): {} us\n",
                       fmt::format("{:.4g}", s.lp_gbps), us(s.lp_us));
    double pair_chunks = static_cast<double>(req.nranks) * (req.nranks - 1) * s.chunks;
    o += fmt::format("  relays: {} paths through {} ranks, {} of {} chunks ({:.1f}%); {} chunks per block\n", s.relayed_paths,
                     s.relay_ranks, s.relayed_chunks, static_cast<long long>(pair_chunks),
                     pair_chunks > 0 ? 100.0 * s.relayed_chunks / pair_chunks : 0.0, s.chunks);
    if (s.host_chunks > 0)
      o += fmt::format(
          "  host share: {} of each block's {} chunks (its last) sent straight staged through host memory (channel_paths host), "
          "{:.2f} GB/s a pair at once\n",
          s.host_chunks, s.chunks, s.host_gbps);
  } else {
    if (!s.allreduce.empty())
      o += fmt::format("  allreduce as {}\n", s.allreduce == "rs-ag" ? "rs-ag (ReduceScatter up every rank's trees, AllGather down them)"
                                                                     : "reduce-bcast (Reduce up one root's trees, Broadcast down them)");
    std::string whose = s.root >= 0 ? fmt::format("from root {}", s.root) : std::string("per rank");
    o += fmt::format("  trees: k = {} {} ({} in all); depth deepest {}, mean {:.2f}; fan-out most {}, mean {:.2f}\n", s.trees_per_root,
                     whose, s.trees, s.depth_max, s.depth_mean, s.fanout_max, s.fanout_mean);
    if (!s.tree_units.empty())
      o += fmt::format(
          "  pipeline: up to {} steps per tree, shares {} units of a root's slice (rank 0's trees; each tree's by its rate "
          "over the routes)\n",
          s.chunks, fmt::join(s.tree_units, ","));
    else if (s.tree_chunks.empty()) o += fmt::format("  pipeline: {} chunks per tree\n", s.chunks);
    else
      o += fmt::format("  pipeline: {} chunks per tree on average, shares {} (each tree's by its rate over the routes)\n", s.chunks,
                       fmt::join(s.tree_chunks, ","));
    if (s.host_arcs > 0)
      o += fmt::format("  host arcs: {} of the trees' {} arcs staged through host memory (channel_paths host)\n", s.host_arcs, s.tree_arcs);
    if (s.host_chunks > 0) {
      int slice = s.trees_per_root * s.chunks + s.host_chunks;
      o += fmt::format("  host share: {} of a root's {} chunks ({:.1f}%) sent {} staged through host memory (channel_paths host)\n",
                       s.host_chunks, slice, 100.0 * s.host_chunks / slice,
                       s.root >= 0 ? "down a chain through every rank, each send" : "straight to every rank");
    }
  }
  if (!s.on_topology) return o;
  o += fmt::format("on {}: simulated {} us  bound {} us  gap {:.1f}%\n", s.sim_topo_name, us(s.time_us), us(s.bound.time_us()),
                   gap_percent(s.time_us, s.bound));
  if (a2a) {
    if (s.lp_us > 0)
      o += fmt::format("  over the {}optimum ({} us): {:.3f} x\n", s.lp_by_routes ? "" : "LP ", us(s.lp_us), s.time_us / s.lp_us);
    return o;
  }
  if (req.coll == Collective::AllReduce && s.bound.rs_ag_us > 0)
    o += fmt::format("  RS+AG-shaped plans' bound {} us: {:.3f} x\n", us(s.bound.rs_ag_us), s.time_us / s.bound.rs_ag_us);
  if (s.optimal_gbps <= 0) return o;
  // AllReduce is two phases of the trees' collective; the others one.
  double phases = req.coll == Collective::AllReduce ? 2 : 1;
  std::string per = s.root >= 0 ? "from the root" : "per root";
  o += fmt::format("  rate {}{}: achieved {:.2f} GB/s (simulated)\n", per, phases > 1 ? ", a phase of two" : "",
                   phase_bytes(s) * phases / s.time_us * 1e-3);
  auto line = [&](const char* what, double gbps, double t_us) {
    o += fmt::format("    {:<34} {:>9.2f} GB/s  {:>10} us{}  simulated {:.3f} x\n", what, gbps, us(t_us * phases),
                     phases > 1 ? " (two phases)" : "", s.time_us / (t_us * phases));
  };
  line("optimal over every link:", s.optimal_gbps, s.optimal_us);
  line(s.through_nics    ? "optimal over routes via its NICs:"
       : s.host_arcs > 0 ? "optimal over routes + host paths:"
                         : "optimal over the routed links:",
       s.routed_gbps, s.routed_us);
  line(fmt::format("packed, k = {}{}:", s.trees_per_root, s.tree_chunks.empty() && s.tree_units.empty() ? "" : ", shares").c_str(),
       s.packed_gbps, s.packed_us);
  if (s.host_chunks > 0 && s.host_gbps > 0) {
    // The trees and the host stars side by side, each at its own rate (their links apart).
    double bytes = phase_bytes(s), both = s.packed_gbps + s.host_gbps;
    line(s.root >= 0 ? "host paths (a chain via host memory):" : "host paths (stars via host memory):", s.host_gbps,
         time_at(bytes, s.host_gbps));
    line("packed + host paths:", both, time_at(bytes, both));
    // Trees kept to the links between ranks leave the PCIe links to the stars: those links'
    // rate and the stars' is what such a plan can reach (the routed links share PCIe with them).
    // Neither beyond the rate over every link (the bound): where routes and host paths share
    // PCIe links (DGX-1) their sum counts those twice.
    double with_host = std::min((s.direct_gbps > 0 ? s.direct_gbps : s.routed_gbps) + s.host_gbps, s.optimal_gbps);
    line(s.direct_gbps > 0 ? "links between ranks + host paths:" : "routed links + host paths:", with_host, time_at(bytes, with_host));
  }
  return o;
}

}  // namespace collkit::plan
