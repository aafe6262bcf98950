#include "collkit/topo/queries.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "collkit/core/error.h"

namespace collkit::topo {

std::vector<HostGroup> ranks_by_host(const Topology& t) {
  std::vector<HostGroup> out;
  // Hashed by views of strings that stay put (the host names below, the topology's own) rather
  // than an ordered map of copies: hier and the ring layouts ask for this per plan, 16384 ranks
  // looked up among 2048 names each time.
  const std::vector<std::string> names = t.hosts();
  std::unordered_map<std::string_view, std::size_t> at;
  at.reserve(names.size());
  for (const std::string& h : names) {
    at.emplace(h, out.size());
    out.push_back({h, {}});
  }
  for (Rank r = 0; r < t.num_ranks(); ++r) {
    const std::string& h = t.host_of(r);
    auto it = at.find(h);
    if (it == at.end()) {  // a rank on a fabric vertex: its own group
      at.emplace(h, out.size());
      out.push_back({h, {r}});
    } else {
      out[it->second].ranks.push_back(r);
    }
  }
  return out;
}

std::optional<VertexId> nearest_switch(const Topology& t, Rank r, VertexKind kind) {
  // Breadth-first by hops from the rank's endpoint over forwarding vertices, keeping per vertex
  // the widest bottleneck among its fewest-hop paths; the first layer holding a switch of `kind`
  // decides. Local by construction: it stops long before crossing the cluster.
  VertexId src = t.rank_vertex(r);
  const std::string& home = t.vertex(src).host;
  std::vector<VertexId> layer{src};
  std::unordered_map<VertexId, double> width{{src, std::numeric_limits<double>::infinity()}};
  while (!layer.empty()) {
    std::optional<VertexId> best;
    for (VertexId v : layer) {
      if (v == src || t.vertex(v).kind != kind) continue;
      if (!best || width[v] > width[*best] || (width[v] == width[*best] && v < *best)) best = v;
    }
    if (best) return best;
    std::vector<VertexId> next;
    std::unordered_map<VertexId, double> next_width;
    for (VertexId u : layer) {
      if (u != src && !forwards(t.vertex(u).kind)) continue;
      // Stay on the home host and the fabric: a switch inside another host is never "nearest".
      if (!t.vertex(u).host.empty() && t.vertex(u).host != home) continue;
      for (const Adjacent& a : t.adjacent(u)) {
        if (width.count(a.peer)) continue;
        double w = std::min(width[u], t.link(a.link).bw_gbps);
        auto [it, fresh] = next_width.emplace(a.peer, w);
        if (fresh) next.push_back(a.peer);
        else it->second = std::max(it->second, w);
      }
    }
    for (auto& [v, w] : next_width) width[v] = w;
    layer = std::move(next);
  }
  return std::nullopt;
}

std::vector<SwitchGroup> ranks_by_switch(const Topology& t, VertexKind kind) {
  std::map<VertexId, std::vector<Rank>> groups;
  for (Rank r = 0; r < t.num_ranks(); ++r)
    if (auto sw = nearest_switch(t, r, kind)) groups[*sw].push_back(r);
  std::vector<SwitchGroup> out;
  for (auto& [sw, ranks] : groups) out.push_back({sw, std::move(ranks)});
  return out;
}

bool share_switch(const Topology& t, Rank a, Rank b, VertexKind kind) {
  auto sa = nearest_switch(t, a, kind);
  return sa && sa == nearest_switch(t, b, kind);
}

RankBandwidth rank_bandwidth(const Topology& t, Rank r) {
  VertexId v = t.rank_vertex(r);
  double sum = 0;
  for (const Adjacent& a : t.adjacent(v)) sum += t.link(a.link).bw_gbps;
  auto sharing = static_cast<double>(t.ranks_at(v).size());
  // Links are full duplex with the same bandwidth each way, so ingress equals egress; both are
  // kept apart in the interface for links that one day are not symmetric.
  return {sum / sharing, sum / sharing};
}

namespace {

std::vector<char> membership(const Topology& t, const std::vector<VertexId>& set, const char* what) {
  std::vector<char> in(t.num_vertices(), 0);
  for (VertexId v : set) {
    if (v >= t.num_vertices()) throw InputError(std::string(what) + ": vertex index out of range");
    in[v] = 1;
  }
  return in;
}

}  // namespace

double cut_gbps(const Topology& t, const std::vector<VertexId>& from, const std::vector<VertexId>& to) {
  auto in_from = membership(t, from, "cut");
  auto in_to = membership(t, to, "cut");
  double sum = 0;
  for (const Link& l : t.links())
    if ((in_from[l.a] && in_to[l.b]) || (in_from[l.b] && in_to[l.a])) sum += l.bw_gbps;
  return sum;
}

double boundary_gbps(const Topology& t, const std::vector<VertexId>& s) {
  auto in = membership(t, s, "boundary");
  double sum = 0;
  for (const Link& l : t.links())
    if (in[l.a] != in[l.b]) sum += l.bw_gbps;
  return sum;
}

double max_flow_gbps(const Topology& t, const std::vector<VertexId>& from, const std::vector<VertexId>& to) {
  if (from.empty() || to.empty()) throw InputError("max flow: both vertex sets must be non-empty");
  auto in_from = membership(t, from, "max flow");
  auto in_to = membership(t, to, "max flow");
  for (VertexId v : to)
    if (in_from[v]) throw InputError("max flow: vertex \"" + t.vertex(v).id + "\" is in both sets");

  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, double,
                      boost::property<boost::edge_residual_capacity_t, double,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  std::size_t n = t.num_vertices();
  Graph g(n + 2);
  auto source = n, sink = n + 1;
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  auto arc = [&](std::size_t u, std::size_t v, double c) {
    auto e = boost::add_edge(u, v, g).first;
    auto r = boost::add_edge(v, u, g).first;
    cap[e] = c;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
  };
  // GPUs outside both sets do not relay (routing.h): they keep no arcs through them.
  auto relays = [&](VertexId v) { return in_from[v] || in_to[v] || forwards(t.vertex(v).kind); };
  for (const Link& l : t.links()) {
    if (!relays(l.a) || !relays(l.b)) continue;
    arc(l.a, l.b, l.bw_gbps);
    arc(l.b, l.a, l.bw_gbps);
  }
  // "Unbounded" source and sink arcs: more than every link together, and still a sane double.
  double unbounded = 1;
  for (const Link& l : t.links()) unbounded += 2 * l.bw_gbps;
  for (VertexId v : from) arc(source, v, unbounded);
  for (VertexId v : to) arc(v, sink, unbounded);
  return boost::push_relabel_max_flow(g, source, sink);
}

std::vector<VertexId> endpoints(const Topology& t, const std::vector<Rank>& ranks) {
  std::vector<VertexId> out;
  std::unordered_set<VertexId> seen;
  for (Rank r : ranks)
    if (seen.insert(t.rank_vertex(r)).second) out.push_back(t.rank_vertex(r));
  return out;
}

}  // namespace collkit::topo
