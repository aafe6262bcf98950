// MoE pipelining (Tutel, DeepSpeed-MoE, Comet, DeepSeek's two-micro-batch overlap): the tokens of
// an MoE layer are split into `chunks`; chunk i+1's AlltoAll dispatch runs while chunk i's experts
// compute, and chunk i's combine runs while chunk i+1 computes.

#include "strategy.h"

namespace collkit::overlap {

namespace {

class MoePipeline final : public Strategy {
 public:
  std::string_view name() const override { return "moe-pipeline"; }
  std::string_view knob() const override { return "chunks"; }
  std::string_view summary() const override { return "split MoE tokens into chunks: AlltoAll dispatch/combine pipelined with expert GEMMs"; }

  bool applies(const Workload& w, std::string* why) const override {
    if (!w.model.moe) return *why = "the model has no MoE layer", false;
    if (w.layout.ep == 1) return *why = "no expert parallelism (--ep 1)", false;
    return true;
  }

  std::vector<int> candidates(const Workload&) const override { return {2, 4, 8}; }

  bool emit(const Segment& s, int chunks, Emitter& e) const override {
    if (s.kind != SegmentKind::Moe) return false;
    const double f = 1.0 / chunks;
    std::vector<int> input = e.ready();
    // Issue order on the EP stream: d0, d1, c0, d2, c1, ... so that a combine never waits
    // behind dispatches it does not need.
    std::vector<int> dispatch(static_cast<std::size_t>(chunks), -1);
    dispatch[0] = e.comm_async(s, s.comm[0], input, f, 0);
    int last = -1;
    for (int i = 0; i < chunks; ++i) {
      if (i + 1 < chunks) dispatch[static_cast<std::size_t>(i) + 1] = e.comm_async(s, s.comm[0], input, f, i + 1);
      int done = -1;
      for (std::size_t j = 0; j < s.compute.size(); ++j)
        done = e.compute(s, s.compute[j], f, i, j == 0 ? std::vector<int>{dispatch[static_cast<std::size_t>(i)]} : std::vector<int>{});
      last = e.comm_async(s, s.comm[1], {done}, f, i);
    }
    e.gate(last);
    return true;
  }
};

}  // namespace

const Strategy& moe_pipeline_strategy() {
  static const MoePipeline s;
  return s;
}

}  // namespace collkit::overlap
