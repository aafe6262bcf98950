#include "collkit/exec/backend.h"

namespace collkit::exec {

InPlaceOffsets in_place_offsets(const plan::Request& req, int rank) {
  std::uint64_t in = plan::input_bytes(req), out = plan::output_bytes(req);
  auto r = static_cast<std::uint64_t>(rank);
  switch (req.coll) {
    case plan::Collective::AllGather: return {out, r * in, 0};
    case plan::Collective::ReduceScatter: return {in, 0, r * out};
    default: return {std::max(in, out), 0, 0};
  }
}

}  // namespace collkit::exec
