#include "collkit/exec/world.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "collkit/core/error.h"
#include "mpi_check.h"
#include "presence.h"
#include "world_time.h"

namespace collkit::exec {

namespace {

// What check_stopped() reads: the signal the launcher sent (0: none) and the parent process the
// rank started under (0: not watched, as outside a launcher).
volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_exit_code = -1;  // >= 0: exit at once with it when the signal comes
pid_t g_parent = 0;
std::atomic<std::int64_t> g_next_parent_check{0};

extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  if (g_exit_code >= 0) ::_exit(g_exit_code);  // async-signal-safe
}

// Started by a launcher: mpirun/srun set these in every rank's environment.
bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* s = std::getenv(v); s && *s) return true;
  return false;
}

// The signals a launcher ends a job with become an exception in the next wait (a line naming the
// dead peer instead of a silent death). A second one changes nothing (the rank is already on its
// way out, and must not die mid-line); the launcher's SIGKILL follows anyway, which also ends a
// rank busy elsewhere than in a wait.
// Dispositions already changed (nohup's ignored SIGHUP) are left alone.
void watch_job() {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
  g_parent = ::getppid();
  // A write to a peer that died (Open MPI's TCP transport writing to its socket) must fail with
  // EPIPE, not end this rank silently by SIGPIPE: on the testbed a survivor on the dead ranks' far
  // side died so (exit 141) in 2 runs of 10, and the other survivor then had no partner to name.
  ::signal(SIGPIPE, SIG_IGN);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

}  // namespace

bool World::stop_requested() { return g_stop_signal != 0; }

bool World::claim_line() {
  static std::atomic<bool> claimed{false};
  return !claimed.exchange(true);
}

void World::exit_on_stop(int code) {
  g_exit_code = code;
  if (g_stop_signal) std::_Exit(code);
}

void World::check_stopped() {
  if (int sig = g_stop_signal)
    throw JobStopped(std::string("stopped by ") + signal_name(sig) + " (the launcher ends the job: a rank failed or mpirun was stopped)",
                     false);
  if (g_parent == 0) return;
  std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now < g_next_parent_check.load(std::memory_order_relaxed)) return;
  g_next_parent_check.store(now + 100, std::memory_order_relaxed);
  if (::getppid() != g_parent)
    throw JobStopped("the launcher is gone (its process " + std::to_string(g_parent) + " exited, mpirun killed?): stopping", true);
}

namespace mpi {

void wait_all(MPI_Request* reqs, int n, double timeout_s, const std::string& what) {
  double last = MPI_Wtime();
  int done = 0, before = 0;
  for (;;) {
    World::check_stopped();
    int flag = 0;
    check(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (flag) return;
    // Count what has finished so far: any completion is progress.
    done = 0;
    for (int i = 0; i < n; ++i) done += reqs[i] == MPI_REQUEST_NULL;
    if (done != before) {
      before = done;
      last = MPI_Wtime();
    } else if (MPI_Wtime() - last > timeout_s) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      char t[32];
      std::snprintf(t, sizeof t, "%g", timeout_s);
      throw TimeoutError("rank " + std::to_string(rank) + ": no progress for " + t + " s while " + what);
    }
    std::this_thread::yield();
  }
}

}  // namespace mpi

World::World() {
  int initialised = 0;
  mpi::check(MPI_Initialized(&initialised), "MPI_Initialized");
  if (!initialised) {
    mpi::check(MPI_Init(nullptr, nullptr), "MPI_Init");
    owns_ = true;
  }
  mpi::check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  comm_ = MPI_Comm_c2f(MPI_COMM_WORLD);
  init_members(60);
}

World::World(int comm) : comm_(comm), own_comm_(true) {
  mpi::check(MPI_Comm_set_errhandler(MPI_Comm_f2c(comm_), MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  init_members(60);
}

void World::init_members(double timeout_s) {
  MPI_Comm comm = MPI_Comm_f2c(comm_);
  mpi::check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  mpi::check(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
  host_.assign(name, static_cast<std::size_t>(len));
  MPI_Comm node = MPI_COMM_NULL;
  mpi::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  mpi::check(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank");
  mpi::check(MPI_Comm_free(&node), "MPI_Comm_free");
  MPI_Comm dup = MPI_COMM_NULL;
  mpi::check(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  roll_call_ = MPI_Comm_c2f(dup);
  hosts_ = allgather(host_, timeout_s);
}

std::unique_ptr<World> World::split(int color, int key) const {
  // MPI_Comm_split blocks until every rank of this world calls it: no timeout can be put on it,
  // so a barrier with one first (a rank that never arrives is named instead of hanging the rest).
  barrier(60, "splitting the job into groups");
  MPI_Comm sub = MPI_COMM_NULL;
  mpi::check(MPI_Comm_split(MPI_Comm_f2c(comm_), color, key, &sub), "MPI_Comm_split");
  std::unique_ptr<World> out(new World(MPI_Comm_c2f(sub)));
  // The process's index among the job's ranks on its host, not among its group's: the device a
  // GPU backend takes by it must be the one this process computes on in every group.
  out->local_rank_ = local_rank_;
  return out;
}

void World::watch_launcher() {
  if (size_ < 2 || !launched()) return;
  watch_job();
  std::shared_ptr<Presence> channel = Presence::open(rank_);
  // Every rank joins the exchange, also one whose socket could not be made ("-": not asked).
  std::vector<std::string> all = allgather(channel ? channel->endpoint() : std::string("-"), 60);
  if (channel) channel->set_peers(all, hosts_, host_);
  presence_ = std::move(channel);
}

std::function<std::vector<Liveness>(const std::vector<int>&, double)> World::presence_probe() const {
  return [channel = presence_](const std::vector<int>& ranks, double grace_s) {
    return channel ? channel->probe(ranks, grace_s) : std::vector<Liveness>(ranks.size(), Liveness::Unknown);
  };
}

std::vector<Liveness> World::presence(const std::vector<int>& ranks, double grace_s) const {
  if (!presence_) return std::vector<Liveness>(ranks.size(), Liveness::Unknown);
  return presence_->probe(ranks, grace_s);
}

World::~World() {
  MPI_Comm dup = MPI_Comm_f2c(roll_call_);
  if (dup != MPI_COMM_NULL) MPI_Comm_free(&dup);
  if (own_comm_) {
    MPI_Comm comm = MPI_Comm_f2c(comm_);
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  if (owns_) MPI_Finalize();
}

std::vector<int> World::roll_call(double grace_s, int round, const std::vector<int>& skip) const {
  // Errors are not checked: a send to a peer that is gone may fail, and the answer is the same.
  // What is still pending at the end is cancelled or let go; the sends read rank_, which lives on.
  MPI_Comm comm = MPI_Comm_f2c(roll_call_);
  auto n = static_cast<std::size_t>(size_);
  std::vector<MPI_Request> recvs(n, MPI_REQUEST_NULL), sends(n, MPI_REQUEST_NULL);
  std::vector<int> in(n);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    auto i = static_cast<std::size_t>(r);
    MPI_Irecv(&in[i], 1, MPI_INT, r, round, comm, &recvs[i]);
    MPI_Isend(&rank_, 1, MPI_INT, r, round, comm, &sends[i]);
  }
  std::vector<bool> answered(n, false);
  answered[static_cast<std::size_t>(rank_)] = true;
  int expected = size_;
  for (int r : skip)
    if (r != rank_ && r >= 0 && r < size_ && !answered[static_cast<std::size_t>(r)]) {
      answered[static_cast<std::size_t>(r)] = true;  // not waited for (silent before), not reported
      --expected;
    }
  double until = detail::wall_seconds() + grace_s;  // the process's clock, not MPI's
  for (int heard = 1; heard < expected && detail::wall_seconds() < until;) {
    for (std::size_t i = 0; i < n; ++i) {
      int flag = 0;
      if (answered[i] || MPI_Test(&recvs[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) continue;
      answered[i] = true;
      ++heard;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<int> silent;
  for (std::size_t i = 0; i < n; ++i) {
    if (recvs[i] != MPI_REQUEST_NULL) {
      MPI_Cancel(&recvs[i]);
      MPI_Wait(&recvs[i], MPI_STATUS_IGNORE);  // a cancelled receive completes at once
    }
    if (sends[i] != MPI_REQUEST_NULL) MPI_Request_free(&sends[i]);
    if (!answered[i]) silent.push_back(static_cast<int>(i));
  }
  return silent;
}

std::string World::mpi_version() const {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  mpi::check(MPI_Get_library_version(text, &len), "MPI_Get_library_version");
  std::string v(text, static_cast<std::size_t>(len));
  auto cut = v.find_first_of(",\n");
  return v.substr(0, cut);
}

void World::barrier(double timeout_s, const std::string& what) const {
  MPI_Request req;
  mpi::check(MPI_Ibarrier(MPI_Comm_f2c(comm_), &req), "MPI_Ibarrier");
  mpi::wait_all(&req, 1, timeout_s, what);
}

void World::barrier_aside(double timeout_s, const std::string& what) const {
  MPI_Request req;
  mpi::check(MPI_Ibarrier(MPI_Comm_f2c(roll_call_), &req), "MPI_Ibarrier");
  mpi::wait_all(&req, 1, timeout_s, what);
}

double World::max(double v, double timeout_s) const {
  double out = v;
  MPI_Request req;
  mpi::check(MPI_Iallreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_Comm_f2c(comm_), &req), "MPI_Iallreduce");
  mpi::wait_all(&req, 1, timeout_s, "agreeing on a time with the other ranks");
  return out;
}

std::uint64_t World::sum(std::uint64_t v, double timeout_s) const {
  std::uint64_t out = v;
  MPI_Request req;
  mpi::check(MPI_Iallreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_Comm_f2c(comm_), &req), "MPI_Iallreduce");
  mpi::wait_all(&req, 1, timeout_s, "adding up counts with the other ranks");
  return out;
}

std::string World::broadcast(const std::string& text, double timeout_s) const {
  unsigned long long len = text.size();
  MPI_Request req;
  mpi::check(MPI_Ibcast(&len, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_Comm_f2c(comm_), &req), "MPI_Ibcast");
  mpi::wait_all(&req, 1, timeout_s, "receiving rank 0's plan");
  if (len > static_cast<unsigned long long>(INT_MAX)) throw UnsupportedError("a plan of over 2 GiB cannot be broadcast");
  std::string out = rank_ == 0 ? text : std::string(len, '\0');
  if (len > 0) {
    mpi::check(MPI_Ibcast(out.data(), static_cast<int>(len), MPI_CHAR, 0, MPI_Comm_f2c(comm_), &req), "MPI_Ibcast");
    mpi::wait_all(&req, 1, timeout_s, "receiving rank 0's plan");
  }
  return out;
}

std::vector<std::string> World::allgather(const std::string& mine, double timeout_s) const {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
  MPI_Request req;
  mpi::check(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_Comm_f2c(comm_), &req), "MPI_Iallgather");
  mpi::wait_all(&req, 1, timeout_s, "exchanging addresses with the other ranks");
  long long total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[r] = static_cast<int>(total);
    total += lens[r];
  }
  if (total > INT_MAX) throw UnsupportedError("exchanged data over 2 GiB");
  std::string all(static_cast<std::size_t>(total), '\0');
  mpi::check(MPI_Iallgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, MPI_Comm_f2c(comm_), &req),
             "MPI_Iallgatherv");
  mpi::wait_all(&req, 1, timeout_s, "exchanging addresses with the other ranks");
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(lens[r])));
  return out;
}

void World::abort(int code, double limit_s) const {
  // MPI_Abort asks the launcher to end the job and waits for it to (Open MPI: SIGTERM, SIGKILL a
  // second later); the SIGTERM ends this rank with the code. A launcher out of reach (a host cut
  // off, a daemon gone) would keep it alive forever: the thread's limit.
  exit_on_stop(code);
  std::thread([code, limit_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(limit_s));
    std::_Exit(code);
  }).detach();
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

double World::now() { return MPI_Wtime(); }

}  // namespace collkit::exec
