#pragma once
// Discovery of the local host (hwloc, CUDA + NVML, ibverbs) and, under mpirun/srun, of the
// whole cluster: every rank discovers its host and rank 0 merges them.

#include <functional>
#include <string>
#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::topo {

struct DiscoverOptions {
  /// Ranks on this host when not under a launcher: 0 = one per GPU, or one per core without GPUs.
  int ranks_per_host = 0;
  /// Fabric spec joining hosts when several are found (see synth.h add_fabric); empty = none.
  std::string fabric;
  /// Measure what no source states (a CPU vertex's copy bandwidth when hwloc has none), taking a
  /// fraction of a second; under a launcher only a host's local rank 0 measures.
  bool measure = true;
};

/// The local host as one topology: CPUs/NUMA nodes, PCI tree, GPUs with NVLinks, RDMA NICs.
/// Vertex ids are "<hostname>/<local id>". Missing GPU driver or RDMA devices mean none, not an error;
/// what could not be seen is added to notes.
Topology discover_local(const DiscoverOptions& opt);

/// Merges per-rank host topologies (index = rank; the same host may appear several times, once per
/// rank on it) into one cluster: each host's vertices once, rank r mapped to the endpoint that rank
/// uses (its GPU by local rank, or its CPU), then the fabric joins the hosts.
Topology merge_hosts(const std::vector<Topology>& per_rank, const std::vector<int>& local_rank,
                     const std::string& fabric);

/// True when the process was started by mpirun/srun (OMPI_*, PMI_*, PMIX_*, SLURM_* variables).
bool under_launcher();

/// Under a launcher: every rank discovers, rank 0 returns the merged cluster; other ranks return an
/// empty topology. Initialises and finalises MPI itself. When discovery fails every rank throws the
/// same error; `report`, when set, hears it on rank 0 first, before the ranks part: a launcher
/// that ends the job at the first rank to exit non-zero cannot then cut rank 0's message short.
Topology discover_cluster(const DiscoverOptions& opt, bool* is_root, const std::function<void(const std::exception&)>& report = {});

}  // namespace collkit::topo
