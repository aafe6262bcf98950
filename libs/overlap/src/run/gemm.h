#pragma once
// The compute side of coll-overlap run (execute.h): one GEMM engine per rank, chosen by --device.
// cpu: single-precision GEMMs through OpenBLAS, one thread per call (the ranks and their
// communication threads share the host's cores). gpu: bfloat16 GEMMs with float accumulation
// through cuBLAS on the rank's GPU (the local rank's, mod the GPUs it sees: the device the nccl
// backend takes), on a stream of their own; run() returns when the GEMMs have finished, so the
// executor's host clock times them as it times the CPU's.

#include <cstddef>
#include <memory>
#include <string>

#include "collkit/overlap/calibration.h"

namespace collkit::overlap::detail {

class GemmEngine {
 public:
  virtual ~GemmEngine() = default;
  /// Operands for every shape of at most these element counts (A: m x k, B: k x n, C: m x n).
  virtual void reserve(std::size_t a, std::size_t b, std::size_t c) = 0;
  /// s.reps GEMMs of s.m x s.k by s.k x s.n, finished on return.
  virtual void run(const GemmShape& s) = 0;
  /// What does the work, for reports: "OpenBLAS ..." or "cuBLAS ... on GPU N (name)".
  virtual std::string describe() const = 0;
};

std::unique_ptr<GemmEngine> make_cpu_gemm();
/// Throws UnsupportedError with the reason when this build has no CUDA or the rank sees no GPU.
std::unique_ptr<GemmEngine> make_gpu_gemm(int local_rank);

}  // namespace collkit::overlap::detail
