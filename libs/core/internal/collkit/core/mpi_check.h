#pragma once
// The one wrapper of MPI's status codes (STYLE.md rule 5), for the libraries that speak MPI
// (topo's cluster discovery, exec's world and backends): a failed call becomes a SystemError
// "<call> failed: <MPI's text>".

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <string>

#include "collkit/core/error.h"

namespace collkit::mpi {

inline void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw SystemError(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

}  // namespace collkit::mpi
