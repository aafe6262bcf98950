#pragma once
// Symbolic verification: executes a plan on symbols instead of data and proves it computes its
// collective for any input. Per rank and chunk it tracks which contributions (rank, input chunk)
// a buffer holds; it rejects a reduction that counts a contribution twice, a read of a chunk
// that holds nothing yet, a send/receive mismatch, a result missing at the end, and an order of
// sends and receives that cannot complete (deadlock).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collkit/plan/plan.h"

namespace collkit::plan {

struct VerifyResult {
  bool ok = false;
  std::string error;       ///< first problem, one line: "rank 3 op 12 (recv from 2 ch 0): ..."
  std::size_t ops = 0;     ///< ops of the plan (executed, or stood for by a congruent channel)
  std::size_t transfers = 0;
  /// Channels proved to be images of channel 0 (docs/plan.md, "Verifying by channels"), whose ops
  /// were compared with channel 0's instead of executed; 0 when every op was executed.
  int congruent_channels = 0;
};

/// How verify() stores what every rank's chunks hold. PerChunk: an entry per chunk of every rank
/// (fast for plans that move a chunk at a time; ranks x chunks entries). Runs: ranges of chunks
/// that continue each other (entries grow with the ops, not with ranks x chunks: hierarchical
/// plans at 16k ranks). Auto picks PerChunk while ranks x chunks is small. The result is the same
/// whichever is used (the tests check both).
enum class ChunkStore : std::uint8_t { Auto, PerChunk, Runs };

/// Hears how far a verification has come: ops executed of all ops (for progress reports).
using VerifyProgress = std::function<void(std::size_t done, std::size_t total)>;

/// Verifies the plan. Never throws for a wrong plan: the result says what is wrong. A plan whose
/// channels are congruent images of channel 0 is decided by channel 0 alone; the verdict and the
/// first error are the same as executing everything. A plan whose execution would hold more than
/// `memory_limit` bytes (0: what the host has available) is refused up front with an InputError
/// saying what it would take: a flat ring over 16k ranks runs a billion ops.
VerifyResult verify(const Plan& plan, ChunkStore store = ChunkStore::Auto, const VerifyProgress& progress = {},
                    std::uint64_t memory_limit = 0);

}  // namespace collkit::plan
