#include "direct_phases.h"

#include "collkit/topo/topology.h"
#include "common.h"

namespace collkit::plan::algo {

bool on_one_host(int nranks, const topo::Topology& topo) {
  const std::string& host = topo.host_of(0);
  for (int r = 1; r < nranks; ++r)
    if (topo.host_of(static_cast<topo::Rank>(r)) != host) return false;
  return true;
}

std::uint32_t direct_reduce_scatter(std::vector<Op>& ops, int p, int v, const std::function<int(int)>& at,
                                    const std::function<ChunkRef(int)>& piece, std::uint32_t count, ChunkRef dst, int lanes) {
  auto pos = [p](int q) { return ((q % p) + p) % p; };
  if (p == 1) {
    ops.push_back(copy(piece(v), dst, count, 0));
    return static_cast<std::uint32_t>(ops.size() - 1);
  }
  for (int s = 1; s < p; ++s) ops.push_back(send(at(pos(v + s)), piece(pos(v + s)), count, direct_lane(s, lanes)));
  for (int s = 1; s < p; ++s) {
    Op o = recv_reduce(at(pos(v - s)), s == 1 ? piece(v) : dst, dst, count, direct_lane(s, lanes));
    if (s > 1) o.depend_on(static_cast<std::uint32_t>(ops.size() - 1));
    ops.push_back(o);
  }
  return static_cast<std::uint32_t>(ops.size() - 1);
}

}  // namespace collkit::plan::algo
