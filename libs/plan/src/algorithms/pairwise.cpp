// Pairwise exchange (Thakur, Rabenseifner & Gropp 2005; Open MPI's alltoall_intra_pairwise):
// p-1 steps; at step s rank r sends to r+s and receives from r-s (mod p), so every step is a
// permutation and no rank receives from two at once. Bandwidth-optimal on a full-bisection
// switch; one channel, since the steps are the schedule.
//
// AlltoAll: step s sends input block r+s to rank r+s, receives rank r-s's block for r into
// output block r-s; the own block is a local copy.
//                                 T = (p-1) a + ((p-1)/p) n b
// AllGather: step s sends the own slice to r+s, receives rank r-s's slice.
//                                 T = (p-1) a + ((p-1)/p) n b
// ReduceScatter: step s sends input slice r+s to rank r+s, receives rank r-s's copy of slice r
// and adds it to the running sum in the output.
//                                 T = (p-1) a + ((p-1)/p) n (b + g)

#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"

namespace collkit::plan {

namespace {

using namespace algo;

int mod(int a, int p) { return ((a % p) + p) % p; }
std::uint32_t u32(int x) { return static_cast<std::uint32_t>(x); }

class PairwiseAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "pairwise"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AlltoAll:
      case Collective::AllGather: return "(p-1)a + ((p-1)/p)nb";
      case Collective::ReduceScatter: return "(p-1)a + ((p-1)/p)n(b+g)";
      default: return "not applicable";
    }
  }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    switch (req.coll) {
      case Collective::AlltoAll:
      case Collective::AllGather:
      case Collective::ReduceScatter: return true;
      default:
        if (why)
          *why = "pairwise exchange does AlltoAll, AllGather and ReduceScatter only (an AllReduce or a rooted "
                 "collective has no pairwise exchange pattern: use ring, rhd, tree or direct)";
        return false;
    }
  }

  PlanInfo layout(const Request& req, const topo::Topology*, const AlgoOptions&) const override {
    PlanInfo info;
    info.req = req;
    auto up = u32(req.nranks);
    info.in_chunks = req.coll == Collective::AllGather ? 1 : up;
    info.out_chunks = req.coll == Collective::ReduceScatter ? 1 : up;
    return info;
  }

  // Rank r's program at step s talks to r + s and r - s: moving every rank one place on maps
  // each rank's program onto the next one's, op for op. The simulator folds by the power of it
  // that the topology's routes agree with (a whole leaf of a fat-tree: 1024 ranks on 128 DGX
  // hosts fold by 4, 4.5 -> 3.1 s and 1072 -> 387 MB for an AllGather of 1 GiB).
  std::vector<SymmetryAxis> symmetries(const PlanInfo& info) const override { return shift_axes(info); }

  std::vector<Op> program(const PlanInfo& info, int r) const override {
    std::vector<Op> ops;
    int p = info.req.nranks;
    switch (info.req.coll) {
      // The own block's local copy goes after the first send: the first transfer starts at once
      // and the copy overlaps its wait (the sends read the input, not the copied block).
      case Collective::AlltoAll:
        for (int s = 1; s < p; ++s) {
          int to = mod(r + s, p), from = mod(r - s, p);
          ops.push_back(send(to, in(u32(to)), 1, 0));
          if (s == 1) ops.push_back(copy(in(u32(r)), out(u32(r)), 1, 0));
          ops.push_back(recv(from, out(u32(from)), 1, 0));
        }
        if (p == 1) ops.push_back(copy(in(0), out(0), 1, 0));
        break;
      case Collective::AllGather:
        for (int s = 1; s < p; ++s) {
          int to = mod(r + s, p), from = mod(r - s, p);
          ops.push_back(send(to, in(0), 1, 0));
          if (s == 1) ops.push_back(copy(in(0), out(u32(r)), 1, 0));
          ops.push_back(recv(from, out(u32(from)), 1, 0));
        }
        if (p == 1) ops.push_back(copy(in(0), out(0), 1, 0));
        break;
      case Collective::ReduceScatter:
        if (p == 1) ops.push_back(copy(in(0), out(0), 1, 0));
        for (int s = 1; s < p; ++s) {
          int to = mod(r + s, p), from = mod(r - s, p);
          ops.push_back(send(to, in(u32(to)), 1, 0));
          ops.push_back(recv_reduce(from, s == 1 ? in(u32(r)) : out(0), out(0), 1, 0));
        }
        break;
      default: throw InputError("pairwise: " + std::string(to_string(info.req.coll)) + " is not supported");
    }
    return ops;
  }
};

}  // namespace

const Algorithm* make_pairwise() {
  static const PairwiseAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
