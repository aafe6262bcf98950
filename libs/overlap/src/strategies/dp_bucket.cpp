// DP / ZeRO-1/2 gradient reduction overlapped with the backward pass in buckets (PyTorch DDP's
// bucket_cap_mb, Megatron-Core's overlap_grad_reduce): a bucket's collective starts as soon as the
// layers that fill it are done, on the DP stream, while the backward pass goes on. Under ZeRO-1/2
// the updated parameters are gathered ahead of the forward pass, layer by layer (Megatron-Core's
// overlap_param_gather): all gathers are issued at the step start and each layer waits for its own.

#include "strategy.h"

namespace collkit::overlap {

namespace {

class DpBucket final : public Strategy {
 public:
  std::string_view name() const override { return "dp-bucket"; }
  std::string_view knob() const override { return "bucket_mb"; }
  std::string_view summary() const override { return "gradient reduction in buckets during the backward pass (DDP, Megatron overlap_grad_reduce)"; }

  bool applies(const Workload& w, std::string* why) const override {
    if (w.layout.mode != Mode::Train) return *why = "inference has no gradients", false;
    if (w.layout.zero == 3) return *why = "--zero 3 reduces gradients per layer (fsdp-prefetch)", false;
    for (const auto& s : w.segments)
      if (s.kind == SegmentKind::GradReduce) return true;
    return *why = "no data-parallel group (--dp 1)", false;
  }

  std::vector<int> candidates(const Workload&) const override {
    // 25 MiB is PyTorch DDP's default bucket_cap_mb; Megatron-Core's default is 40M elements (80 MB in bf16).
    return {25, 80, 200, 1};
  }

  bool emit(const Segment& s, int knob, Emitter& e) const override {
    if (s.kind == SegmentKind::ParamGather && s.zero_params) {
      for (const auto& c : s.comm) e.gate(e.comm_async(s, c, {}));
      return true;
    }
    if (s.kind != SegmentKind::GradReduce) return false;
    for (const auto& c : s.comm) e.pending().bytes[{c.group, c.coll}] += c.bytes;
    const auto bucket = static_cast<std::uint64_t>(knob) << 20;
    if (e.pending().total() >= bucket)
      for (int t : e.flush_pending(s, {e.tail()})) e.in_flight(t);
    return true;
  }
};

}  // namespace

const Strategy& dp_bucket_strategy() {
  static const DpBucket s;
  return s;
}

}  // namespace collkit::overlap
