// The C API only (as libs/exec): Open MPI's mpi.h pulls in its C++ bindings otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "collkit/core/error.h"
#include "collkit/overlap/execute.h"

namespace collkit::overlap {

ThreadedJob::ThreadedJob() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) throw Error("coll-overlap run: MPI was initialised before the job");
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) throw SystemError("MPI_Init_thread failed");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw SystemError("this MPI library gives no MPI_THREAD_SERIALIZED: coll-overlap run calls collectives from a thread of its own");
  }
  world_ = std::make_unique<exec::World>();
}

ThreadedJob::~ThreadedJob() {
  world_.reset();
  MPI_Finalize();
}

}  // namespace collkit::overlap
