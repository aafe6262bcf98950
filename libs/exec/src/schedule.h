#pragma once
// Every rank's program walked into one global order of rounds, for the backends that cannot run
// plan.h's eager sends as they stand:
//  - NCCL's ncclSend blocks on the GPU until the peer posts the matching ncclRecv, and sends and
//    receives only progress together when they sit in one ncclGroupStart/End. Every rank walks
//    the same schedule, so round k's group on rank a holds exactly the receives that match round
//    k's sends on its peers, in the same order (NCCL matches a pair's operations in issue order):
//    every group completes, and since all ranks issue groups in one global order, no cycle of
//    waiting groups can form.
//  - The cuda backend runs every rank in one process on one stream per GPU, in this order.
// The walk keeps plan.h's semantics: a channel's ops start in program order, each after its
// deps; a send is done when reached (eager); a receive is reached when its channel gets there and
// completes in the first round in which its matching send has been reached. A send's data moves
// only in its transfer's round, so a send whose source bytes the rank writes in between is copied
// aside when reached (sends_to_copy).

#include <array>
#include <cstdint>
#include <vector>

#include "program.h"

namespace collkit::exec::detail {

enum class StepKind : std::uint8_t {
  Local,     ///< a Copy or Reduce of `rank`
  Reach,     ///< `rank` reaches Send `op` (its data is captured here when sends_to_copy says so)
  Transfer,  ///< `peer`'s Send `peer_op` lands in `rank`'s Recv/RecvReduce `op`
  RoundEnd,  ///< the transfers since the previous RoundEnd run together (one NCCL group)
};

struct Step {
  StepKind kind = StepKind::Local;
  std::int32_t rank = -1;
  std::uint32_t op = 0;
  std::int32_t peer = -1;
  std::uint32_t peer_op = 0;
};

struct GlobalSchedule {
  std::vector<RankProgram> programs;  ///< every rank's, by rank
  std::vector<Step> steps;
  std::uint32_t rounds = 0;
};

/// Walks `plan`; throws Error naming the op when the plan cannot complete under these rules: an
/// op plan::match_plan() rejects (a receive no send matches, a send no receive takes, byte
/// counts that differ, ...) or a deadlock.
GlobalSchedule make_schedule(const plan::Plan& plan);

/// Where a rank's three regions start, as addresses in one space: only their overlaps matter
/// (in place, input and output share one buffer).
using RegionAddrs = std::array<std::uint64_t, 3>;
/// The layout of a rank's regions for a placement: separate buffers out of place; in place the
/// input and output at in_place_offsets() of one buffer, the input elsewhere when staged.
RegionAddrs region_layout(const plan::Request& req, int rank, bool in_place, bool staged);

/// For each op of `rank`: true for a Send whose source bytes the rank writes between the send's
/// Reach and the end of its transfer's round (counting that round's receives as concurrent with
/// it), so it must go from a copy made when reached.
std::vector<bool> sends_to_copy(const GlobalSchedule& s, int rank, const RegionAddrs& regions);

/// Where the copies of sends_to_copy()'s sends live: per placement (0 out of place, 1 in place),
/// per op, an offset into one buffer of `bytes` (the larger placement's), or kNoCopy.
inline constexpr std::uint64_t kNoCopy = ~0ull;
struct SendCopies {
  std::array<std::vector<std::uint64_t>, 2> offset;
  std::uint64_t bytes = 0;
};
SendCopies send_copies(const GlobalSchedule& s, const plan::Request& req, int rank, bool staged);

/// "op 12 (recv from rank 1, channel 0, 4096 bytes)" of `rank`'s program.
std::string describe_op(const GlobalSchedule& s, int rank, std::uint32_t op);

}  // namespace collkit::exec::detail
