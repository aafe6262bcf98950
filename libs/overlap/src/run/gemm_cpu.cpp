// coll-overlap run's CPU GEMMs (gemm.h): OpenBLAS, one thread per call. Without CUDA in the build,
// --device gpu is refused here with the reason.

#include <cblas.h>

#include <algorithm>
#include <vector>

#include "collkit/core/error.h"
#include "gemm.h"

namespace collkit::overlap::detail {

namespace {

class CpuGemm final : public GemmEngine {
 public:
  CpuGemm() { openblas_set_num_threads(1); }
  void reserve(std::size_t am, std::size_t bm, std::size_t cm) override {
    // Small values: the products stay far from overflow whatever the inner size.
    if (a_.size() < am) a_.assign(am, 1e-3f);
    if (b_.size() < bm) b_.assign(bm, 1e-3f);
    if (c_.size() < cm) c_.assign(cm, 0.0f);
  }
  void run(const GemmShape& s) override {
    for (int r = 0; r < s.reps; ++r)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), 1.0f,
                  a_.data(), static_cast<int>(s.k), b_.data(), static_cast<int>(s.n), 0.0f, c_.data(), static_cast<int>(s.n));
  }
  std::string describe() const override { return "OpenBLAS sgemm, one thread"; }

 private:
  std::vector<float> a_, b_, c_;
};

}  // namespace

std::unique_ptr<GemmEngine> make_cpu_gemm() { return std::make_unique<CpuGemm>(); }

#ifndef COLLKIT_OVERLAP_CUDA
std::unique_ptr<GemmEngine> make_gpu_gemm(int) {
  throw UnsupportedError("--device gpu: this build of collkit has no CUDA (configure with CUDA at /usr/local/cuda or CUDAToolkit_ROOT)");
}
#endif

}  // namespace collkit::overlap::detail
