#pragma once
// What coll-overlap run needs beside the model: the shrunken model and layout a step of which
// fits a small machine (--scale), the GEMM a compute op runs as, the CPU's nominal peak, and the
// calibration file (collkit.overlap-calibration/1, docs/overlap.md) that coll-overlap calibrate
// writes and --calibration feeds back to the model.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collkit/overlap/layout.h"
#include "collkit/overlap/model.h"
#include "collkit/overlap/workload.h"
#include "collkit/plan/collective.h"
#include "collkit/topo/gpu.h"

namespace collkit::overlap {

/// The model with hidden size, head width, FFN and expert widths, vocabulary and layers divided by
/// `factor` (at least 1 each; head counts and experts kept, so every layout that divides the heads
/// still does). InputError for a factor below 1.
Model scale_model(const Model& m, int factor);
/// The layout with the sequence length divided by `factor` (at least 1).
Layout scale_layout(const Layout& l, int factor);

/// A GEMM as run: `reps` products of (m x k) by (k x n), single precision.
struct GemmShape {
  std::int64_t m = 1, k = 1, n = 1;
  int reps = 1;
  bool operator<(const GemmShape& o) const;
  bool operator==(const GemmShape& o) const = default;
};
/// The GEMM `fraction` of the op's rows runs as: its own shape for GEMMs; for attention, the GEMM
/// of the same FLOPs workload.cpp states (tokens x heads' width x the rest). `mult` becomes
/// repetitions (rounded, at least 1) with the rows scaled by what rounding left.
GemmShape exec_shape(const ComputeOp& op, double fraction);

/// This host's nominal single-precision peak per rank, from /proc/cpuinfo: cores / `ranks_on_host`
/// x clock x FLOPs per cycle (2 FMA units x 2 x the vector lanes: 16 with AVX-512, 8 with AVX2);
/// memory bandwidth `mem_gbps` per rank (no datasheet to read it from). InputError when the clock
/// cannot be read.
topo::GpuPeak host_peak(int ranks_on_host, double mem_gbps);

inline constexpr int kCalibrationSchemaMajor = 1;

/// One GEMM shape's measured time per call (all ranks computing at once, as in a step).
struct GemmSample {
  GemmShape shape;
  double time_us = 0;
};
/// One collective's measured time alone, on one kind of group: a TP and a DP collective of the
/// same size run on different communicators (and, on TP x DP, different ranks and links), so each
/// is a sample of its own. `group` unset: a file from before groups were recorded, any group's.
struct CommSample {
  plan::Collective coll = plan::Collective::AllReduce;
  int nranks = 0;
  std::uint64_t bytes = 0;
  double time_us = 0;
  std::optional<Group> group;
};

struct Calibration {
  std::string source;  ///< host, ranks, library, date
  int ranks = 0;
  std::vector<GemmSample> gemms;
  std::vector<CommSample> collectives;
  double compute_slowdown = 0;  ///< compute time under communication / alone - 1 (the model's contention)
  double comm_slowdown = 0;     ///< communication time under compute / alone - 1
  /// What a collective costs in a serial step beyond its time alone, each: the wait for the
  /// slowest rank and the thread hand-offs (the `none` schedule's exposed time - its collectives
  /// alone, over their count). Added to every measured collective.
  double sync_us = 0;
  /// What each further chunk of a collective cut into chunks costs beyond its share of the bytes
  /// and of sync_us: another meeting of the ranks. Measured from a chunked schedule run as run runs
  /// it (its step beyond compute and communication alone, against the serial one's, per further
  /// collective): about 0 where each rank has a core of its own, but where ranks outnumber the
  /// cores a rank waiting at each meeting busy-polls on a core a computing peer needs, and the
  /// peer's compute slows by it. 0 in files from before it was measured.
  double chunk_sync_us = 0;
  /// The level of the samples in a step. The GEMM samples are medians of calls measured in 0.3 s
  /// and the collective samples medians of runs back to back: their relative costs (shape against
  /// shape, size against size) are what the model needs from them, but their level meets the
  /// host's load of that moment (on the shared 2-core host a calibration's GEMMs once ran 25%
  /// slower than the same GEMMs in the runs a second later), and a step's total is a sum, which
  /// the occasional slow collective raises above the sum of medians. So the serial schedule run as
  /// run runs it (its compute alone and collectives alone, the median of --iters steps) fixes the
  /// level: compute_scale = its compute alone / the same tasks' time from the GEMM samples,
  /// comm_scale likewise for its collectives. gemm_us() and comm_us() return the samples' figures
  /// times these. 1 in files from before they were measured.
  double compute_scale = 1;
  double comm_scale = 1;

  /// The time of a GEMM shape: the sample of that shape, else the nearest sample (by log-distance
  /// of m, k, n) at its FLOP rate; nullopt without GEMM samples.
  std::optional<double> gemm_us(const GemmShape& s) const;
  /// A collective's time on a group of kind `g`: the sample of that size, else a line
  /// t = a + bytes / bw through the samples of that collective and rank count (proportional with
  /// one sample); nullopt without. Only the samples of group `g` count where there are any; else
  /// those of any group with that rank count (group-less files, a kind never measured).
  std::optional<double> comm_us(plan::Collective c, Group g, int nranks, std::uint64_t bytes) const;
  /// The same over every group's samples (group-less).
  std::optional<double> comm_us(plan::Collective c, int nranks, std::uint64_t bytes) const;
};

/// Calibration::chunk_sync_us from a serial and a chunked schedule measured as run measures them.
/// Each one's excess is step - compute alone - communication alone. The serial one's, over its
/// `serial_collectives`, is what a whole collective costs a step; the chunked schedule runs
/// `whole` collectives or first chunks (each such a cost) and `further` chunks beyond the first of
/// each: what its excess holds beyond the whole ones' cost, per further chunk, at least 0. 0 when
/// there are no further chunks or no serial collectives.
double chunk_sync(double serial_excess_us, int serial_collectives, double chunked_excess_us, int whole, int further);

/// A level (Calibration::compute_scale, comm_scale): `measured_us` / `from_samples_us`; 1 when
/// either is not positive (nothing of that kind in the serial schedule).
double level(double measured_us, double from_samples_us);

std::string to_json(const Calibration& c);
/// Parses collkit.overlap-calibration/1; InputError "<file>: <pointer>: <what>".
Calibration parse_calibration(const std::string& text, const std::string& file);
Calibration load_calibration(const std::string& file);

}  // namespace collkit::overlap
