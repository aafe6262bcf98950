// discover_cluster(): under mpirun/srun every rank discovers its host and rank 0 merges them.
//
// Error policy (docs/discovery.md): a library may not exit() or MPI_Abort, and one rank's failure
// must not leave the others waiting. So every rank's outcome travels with its data to rank 0,
// rank 0 decides (its merge may fail too) and broadcasts the verdict, and every rank then throws
// the same error, of the same type, after MPI_Finalize: the job ends cleanly with one exit code.
// Only a failing MPI call itself throws at once (SystemError, without finalising): the process
// then exits without MPI_Finalize and the launcher tears the job down.

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/core/mpi_check.h"
#include "collkit/topo/discover.h"
#include "collkit/topo/io.h"

namespace collkit::topo {

namespace {

using mpi::check;

// How an outcome travels between ranks: the error's class, so that every rank rethrows the same type.
enum class Outcome : int { Ok = 0, Input = 1, System = 2, Unsupported = 3, Other = 4 };

struct Result {
  Outcome outcome = Outcome::Ok;
  std::string text;  // JSON when Ok, the error message otherwise
};

template <class Fn>
Result capture(Fn&& fn) {
  try {
    return {Outcome::Ok, fn()};
  } catch (const InputError& e) {
    return {Outcome::Input, e.what()};
  } catch (const SystemError& e) {
    return {Outcome::System, e.what()};
  } catch (const UnsupportedError& e) {
    return {Outcome::Unsupported, e.what()};
  } catch (const std::exception& e) {
    return {Outcome::Other, e.what()};
  }
}

[[noreturn]] void rethrow(const Result& r) {
  switch (r.outcome) {
    case Outcome::Input: throw InputError(r.text);
    case Outcome::System: throw SystemError(r.text);
    case Outcome::Unsupported: throw UnsupportedError(r.text);
    default: throw Error(r.text);
  }
}

bool has_env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

// The rank's index among the ranks of its host: Open MPI states it; otherwise the ranks sharing
// memory with this one are counted.
int local_rank() {
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"); v && *v) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 0 && n <= INT_MAX) return static_cast<int>(n);
  }
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int local = 0;
  check(MPI_Comm_rank(node, &local), "MPI_Comm_rank");
  check(MPI_Comm_free(&node), "MPI_Comm_free");
  return local;
}

// Rank 0's verdict to everyone: outcome and message.
void broadcast(Result& r, int rank) {
  int head[2] = {static_cast<int>(r.outcome), static_cast<int>(r.text.size())};
  check(MPI_Bcast(head, 2, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (rank != 0) {
    r.outcome = static_cast<Outcome>(head[0]);
    r.text.assign(static_cast<std::size_t>(head[1]), '\0');
  }
  if (head[1] > 0) check(MPI_Bcast(r.text.data(), head[1], MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

}  // namespace

bool under_launcher() {
  // Open MPI's mpirun, PMIx (Open MPI 5, srun --mpi=pmix), PMI-1/2 (MPICH hydra, srun --mpi=pmi2),
  // and srun itself (a job step; SLURM_PROCID alone is also set in a batch script, which is no launch).
  return has_env("OMPI_COMM_WORLD_SIZE") || has_env("PMIX_RANK") || has_env("PMI_RANK") ||
         (has_env("SLURM_STEP_ID") && has_env("SLURM_PROCID"));
}

Topology discover_cluster(const DiscoverOptions& opt, bool* is_root, const std::function<void(const std::exception&)>& report) {
  int initialised = 0;
  check(MPI_Initialized(&initialised), "MPI_Initialized");
  if (!initialised) check(MPI_Init(nullptr, nullptr), "MPI_Init");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int rank = 0, size = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (is_root) *is_root = rank == 0;

  Result mine = capture([&] { return to_json(discover_local(opt)); });
  if (mine.text.size() > static_cast<std::size_t>(INT_MAX)) mine = {Outcome::Other, "discovered topology too large to send"};

  // Each rank's outcome, text length and local rank, then the texts.
  int head[3] = {static_cast<int>(mine.outcome), static_cast<int>(mine.text.size()), local_rank()};
  std::vector<int> heads(rank == 0 ? 3 * static_cast<std::size_t>(size) : 0);
  check(MPI_Gather(head, 3, MPI_INT, heads.data(), 3, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> counts, displs;
  std::string all;
  Result verdict;
  if (rank == 0) {
    counts.resize(static_cast<std::size_t>(size));
    displs.resize(static_cast<std::size_t>(size));
    long long total = 0;
    for (int r = 0; r < size; ++r) {
      counts[r] = heads[3 * r + 1];
      displs[r] = static_cast<int>(total);
      total += counts[r];
      if (total > INT_MAX && verdict.outcome == Outcome::Ok)
        verdict = {Outcome::Unsupported, "discovered topologies of " + std::to_string(size) +
                                             " ranks exceed 2 GiB: too large to gather"};
    }
    if (verdict.outcome == Outcome::Ok) all.resize(static_cast<std::size_t>(total));
    else std::fill(counts.begin(), counts.end(), 0);
  }
  // Even when rank 0 has given up, every rank takes part in the same Gatherv (sending nothing),
  // so nobody waits on a collective the others skipped.
  int give_up = rank == 0 ? static_cast<int>(verdict.outcome != Outcome::Ok) : 0;
  check(MPI_Bcast(&give_up, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  check(MPI_Gatherv(mine.text.data(), give_up ? 0 : head[1], MPI_CHAR, all.data(), counts.data(), displs.data(),
                    MPI_CHAR, 0, MPI_COMM_WORLD),
        "MPI_Gatherv");

  Topology merged;
  if (rank == 0 && verdict.outcome == Outcome::Ok) {
    for (int r = 0; r < size && verdict.outcome == Outcome::Ok; ++r)
      if (heads[3 * r] != static_cast<int>(Outcome::Ok))
        verdict = {static_cast<Outcome>(heads[3 * r]),
                   "rank " + std::to_string(r) + ": " + all.substr(static_cast<std::size_t>(displs[r]),
                                                                   static_cast<std::size_t>(counts[r]))};
    if (verdict.outcome == Outcome::Ok) {
      verdict = capture([&] {
        std::vector<Topology> per_rank;
        std::vector<int> local;
        per_rank.reserve(static_cast<std::size_t>(size));
        for (int r = 0; r < size; ++r) {
          per_rank.push_back(from_json(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(counts[r])),
                                       "rank " + std::to_string(r) + " topology"));
          local.push_back(heads[3 * r + 2]);
        }
        merged = merge_hosts(per_rank, local, opt.fabric);
        return std::string();
      });
    }
  }
  broadcast(verdict, rank);
  if (verdict.outcome != Outcome::Ok && rank == 0 && report) {
    try {
      rethrow(verdict);
    } catch (const std::exception& e) {
      report(e);
    }
  }
  if (verdict.outcome != Outcome::Ok) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");  // rank 0 has reported
  if (!initialised) check(MPI_Finalize(), "MPI_Finalize");
  if (verdict.outcome != Outcome::Ok) rethrow(verdict);
  return rank == 0 ? std::move(merged) : Topology{};
}

}  // namespace collkit::topo
