// Which of Open MPI's own collectives is the baseline to beat? coll-run's mpi backend calls the
// non-blocking form (MPI_Iallreduce, ...) and waits on it under --timeout; Open MPI 4.1 serves
// that from coll/libnbc, while the blocking form goes to coll/tuned's decision tables. This
// measures both on the same buffers, best of 5 repeats each, so that bench/coll_run_mpi.sh can
// record how the baseline compares with the blocking call.
// Usage: mpirun -np 4 bench_mpi_native_forms [iterations]

// The C API only: Open MPI's deprecated C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

enum class Coll { AllReduce, AllGather, ReduceScatter };

// One call on `bytes` of floats, nccl-tests' sizes: AllReduce in and out, AllGather's output,
// ReduceScatter's input.
void call(Coll c, bool blocking, std::vector<float>& in, std::vector<float>& out, int count, int nranks) {
  MPI_Request r = MPI_REQUEST_NULL;
  int part = count / nranks;
  switch (c) {
    case Coll::AllReduce:
      if (blocking) MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else MPI_Iallreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
      break;
    case Coll::AllGather:
      if (blocking) MPI_Allgather(in.data(), part, MPI_FLOAT, out.data(), part, MPI_FLOAT, MPI_COMM_WORLD);
      else MPI_Iallgather(in.data(), part, MPI_FLOAT, out.data(), part, MPI_FLOAT, MPI_COMM_WORLD, &r);
      break;
    case Coll::ReduceScatter:
      if (blocking) MPI_Reduce_scatter_block(in.data(), out.data(), part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else MPI_Ireduce_scatter_block(in.data(), out.data(), part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
      break;
  }
  if (!blocking) MPI_Wait(&r, MPI_STATUS_IGNORE);
}

double time_us(Coll c, bool blocking, std::vector<float>& in, std::vector<float>& out, int count, int nranks, int iters) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    for (int i = 0; i < 2; ++i) call(c, blocking, in, out, count, nranks);  // warm-up
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) call(c, blocking, in, out, count, nranks);
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    best = std::min(best, slowest);
  }
  return best * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  if (iters < 1) iters = 1;
  const struct {
    Coll c;
    const char* name;
  } colls[] = {{Coll::AllReduce, "allreduce"}, {Coll::AllGather, "allgather"}, {Coll::ReduceScatter, "reducescatter"}};
  if (rank == 0) std::printf("%-14s %10s %12s %15s %8s\n", "collective", "bytes", "blocking us", "non-blocking us", "nb/b");
  for (const auto& [c, name] : colls)
    for (long bytes = 1024; bytes <= (16l << 20); bytes *= 4) {
      int count = static_cast<int>(bytes / 4);
      count -= count % nranks;
      std::vector<float> in(static_cast<std::size_t>(count), 1.0f), out(static_cast<std::size_t>(count), 0.0f);
      double b = time_us(c, true, in, out, count, nranks, iters);
      double nb = time_us(c, false, in, out, count, nranks, iters);
      if (rank == 0) std::printf("%-14s %10ld %12.1f %15.1f %8.3f\n", name, bytes, b, nb, nb / b);
    }
  MPI_Finalize();
  return 0;
}
