#pragma once
// Writing plans in other systems' formats, so a plan can run on their runtimes.

#include <cstdint>
#include <string>

#include "collkit/plan/plan.h"

namespace collkit::plan {

/// Choices the MSCCL XML format needs that a plan does not hold.
struct MscclOptions {
  std::string name;                ///< <algo name>; empty: "<algorithm>-<collective>-<nranks>"
  std::string proto = "Simple";    ///< Simple | LL | LL128
  std::uint64_t min_bytes = 0;     ///< selection range; the executor requires both attributes
  std::uint64_t max_bytes = 0;     ///< 0 = no upper limit
  int max_steps = 64;              ///< steps per threadblock: the executor's default MSCCL_MAX_NUM_STEPS
  int max_count = 71;              ///< chunks per step: MSCCL_MAX_COUNT is 72, exclusive
  int max_channels = 32;           ///< MSCCL channels: MAXCHANNELS of the NCCL the executor builds on
};

/// The plan as an MSCCL algorithm XML (REFERENCE 3.1, docs/plan.md "MSCCL export"), loadable by
/// the msccl-executor-nccl / RCCL runtime from MSCCL_ALGO_DIR. Each rank's channel program is
/// split into threadblocks of one send and one receive peer, program order across them kept
/// by step dependencies (extra ones through nop steps); ops of more than max_count chunks are
/// split. A plan of more than max_channels channels has them share MSCCL channels where no rank
/// talks to the same peer in the same direction on both. Throws InputError when the plan cannot
/// fit: a threadblock with more than max_steps steps, more MSCCL channels than max_channels,
/// buffers with different chunk sizes, or a collective MSCCL does not have.
std::string to_msccl_xml(const Plan& plan, const MscclOptions& opt = {});

}  // namespace collkit::plan
