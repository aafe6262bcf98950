#pragma once
// The interpreter: runs a plan on real numbers for every rank in one process, in an execution
// order the engine (engine.h) finds valid, with the engine's checks (matching, deadlock, races).
// Later backends (MPI, NCCL, CUDA) are checked against it, and it against a reference computed
// directly from the collective's definition (tests/unit/plan/plan_testing.h).
//
// Data are 8-byte integers ("elements"): each chunk boundary of each buffer must fall on an
// element, so tests give requests elem_bytes = 8 (or sizes that are multiples of 8 x chunks).
// Sum and product wrap around (two's complement) so that every order of a reduction gives the
// same bits.

#include <cstdint>
#include <string_view>
#include <vector>

#include "collkit/plan/plan.h"

namespace collkit::plan::interp {

enum class RedOp : std::uint8_t { Sum, Prod, Min, Max };
inline constexpr RedOp kRedOps[] = {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max};
std::string_view to_string(RedOp op);

/// a (+) b under `op`, exactly as run() computes it.
std::int64_t apply(RedOp op, std::int64_t a, std::int64_t b);

using Buffers = std::vector<std::vector<std::int64_t>>;  ///< per rank, elements

/// Runs `plan` on `inputs` (per rank, input_bytes / 8 elements) and returns every rank's output
/// buffer (output_bytes / 8 elements; zeros where a rank writes nothing). Throws InputError for
/// inputs of the wrong shape or chunks not on element boundaries, and the engine's PlanFault (an
/// InputError, with verify()'s message) for a plan that is wrong whatever the data.
Buffers run(const Plan& plan, RedOp op, const Buffers& inputs);

}  // namespace collkit::plan::interp
