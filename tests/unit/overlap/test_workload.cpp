// The step's segments: collective sizes against REFERENCE Part C 3.3's worked volumes, counts per
// layer, FLOPs, and the layout checks' one-line errors.

#include <doctest/doctest.h>

#include <map>

#include "collkit/core/error.h"
#include "collkit/overlap/workload.h"
#include "collkit/topo/synth.h"

using namespace collkit::overlap;
using collkit::plan::Collective;

namespace {

std::map<std::pair<Collective, bool>, int> tp_counts(const Workload& w, int layer) {
  std::map<std::pair<Collective, bool>, int> n;
  for (const auto& s : w.segments)
    if (s.layer == layer && s.microbatch == 0)
      for (const auto& c : s.comm)
        if (c.group == Group::Tp) ++n[{c.coll, s.backward}];
  return n;
}

}  // namespace

TEST_CASE("workload: Llama-3 70B TP8 SP at 8K: 128 MiB tensors, 2 AG + 2 RS forward and 4 AG + 2 RS backward per layer") {
  Layout l;
  l.tp = 8, l.sp = true, l.seq_len = 8192;
  Workload w = build_workload(load_model("llama3-70b"), l);
  auto n = tp_counts(w, 5);
  CHECK(n[{Collective::AllGather, false}] == 2);
  CHECK(n[{Collective::ReduceScatter, false}] == 2);
  CHECK(n[{Collective::AllGather, true}] == 4);
  CHECK(n[{Collective::ReduceScatter, true}] == 2);
  for (const auto& s : w.segments)
    for (const auto& c : s.comm) CHECK(c.bytes == 128ull << 20);
  CHECK(w.stage_layers == 80);
}

TEST_CASE("workload: without SP the TP collectives are AllReduces of the whole tensor, 2 forward and 2 backward") {
  Layout l;
  l.tp = 8, l.seq_len = 2048;
  Workload w = build_workload(load_model("gpt3-175b"), l);
  auto n = tp_counts(w, 0);
  CHECK(n[{Collective::AllReduce, false}] == 2);
  CHECK(n[{Collective::AllReduce, true}] == 2);
  CHECK(n.size() == 2);
  for (const auto& s : w.segments)
    for (const auto& c : s.comm) CHECK(c.bytes == 48ull << 20);  // GPT-3 s=2048: b·s·h·2 = 48 MiB
}

TEST_CASE("workload: GEMM FLOPs are 6 x parameters x tokens for a training step (dense layers)") {
  Layout l;
  l.tp = 1, l.seq_len = 1024;
  Model m = load_model("llama3-8b");
  Workload w = build_workload(m, l);
  double gemm = 0;
  for (const auto& s : w.segments)
    for (const auto& op : s.compute)
      if (op.kind == OpKind::Gemm && s.layer >= 0) gemm += op.flops;
  double layer_weights = static_cast<double>(attention_params(m) + mlp_params(m, m.ffn));
  CHECK(gemm == doctest::Approx(6.0 * layer_weights * m.layers * 1024));
}

TEST_CASE("workload: Mixtral EP: dispatch and combine of tokens x top-k x h per layer, DP and expert-DP gradients") {
  Layout l;
  l.dp = 16, l.ep = 8, l.seq_len = 4096;
  Workload w = build_workload(load_model("mixtral-8x7b"), l);
  int a2a = 0;
  std::map<Group, int> grads;
  for (const auto& s : w.segments) {
    for (const auto& c : s.comm) {
      if (c.coll == Collective::AlltoAll) {
        ++a2a;
        CHECK(c.bytes == 4096ull * 2 * 4096 * 2);  // REFERENCE 3.3: 64 MiB dispatch for T=4096, k=2
      }
      if (s.kind == SegmentKind::GradReduce) ++grads[c.group];
    }
  }
  CHECK(a2a == 32 * 4);
  CHECK(grads[Group::Dp] == 32);
  CHECK(grads[Group::ExpertDp] == 32);
}

TEST_CASE("workload: FSDP gathers each layer before forward and backward and reduce-scatters its gradients") {
  Layout l;
  l.dp = 8, l.zero = 3, l.seq_len = 1024;
  Model m = load_model("llama3-8b");
  Workload w = build_workload(m, l);
  int gathers = 0, scatters = 0;
  for (const auto& s : w.segments) {
    if (s.kind == SegmentKind::ParamGather) {
      ++gathers;
      CHECK(s.comm[0].bytes == static_cast<std::uint64_t>(layer_params(m, 0)) * 2);
    }
    if (s.kind == SegmentKind::GradReduce) {
      ++scatters;
      CHECK(s.comm[0].coll == Collective::ReduceScatter);
    }
  }
  CHECK(gathers == 64);
  CHECK(scatters == 32);
}

TEST_CASE("layout errors: one line each, naming the flag and the figure") {
  auto t = collkit::topo::synth({"dgx-h100", 2, ""});
  Model m = load_model("llama3-70b");
  Layout l;
  l.tp = 3;
  CHECK_THROWS_WITH_AS(check_layout(l, m, t), "--tp 3 does not divide the 64 attention heads of llama3-70b", collkit::InputError);
  l.tp = 8, l.dp = 4;
  CHECK_THROWS_WITH_AS(check_layout(l, m, t), "the layout needs 32 GPUs (tp 8 x dp 4 x pp 1) but the topology dgx-h100x2-fat-tree has 16",
                       collkit::InputError);
  l.dp = 2, l.ep = 2;
  CHECK_THROWS_WITH_AS(check_layout(l, m, t), "--ep 2 needs a mixture-of-experts model; llama3-70b is dense", collkit::InputError);
  l.ep = 1, l.microbatches = 1000000000;  // once built segments without end
  CHECK_THROWS_WITH_AS(check_layout(l, m, t), "--microbatches must be at most 1024 (the limit on micro-batches per step), got 1000000000",
                       collkit::InputError);
  l.microbatches = 1, l.zero = 4;
  CHECK_THROWS_WITH_AS(check_layout(l, m, t), "--zero must be 0, 1, 2 or 3, got 4", collkit::InputError);
  l.zero = 0, l.dtype = "int4";
  CHECK_THROWS_WITH_AS(check_layout(l, m, t), "unknown dtype \"int4\" (expected bf16, fp16 or fp8)", collkit::InputError);
  l.dtype = "bf16";
  CHECK_NOTHROW(check_layout(l, m, t));
}
