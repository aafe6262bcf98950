#include "collkit/plan/plan.h"

#include "collkit/core/error.h"

namespace collkit::plan {

std::string_view to_string(OpType t) {
  switch (t) {
    case OpType::Send: return "send";
    case OpType::Recv: return "recv";
    case OpType::RecvReduce: return "recv_reduce";
    case OpType::Copy: return "copy";
    case OpType::Reduce: return "reduce";
  }
  return "?";
}

std::string_view to_string(Buf b) {
  switch (b) {
    case Buf::Input: return "input";
    case Buf::Output: return "output";
    case Buf::Scratch: return "scratch";
  }
  return "?";
}

void Op::depend_on(std::uint32_t index) {
  for (auto& d : deps) {
    if (d == index) return;
    if (d == kNoDep) {
      d = index;
      return;
    }
  }
  throw Error("an op can depend on at most " + std::to_string(kMaxDeps) + " others: chain the rest through a local op");
}

std::size_t Op::num_deps() const {
  std::size_t n = 0;
  while (n < kMaxDeps && deps[n] != kNoDep) ++n;
  return n;
}

ExplicitPlan::ExplicitPlan(PlanInfo info, std::vector<std::vector<Op>> programs)
    : Plan(std::move(info)), programs_(std::move(programs)) {
  if (programs_.size() != static_cast<std::size_t>(info_.req.nranks))
    throw InputError("explicit plan: " + std::to_string(programs_.size()) + " programs for " + std::to_string(info_.req.nranks) +
                     " ranks");
}

std::vector<Op> only_channel(const std::vector<Op>& prog, int channel) {
  std::vector<Op> out;
  std::vector<std::uint32_t> place(prog.size(), kNoDep);
  for (std::size_t i = 0; i < prog.size(); ++i) {
    if (prog[i].channel != channel) continue;
    place[i] = static_cast<std::uint32_t>(out.size());
    Op o = prog[i];
    o.deps.fill(kNoDep);
    for (std::size_t k = 0, n = prog[i].num_deps(); k < n; ++k) {
      std::uint32_t d = prog[i].deps[k];
      if (d < i && place[d] != kNoDep) o.depend_on(place[d]);
    }
    out.push_back(o);
  }
  return out;
}

ExplicitPlan materialize(const Plan& plan) {
  std::vector<std::vector<Op>> programs;
  programs.reserve(static_cast<std::size_t>(plan.nranks()));
  for (int r = 0; r < plan.nranks(); ++r) programs.push_back(plan.program(r));
  return ExplicitPlan(plan.info(), std::move(programs));
}

std::uint64_t chunk_offset(std::uint64_t buffer_bytes, std::uint32_t chunks, std::uint64_t chunk, std::uint32_t elem_bytes) {
  if (chunks == 0 || elem_bytes == 0) return 0;
  // floor(E * i / C) elements without overflowing 64 bits: E = qC + r, so E*i/C = q*i + floor(r*i/C),
  // and r*i < C*C fits for any 32-bit chunk count.
  std::uint64_t elems = buffer_bytes / elem_bytes, q = elems / chunks, r = elems % chunks, i = chunk;
  return (q * i + r * i / chunks) * elem_bytes;
}

std::uint64_t chunk_bytes(std::uint64_t buffer_bytes, std::uint32_t chunks, std::uint32_t chunk, std::uint32_t count,
                          std::uint32_t elem_bytes) {
  return chunk_offset(buffer_bytes, chunks, std::uint64_t{chunk} + count, elem_bytes) -
         chunk_offset(buffer_bytes, chunks, chunk, elem_bytes);
}

std::uint64_t chunk_offset(const PlanInfo& info, Buf b, std::uint32_t chunk) {
  return chunk_offset(buffer_bytes(info, b), buffer_chunks(info, b), chunk, info.req.elem_bytes);
}

std::uint64_t chunk_bytes(const PlanInfo& info, Buf b, std::uint32_t chunk, std::uint32_t count) {
  return chunk_bytes(buffer_bytes(info, b), buffer_chunks(info, b), chunk, count, info.req.elem_bytes);
}

std::uint64_t buffer_bytes(const PlanInfo& info, Buf b) {
  switch (b) {
    case Buf::Input: return input_bytes(info.req);
    case Buf::Output: return output_bytes(info.req);
    case Buf::Scratch: return info.scratch_bytes;
  }
  return 0;
}

std::uint32_t buffer_chunks(const PlanInfo& info, Buf b) {
  switch (b) {
    case Buf::Input: return info.in_chunks;
    case Buf::Output: return info.out_chunks;
    case Buf::Scratch: return info.scratch_chunks;
  }
  return 0;
}

}  // namespace collkit::plan
