// The latency bound (docs/plan.md, "Lower bounds").
//
// Data from rank a reaches rank b through a chain of transfers, each from its sender's vertex to
// its receiver's along a route: a path of the topology, so its latency is at least the smallest
// path latency between the two vertices (every vertex may relay here, GPUs included, since a plan
// may forward through a GPU even where routes do not). By the triangle inequality the chain costs
// at least the smallest path latency d(a, b), and the simulator charges every transfer at least
// its route's latency (per-message overhead, bandwidth and queueing only add to it; ranks on one
// vertex have d = 0). So T >= max d(a, b) over the pairs that data must flow between: every pair
// for AllReduce, ReduceScatter, AllGather and AlltoAll (each rank's input reaches every rank's
// output), the root and each other rank for Broadcast and Reduce (links are full duplex with one
// latency, so d is symmetric). The single-port argument (ceil(log2 p) rounds) does not hold in
// the simulator: a rank may send to all its peers at once on separate channels.

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "bounds_internal.h"

namespace collkit::plan::bounds {

namespace {

using topo::Topology;
using topo::VertexId;

// Exact over every pair while |rank vertices| x |vertices| stays below this (one search per rank
// vertex: 30 ms at 512 GPUs of 64 DGX H100 hosts); beyond, a double sweep, which finds a pair at
// least as far apart as any pair holding rank 0, and on a fat-tree the farthest.
constexpr double kExactWork = 1 << 20;

class Distances {
 public:
  explicit Distances(const Topology& t) : g_(t.num_vertices()), dist_(t.num_vertices()) {
    for (const topo::Link& l : t.links()) boost::add_edge(l.a, l.b, l.latency_us, g_);
  }

  /// The smallest path latency from `from` to every vertex (infinity where unreachable).
  const std::vector<double>& from(VertexId v) {
    boost::dijkstra_shortest_paths(
        g_, v, boost::distance_map(boost::make_iterator_property_map(dist_.begin(), boost::get(boost::vertex_index, g_))));
    return dist_;
  }

 private:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                      boost::property<boost::edge_weight_t, double>>;
  Graph g_;
  std::vector<double> dist_;
};

/// The farthest of `targets` from the last search: (distance, vertex); unreachable ones skipped.
std::pair<double, VertexId> farthest(const std::vector<double>& dist, const std::vector<VertexId>& targets) {
  std::pair<double, VertexId> best{0.0, targets.front()};
  for (VertexId v : targets)
    if (std::isfinite(dist[v]) && dist[v] > best.first) best = {dist[v], v};
  return best;
}

double all_pairs(const Topology& t, const std::vector<VertexId>& verts, VertexId first) {
  Distances d(t);
  if (static_cast<double>(verts.size()) * static_cast<double>(t.num_vertices()) <= kExactWork) {
    double worst = 0;
    for (VertexId v : verts) worst = std::max(worst, farthest(d.from(v), verts).first);
    return worst;
  }
  auto [near, far] = farthest(d.from(first), verts);
  return std::max(near, farthest(d.from(far), verts).first);
}

}  // namespace

double latency_bound(const Topology& t, int p, int root, std::uint64_t fingerprint) {
  std::vector<char> seen(t.num_vertices(), 0);
  std::vector<VertexId> verts;
  for (int r = 0; r < p; ++r) {
    VertexId v = t.rank_vertex(static_cast<topo::Rank>(r));
    if (!seen[v]) verts.push_back(v);
    seen[v] = 1;
  }
  if (verts.size() < 2) return 0;
  if (root >= 0) {
    Distances d(t);
    return farthest(d.from(t.rank_vertex(static_cast<topo::Rank>(root))), verts).first;
  }
  // Every pair costs one search per rank vertex: memoised per (topology, ranks), as the cuts are.
  static std::mutex mutex;
  static std::map<std::pair<std::uint64_t, int>, double> cache;
  auto key = std::make_pair(fingerprint, p);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  double us = all_pairs(t, verts, t.rank_vertex(0));
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() > 64) cache.clear();
  cache[key] = us;
  return us;
}

}  // namespace collkit::plan::bounds
