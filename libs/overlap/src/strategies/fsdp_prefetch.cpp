// FSDP / ZeRO-3: the parameters of the layer `depth` ahead are gathered while this layer computes
// (PyTorch FSDP's forward_prefetch / backward_prefetch, limit_all_gathers), and each layer's
// gradient ReduceScatter runs on the DP stream while the backward pass goes on.

#include "strategy.h"

namespace collkit::overlap {

namespace {

class FsdpPrefetch final : public Strategy {
 public:
  std::string_view name() const override { return "fsdp-prefetch"; }
  std::string_view knob() const override { return "depth"; }
  std::string_view summary() const override { return "gather the next layers' parameters during this layer (FSDP prefetch), reduce-scatter gradients behind"; }

  bool applies(const Workload& w, std::string* why) const override {
    if (w.layout.zero != 3) return *why = "needs --zero 3 (FSDP)", false;
    for (const auto& s : w.segments)
      if (s.kind == SegmentKind::ParamGather) return true;
    return *why = "no data-parallel group (--dp 1)", false;
  }

  std::vector<int> candidates(const Workload&) const override { return {1, 2}; }

  bool emit(const Segment& s, int depth, Emitter& e) const override {
    if (s.kind == SegmentKind::GradReduce) {
      // Each layer's reduction pays its share of the step's wait for the slowest rank (Emitter::flush_pending).
      for (const auto& c : s.comm) e.in_flight(e.comm_async(s, c, {e.tail()}, 1, -1, e.gradient_share(c.group, c.coll, c.bytes)));
      return true;
    }
    if (s.kind != SegmentKind::ParamGather || s.zero_params) return false;
    // marks[j] = the tail when the j-th gather was met; the gather for this layer may start once
    // the program has reached the point of the gather `depth` before it.
    auto& marks = e.marks();
    marks.push_back(e.tail());
    std::size_t j = marks.size() - 1;
    std::vector<int> deps;
    if (j >= static_cast<std::size_t>(depth) && marks[j - static_cast<std::size_t>(depth)] >= 0)
      deps.push_back(marks[j - static_cast<std::size_t>(depth)]);
    for (const auto& c : s.comm) e.gate(e.comm_async(s, c, deps));
    return true;
  }
};

}  // namespace

const Strategy& fsdp_prefetch_strategy() {
  static const FsdpPrefetch s;
  return s;
}

}  // namespace collkit::overlap
