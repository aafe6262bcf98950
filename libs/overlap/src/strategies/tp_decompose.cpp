// Tensor-parallel decomposition (Megatron/TE's userbuffers pipeline and ring exchange, PyTorch
// Async-TP, Flux, Domino): a GEMM fed by a TP AllGather, or feeding a TP ReduceScatter or
// AllReduce, is split into `chunks` along its rows; chunk i's collective runs while another
// chunk's GEMM computes. The first gather and the last scatter stay exposed, and every chunk pays
// a kernel launch and rereads the weights, which is what makes too many chunks lose.

#include <algorithm>

#include "strategy.h"

namespace collkit::overlap {

namespace {

class TpDecompose final : public Strategy {
 public:
  std::string_view name() const override { return "tp-decompose"; }
  std::string_view knob() const override { return "chunks"; }
  std::string_view summary() const override { return "split TP GEMMs into chunks pipelined with their AllGather / ReduceScatter (Async-TP, Flux, Domino)"; }

  bool applies(const Workload& w, std::string* why) const override {
    if (w.layout.tp == 1) return *why = "no tensor parallelism (--tp 1)", false;
    return true;
  }

  std::vector<int> candidates(const Workload& w) const override {
    // TE's ring exchange uses tp splits, its pipeline method 4 (TE initialize_ub defaults).
    std::vector<int> c = {w.layout.tp, 2, 4, 8, 16};
    std::vector<int> out;
    for (int k : c)
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    return out;
  }

  bool emit(const Segment& s, int chunks, Emitter& e) const override {
    bool tp = !s.comm.empty() && s.comm[0].group == Group::Tp;
    if (!tp || (s.kind != SegmentKind::GatherGemm && s.kind != SegmentKind::GemmScatter)) return false;
    const double f = 1.0 / chunks;
    if (s.kind == SegmentKind::GatherGemm) {
      std::vector<int> input = e.ready();
      for (int i = 0; i < chunks; ++i) {
        int ag = e.comm_async(s, s.comm[0], input, f, i);
        e.compute(s, s.compute[0], f, i, {ag});
      }
    } else {
      int last = -1;
      for (int i = 0; i < chunks; ++i) {
        int gemm = e.compute(s, s.compute[0], f, i);
        last = e.comm_async(s, s.comm[0], {gemm}, f, i);
      }
      e.gate(last);  // the stream runs the chunks in order: the last one ending means all did
    }
    return true;
  }
};

}  // namespace

const Strategy& tp_decompose_strategy() {
  static const TpDecompose s;
  return s;
}

}  // namespace collkit::overlap
