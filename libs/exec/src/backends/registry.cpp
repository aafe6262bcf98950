#include "registry.h"

#include "collkit/core/error.h"

namespace collkit::exec {

std::vector<std::string> backend_names() { return {"mpi", "nccl", "cuda", "rdma"}; }

void Backend::inject(const Injection& inj) {
  if (!inj.empty()) throw UnsupportedError("--inject: backend " + std::string(name()) + " takes no injected faults (the mpi backend does)");
}

std::vector<double> Backend::probe(std::uint64_t, double) {
  throw UnsupportedError("probing links: backend " + std::string(name()) + " cannot (the mpi backend can)");
}

void Backend::time_sends(bool on) {
  if (on) throw UnsupportedError("timing sends: backend " + std::string(name()) + " cannot (the mpi backend can)");
}

std::vector<double> Backend::send_times() {
  throw UnsupportedError("timing sends: backend " + std::string(name()) + " cannot (the mpi backend can)");
}

std::unique_ptr<Backend> make_backend(const BackendOptions& opt, World& world) {
  if (opt.ranks < 0) throw InputError("--ranks: cannot be negative");
  if (opt.ranks > 0 && opt.name != "cuda")
    throw InputError("--ranks is for --backend cuda (one process runs every rank); " + opt.name + " takes one rank per process from mpirun -np");
  if (opt.name == "mpi") return detail::make_mpi_backend(world, opt.timeout_s);
  if (opt.name == "cuda") {
#if COLLKIT_EXEC_CUDA
    return detail::make_cuda_backend(world, opt.ranks, opt.timeout_s);
#else
    throw UnsupportedError("backend cuda: this build of collkit has no CUDA (configure with CUDA at /usr/local/cuda or CUDAToolkit_ROOT)");
#endif
  }
  if (opt.name == "nccl") {
#if COLLKIT_EXEC_NCCL
    return detail::make_nccl_backend(world, opt.timeout_s);
#else
    throw UnsupportedError("backend nccl: this build of collkit has no NCCL (it looks for nccl.h and libnccl next to CUDA)");
#endif
  }
  if (opt.name == "rdma") {
#if COLLKIT_EXEC_RDMA
    return detail::make_rdma_backend(world, opt.timeout_s);
#else
    throw UnsupportedError("backend rdma: this build of collkit has no ibverbs (install libibverbs-dev)");
#endif
  }
  throw InputError("unknown backend \"" + opt.name + "\" (expected mpi, nccl, cuda or rdma)");
}

}  // namespace collkit::exec
