#pragma once
// MPI for libs/exec: core's status wrapper, and the wait that will not hang: it tests requests
// until they complete or `timeout_s` passes without progress.

#include <string>

#include "collkit/core/mpi_check.h"

namespace collkit::exec::mpi {

using collkit::mpi::check;
/// Waits for `n` requests; after `timeout_s` with none of them done, throws SystemError
/// "rank R: no progress for T s while <what>".
void wait_all(MPI_Request* reqs, int n, double timeout_s, const std::string& what);

}  // namespace collkit::exec::mpi
