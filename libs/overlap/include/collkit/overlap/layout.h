#pragma once
// The parallel layout of a step and where its groups' ranks sit on the topology.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::overlap {

struct Model;

enum class Mode : std::uint8_t { Train, Prefill, Decode };
std::string_view to_string(Mode m);
/// "train" | "prefill" | "decode"; throws InputError otherwise.
Mode parse_mode(std::string_view text);

/// Bytes per element of "bf16", "fp16", "fp8"; throws InputError for anything else.
int dtype_bytes(std::string_view dtype);

/// The most micro-batches per step (docs/errors.md, "Limits"): the workload holds segments for
/// every micro-batch and layer; pipeline schedules use a few times pp, so 1024 is far above any.
inline constexpr int kMaxMicrobatches = 1024;

struct Layout {
  int tp = 1;
  bool sp = false;          ///< sequence parallel: TP AllReduce becomes AllGather + ReduceScatter
  int dp = 1;               ///< data-parallel degree (EP is carved out of it, as Megatron-Core does)
  int zero = 0;             ///< 0 DDP, 1/2 sharded optimizer (gradient ReduceScatter + parameter AllGather), 3 FSDP
  int ep = 1;               ///< expert-parallel degree, divides dp
  int pp = 1;
  int microbatches = 1;
  int micro_batch = 1;      ///< sequences per micro-batch
  std::int64_t seq_len = 4096;  ///< tokens per sequence (decode: the context length)
  std::string dtype = "bf16";
  Mode mode = Mode::Train;
  /// Rank placement, innermost first: "tp,dp,pp" (the usual: TP ranks consecutive, inside a host).
  std::string order = "tp,dp,pp";

  int gpus() const { return tp * dp * pp; }
};

/// Checks the layout against the model and the topology; throws InputError with one line, e.g.
/// `--tp 3 does not divide the 64 attention heads of llama3-70b`, `the layout needs 64 GPUs
/// (tp 8 x dp 8 x pp 1) but the topology dgx-h100x2 has 16`.
void check_layout(const Layout& l, const Model& m, const topo::Topology& t);

/// The communication groups of rank 0. Ranks follow `order` (by default TP innermost: consecutive
/// ranks, inside a host; then DP, whose first `ep` members form the EP group; then PP).
enum class Group : std::uint8_t { Tp, Ep, Dp, ExpertDp, Pp };
std::string_view to_string(Group g);
/// The global ranks of rank 0's group of this kind, in group order. Pp: rank 0 and its next stage.
std::vector<topo::Rank> group_ranks(const Layout& l, Group g);
/// The same for rank `of`'s group: every rank's groups of one kind partition the layout's ranks
/// (coll-overlap run splits the job along them).
std::vector<topo::Rank> group_ranks(const Layout& l, Group g, topo::Rank of);

}  // namespace collkit::overlap
