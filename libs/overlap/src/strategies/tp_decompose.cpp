// Tensor-parallel decomposition (Megatron/TE's userbuffers pipeline and ring exchange, PyTorch
// Async-TP, Flux, Domino): a GEMM fed by a TP AllGather, or feeding a TP ReduceScatter or
// AllReduce, is split into `chunks` along its rows; chunk i's collective runs while another
// chunk's GEMM computes. The first gather and the last scatter stay exposed, and every chunk pays
// a kernel launch and rereads the weights, which is what makes too many chunks lose. After a
// scattered GEMM the chunks carry on into the next op (Domino's row split): chunk i of it waits
// for chunk i's collective only.

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
    const double f = 1.0 / chunks;
    // Rows keep flowing chunk by chunk past a scattered GEMM: chunk i of the next op waits only
    // for chunk i's collective (Domino's row split), so the last chunks' AllReduce hides behind
    // the next op instead of blocking it.
    const bool carried = e.chunk_gate_count() == static_cast<std::size_t>(chunks);
    if (s.kind == SegmentKind::Compute) {
      if (!carried) return false;
      std::vector<int> gate = e.take_chunk_gates();
      for (int i = 0; i < chunks; ++i)
        for (std::size_t j = 0; j < s.compute.size(); ++j)
          e.compute(s, s.compute[j], f, i, j == 0 ? std::vector<int>{gate[static_cast<std::size_t>(i)]} : std::vector<int>{});
      return true;
    }
    bool tp = !s.comm.empty() && s.comm[0].group == Group::Tp;
    if (!tp || (s.kind != SegmentKind::GatherGemm && s.kind != SegmentKind::GemmScatter)) return false;
    if (s.kind == SegmentKind::GatherGemm) {
      std::vector<int> gate = carried ? e.take_chunk_gates() : std::vector<int>{};
      std::vector<int> input = e.ready();
      for (int i = 0; i < chunks; ++i) {
        std::vector<int> deps = input;
        if (carried) deps.push_back(gate[static_cast<std::size_t>(i)]);
        int ag = e.comm_async(s, s.comm[0], deps, f, i);
        e.compute(s, s.compute[0], f, i, {ag});
      }
    } else {
      std::vector<int> scattered;
      for (int i = 0; i < chunks; ++i) {
        int gemm = e.compute(s, s.compute[0], f, i);
        scattered.push_back(e.comm_async(s, s.comm[0], {gemm}, f, i));
      }
      e.set_chunk_gates(std::move(scattered));
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
