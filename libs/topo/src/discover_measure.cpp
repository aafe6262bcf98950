// What discovery measures because no source states it: the copy bandwidth of a CPU vertex, which
// hwloc takes from ACPI HMAT and most VMs and containers do not have. Without it, every transfer
// between ranks on one CPU would be predicted free (docs/discovery.md, "Measured figures").

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

#include "discover_internal.h"

namespace collkit::topo::detail {

double measure_copy_gbps(std::size_t bytes, int reps) {
  if (bytes == 0 || reps < 1) return 0;
  auto src = std::make_unique_for_overwrite<unsigned char[]>(bytes);
  auto dst = std::make_unique_for_overwrite<unsigned char[]>(bytes);
  // Touch every page first, so that the timed copies measure memory, not page faults.
  std::memset(src.get(), 1, bytes);
  std::memset(dst.get(), 0, bytes);
  double best_s = 0;
  for (int i = 0; i < reps; ++i) {
    src[static_cast<std::size_t>(i) % bytes] = static_cast<unsigned char>(i);
    auto start = std::chrono::steady_clock::now();
    std::memcpy(dst.get(), src.get(), bytes);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The copy must not be optimised away: its result is read.
    if (dst[static_cast<std::size_t>(i) % bytes] != static_cast<unsigned char>(i)) return 0;
    if (s > 0 && (best_s == 0 || s < best_s)) best_s = s;
  }
  return best_s > 0 ? static_cast<double>(bytes) / best_s / 1e9 : 0;
}

void fill_copy_bandwidth(Topology& t, double copy_gbps) {
  bool missing = false;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    missing = missing || (t.vertex(v).kind == VertexKind::Cpu && t.vertex(v).local_bw_gbps <= 0);
  if (!missing) return;
  constexpr std::size_t kBytes = std::size_t{128} << 20;  // beyond any CPU's last-level cache
  constexpr int kReps = 5;
  bool measured = copy_gbps <= 0;
  if (measured) {
    // Two significant digits: the figure varies by a few percent between runs, and it enters the
    // topology's fingerprint, which should not change with every discovery of the same host.
    copy_gbps = measure_copy_gbps(kBytes, kReps);
    if (copy_gbps > 0) {
      double scale = std::pow(10.0, std::floor(std::log10(copy_gbps)) - 1);
      copy_gbps = std::round(copy_gbps / scale) * scale;
    }
  }
  if (copy_gbps <= 0) return;
  int filled = 0;
  for (VertexId v = 0; v < t.num_vertices(); ++v) {
    Vertex& x = t.mutable_vertex(v);
    if (x.kind != VertexKind::Cpu || x.local_bw_gbps > 0) continue;
    x.local_bw_gbps = copy_gbps;
    ++filled;
  }
  std::erase_if(t.notes, [](const std::string& n) { return n.rfind("hwloc gives no memory bandwidth", 0) == 0; });
  t.notes.push_back(fmt::format("hwloc gives no memory bandwidth (no ACPI HMAT): copy bandwidth within {} {} {:g} GB/s{}",
                                filled == 1 ? "the CPU vertex" : fmt::format("{} CPU vertices", filled),
                                measured ? "measured here:" : "set to", copy_gbps,
                                measured ? " (memcpy of 128 MiB by one thread, best of 5)" : ""));
}

}  // namespace collkit::topo::detail
