// What one message costs on this host's MPI, by size and by how messages follow one another
// (docs/adapt.md, "Fidelity: what was tried"): the simulator charges every message the same
// per-message time, fitted on ring and rhd plans, whose every step is one exchange that waits.
// Ranks 0 and 1 measure; the others wait in the closing barrier, as idle ranks of a plan do.
//  - ping-pong: the one-way time of a message that its receiver waits for;
//  - burst: rank 0 posts 8 messages to rank 1 back to back, rank 1 answers once all arrived: the
//    time per message when they follow one another without a wait between them (a pipelined
//    tree's chunks).
// Around Open MPI's shared-memory eager limit (btl_vader_eager_limit, 4 KiB with its header):
// below it a send is copied out at once, above it the receiver takes part (rendezvous).
// Each figure is the median of 9 rounds of 50 repetitions.
// Usage: mpirun -np 4 bench_mpi_protocol [size ...]   (default 8 1024 4000 4096 8192 16384 65536)

// The C API only: Open MPI's deprecated C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kBurst = 8;
constexpr int kRounds = 9;
constexpr int kReps = 50;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One round: kReps ping-pongs (burst false) or bursts; microseconds per repetition on rank 0.
double round_us(int me, int bytes, bool burst, std::vector<char>& buf) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < kReps && me < 2; ++i) {
    int peer = 1 - me;
    if (!burst) {
      if (me == 0) MPI_Send(buf.data(), bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (me == 1) MPI_Send(buf.data(), bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      continue;
    }
    MPI_Request reqs[kBurst];
    for (int k = 0; k < kBurst; ++k) {
      char* at = buf.data() + static_cast<std::size_t>(k) * static_cast<std::size_t>(bytes);
      if (me == 0) MPI_Isend(at, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[k]);
      else MPI_Irecv(at, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[k]);
    }
    MPI_Waitall(kBurst, reqs, MPI_STATUSES_IGNORE);
    if (me == 0) MPI_Recv(nullptr, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(nullptr, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
  }
  return (MPI_Wtime() - start) * 1e6 / kReps;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 2) {
    if (me == 0) std::fprintf(stderr, "bench_mpi_protocol: needs 2 ranks or more (mpirun -np 4)\n");
    MPI_Finalize();
    return 2;
  }
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) {
    char* end = nullptr;
    long b = std::strtol(argv[i], &end, 10);
    if (*end != '\0' || b < 1 || b > (64 << 20)) {
      if (me == 0) std::fprintf(stderr, "bench_mpi_protocol: a size is a byte count from 1 to 67108864, not '%s'\n", argv[i]);
      MPI_Finalize();
      return 2;
    }
    sizes.push_back(static_cast<int>(b));
  }
  if (sizes.empty()) sizes = {8, 1024, 4000, 4096, 8192, 16384, 65536};
  std::vector<char> buf(static_cast<std::size_t>(*std::max_element(sizes.begin(), sizes.end())) * kBurst, 1);
  if (me == 0)
    std::printf("# %d ranks; ranks 0-1 measure; median of %d rounds of %d\n# bytes  ping-pong one-way us  burst us per message\n", n,
                kRounds, kReps);
  for (int bytes : sizes) {
    std::vector<double> pp, burst;
    for (int r = 0; r < kRounds; ++r) {
      pp.push_back(round_us(me, bytes, false, buf) / 2);
      burst.push_back(round_us(me, bytes, true, buf) / kBurst);
    }
    if (me == 0) std::printf("%8d  %20.2f  %20.2f\n", bytes, median(pp), median(burst));
  }
  MPI_Finalize();
  return 0;
}
