// Lower bounds on a collective's time on a topology (REFERENCE Part B 2.2; docs/plan.md, "Lower
// bounds", which proves each one). Every bound holds for every plan the simulator can run: its
// transfers follow routes (paths of the topology) whose links carry at most their bandwidth in
// each direction, it has no in-network reduction, and the overheads it adds (per-message time,
// local copies and reductions) are taken as 0 here, which keeps the bounds valid.
//
// Bandwidth: data that must cross a cut divided by the cut's bandwidth, maximised over cuts.
//  - AllGather / ReduceScatter: ForestColl's bound, computed exactly (bounds_cuts.cpp).
//  - AllReduce: the best of (a) n / B+(S) for a minimum cut S between two rank vertices (every
//    byte's sum must leave S and enter it) and (b) one-way gossip, 2(m-1) n / sum_i B+(G_i), for
//    the rank vertices and for the hosts as groups G_i. Twice the ReduceScatter bound holds only
//    for plans shaped as a ReduceScatter then an AllGather: reported beside it as rs_ag_us.
//  - AlltoAll: the best of a set of candidate cuts (every rank vertex alone, every host, every
//    network switch's ranks, the first half of the hosts against the rest); the exact maximum
//    of a quadratic objective over all cuts is not a max-flow problem, so this one is a bound,
//    not necessarily the best one. And, where its LP is small enough, the maximum concurrent flow
//    over every link (bounds_flow.cpp), which also counts the hops pieces must take.
//  - Broadcast / Reduce: bytes over the smallest max flow between the root and another rank
//    (Edmonds: that is the broadcast rate of the best packing of spanning arborescences).
// Every link carries its bandwidth in each direction; GPUs are allowed to relay, since an
// algorithm may forward through a GPU (a ring does), so cuts count every link.
//
// Latency: the largest smallest-path latency between two ranks that data must flow between
// (bounds_latency.cpp).

#include "collkit/plan/bounds.h"

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bounds_internal.h"
#include "collkit/core/error.h"
#include "collkit/topo/queries.h"

namespace collkit::plan {

namespace {

using namespace bounds;
using topo::Topology;
using topo::VertexId;

constexpr std::string_view kPartial = " (cuts searched leaving out one rank per host: valid, exact on identical hosts)";

/// AllGather: the shards of the ranks in S must leave S. ReduceScatter is the mirror image (the
/// contributions of the ranks outside S must enter it, over B-(S) = B+(S) as every link has one
/// bandwidth both ways).
void forestcoll(const Request& req, const Topology& t, std::uint64_t fp, Bound& b) {
  RankCut c = max_ratio_cut(t, req.nranks, fp);
  if (c.in.empty()) {
    b.witness = "all ranks share one vertex: no cut separates them";
    return;
  }
  double shard = static_cast<double>(req.bytes) / req.nranks;
  bool ag = req.coll == Collective::AllGather;
  b.bandwidth_us = shard * c.ratio() * kUsPerByteGbps;
  b.witness = "S = " + describe_set(t, c.in) + ": " + num(c.ranks) + " of " + std::to_string(req.nranks) + " ranks inside, " +
              num(c.out_gbps) + " GB/s leaves S; " + num(c.ranks) + " shards of " + num(shard) + " bytes must " + (ag ? "leave" : "enter") +
              " S";
  if (!c.exact) b.witness += kPartial;
}

/// sum over groups G of B+(G), the groups given as a vertex -> group map (-1: in no group); a link
/// between two groups leaves both, one direction each.
double leaving_groups(const Topology& t, const std::vector<long>& group) {
  double sum = 0;
  for (const topo::Link& l : t.links())
    if (group[l.a] != group[l.b]) sum += l.bw_gbps * ((group[l.a] >= 0) + (group[l.b] >= 0));
  return sum;
}

/// AllReduce, valid for every plan (docs/plan.md proves both):
///  - for S holding some but not all ranks, every byte of the result outside S depends on the
///    inputs inside, and the other way round: n bytes leave S, n enter it. T >= n / min B+(S);
///  - one-way gossip: for groups G_1..G_m of rank vertices, every byte position needs at least
///    2(m-1) messages between groups, each leaving its sender's group over links that leave no
///    other group in that direction: T >= 2(m-1) n / sum B+(G_i). Tried for the rank vertices
///    (ranks sharing one exchange data without links: a vertex, not a rank, is a group) and for
///    the hosts.
void allreduce(const Request& req, const Topology& t, std::uint64_t fp, Bound& b) {
  int p = req.nranks;
  RankCut rs = max_ratio_cut(t, p, fp);
  if (rs.in.empty()) {
    b.witness = "all ranks share one vertex: no cut separates them";
    return;
  }
  auto n = static_cast<double>(req.bytes);
  b.rs_ag_us = 2 * n / p * rs.ratio() * kUsPerByteGbps;
  auto consider = [&](double gbps, double messages, const std::string& why) {
    double us = messages * n / gbps * kUsPerByteGbps;
    if (gbps > 0 && us > b.bandwidth_us) {
      b.bandwidth_us = us;
      b.witness = why;
    }
  };
  RankCut c = min_rank_cut(t, p, fp);
  consider(c.out_gbps, 1,
           "S = " + describe_set(t, c.in) + ": " + num(c.ranks) + " of " + std::to_string(p) + " ranks inside, " + num(c.out_gbps) +
               " GB/s leaves S; all " + num(n) + " bytes must leave S and enter it" +
               (c.exact ? "" : " (cuts tried: each rank vertex alone and each host: valid, not searched exhaustively)"));
  auto gossip = [&](const std::vector<long>& group, double m, const std::string& what) {
    if (m < 2) return;
    double out = leaving_groups(t, group);
    consider(out, 2 * (m - 1),
             "gossip among " + num(m) + " " + what + ": each of the " + num(n) + " bytes crosses between them >= 2 x " + num(m - 1) +
                 " times, over " + num(out) + " GB/s leaving them");
  };
  std::vector<double> w = rank_weights(t, p);
  std::vector<long> group(t.num_vertices(), -1);
  long m = 0;
  for (std::size_t v = 0; v < w.size(); ++v)
    if (w[v] > 0) group[v] = m++;
  gossip(group, static_cast<double>(m), "rank vertices");
  // Hosts: a host's vertices form one group when it holds a rank; a rank vertex of no host is a
  // group alone; every other vertex is in none.
  std::unordered_map<std::string_view, long> host_group;
  std::fill(group.begin(), group.end(), -1);
  m = 0;
  for (std::size_t v = 0; v < w.size(); ++v) {
    std::string_view h = t.vertex(static_cast<VertexId>(v)).host;
    if (w[v] > 0 && h.empty()) group[v] = m++;
    else if (w[v] > 0 && host_group.emplace(h, m).second) ++m;
  }
  for (std::size_t v = 0; v < w.size(); ++v) {
    std::string_view h = t.vertex(static_cast<VertexId>(v)).host;
    if (auto it = host_group.find(h); !h.empty() && it != host_group.end()) group[v] = it->second;
  }
  if (!host_group.empty()) gossip(group, static_cast<double>(m), "hosts");
}

/// AlltoAll: each ordered pair of ranks exchanges bytes / p; a cut with k ranks on one side
/// carries k (p - k) of those pieces each way.
void alltoall(const Request& req, const Topology& t, std::uint64_t fp, Bound& b) {
  int p = req.nranks;
  auto w = rank_weights(t, p);
  double piece = static_cast<double>(req.bytes) / p;
  auto consider = [&](double k, double gbps, const std::string& what) {
    if (k <= 0 || k >= p || gbps <= 0) return;
    double us = k * (p - k) * piece / gbps * kUsPerByteGbps;
    if (us > b.bandwidth_us) {
      b.bandwidth_us = us;
      b.witness = what + ": " + num(k) + " x " + num(p - k) + " pieces of " + num(piece) + " bytes cross " + num(gbps) + " GB/s";
    }
  };
  for (std::size_t v = 0; v < t.num_vertices(); ++v) {
    if (w[v] <= 0) continue;
    consider(w[v], vertex_bw(t, static_cast<VertexId>(v)),
             "vertex " + t.vertex(static_cast<VertexId>(v)).id + " (" + num(w[v]) + " of " + std::to_string(p) + " ranks)");
  }
  // Groups of ranks against the rest, through the min cut between them.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  auto hosts = topo::ranks_by_host(t);
  std::vector<int> first_half;
  std::size_t half_hosts = 0;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    std::vector<int> g;
    for (topo::Rank r : hosts[h].ranks)
      if (static_cast<int>(r) < p) g.push_back(static_cast<int>(r));
    if (!hosts[h].host.empty()) groups.push_back({"ranks of host " + hosts[h].host, g});
    if (h < hosts.size() / 2) {
      first_half.insert(first_half.end(), g.begin(), g.end());
      ++half_hosts;
    }
  }
  if (half_hosts > 0)
    groups.push_back({"the first " + std::to_string(half_hosts) + " of " + std::to_string(hosts.size()) + " hosts", first_half});
  for (const auto& sg : topo::ranks_by_switch(t, topo::VertexKind::NetSwitch)) {
    std::vector<int> g;
    for (topo::Rank r : sg.ranks)
      if (static_cast<int>(r) < p) g.push_back(static_cast<int>(r));
    groups.push_back({"ranks under switch " + t.vertex(sg.sw).id, g});
  }
  FlowNet net(t);
  double inf = FlowNet::unbounded(total_bw(t));
  for (const auto& [name, g] : groups) {
    if (g.empty() || static_cast<int>(g.size()) >= p) continue;
    std::vector<double> src(t.num_vertices(), 0.0), dst(t.num_vertices(), 0.0);
    for (int r : g) src[t.rank_vertex(static_cast<topo::Rank>(r))] = inf;
    bool disjoint = true;
    for (int r = 0; r < p; ++r) {
      VertexId v = t.rank_vertex(static_cast<topo::Rank>(r));
      if (src[v] > 0 && std::find(g.begin(), g.end(), r) == g.end()) disjoint = false;
      if (src[v] == 0) dst[v] = inf;
    }
    if (!disjoint) continue;
    consider(static_cast<double>(g.size()), net.run(1.0, src, dst), name + " vs the rest");
  }
  // Every pair's piece at one rate over every link at once: the hops count too.
  if (double lambda = concurrent_flow_gbps(t, p, fp); lambda > 0) {
    double us = piece / lambda * kUsPerByteGbps;
    if (us > b.bandwidth_us * (1 + 1e-9)) {
      b.bandwidth_us = us;
      b.witness = "the maximum concurrent flow over every link (any vertex forwarding): " + num(lambda) + " GB/s a pair for pieces of " +
                  num(piece) + " bytes";
    }
  }
}

/// Broadcast / Reduce: every rank needs the root's n bytes (or the root needs everyone's).
void rooted(const Request& req, const Topology& t, Bound& b) {
  VertexId root = t.rank_vertex(static_cast<topo::Rank>(req.root));
  bool reduce = req.coll == Collective::Reduce;
  std::vector<VertexId> ranks;
  for (int r = 0; r < req.nranks; ++r) ranks.push_back(t.rank_vertex(static_cast<topo::Rank>(r)));
  LeastFlow least = least_flow(t, root, ranks, reduce);
  double worst = least.gbps;
  VertexId worst_v = least.at;
  if (worst_v == root) return;
  b.bandwidth_us = static_cast<double>(req.bytes) / worst * kUsPerByteGbps;
  std::string rootname = "root rank " + std::to_string(req.root) + " (" + t.vertex(root).id + ")";
  std::string other = "vertex " + t.vertex(worst_v).id;
  b.witness = (reduce ? other + " to " + rootname : rootname + " to " + other) + ": max flow " + num(worst) + " GB/s for " +
              std::to_string(req.bytes) + " bytes";
}

}  // namespace

Bound lower_bound(const Request& req, const topo::Topology& topo) {
  check(req);
  if (static_cast<std::size_t>(req.nranks) > topo.num_ranks())
    throw InputError("lower bound: the request has " + std::to_string(req.nranks) + " ranks but topology \"" + topo.name + "\" maps " +
                     std::to_string(topo.num_ranks()));
  Bound b;
  if (req.nranks < 2) {
    b.witness = "one rank: nothing crosses a link";
    return b;
  }
  std::uint64_t fp = topo.fingerprint();
  switch (req.coll) {
    case Collective::AllGather:
    case Collective::ReduceScatter: forestcoll(req, topo, fp, b); break;
    case Collective::AllReduce: allreduce(req, topo, fp, b); break;
    case Collective::AlltoAll: alltoall(req, topo, fp, b); break;
    case Collective::Broadcast:
    case Collective::Reduce: rooted(req, topo, b); break;
  }
  b.latency_us = latency_bound(topo, req.nranks, facts(req.coll).has_root ? req.root : -1, fp);
  return b;
}

double gap_percent(double predicted_us, const Bound& b) {
  double bound = b.time_us();
  return bound > 0 ? 100.0 * (predicted_us - bound) / bound : 0.0;
}

}  // namespace collkit::plan
