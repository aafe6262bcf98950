#pragma once
// A GPU's datasheet peaks, as node presets record them in vertex attrs: "peak_<dtype>_tflops"
// (dense tensor-core throughput) and "mem_bw_gbps" (HBM/GDDR bandwidth). docs/presets.md lists them.

#include <string>
#include <string_view>

#include "collkit/topo/topology.h"

namespace collkit::topo {

struct GpuPeak {
  std::string label;        ///< the vertex label, e.g. "NVIDIA H100 80GB HBM3 (SXM5)"
  double tflops = 0;        ///< dense peak for the datatype, 10^12 FLOP/s
  double mem_bw_gbps = 0;   ///< memory bandwidth, GB/s
};

/// The peaks of rank r's GPU for `dtype` ("bf16", "fp16", "fp8"). Throws InputError naming the
/// vertex and the missing attribute when the rank is not on a GPU or the figure is absent
/// (a V100 has no bf16: `node0/gpu0 (Tesla V100-SXM2-32GB) has no "peak_bf16_tflops"`).
GpuPeak gpu_peak(const Topology& t, Rank r, std::string_view dtype);

}  // namespace collkit::topo
