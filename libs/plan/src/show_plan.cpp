#include <algorithm>

#include "algorithms/common.h"
#include "collkit/plan/show.h"

namespace collkit::plan {

namespace {

// "output[4]" or, for several chunks, the inclusive range "output[4..5]".
std::string chunks(const ChunkRef& c, std::uint32_t count) {
  std::string s = std::string(to_string(c.buf)) + "[" + std::to_string(c.chunk);
  if (count != 1) s += ".." + std::to_string(c.chunk + count - 1);
  return s + "]";
}

}  // namespace

std::string describe_op(const Op& op) {
  std::string s(to_string(op.type));
  switch (op.type) {
    case OpType::Send: return s + " -> " + std::to_string(op.peer) + "  " + chunks(op.src, op.count);
    case OpType::Recv: return s + " <- " + std::to_string(op.peer) + "  " + chunks(op.dst, op.count);
    case OpType::RecvReduce:
      return s + " <- " + std::to_string(op.peer) + "  " + chunks(op.src, op.count) + " -> " + chunks(op.dst, op.count);
    case OpType::Copy:
    case OpType::Reduce: return s + "  " + chunks(op.src, op.count) + " -> " + chunks(op.dst, op.count);
  }
  return s;
}

std::string weights_note(const PlanInfo& info) {
  if (auto it = info.params.find("weights"); it != info.params.end()) return ", shares " + it->second + " of a slice";
  if (auto it = info.params.find("tree_chunks"); it != info.params.end()) return ", tree shares " + it->second + " chunks";
  if (auto it = info.params.find("tree_units"); it != info.params.end()) {
    // Every rank's trees: rank 0's k shares (the others' alike or near), of its slice.
    std::size_t commas = static_cast<std::size_t>(std::max(1, algo::param_int(info, "channels", 1))), end = 0;
    for (; end < it->second.size(); ++end)
      if (it->second[end] == ',' && --commas == 0) break;
    return ", tree shares " + it->second.substr(0, end) + " units of a slice (rank 0's trees)";
  }
  return "";
}

std::string describe_plan(const Plan& plan, int first_rank, int count) {
  const PlanInfo& info = plan.info();
  std::string out = info.algorithm + " " + std::string(to_string(info.req.coll)) + ", " + std::to_string(info.req.bytes) + " bytes, " +
                    std::to_string(plan.nranks()) + " ranks, " + std::to_string(info.channels) + " channel(s)" + weights_note(info) +
                    "; chunks: input " + std::to_string(info.in_chunks) + ", output " + std::to_string(info.out_chunks) + ", scratch " +
                    std::to_string(info.scratch_chunks) + "\n";
  int first = std::max(first_rank, 0);
  int last = count < 0 ? plan.nranks() : std::min(plan.nranks(), first + count);
  for (int r = first; r < last; ++r) {
    std::vector<Op> ops = plan.program(r);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      out += "rank " + std::to_string(r) + " ch " + std::to_string(op.channel) + "  #" + std::to_string(i) + " " + describe_op(op);
      if (op.num_deps() > 0) {
        out += "  deps ";
        for (std::size_t d = 0; d < op.num_deps(); ++d) out += (d ? "," : "") + std::to_string(op.deps[d]);
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace collkit::plan
