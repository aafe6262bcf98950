#pragma once
// One training or inference step of one pipeline stage on one rank, as a sequence of segments:
// the GEMMs and attention with their FLOPs and bytes, and the collectives the layout implies with
// their sizes (docs/overlap.md states every formula). Strategies decide how segments become tasks.

#include <cstdint>
#include <string>
#include <vector>

#include "collkit/overlap/layout.h"
#include "collkit/overlap/model.h"
#include "collkit/plan/collective.h"

namespace collkit::overlap {

enum class OpKind : std::uint8_t { Gemm, Attention };
std::string_view to_string(OpKind k);

/// A compute kernel. GEMMs: `mult` products of (m x k) by (k x n), FLOPs 2·m·k·n·mult and bytes
/// (m·k + k·n + m·n)·B·mult; split into chunks along m (the weights are read again per chunk).
/// Attention: FLOPs and bytes given, split evenly.
struct ComputeOp {
  std::string name;  ///< "qkv", "fc1.dgrad", "attn.bwd"
  OpKind kind = OpKind::Gemm;
  double m = 0, k = 0, n = 0, mult = 1;
  double flops = 0;
  double bytes = 0;
};

/// A collective of rank 0's group, `bytes` in nccl-tests' convention (plan::Request).
struct CommOp {
  std::string name;  ///< "tp.ag", "ep.dispatch", "dp.grad"
  Group group = Group::Tp;
  plan::Collective coll = plan::Collective::AllReduce;
  std::uint64_t bytes = 0;
};

enum class SegmentKind : std::uint8_t {
  Compute,      ///< compute ops only
  GatherGemm,   ///< comm[0] (TP AllGather) feeds compute[0]
  GemmScatter,  ///< compute[0] feeds comm[0] (TP ReduceScatter, or AllReduce without SP)
  Moe,          ///< comm[0] dispatch, the expert compute, comm[1] combine
  ParamGather,  ///< comm[0]: parameters of `layer` gathered before its compute (FSDP, or ZeRO-1/2's updated parameters)
  GradReduce,   ///< comm ops: the gradients of `layer` (one per group: dense and expert parameters)
  PpRecv,       ///< comm[0]: activations (or their gradients) from the neighbouring stage
  PpSend,       ///< comm[0]: to the neighbouring stage
  StepEnd,      ///< the optimizer step waits for every collective
};
std::string_view to_string(SegmentKind k);

struct Segment {
  SegmentKind kind = SegmentKind::Compute;
  int layer = -1;       ///< -1: not a layer's (embeddings, head, step end)
  int microbatch = 0;
  bool backward = false;
  bool zero_params = false;  ///< ParamGather: ZeRO-1/2's updated parameters, not FSDP's
  std::vector<ComputeOp> compute;
  std::vector<CommOp> comm;
};

struct Workload {
  Model model;
  Layout layout;
  int stage_layers = 0;    ///< layers on the modelled stage (the first, the largest)
  double head_share = 1;   ///< fraction of the LM head counted on this stage (1/pp)
  std::vector<Segment> segments;
  std::vector<std::string> notes;  ///< simplifications that apply to this workload
};

/// Builds the step for a checked layout (check_layout first).
Workload build_workload(const Model& m, const Layout& l);

}  // namespace collkit::overlap
