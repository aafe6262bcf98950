#include "collkit/exec/world.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "collkit/core/error.h"
#include "mpi_check.h"

namespace collkit::exec {

namespace mpi {

void wait_all(MPI_Request* reqs, int n, double timeout_s, const std::string& what) {
  double last = MPI_Wtime();
  int done = 0, before = 0;
  for (;;) {
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
  mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  mpi::check(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
  host_.assign(name, static_cast<std::size_t>(len));
  MPI_Comm node = MPI_COMM_NULL;
  mpi::check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  mpi::check(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank");
  mpi::check(MPI_Comm_free(&node), "MPI_Comm_free");
  MPI_Comm dup = MPI_COMM_NULL;
  mpi::check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  roll_call_ = MPI_Comm_c2f(dup);
}

World::~World() {
  MPI_Comm dup = MPI_Comm_f2c(roll_call_);
  if (dup != MPI_COMM_NULL) MPI_Comm_free(&dup);
  if (owns_) MPI_Finalize();
}

std::vector<int> World::roll_call(double grace_s) const {
  // Errors are not checked: a send to a peer that is gone may fail, and the answer is the same.
  // What is still pending at the end is cancelled or let go; the sends read rank_, which lives on.
  MPI_Comm comm = MPI_Comm_f2c(roll_call_);
  auto n = static_cast<std::size_t>(size_);
  std::vector<MPI_Request> recvs(n, MPI_REQUEST_NULL), sends(n, MPI_REQUEST_NULL);
  std::vector<int> in(n);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    auto i = static_cast<std::size_t>(r);
    MPI_Irecv(&in[i], 1, MPI_INT, r, 0, comm, &recvs[i]);
    MPI_Isend(&rank_, 1, MPI_INT, r, 0, comm, &sends[i]);
  }
  std::vector<bool> answered(n, false);
  answered[static_cast<std::size_t>(rank_)] = true;
  double until = MPI_Wtime() + grace_s;
  for (int heard = 1; heard < size_ && MPI_Wtime() < until;) {
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

std::vector<std::string> World::hosts() const { return allgather(host_, 60); }

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
  mpi::check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
  mpi::wait_all(&req, 1, timeout_s, what);
}

double World::max(double v, double timeout_s) const {
  double out = v;
  MPI_Request req;
  mpi::check(MPI_Iallreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req), "MPI_Iallreduce");
  mpi::wait_all(&req, 1, timeout_s, "agreeing on a time with the other ranks");
  return out;
}

std::uint64_t World::sum(std::uint64_t v, double timeout_s) const {
  std::uint64_t out = v;
  MPI_Request req;
  mpi::check(MPI_Iallreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD, &req), "MPI_Iallreduce");
  mpi::wait_all(&req, 1, timeout_s, "adding up counts with the other ranks");
  return out;
}

std::string World::broadcast(const std::string& text, double timeout_s) const {
  unsigned long long len = text.size();
  MPI_Request req;
  mpi::check(MPI_Ibcast(&len, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD, &req), "MPI_Ibcast");
  mpi::wait_all(&req, 1, timeout_s, "receiving rank 0's plan");
  if (len > static_cast<unsigned long long>(INT_MAX)) throw UnsupportedError("a plan of over 2 GiB cannot be broadcast");
  std::string out = rank_ == 0 ? text : std::string(len, '\0');
  if (len > 0) {
    mpi::check(MPI_Ibcast(out.data(), static_cast<int>(len), MPI_CHAR, 0, MPI_COMM_WORLD, &req), "MPI_Ibcast");
    mpi::wait_all(&req, 1, timeout_s, "receiving rank 0's plan");
  }
  return out;
}

std::vector<std::string> World::allgather(const std::string& mine, double timeout_s) const {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
  MPI_Request req;
  mpi::check(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD, &req), "MPI_Iallgather");
  mpi::wait_all(&req, 1, timeout_s, "exchanging addresses with the other ranks");
  long long total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[r] = static_cast<int>(total);
    total += lens[r];
  }
  if (total > INT_MAX) throw UnsupportedError("exchanged data over 2 GiB");
  std::string all(static_cast<std::size_t>(total), '\0');
  mpi::check(MPI_Iallgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD, &req),
             "MPI_Iallgatherv");
  mpi::wait_all(&req, 1, timeout_s, "exchanging addresses with the other ranks");
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(lens[r])));
  return out;
}

void World::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

double World::now() { return MPI_Wtime(); }

}  // namespace collkit::exec
