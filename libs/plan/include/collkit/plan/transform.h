#pragma once
// Plans seen differently, for the runtime: the same programs at another buffer size, and the
// programs' meaning when input and output share memory (in-place, as NCCL and MPI define it).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "collkit/plan/plan.h"

namespace collkit::plan {

/// The element counts a plan can run at. `step`: the smallest size-column element count at which
/// every buffer holds whole elements (AllGather, ReduceScatter, AlltoAll: a multiple of nranks);
/// every multiple of it does too, chunks splitting unevenly where they must. `even`: the smallest
/// at which every buffer also splits into equal chunks (a multiple of `step`). Scratch is taken
/// as proportional to the size (a PlanInfo cannot tell a fixed one apart). Both zero for a plan of
/// no bytes, which runs at its own size only.
struct Granularity {
  std::uint64_t step = 0;
  std::uint64_t even = 0;
};
Granularity granularity(const PlanInfo& info);

/// The same programs for a request of `bytes` in `elem_bytes`-byte elements (chunks are fractions
/// of buffers split at whole elements, so programs do not change; scratch scales with the size).
/// Throws InputError when `bytes` is not a multiple of granularity().step elements.
std::unique_ptr<Plan> resized(const Plan& plan, std::uint64_t bytes, std::uint64_t elem_bytes);

/// In-place, per NCCL: AllReduce, Broadcast, Reduce, AlltoAll read and write one buffer; AllGather's
/// input is its slot of the output (output + rank x input); ReduceScatter's output is its slot of
/// the input. `aliased` is the buffer that lives inside `base`, at chunk `base_chunk(rank)`.
struct InPlace {
  Buf aliased = Buf::Input;
  Buf base = Buf::Output;
  std::uint32_t chunk_stride = 0;  ///< base chunk of rank r = r x chunk_stride
  std::uint32_t base_chunk(int rank) const { return static_cast<std::uint32_t>(rank) * chunk_stride; }
};
/// How the plan's buffers overlap in place; nullopt (with `why`) when its chunking cannot line up
/// (AllGather needs output chunks = ranks x input chunks, ReduceScatter the mirror).
std::optional<InPlace> in_place_layout(const PlanInfo& info, std::string* why);

/// The plan as it behaves in place, written out so verify() can judge it: references to the
/// aliased buffer become references into the base buffer, with copies that put each rank's input
/// where in-place puts it (before all else) or take its output from there (after all else). When
/// verify() accepts the result, running the original programs with the buffers overlapping is
/// correct. Throws UnsupportedError when the ordering cannot be written (an op with no room for
/// another dependency); the runtime then stages a copy instead.
ExplicitPlan in_place_form(const Plan& plan);

/// Why the plan cannot run on overlapping buffers ("" when it can): its chunks do not line up,
/// the in-place form cannot be written, or verify() rejects it (its message).
std::string in_place_problem(const Plan& plan);

}  // namespace collkit::plan
