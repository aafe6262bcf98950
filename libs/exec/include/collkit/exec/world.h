#pragma once
// The job coll-run runs in: MPI's world, started by mpirun/srun (or a single process without a
// launcher). Every backend bootstraps through it (NCCL's unique id, RDMA queue pairs) and the
// harness times and agrees through it. Waits that depend on other ranks take a timeout, so that a
// dead or stalled rank stops the others with a message instead of a hang.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collkit/core/error.h"

namespace collkit::exec {

/// The job is being ended from outside this rank: the launcher sent SIGTERM (or SIGINT, SIGHUP),
/// as mpirun does to every rank when one has died, or the launcher itself is gone (the rank's
/// parent process exited: mpirun killed, leaving the ranks orphans). Thrown by every wait on other
/// ranks (World::check_stopped()); exit code 3, as SystemError.
class JobStopped : public SystemError {
 public:
  JobStopped(const std::string& what, bool launcher_gone) : SystemError(what), launcher_gone_(launcher_gone) {}
  /// The launcher is gone (no roll call is worth making: every rank is alive and finds out too).
  bool launcher_gone() const { return launcher_gone_; }

 private:
  bool launcher_gone_;
};

/// An error rank 0 met and gave to every rank (an input file it could not read): every rank
/// stops alike, rank 0 alone prints it. `code()` is the exit code of the error rank 0 met.
class AgreedError : public Error {
 public:
  AgreedError(const std::string& what, int code) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// What the liveness side channel (World::presence()) found of a peer: it answered; it is gone (its
/// port refuses: the process has exited, its host is up); it said nothing (stopped, hung or out of
/// reach); or it cannot be asked (no side channel: a single process, a split world, no socket).
enum class Liveness : std::uint8_t { Unknown, Alive, Gone, Silent };

class Presence;

class World {
 public:
  /// Initialises MPI (if nobody has) with errors returned, not fatal.
  World();
  /// Finalises MPI if this object initialised it (a world made by split() frees its communicator).
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// This host's name and this rank's index among the ranks of its host (in the whole job, also
  /// in a world made by split(): the GPU a process takes by it is the same in every group).
  const std::string& host() const { return host_; }
  int local_rank() const { return local_rank_; }
  /// Every rank's host name, in rank order (gathered once, when the world starts: a rank that
  /// reports a dead peer can still name its host).
  const std::vector<std::string>& hosts() const { return hosts_; }
  /// "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line).
  std::string mpi_version() const;

  /// Waits for every rank, giving up after `timeout_s` with a SystemError naming `what`.
  void barrier(double timeout_s, const std::string& what) const;
  /// The same, on the roll call's communicator: for a rank that stops on an error while the others
  /// might still be in a collective of the world (a barrier there would be matched against it).
  void barrier_aside(double timeout_s, const std::string& what) const;
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
  /// `round` tells calls apart (a second round after printing, so that no survivor exits, and has
  /// the launcher kill the rest, before every survivor has printed); `skip`: ranks not waited for
  /// (silent in an earlier round).
  std::vector<int> roll_call(double grace_s, int round = 0, const std::vector<int>& skip = {}) const;
  /// Ends the whole job now (MPI_Abort): for the app, after a rank-local error was printed. A
  /// launcher that cannot be reached must not keep the rank alive: the process exits with `code`
  /// after `limit_s` even if MPI_Abort has not returned (it never does when it works).
  [[noreturn]] void abort(int code, double limit_s = 1.5) const;

  /// From now on the launcher's SIGTERM/SIGINT/SIGHUP and its disappearance (the rank's parent
  /// process exits: mpirun killed) are noticed by check_stopped() instead of ending the process
  /// silently (coll-run opts in; a job of one rank, or run without a launcher, is left alone).
  /// Also opens the liveness side channel (presence()). Collective: every rank calls it.
  void watch_launcher();
  /// Asks `ranks` whether they are there, without MPI (a UDP ping each rank's own thread answers;
  /// the channel is opened by watch_launcher()): for a rank whose MPI calls no longer return, and
  /// to tell a peer that exited from one that hangs. Waits at most `grace_s`; thread-safe.
  std::vector<Liveness> presence(const std::vector<int>& ranks, double grace_s) const;
  /// The same as a function that keeps the channel open after this world is gone (for a watchdog
  /// thread that may outlive it).
  std::function<std::vector<Liveness>(const std::vector<int>&, double)> presence_probe() const;
  /// Throws JobStopped if, since watch_launcher(), the launcher has sent this process SIGTERM,
  /// SIGINT or SIGHUP or has gone away (checked at most every 0.1 s); every wait on other ranks
  /// calls it in its loop.
  static void check_stopped();
  /// The launcher has sent SIGTERM/SIGINT/SIGHUP (it is ending the job: the rank should exit,
  /// not ask it to).
  static bool stop_requested();
  /// From now on the launcher's SIGTERM (SIGINT, SIGHUP) ends the process at once with `code`
  /// (it is already ending: its line is printed); now, if one came already.
  static void exit_on_stop(int code);
  /// True for the first caller only: the one line a failing rank prints is printed by whoever
  /// claims it (the rank's own report, or a watchdog when an MPI call does not return).
  static bool claim_line();

  /// Seconds since an arbitrary point (MPI_Wtime).
  static double now();

  /// The ranks of this world that give the same `color`, ordered by `key` (MPI_Comm_split): a world
  /// of their own, whose rank(), size(), waits and backends reach them alone (coll-overlap run's
  /// TP and DP groups). Collective over this world. abort() still ends the whole job; errors name
  /// ranks of MPI's world. Must be destroyed before the world it came from.
  std::unique_ptr<World> split(int color, int key) const;
  /// The communicator's Fortran handle (MPI_Comm_c2f; no MPI in this header): MPI_COMM_WORLD's, or
  /// the one split() made. Backends duplicate it.
  int communicator() const { return comm_; }

 private:
  explicit World(int comm);  ///< a world on a communicator it owns (split())
  void init_members(double timeout_s);

  bool owns_ = false;
  int comm_ = 0;  ///< Fortran handle of the communicator (MPI_COMM_WORLD unless split)
  bool own_comm_ = false;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  std::string host_;
  std::vector<std::string> hosts_;
  std::shared_ptr<const Presence> presence_;  ///< the liveness side channel (null until watch_launcher(), or where none)
  int roll_call_ = 0;  ///< a duplicate of the world's communicator, for roll_call() alone (its Fortran handle: no MPI here)
};

}  // namespace collkit::exec
