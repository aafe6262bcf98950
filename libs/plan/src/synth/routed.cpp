// The links rank-to-rank routes use (routed.h).

#include "synth/routed.h"

#include <algorithm>

#include "collkit/topo/routing.h"

namespace collkit::plan::synth {

topo::Topology routed_links(const topo::Topology& t, int p) {
  std::vector<topo::VertexId> ends;
  for (int r = 0; r < p; ++r) ends.push_back(t.rank_vertex(static_cast<topo::Rank>(r)));
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  std::vector<char> used(t.num_links(), 0);
  topo::Router router(t);
  for (topo::VertexId a : ends)
    for (const topo::Path& path : router.routes_to(a, ends))
      for (const topo::Hop& h : path.hops) used[h.link] = 1;
  topo::Topology out;
  out.name = t.name;
  out.source = t.source;
  for (const topo::Vertex& v : t.vertices()) out.add_vertex(v);
  for (std::size_t l = 0; l < t.num_links(); ++l)
    if (used[l]) out.add_link(t.link(static_cast<topo::LinkId>(l)));
  for (topo::VertexId v : t.rank_vertices()) out.add_rank(v);
  return out;
}

}  // namespace collkit::plan::synth
