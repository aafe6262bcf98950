#pragma once
// coll-run calibrate (docs/adapt.md): measure what the simulator's model needs on the running job's
// ranks (the time of one message between each class of rank pairs over sizes, the same with every
// pair of a class at once, the local reduction rate), fit the model's parameters to it and write
// them into the topology, with the fit's residuals.

#include <cstdint>
#include <string>
#include <vector>

#include "collkit/exec/world.h"
#include "collkit/topo/topology.h"

namespace collkit::exec {

/// One timing: a message of `bytes` took `time_us` (one way).
struct Sample {
  std::uint64_t bytes = 0;
  double time_us = 0;
};

/// t(bytes) = fixed_us + bytes / (gbps * 1e3), fitted by least squares on relative errors (small
/// and large messages count alike); residual_percent is the largest |relative error| of a sample.
struct LineFit {
  double fixed_us = 0;
  double gbps = 0;
  double residual_percent = 0;
};
/// InputError with fewer than two samples of different sizes; a slope that is not positive
/// (times that do not grow with size) gives gbps 0.
LineFit fit_line(const std::vector<Sample>& samples);

/// The rank pairs of one class: ranks sharing one vertex, or ranks whose route has the same
/// bottleneck link type and hop count.
struct PairClassMeasurement {
  std::string name;
  int rank_a = 0, rank_b = 0;      ///< the pair measured alone
  bool shared_vertex = false;      ///< both on one vertex (a copy through memory)
  topo::VertexId vertex = 0;       ///< that vertex when shared
  std::vector<Sample> alone;       ///< ping-pong, one-way times
  std::vector<Sample> concurrent;  ///< every pair of the class at once: one message's time
  int concurrent_pairs = 0;        ///< the pairs that sent at once
  int attempts = 1;                ///< test runs in all: one more for each whose times did not grow with size
};

/// A plan coll-run's harness ran (mpi backend, out of place, float32 sum) and its measured time:
/// what the model's parameters are finally fitted to.
struct PlanTiming {
  std::string plan_json;  ///< collkit.plan/1
  std::string what;       ///< "allreduce ring 1M"
  double measured_us = 0;
};

struct Measurements {
  std::vector<PairClassMeasurement> classes;
  std::vector<PlanTiming> plans;
  double reduce_gbps = 0;  ///< float32 sum of two buffers into a third, every rank at once, bytes of one input per second
  std::string source;      ///< backend, library, ranks, hosts, date
  /// The smallest last-level cache any rank's CPU has (bytes, from sysfs; 0: not known). With
  /// plans timed past it, the fit finds how much slower the bytes beyond it move.
  std::uint64_t cache_bytes = 0;
  /// The fewest cores any rank may run on (its CPU affinity; 0: not known): with more ranks than
  /// cores on a host, the ranks' reductions share them (Calibration::cores).
  int cores = 0;
  /// A core's own (level-2) cache in bytes; 0: none. measure() leaves it 0 (docs/adapt.md: on the
  /// recorded idle run its factor went to its limit); set, the fit finds how much faster the
  /// reductions whose operands fit in it run.
  std::uint64_t core_cache_bytes = 0;
  /// Other work found on the hosts while measuring (their 1-minute load average past what this
  /// job's own ranks put there), one line; empty when the hosts were otherwise idle.
  std::string busy;
};

/// This CPU's last-level cache in bytes (the highest cache level sysfs lists for cpu0), 0 when
/// sysfs does not say.
std::uint64_t last_level_cache_bytes();
/// This CPU's level-2 (data or unified) cache in bytes, a core's own on the CPUs this runs on; 0
/// when sysfs does not say.
std::uint64_t core_cache_bytes();

struct CalibrateOptions {
  bool quick = false;  ///< fewer sizes and repetitions: seconds instead of a minute
  double timeout_s = 60;
};

/// The job's topology on every rank: `topo_file` when given, else the cluster discovered under the
/// launcher (rank 0 merges; every rank gets its JSON).
topo::Topology job_topology(const World& world, const std::string& topo_file, double timeout_s);

/// Runs the tests on the job's ranks over MPI (every rank calls it). The pairs are classified on
/// `topo`, whose ranks are the job's (rank i = topology rank i). Rank 0's result is complete.
Measurements measure(World& world, const topo::Topology& topo, const CalibrateOptions& opt);

/// The topology with the fit written in, in two steps. First the tests' own fits: a shared-memory
/// class sets its vertex's local_bw_gbps (what its pairs achieved at once, the resource the
/// simulator shares among them), a routed class the bandwidth and latency of its bottleneck links;
/// per_message_us is the shared-memory classes' fixed time (the software's; a copy has no wire
/// latency), reduce_gbps the measured rate. Then, when plans were timed, three factors on those
/// (the bandwidths, the reduction rate, the per-message time) are fitted so that the simulator's
/// predictions of the plans match their measured times (least squares on log(predicted/measured)):
/// what a collective does beyond the tests (the runtime's staging copies, its scheduling) enters
/// the model. The report lists every class, its fit and residual, and the plans' errors before and
/// after, line by line.
topo::Topology apply_calibration(const topo::Topology& topo, const Measurements& m, std::string* report);

}  // namespace collkit::exec
