#pragma once
// The backends' constructors, each defined in its folder; the GPU and RDMA ones exist only in
// builds that found their library: CMake defines COLLKIT_EXEC_CUDA, COLLKIT_EXEC_NCCL and
// COLLKIT_EXEC_RDMA where it compiles them.

#include <memory>

#include "collkit/exec/backend.h"

namespace collkit::exec::detail {

std::unique_ptr<Backend> make_mpi_backend(World& world, double timeout_s);
#if COLLKIT_EXEC_CUDA
std::unique_ptr<Backend> make_cuda_backend(World& world, int nranks, double timeout_s);
#endif
#if COLLKIT_EXEC_NCCL
std::unique_ptr<Backend> make_nccl_backend(World& world, double timeout_s);
#endif
#if COLLKIT_EXEC_RDMA
std::unique_ptr<Backend> make_rdma_backend(World& world, double timeout_s);
#endif

}  // namespace collkit::exec::detail
