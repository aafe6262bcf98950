// Rabenseifner's algorithm (Thakur, Rabenseifner & Gropp 2005; gloo's allreduce_halving_doubling):
// bandwidth-optimal like the ring, with log p steps per phase instead of p-1.
//
// ReduceScatter by recursive halving: at step s (mask = p/2^(s+1)) a rank sends the half of its
// current range that partner r ^ mask keeps and reduces the half it keeps; after log p steps it
// holds its own slice, summed:    T = log p a + ((p-1)/p) n (b + g)
// AllGather by recursive doubling: at step s a rank swaps all it has gathered (2^s slices) with
// r ^ 2^s:                        T = log p a + ((p-1)/p) n b
// AllReduce = the two back to back on p blocks of the vector:
//                                 T = 2 log p a + 2((p-1)/p) n b + ((p-1)/p) n g
// When p is not a power of two the first 2(p - p2) ranks fold in pairs onto p2 (recursive.h):
// the even rank sends its whole input to the odd one before the halving (+ a + n b + n g) and
// receives its result after the doubling (+ a + n b for AllReduce, + a + n/p b otherwise). For
// ReduceScatter the odd rank answers for both slices; partial sums live in a scratch copy of the
// input, since the output holds only one slice. One channel: each step depends on the last.

#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"
#include "recursive.h"

namespace collkit::plan {

namespace {

using namespace algo;

class RhdAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "rhd"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllReduce:
        return "2 log p a + 2((p-1)/p)nb + ((p-1)/p)ng; p not a power of two: + 2a + 2nb + ng to fold";
      case Collective::ReduceScatter: return "log p a + ((p-1)/p)n(b+g); p not a power of two: + 2a + nb + ng to fold";
      case Collective::AllGather: return "log p a + ((p-1)/p)nb; p not a power of two: + 2a to fold";
      default: return "not applicable";
    }
  }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    switch (req.coll) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
      case Collective::AllGather: return true;
      default:
        if (why)
          *why = "recursive halving/doubling does AllReduce, ReduceScatter and AllGather only (use bruck or pairwise "
                 "for AlltoAll, tree or direct for Broadcast and Reduce)";
        return false;
    }
  }

  PlanInfo layout(const Request& req, const topo::Topology*, const AlgoOptions&) const override {
    PlanInfo info;
    info.req = req;
    Fold f(req.nranks);
    auto up = static_cast<std::uint32_t>(req.nranks);
    switch (req.coll) {
      case Collective::AllReduce: info.in_chunks = info.out_chunks = static_cast<std::uint32_t>(f.p2); break;
      case Collective::ReduceScatter:
        info.in_chunks = up;
        info.out_chunks = 1;
        if (f.p > 1) {
          info.scratch_chunks = up;
          info.scratch_bytes = input_bytes(req);
        }
        break;
      default:
        info.in_chunks = 1;
        info.out_chunks = up;
        break;
    }
    return info;
  }

  std::vector<SymmetryAxis> symmetries(const PlanInfo& info) const override { return xor_axes(info); }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    std::vector<Op> ops;
    Fold f(info.req.nranks);
    switch (info.req.coll) {
      case Collective::AllReduce: all_reduce(ops, f, rank); break;
      case Collective::ReduceScatter: reduce_scatter(ops, f, rank); break;
      case Collective::AllGather: folded_allgather(ops, f, rank); break;
      default: throw InputError("rhd: " + std::string(to_string(info.req.coll)) + " is not supported");
    }
    return ops;
  }

 private:
  // p2 equal blocks, block v = chunk v.
  static void all_reduce(std::vector<Op>& ops, const Fold& f, int r) {
    auto n = static_cast<std::uint32_t>(f.p2);
    if (f.p == 1) {
      ops.push_back(copy(in(0), out(0), n, 0));
      return;
    }
    if (f.sits_out(r)) {
      ops.push_back(send(r + 1, in(0), n, 0));
      ops.push_back(recv(r + 1, out(0), n, 0));
      return;
    }
    if (f.absorbs(r)) ops.push_back(recv_reduce(r - 1, in(0), out(0), n, 0));
    auto block = [](int v) { return static_cast<std::uint32_t>(v); };
    int v = f.virt(r);
    halving_reduce_scatter(ops, f, v, block, Buf::Output, f.absorbs(r), 0);
    doubling_allgather(ops, f, v, block, 0);
    if (f.absorbs(r)) ops.push_back(send(r - 1, out(0), n, 0));
  }

  // Input chunk c is rank c's slice; virtual rank v reduces slices [first(v), first(v+1)).
  static void reduce_scatter(std::vector<Op>& ops, const Fold& f, int r) {
    auto up = static_cast<std::uint32_t>(f.p), ur = static_cast<std::uint32_t>(r);
    if (f.p == 1) {
      ops.push_back(copy(in(0), out(0), 1, 0));
      return;
    }
    if (f.sits_out(r)) {
      ops.push_back(send(r + 1, in(0), up, 0));
      ops.push_back(recv(r + 1, out(0), 1, 0));
      return;
    }
    if (f.absorbs(r)) ops.push_back(recv_reduce(r - 1, in(0), scratch(0), up, 0));
    halving_reduce_scatter(ops, f, f.virt(r), [&f](int v) { return static_cast<std::uint32_t>(f.first(v)); }, Buf::Scratch,
                           f.absorbs(r), 0);
    if (f.absorbs(r)) ops.push_back(send(r - 1, scratch(ur - 1), 1, 0));
    ops.push_back(copy(scratch(ur), out(0), 1, 0));
  }
};

}  // namespace

const Algorithm* make_rhd() {
  static const RhdAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
