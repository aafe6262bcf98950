#include "collkit/overlap/workload.h"

#include <algorithm>
#include <cmath>

namespace collkit::overlap {

std::string_view to_string(OpKind k) { return k == OpKind::Gemm ? "gemm" : "attention"; }

std::string_view to_string(SegmentKind k) {
  switch (k) {
    case SegmentKind::Compute: return "compute";
    case SegmentKind::GatherGemm: return "gather-gemm";
    case SegmentKind::GemmScatter: return "gemm-scatter";
    case SegmentKind::Moe: return "moe";
    case SegmentKind::ParamGather: return "param-gather";
    case SegmentKind::GradReduce: return "grad-reduce";
    case SegmentKind::PpRecv: return "pp-recv";
    case SegmentKind::PpSend: return "pp-send";
    case SegmentKind::StepEnd: return "step-end";
  }
  return "?";
}

namespace {

using plan::Collective;

// Parameters and gradients travel as 16-bit values whatever the compute dtype (Megatron-Core's
// default bf16 gradient reduction; fp8 training keeps bf16 master copies in the collectives).
constexpr double kParamBytes = 2;
// FlashAttention-2 (Dao 2023, Section 3.1): the backward pass does 2.5x the forward's matmul FLOPs.
constexpr double kAttnBwdFlops = 2.5;

class Builder {
 public:
  Builder(const Model& m, const Layout& l) : m_(m), l_(l) {
    B_ = dtype_bytes(l.dtype);
    t_ = l.tp;
    tokens_ = l.mode == Mode::Decode ? l.micro_batch : static_cast<double>(l.micro_batch) * static_cast<double>(l.seq_len);
    H_ = static_cast<double>(m.heads) / t_;
    if (m.mla) {
      dqk_ = static_cast<double>(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim);
      dv_ = static_cast<double>(m.mla->v_head_dim);
      qkv_n_ = static_cast<double>(attention_params(m) - m.heads * m.mla->v_head_dim * m.hidden) / static_cast<double>(m.hidden) / t_;
    } else {
      dqk_ = dv_ = static_cast<double>(m.head_dim);
      qkv_n_ = static_cast<double>((m.heads + 2 * m.kv_heads) * m.head_dim) / t_;
    }
    act_bytes_ = static_cast<std::uint64_t>(tokens_ * static_cast<double>(m.hidden) * B_);
  }

  Workload build() {
    Workload w{m_, l_, 0, 1.0 / l_.pp, {}, {}};
    w.stage_layers = (m_.layers + l_.pp - 1) / l_.pp;
    head_share_ = w.head_share;
    const bool train = l_.mode == Mode::Train;
    for (int mb = 0; mb < l_.microbatches; ++mb) {
      mb_ = mb;
      backward_ = false;
      if (l_.pp > 1) pp_segment(SegmentKind::PpRecv, "pp.recv");
      for (int layer = 0; layer < w.stage_layers; ++layer) forward_layer(layer);
      push_compute(-1, {gemm("lm_head", tokens_, h(), static_cast<double>(m_.vocab) / t_, head_share_)});
      if (l_.pp > 1) pp_segment(SegmentKind::PpSend, "pp.send");
      if (!train) continue;
      backward_ = true;
      if (l_.pp > 1) pp_segment(SegmentKind::PpRecv, "pp.recv.grad");
      push_compute(-1, {gemm("lm_head.bwd", tokens_, h(), static_cast<double>(m_.vocab) / t_, 2 * head_share_)});
      for (int layer = w.stage_layers - 1; layer >= 0; --layer) {
        if (l_.zero == 3) param_gather(layer, false);
        backward_layer(layer);
        if (l_.zero == 3 || mb == l_.microbatches - 1) grad_reduce(layer);
      }
      if (l_.pp > 1) pp_segment(SegmentKind::PpSend, "pp.send.grad");
    }
    segs_.push_back(Segment{SegmentKind::StepEnd, -1, l_.microbatches - 1, train, false, {}, {}});
    w.segments = std::move(segs_);
    if (l_.pp > 1)
      w.notes.push_back("pipeline: the first stage (" + std::to_string(w.stage_layers) +
                        " layers) is modelled; fill and drain add (pp - 1) micro-batches of its compute; the LM head is spread over the stages");
    if (m_.moe && l_.ep > 1 && l_.tp > 1)
      w.notes.push_back("MoE with --tp > 1 and --ep > 1: experts are not tensor-split; each TP rank dispatches its 1/tp share of the tokens");
    if (m_.moe) w.notes.push_back("MoE routing is taken as balanced: every rank receives tokens x top-k / ep of the expert work");
    return w;
  }

 private:
  double h() const { return static_cast<double>(m_.hidden); }
  double gated() const { return m_.gated_mlp ? 2.0 : 1.0; }

  ComputeOp gemm(std::string name, double m, double k, double n, double mult) const {
    ComputeOp op{std::move(name), OpKind::Gemm, m, k, n, mult, 2 * m * k * n * mult, (m * k + k * n + m * n) * B_ * mult};
    return op;
  }

  ComputeOp attention() const {
    ComputeOp op{backward_ ? "attn.bwd" : "attn", OpKind::Attention, 0, 0, 0, 1, 0, 0};
    const double b = l_.micro_batch, s = static_cast<double>(l_.seq_len);
    if (l_.mode == Mode::Decode) {
      // One new token per sequence against a context of s: QK^T and AV over the KV cache, which is read once.
      op.flops = 2 * b * s * H_ * (dqk_ + dv_);
      double cache = m_.mla ? static_cast<double>(m_.mla->kv_lora_rank + m_.mla->qk_rope_head_dim)
                            : 2.0 * std::max(1.0, static_cast<double>(m_.kv_heads) / t_) * static_cast<double>(m_.head_dim);
      op.bytes = b * s * cache * B_;
    } else {
      // Causal: half of QK^T (2·b·s²·H·d_qk) and AV (2·b·s²·H·d_v). FlashAttention reads Q, K, V and writes O once.
      op.flops = b * s * s * H_ * (dqk_ + dv_);
      double kv = m_.mla ? H_ * (dqk_ + dv_) : 2.0 * std::max(1.0, static_cast<double>(m_.kv_heads) / t_) * static_cast<double>(m_.head_dim);
      op.bytes = tokens_ * (H_ * (dqk_ + dv_) + kv) * B_;
    }
    if (backward_) {
      op.flops *= kAttnBwdFlops;
      op.bytes *= 2;
    }
    // The GEMM of the same FLOPs that coll-overlap run executes for it (exec_shape()): rows are
    // the tokens, the inner size the heads' mean query/value width, the columns what is left.
    op.m = tokens_;
    op.k = std::max(1.0, H_ * (dqk_ + dv_) / 2);
    op.n = std::max(1.0, op.flops / (2 * op.m * op.k));
    return op;
  }

  CommOp tp_comm(const char* name, Collective c) const { return CommOp{name, Group::Tp, c, act_bytes_}; }

  void push(SegmentKind kind, int layer, std::vector<ComputeOp> ops, std::vector<CommOp> comm) {
    segs_.push_back(Segment{kind, layer, mb_, backward_, false, std::move(ops), std::move(comm)});
  }
  void push_compute(int layer, std::vector<ComputeOp> ops) { push(SegmentKind::Compute, layer, std::move(ops), {}); }

  // A GEMM whose input is gathered over TP (with SP) or, without SP, taken as it is.
  void column_gemm(int layer, ComputeOp op) {
    if (t_ > 1 && l_.sp) push(SegmentKind::GatherGemm, layer, {std::move(op)}, {tp_comm("tp.allgather", Collective::AllGather)});
    else push_compute(layer, {std::move(op)});
  }
  // A GEMM whose partial output is reduced over TP: ReduceScatter with SP, AllReduce without.
  void row_gemm(int layer, ComputeOp op) {
    if (t_ > 1)
      push(SegmentKind::GemmScatter, layer, {std::move(op)},
           {l_.sp ? tp_comm("tp.reducescatter", Collective::ReduceScatter) : tp_comm("tp.allreduce", Collective::AllReduce)});
    else push_compute(layer, {std::move(op)});
  }
  // Backward of a column GEMM: with SP, the input is gathered again for wgrad and dgrad's output
  // is reduce-scattered (Megatron-Core / TE); without SP its dgrad output is all-reduced.
  void column_gemm_bwd(int layer, const ComputeOp& f) {
    if (t_ > 1 && l_.sp) {
      push(SegmentKind::GatherGemm, layer, {gemm(f.name + ".wgrad", f.m, f.k, f.n, 1)}, {tp_comm("tp.allgather", Collective::AllGather)});
      push(SegmentKind::GemmScatter, layer, {gemm(f.name + ".dgrad", f.m, f.k, f.n, 1)},
           {tp_comm("tp.reducescatter", Collective::ReduceScatter)});
    } else if (t_ > 1) {
      push(SegmentKind::GemmScatter, layer, {gemm(f.name + ".bwd", f.m, f.k, f.n, 2)}, {tp_comm("tp.allreduce", Collective::AllReduce)});
    } else {
      push_compute(layer, {gemm(f.name + ".bwd", f.m, f.k, f.n, 2)});
    }
  }
  // Backward of a row GEMM: its output gradient is gathered (SP) and feeds dgrad and wgrad.
  void row_gemm_bwd(int layer, const ComputeOp& f) {
    ComputeOp b = gemm(f.name + ".bwd", f.m, f.k, f.n, 2);
    if (t_ > 1 && l_.sp) push(SegmentKind::GatherGemm, layer, {b}, {tp_comm("tp.allgather", Collective::AllGather)});
    else push_compute(layer, {b});
  }

  ComputeOp qkv() const { return gemm("qkv", tokens_, h(), qkv_n_, 1); }
  ComputeOp proj() const { return gemm("proj", tokens_, H_ * dv_, h(), 1); }

  struct Mlp {
    ComputeOp fc1, fc2;
  };
  Mlp mlp(int layer) const {
    if (!m_.is_moe_layer(layer)) {
      double f = static_cast<double>(m_.ffn) / t_;
      return {gemm("fc1", tokens_, h(), gated() * f, 1), gemm("fc2", tokens_, f, h(), 1)};
    }
    // MoE without EP: every expert local, split over TP (Flux's TP MoE); rows = tokens x (top-k + shared).
    double f = static_cast<double>(m_.moe->expert_ffn) / t_;
    double rows = tokens_ * (m_.moe->top_k + m_.moe->shared_experts);
    return {gemm("expert.fc1", rows, h(), gated() * f, 1), gemm("expert.fc2", rows, f, h(), 1)};
  }

  void moe_ep(int layer) {
    const MoeShape& e = *m_.moe;
    double local = tokens_ / t_;
    double rows = local * e.top_k;
    double f = static_cast<double>(e.expert_ffn);
    double mult = backward_ ? 2 : 1;
    std::vector<ComputeOp> ops = {gemm(backward_ ? "expert.fc1.bwd" : "expert.fc1", rows, h(), gated() * f, mult),
                                  gemm(backward_ ? "expert.fc2.bwd" : "expert.fc2", rows, f, h(), mult)};
    if (e.shared_experts > 0) ops.push_back(gemm(backward_ ? "shared.bwd" : "shared", local, h(), (gated() + 1) * f * e.shared_experts, mult));
    auto bytes = static_cast<std::uint64_t>(rows * h() * B_);
    push(SegmentKind::Moe, layer, std::move(ops),
         {CommOp{backward_ ? "ep.combine.bwd" : "ep.dispatch", Group::Ep, Collective::AlltoAll, bytes},
          CommOp{backward_ ? "ep.dispatch.bwd" : "ep.combine", Group::Ep, Collective::AlltoAll, bytes}});
  }

  void forward_layer(int layer) {
    if (l_.zero == 3) param_gather(layer, false);
    if ((l_.zero == 1 || l_.zero == 2) && mb_ == 0) param_gather(layer, true);
    column_gemm(layer, qkv());
    push_compute(layer, {attention()});
    row_gemm(layer, proj());
    if (m_.is_moe_layer(layer) && l_.ep > 1) return moe_ep(layer);
    Mlp f = mlp(layer);
    column_gemm(layer, f.fc1);
    row_gemm(layer, f.fc2);
  }

  void backward_layer(int layer) {
    if (m_.is_moe_layer(layer) && l_.ep > 1) {
      moe_ep(layer);
    } else {
      Mlp f = mlp(layer);
      row_gemm_bwd(layer, f.fc2);
      column_gemm_bwd(layer, f.fc1);
    }
    row_gemm_bwd(layer, proj());
    push_compute(layer, {attention()});
    column_gemm_bwd(layer, qkv());
  }

  // Parameters of a layer held by one rank, split into those every DP rank shares (reduced over
  // DP) and the experts (reduced over the expert-data-parallel group when EP > 1).
  struct Params {
    double dense = 0, expert = 0;
  };
  Params local_params(int layer) const {
    Params p;
    double all = static_cast<double>(layer_params(m_, layer));
    if (m_.is_moe_layer(layer)) {
      double experts = static_cast<double>(m_.moe->experts) * static_cast<double>(mlp_params(m_, m_.moe->expert_ffn));
      p.expert = experts / (l_.ep > 1 ? l_.ep : t_);
      p.dense = (all - experts) / t_;
    } else {
      p.dense = all / t_;
    }
    return p;
  }
  Group expert_group() const { return l_.ep > 1 ? Group::ExpertDp : Group::Dp; }
  int group_n(Group g) const { return g == Group::ExpertDp ? l_.dp / l_.ep : l_.dp; }

  std::vector<CommOp> param_comm(int layer, const char* what, Collective c) const {
    Params p = local_params(layer);
    std::vector<CommOp> out;
    if (l_.dp > 1) out.push_back(CommOp{std::string("dp.") + what, Group::Dp, c, static_cast<std::uint64_t>(p.dense * kParamBytes)});
    if (p.expert > 0 && group_n(expert_group()) > 1) {
      if (expert_group() == Group::Dp) out.back().bytes += static_cast<std::uint64_t>(p.expert * kParamBytes);
      else out.push_back(CommOp{std::string("expert-dp.") + what, Group::ExpertDp, c, static_cast<std::uint64_t>(p.expert * kParamBytes)});
    }
    return out;
  }

  void param_gather(int layer, bool zero) {
    auto comm = param_comm(layer, "params", Collective::AllGather);
    if (comm.empty()) return;
    segs_.push_back(Segment{SegmentKind::ParamGather, layer, mb_, backward_, zero, {}, std::move(comm)});
  }
  void grad_reduce(int layer) {
    auto comm = param_comm(layer, "grads", l_.zero == 0 ? Collective::AllReduce : Collective::ReduceScatter);
    if (comm.empty()) return;
    push(SegmentKind::GradReduce, layer, {}, std::move(comm));
  }
  void pp_segment(SegmentKind kind, const char* name) {
    // Point-to-point to the next stage: a Broadcast over the two ranks. With SP each TP rank sends its shard.
    auto bytes = static_cast<std::uint64_t>(static_cast<double>(act_bytes_) / (l_.sp ? t_ : 1));
    push(kind, -1, {}, {CommOp{name, Group::Pp, Collective::Broadcast, bytes}});
  }

  const Model& m_;
  const Layout& l_;
  double B_ = 2, t_ = 1, tokens_ = 0, H_ = 0, dqk_ = 0, dv_ = 0, qkv_n_ = 0, head_share_ = 1;
  std::uint64_t act_bytes_ = 0;
  int mb_ = 0;
  bool backward_ = false;
  std::vector<Segment> segs_;
};

}  // namespace

Workload build_workload(const Model& m, const Layout& l) { return Builder(m, l).build(); }

}  // namespace collkit::overlap
