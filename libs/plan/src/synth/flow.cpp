// Max flow on a directed network of whole-number capacities (flow.h).

#include "synth/flow.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

namespace collkit::plan::synth {

std::int64_t ArcNetwork::max_flow() const {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                      boost::property<boost::edge_capacity_t, std::int64_t,
                                                      boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  Graph g(n_ + 2);
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  for (const Arc& a : arcs_) {
    auto e = boost::add_edge(a.u, a.v, g).first;
    auto r = boost::add_edge(a.v, a.u, g).first;
    cap[e] = a.cap;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
  }
  return boost::push_relabel_max_flow(g, source(), sink());
}

}  // namespace collkit::plan::synth
