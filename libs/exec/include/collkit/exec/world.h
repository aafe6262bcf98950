#pragma once
// The job coll-run runs in: MPI's world, started by mpirun/srun (or a single process without a
// launcher). Every backend bootstraps through it (NCCL's unique id, RDMA queue pairs) and the
// harness times and agrees through it. Waits that depend on other ranks take a timeout, so that a
// dead or stalled rank stops the others with a message instead of a hang.

#include <cstdint>
#include <string>
#include <vector>

namespace collkit::exec {

class World {
 public:
  /// Initialises MPI (if nobody has) with errors returned, not fatal.
  World();
  /// Finalises MPI if this object initialised it.
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// This host's name and this rank's index among the ranks of its host.
  const std::string& host() const { return host_; }
  int local_rank() const { return local_rank_; }
  /// Every rank's host name, in rank order.
  std::vector<std::string> hosts() const;
  /// "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line).
  std::string mpi_version() const;

  /// Waits for every rank, giving up after `timeout_s` with a SystemError naming `what`.
  void barrier(double timeout_s, const std::string& what) const;
  /// Largest / sum of a value over ranks (with the same timeout rule).
  double max(double v, double timeout_s) const;
  std::uint64_t sum(std::uint64_t v, double timeout_s) const;
  /// Rank 0's text on every rank.
  std::string broadcast(const std::string& text, double timeout_s) const;
  /// Every rank's bytes gathered on every rank (for exchanging handles and addresses).
  std::vector<std::string> allgather(const std::string& mine, double timeout_s) const;
  /// For a rank that gives up (a stalled peer, a failed call): tells every other rank it is still
  /// here and listens for theirs, on a communicator of its own, until all have answered or
  /// `grace_s` has passed. The ranks that did not answer, in order: dead, hung in something that
  /// is not a collkit wait, or unreachable. Every rank that gives up calls it, so survivors of one
  /// fault hear from each other; a rank still working answers once it gives up too (within
  /// `grace_s`, or it is counted silent).
  std::vector<int> roll_call(double grace_s) const;
  /// Ends the whole job now (MPI_Abort): for the app, after a rank-local error was printed.
  [[noreturn]] void abort(int code) const;

  /// Seconds since an arbitrary point (MPI_Wtime).
  static double now();

 private:
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  std::string host_;
  int roll_call_ = 0;  ///< a duplicate of the world's communicator, for roll_call() alone (its Fortran handle: no MPI here)
};

}  // namespace collkit::exec
