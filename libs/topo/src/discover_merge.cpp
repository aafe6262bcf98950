// merge_hosts(): per-rank host topologies (what each rank discovered) into one cluster.

#include <set>
#include <unordered_map>

#include "collkit/core/error.h"
#include "collkit/topo/discover.h"
#include "collkit/topo/synth.h"

namespace collkit::topo {

namespace {

// The one host a rank's own topology describes.
const std::string& host_of_rank_topology(const Topology& t, std::size_t rank) {
  auto hosts = t.hosts();
  if (t.num_ranks() == 0) throw InputError("rank " + std::to_string(rank) + ": its topology has no ranks");
  const std::string& host = t.host_of(0);
  if (hosts.size() != 1 || host.empty())
    throw InputError("rank " + std::to_string(rank) + ": its topology must describe one host, got " +
                     std::to_string(hosts.size()));
  return host;
}

// Copies the vertices and links of `from` (one host) into `to`; vertex ids carry the host name,
// so they cannot collide with another host's.
void copy_host(Topology& to, const Topology& from) {
  std::vector<VertexId> map(from.num_vertices());
  for (VertexId v = 0; v < from.num_vertices(); ++v) map[v] = to.add_vertex(from.vertex(v));
  for (const Link& l : from.links()) {
    Link c = l;
    c.a = map[l.a];
    c.b = map[l.b];
    to.add_link(c);
  }
}

}  // namespace

Topology merge_hosts(const std::vector<Topology>& per_rank, const std::vector<int>& local_rank,
                     const std::string& fabric) {
  if (per_rank.empty()) throw InputError("no rank topologies to merge");
  if (per_rank.size() != local_rank.size())
    throw InputError("merge: " + std::to_string(per_rank.size()) + " rank topologies but " +
                     std::to_string(local_rank.size()) + " local ranks");

  // Hosts in rank order; the first rank on a host supplies its vertices.
  std::vector<std::string> hosts;
  std::unordered_map<std::string, std::size_t> first_rank;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    const std::string& h = host_of_rank_topology(per_rank[r], r);
    if (first_rank.emplace(h, r).second) hosts.push_back(h);
  }
  if (hosts.size() > 1 && fabric.empty())
    throw InputError("cluster spans " + std::to_string(hosts.size()) +
                     " hosts: give --fabric to join them (e.g. fat-tree:rails=8,oversub=1)");

  Topology t;
  t.source = "discover";
  t.name = hosts.size() == 1 ? hosts.front() : "cluster-" + std::to_string(hosts.size()) + "-hosts";
  std::set<std::string> seen_notes;
  for (const std::string& h : hosts) {
    const Topology& src = per_rank[first_rank.at(h)];
    copy_host(t, src);
    for (const std::string& n : src.notes) {
      std::string note = hosts.size() == 1 ? n : h + ": " + n;
      if (seen_notes.insert(note).second) t.notes.push_back(std::move(note));
    }
  }

  // Rank r runs on the endpoint its own discovery gave local rank r (its GPU by CUDA order, or
  // its core's CPU), found by id in the merged graph.
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    const Topology& own = per_rank[r];
    if (local_rank[r] < 0)
      throw InputError("rank " + std::to_string(r) + ": local rank must be >= 0, got " + std::to_string(local_rank[r]));
    const Rank slot = static_cast<Rank>(static_cast<std::size_t>(local_rank[r]) % own.num_ranks());
    const std::string& id = own.vertex(own.rank_vertex(slot)).id;
    auto v = t.find(id);
    if (!v)
      throw InputError("rank " + std::to_string(r) + ": endpoint \"" + id + "\" is not in host " + own.host_of(slot) +
                       " as rank " + std::to_string(first_rank.at(own.host_of(slot))) + " discovered it");
    t.add_rank(*v);
  }

  if (hosts.size() > 1) add_fabric(t, parse_spec(fabric), hosts);
  else if (!fabric.empty()) t.notes.push_back("fabric \"" + fabric + "\" not used: the cluster is one host");
  t.check_connected();
  return t;
}

}  // namespace collkit::topo
