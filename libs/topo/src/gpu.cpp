#include "collkit/topo/gpu.h"

#include <cstdlib>
#include <string>

#include "collkit/core/error.h"

namespace collkit::topo {

namespace {

double positive_attr(const Vertex& v, const std::string& key) {
  auto it = v.attrs.find(key);
  if (it == v.attrs.end())
    throw InputError(v.id + " (" + v.label + ") has no \"" + key + "\"; add it from the GPU's datasheet (docs/presets.md)");
  char* end = nullptr;
  double x = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != '\0' || !(x > 0))
    throw InputError(v.id + ": attribute \"" + key + "\" must be a positive number, got \"" + it->second + "\"");
  return x;
}

}  // namespace

GpuPeak gpu_peak(const Topology& t, Rank r, std::string_view dtype) {
  if (r >= t.num_ranks()) throw InputError("rank " + std::to_string(r) + " is not in " + t.name);
  const Vertex& v = t.vertex(t.rank_vertex(r));
  if (v.kind != VertexKind::Gpu) throw InputError("rank " + std::to_string(r) + " of " + t.name + " is on " + v.id + ", not a GPU");
  GpuPeak p;
  p.label = v.label;
  p.tflops = positive_attr(v, "peak_" + std::string(dtype) + "_tflops");
  p.mem_bw_gbps = positive_attr(v, "mem_bw_gbps");
  return p;
}

}  // namespace collkit::topo
