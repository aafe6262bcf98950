// The compute roofline with per-kind efficiency, worked out by hand.

#include <doctest/doctest.h>

#include "collkit/core/error.h"
#include "collkit/overlap/cost.h"

using namespace collkit::overlap;

namespace {
ComputeModel model() {
  collkit::topo::GpuPeak p{"test GPU", 100.0, 1000.0};  // 100 TFLOP/s, 1000 GB/s
  Efficiency e;
  e.gemm = 0.5, e.attention = 0.25, e.memory = 0.5, e.kernel_us = 1.0;
  return ComputeModel(p, e, 2);
}
ComputeOp gemm(double m, double k, double n) { return ComputeOp{"g", OpKind::Gemm, m, k, n, 1, 2 * m * k * n, (m * k + k * n + m * n) * 2}; }
}  // namespace

TEST_CASE("cost: a large GEMM is compute-bound at peak x efficiency, plus the kernel cost") {
  // 2·4096³ FLOPs at 50 TFLOP/s = 2749.8 us; its 100.7 MB at 500 GB/s would take 201 us.
  CHECK(model().time_us(gemm(4096, 4096, 4096)) == doctest::Approx(2.0 * 4096 * 4096 * 4096 / 50e12 * 1e6 + 1.0));
}

TEST_CASE("cost: a one-row GEMM is memory-bound, and each chunk reads the whole weight again") {
  ComputeModel cm = model();
  ComputeOp g = gemm(2, 1000, 1000);  // (2000 + 1e6 + 2000) x 2 bytes at 500 GB/s
  CHECK(cm.time_us(g) == doctest::Approx(2.008e6 / 500e9 * 1e6 + 1.0));
  // Half the rows: (1000 + 1e6 + 1000) x 2 bytes, barely less; two halves cost nearly twice one whole.
  CHECK(cm.time_us(g, 0.5) == doctest::Approx(2.004e6 / 500e9 * 1e6 + 1.0));
}

TEST_CASE("cost: attention uses its own efficiency") {
  ComputeOp a{"attn", OpKind::Attention, 0, 0, 0, 1, 1e12, 1e6};
  CHECK(model().time_us(a) == doctest::Approx(1e12 / 25e12 * 1e6 + 1.0));
  CHECK(model().time_us(a, 0.5) == doctest::Approx(0.5e12 / 25e12 * 1e6 + 1.0));
}

TEST_CASE("cost: efficiencies above 1 or not above 0 are refused") {
  Efficiency e;
  e.gemm = 1.5;
  CHECK_THROWS_WITH_AS(ComputeModel({"x", 1, 1}, e, 2), "GEMM efficiency must be in (0, 1], got 1.5", collkit::InputError);
}
