#pragma once
// The one pass over a whole plan that every consumer of all its programs shares: verify's engine,
// the simulator and the GPU backends' global schedule. It reads each rank's program once, checks
// each op on its own (type, channel, count, chunk ranges, peer, deps, equal bytes on both sides
// of a local op) and pairs every send with the receive that takes it: the k-th send from a to b on
// channel c with the k-th receive on b from a on c (plan.h), with equal counts and bytes. Each
// consumer keeps what it needs from the programs as they stream past; nothing here stores an op.
//
// Ops get ids in rank and program order (rank r's op i is begin[r] + i), so a consumer's per-op
// arrays and the pairs line up. Errors are one line naming the op:
// "rank 1 op 12 (recv from 0 ch 0): never matched: rank 0 sends 6 messages to rank 1 on ch 0 and
// rank 1 receives 7".

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/plan/plan.h"

namespace collkit::plan {

/// A plan that breaks plan.h's rules.
class PlanFault : public InputError {
 public:
  using InputError::InputError;
};

/// The bytes of chunk ranges of a plan's three buffers, for passes over millions of ops: the
/// common case (every chunk of a buffer equal) is one multiply.
class ChunkSizes {
 public:
  explicit ChunkSizes(const PlanInfo& info);
  std::uint64_t bytes(Buf b, std::uint32_t chunk, std::uint32_t count) const {
    const Shape& sh = shapes_[static_cast<std::size_t>(b)];
    return sh.even ? sh.even * count : chunk_bytes(sh.bytes, sh.chunks, chunk, count, sh.elem);
  }
  std::uint64_t buffer_bytes(Buf b) const { return shapes_[static_cast<std::size_t>(b)].bytes; }
  std::uint32_t chunks(Buf b) const { return shapes_[static_cast<std::size_t>(b)].chunks; }

 private:
  struct Shape {
    std::uint64_t bytes = 0;
    std::uint32_t chunks = 0;
    std::uint32_t elem = 1;
    std::uint64_t even = 0;  // bytes per chunk when all chunks are equal, else 0
  };
  std::array<Shape, 3> shapes_;
};

/// Where each rank's ops start among all ops' ids.
struct OpIds {
  std::vector<std::uint32_t> begin;  ///< nranks + 1 entries; rank r's ops are [begin[r], begin[r+1])

  std::uint32_t id(int rank, std::uint32_t index) const { return begin[static_cast<std::size_t>(rank)] + index; }
  int rank_of(std::uint32_t id) const;
  std::uint32_t index_of(std::uint32_t id) const { return id - begin[static_cast<std::size_t>(rank_of(id))]; }
  std::size_t ops() const { return begin.empty() ? 0 : begin.back(); }
};

struct MatchVisitor {
  /// Rank r's program, every op checked on its own; its ops' ids start at `first`. Called in rank
  /// order, before any of the rank's ops is paired.
  std::function<void(int rank, std::uint32_t first, const std::vector<Op>& ops)> program;
  /// A send and the receive that takes it, by id, as soon as both have been read.
  std::function<void(std::uint32_t send, std::uint32_t recv)> pair;
};

/// How many ops to make room for once ranks 0..r hold `ops`, arrays that hold `capacity` now: as
/// many again per rank for the ranks to come (all the same in most plans), so per-op arrays filled
/// rank by rank are sized about once; never more than 64 M ops beyond `ops`, and at least half as
/// much again as `capacity`, so that plans whose later ranks run more ops than the first ones (a
/// tree's inner ranks after its leaves) grow their arrays a few times, not once per rank.
inline std::size_t ops_ahead(std::size_t ops, int r, int nranks, std::size_t capacity) {
  std::size_t predicted = ops / static_cast<std::size_t>(r + 1) * static_cast<std::size_t>(nranks);
  return std::max({ops, std::min(predicted, ops + (std::size_t{1} << 26)), capacity + capacity / 2});
}

/// Reads, checks and pairs every op of `plan`; throws PlanFault at the first op that breaks a
/// rule, or naming the first op (in rank and program order) that has no partner.
OpIds match_plan(const Plan& plan, const MatchVisitor& visit);

/// "op 12 (recv_reduce from 2 ch 0)".
std::string describe_op(OpType type, int peer, std::uint16_t channel, std::uint32_t index);
/// "output chunk 3", "input chunks 4-5".
std::string chunks_name(Buf b, std::uint32_t chunk, std::uint32_t count);

}  // namespace collkit::plan
