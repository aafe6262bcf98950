#pragma once
// The one wrapper that turns an MPI status into collkit's error policy, and the wait that will
// not hang: it tests requests until they complete or `timeout_s` passes without progress.

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <string>

namespace collkit::exec::mpi {

/// Throws SystemError "<call> failed: <MPI's text>" unless rc is MPI_SUCCESS.
void check(int rc, const char* call);
/// Waits for `n` requests; after `timeout_s` with none of them done, throws SystemError
/// "rank R: no progress for T s while <what>".
void wait_all(MPI_Request* reqs, int n, double timeout_s, const std::string& what);

}  // namespace collkit::exec::mpi
