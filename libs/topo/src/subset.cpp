#include "collkit/topo/subset.h"

#include <string>
#include <vector>

#include "collkit/core/error.h"

namespace collkit::topo {

Topology with_ranks(const Topology& t, std::span<const Rank> ranks) {
  if (ranks.empty()) throw InputError("with_ranks: no rank given");
  std::vector<bool> seen(t.num_ranks(), false);
  for (Rank r : ranks) {
    if (r >= t.num_ranks())
      throw InputError("with_ranks: rank " + std::to_string(r) + " is not in " + t.name + " (" +
                       std::to_string(t.num_ranks()) + " ranks)");
    if (seen[r]) throw InputError("with_ranks: rank " + std::to_string(r) + " given twice");
    seen[r] = true;
  }
  Topology out;
  for (const Vertex& v : t.vertices()) out.add_vertex(v);
  for (const Link& l : t.links()) out.add_link(l);
  for (Rank r : ranks) out.add_rank(t.rank_vertex(r));
  std::string suffix = "[";
  for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) suffix += (i ? "," : "") + std::to_string(ranks[i]);
  suffix += ranks.size() > 8 ? ",...]" : "]";
  out.name = t.name + suffix;
  out.source = t.source;
  out.notes = t.notes;
  out.calibration = t.calibration;
  return out;
}

}  // namespace collkit::topo
