// Max flow on a directed network of whole-number capacities (flow.h).

#include "synth/flow.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <unordered_map>

namespace collkit::plan::synth {

namespace {

// Edges added later leave earlier edge descriptors valid: a descriptor points at the edge's
// properties, which Boost keeps on the heap (stored_edge_property), not in the out-edge vector.
using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                    boost::property<boost::edge_capacity_t, std::int64_t,
                                                    boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                                                    boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
using Edge = Traits::edge_descriptor;

/// The graph kept between queries (per thread): an edge pair for every (u, v) a query on a
/// network of this size has had, each query setting the capacities (0 where it has no such arc)
/// instead of building the graph again, which cost about what the flow itself does (docs/synth.md).
/// Splitting and packing ask p^3-ish queries of networks that differ in a few arcs.
struct KeptGraph {
  std::size_t vertices = 0;
  Graph g;
  std::unordered_map<std::uint64_t, Edge> edges;  ///< by u * vertices + v
  std::vector<Edge> set;                          ///< the edges the last query gave capacity

  void reset(std::size_t n) {
    vertices = n;
    g.clear();  // not g = Graph(n): adjacency_list's assignment copies
    for (std::size_t v = 0; v < n; ++v) boost::add_vertex(g);
    edges.clear();
    set.clear();
  }

  Edge edge(std::size_t u, std::size_t v) {
    auto [it, fresh] = edges.try_emplace(static_cast<std::uint64_t>(u) * vertices + v);
    if (fresh) {
      auto cap = boost::get(boost::edge_capacity, g);
      auto rev = boost::get(boost::edge_reverse, g);
      Edge e = boost::add_edge(u, v, g).first;
      Edge r = boost::add_edge(v, u, g).first;
      cap[e] = cap[r] = 0;
      rev[e] = r;
      rev[r] = e;
      it->second = e;
    }
    return it->second;
  }
};

}  // namespace

std::int64_t ArcNetwork::max_flow() const {
  thread_local KeptGraph kept;
  // Pairs of earlier queries add zero-capacity edges the flow still walks: start afresh when
  // they outnumber this query's arcs.
  if (kept.vertices != n_ + 2 || kept.edges.size() > 2 * arcs_.size() + 64) kept.reset(n_ + 2);
  auto cap = boost::get(boost::edge_capacity, kept.g);
  for (Edge e : kept.set) cap[e] = 0;
  kept.set.clear();
  for (const Arc& a : arcs_) {
    Edge e = kept.edge(a.u, a.v);
    if (cap[e] == 0) kept.set.push_back(e);
    cap[e] += a.cap;
  }
  return boost::push_relabel_max_flow(kept.g, source(), sink());
}

}  // namespace collkit::plan::synth
