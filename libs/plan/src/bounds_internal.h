#pragma once
// Pieces of the lower bounds shared by bounds.cpp (one bound per collective), bounds_cuts.cpp
// (max flows and cut searches) and bounds_latency.cpp (docs/plan.md, "Lower bounds").

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::plan::bounds {

constexpr double kUsPerByteGbps = 1e-3;  // bytes / GB/s = ns; 10^-3 of that in microseconds

/// Beyond this many rank vertices the ratio cut search leaves some candidates out (valid, and
/// the witness says so) rather than run one max flow per rank vertex.
constexpr std::size_t kExactSinks = 512;
/// The same for the minimum cut between two rank vertices, which cannot skip mirrored hosts (its
/// max flows all start at one rank vertex, which a mirror moves). One max flow per rank vertex
/// cost 0.5 s at 512 GPUs of 64 DGX H100 hosts; a rank vertex that a path from one already done
/// shows to be no nearer is skipped now (least_flow's argument), one max flow a host is left, and
/// 1024 GPUs of 128 hosts take 0.03 s more than the cuts that cost no max flow (16384: 2048
/// flows of a 50 k-vertex graph, left out).
constexpr std::size_t kExactMinCut = 1024;

/// Whole numbers as such ("1000000"), others with six significant digits.
std::string num(double v);

/// Sum of every link's bandwidth.
double total_bw(const topo::Topology& t);
/// B+(S): bandwidth of the links with exactly one end in S (each is full duplex, so B-(S) too).
double leaving(const topo::Topology& t, const std::vector<char>& in);
/// Sum of w over the vertices in S.
double weight(const std::vector<double>& w, const std::vector<char>& in);
/// Bandwidth of the links at vertex v.
double vertex_bw(const topo::Topology& t, topo::VertexId v);
/// "host h" or "{a, b, c}", or "all vertices but" either, whichever is shorter; at most 8 names.
std::string describe_set(const topo::Topology& t, const std::vector<char>& in);
/// Rank weight per vertex for the first `p` ranks.
std::vector<double> rank_weights(const topo::Topology& t, int p);

/// AlltoAll: the maximum concurrent flow among the first p ranks over every link, any vertex
/// forwarding (bounds_flow.cpp), in GB/s a pair; 0 where it is not computed (ranks sharing a
/// vertex, a link of unknown bandwidth, an LP past its size limit). Memoised per (fp, p).
double concurrent_flow_gbps(const topo::Topology& t, int p, std::uint64_t fp);

/// A max-flow network over the whole topology (every link both ways; GPUs relay, as a plan may
/// forward through one) plus a source and a sink joined to every vertex, so each query only sets
/// capacities. Boost.Graph's push-relabel.
class FlowNet {
 public:
  explicit FlowNet(const topo::Topology& t);

  /// A capacity larger than any cut of a query whose finite capacities sum to `finite`.
  static double unbounded(double finite) { return 1 + 2 * finite; }

  /// Max flow with links at `scale` x bandwidth, source->v at src[v], v->sink at dst[v].
  double run(double scale, const std::vector<double>& src, const std::vector<double>& dst);
  /// The same with link l at link_cap[l] both ways.
  double run_links(const std::vector<double>& link_cap, const std::vector<double>& src, const std::vector<double>& dst);

  /// After run(): the vertices the source still reaches through arcs with residual capacity,
  /// i.e. the source side of a minimum cut.
  std::vector<char> source_side(double tolerance) const;

 private:
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                      boost::property<boost::edge_capacity_t, double,
                                                      boost::property<boost::edge_residual_capacity_t, double,
                                                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const topo::Topology& t_;
  Graph g_;
  std::size_t source_ = 0, sink_ = 0;
  boost::property_map<Graph, boost::edge_capacity_t>::type cap_;
  boost::property_map<Graph, boost::edge_residual_capacity_t>::type res_;
  std::vector<Traits::edge_descriptor> link_arcs_, from_source_, to_sink_;
};

/// The least max flow from `from` to a vertex of `to` (with `into`, from a vertex of `to` to
/// `from`), the first vertex of `to` with it (`from` when `to` is empty or holds only `from`), and
/// the max flows run for it. A vertex's flow is not found where a vertex u whose flow f_u is known
/// reaches it over a path whose narrowest link is w, with min(f_u, w) at least the least flow so
/// far: every cut between `from` and v either separates u from v (at least w, a flow that path
/// carries) or `from` from u (at least f_u), in either direction (the links are full duplex). On
/// hosts whose ranks one switch joins, one max flow a host is left (128 x dgx-h100: 128 of 1023,
/// Broadcast's bound 2.5 s -> 0.2 s). Where flows tie but for rounding, the vertex named may be
/// another of them than one max flow per vertex names.
struct LeastFlow {
  double gbps = 0;  ///< infinite when no flow was run
  topo::VertexId at = 0;
  int flows = 0;
};
LeastFlow least_flow(const topo::Topology& t, topo::VertexId from, const std::vector<topo::VertexId>& to, bool into);

/// A vertex set S holding some but not all of the first p ranks.
struct RankCut {
  std::vector<char> in;  ///< empty: no cut separates the ranks (they share one vertex)
  double ranks = 0;      ///< ranks inside S
  double out_gbps = 0;   ///< B+(S)
  bool exact = true;     ///< false: only part of the search was run (still a real cut: valid)
  double ratio() const { return out_gbps > 0 ? ranks / out_gbps : 0.0; }
};

// The searches below do not depend on the bytes: a sweep over sizes, or `auto` over algorithms,
// asks for the same ones many times. They are memoised per (topology, p); the caller passes the
// topology's fingerprint, computed once (it hashes the whole graph: 10 ms at 16k GPUs).

/// ForestColl: the S maximising ranks(S) / B+(S), exact up to 1e-9 relative below kExactSinks
/// rank vertices.
RankCut max_ratio_cut(const topo::Topology& t, int p, std::uint64_t fingerprint);

/// The S with the least B+(S): a minimum cut between two rank vertices, exact up to kExactMinCut
/// rank vertices; beyond, the better of each rank vertex alone and each host.
RankCut min_rank_cut(const topo::Topology& t, int p, std::uint64_t fingerprint);

/// The latency bound (bounds_latency.cpp): the largest, over ranks a and b that data must flow
/// between, of the smallest path latency from a to b (GPUs may relay). `root` < 0: every pair of
/// the first p ranks; else the root and every other rank (links are symmetric, so Broadcast and
/// Reduce alike).
double latency_bound(const topo::Topology& t, int p, int root, std::uint64_t fingerprint);

}  // namespace collkit::plan::bounds
