// Recursive doubling (Thakur, Rabenseifner & Gropp 2005): the latency-optimal choice for small
// messages, log p steps each exchanging with the rank whose number differs in one bit.
//
// AllReduce: at step s every rank swaps its whole (partially reduced) vector with rank r ^ 2^s
// and adds what it receives:      T = log p (a + n b + n g)
// AllGather: at step s every rank swaps everything gathered so far (2^s slices) with r ^ 2^s:
//                                 T = log p a + ((p-1)/p) n b
// When p is not a power of two the first 2(p - p2) ranks fold in pairs onto p2 (recursive.h):
// one step in and one out, + 2a + n b (+ n g) for AllReduce, + 2a + ~(2/p) n b for AllGather.
//
// AllReduce splits the vector over C channels (opt.channels, default 1), each running the
// algorithm on its own chunk; AllGather uses one channel.

#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"
#include "recursive.h"

namespace collkit::plan {

namespace {

using namespace algo;

class RdAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "rd"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllReduce: return "log p (a + nb + ng); p not a power of two: + 2a + 2nb + ng to fold";
      case Collective::AllGather: return "log p a + ((p-1)/p)nb; p not a power of two: + 2a to fold";
      default: return "not applicable";
    }
  }

  std::vector<Knob> knobs(const Request& req, const topo::Topology*) const override {
    if (req.coll != Collective::AllReduce) return {};
    return {{"channels", {"0", "2", "4"}}};
  }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    if (req.coll == Collective::AllReduce || req.coll == Collective::AllGather) return true;
    if (why)
      *why = "recursive doubling does AllReduce and AllGather only (use rhd for ReduceScatter, bruck or pairwise for "
             "AlltoAll, tree or direct for Broadcast and Reduce)";
    return false;
  }

  PlanInfo layout(const Request& req, const topo::Topology*, const AlgoOptions& opt) const override {
    PlanInfo info;
    info.req = req;
    int channels = req.coll == Collective::AllReduce && opt.channels > 0 ? opt.channels : 1;
    info.channels = static_cast<std::uint16_t>(channels);
    info.params["channels"] = std::to_string(channels);
    auto up = static_cast<std::uint32_t>(req.nranks);
    if (req.coll == Collective::AllGather) {
      info.in_chunks = 1;
      info.out_chunks = up;
    } else {
      info.in_chunks = info.out_chunks = static_cast<std::uint32_t>(channels);
    }
    return info;
  }

  std::vector<SymmetryAxis> symmetries(const PlanInfo& info) const override { return xor_axes(info); }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    std::vector<Op> ops;
    Fold f(info.req.nranks);
    switch (info.req.coll) {
      case Collective::AllReduce: {
        int channels = param_int(info, "channels", 1);
        if (channels < 1 || static_cast<std::uint32_t>(channels) != info.in_chunks)
          throw InputError("rd: plan parameter channels=" + std::to_string(channels) + " does not match " +
                           std::to_string(info.in_chunks) + " chunks");
        for (int c = 0; c < channels; ++c) all_reduce(ops, f, rank, static_cast<std::uint32_t>(c), static_cast<std::uint16_t>(c));
        break;
      }
      case Collective::AllGather: folded_allgather(ops, f, rank); break;
      default: throw InputError("rd: " + std::string(to_string(info.req.coll)) + " is not supported");
    }
    return ops;
  }

 private:
  static void all_reduce(std::vector<Op>& ops, const Fold& f, int r, std::uint32_t x, std::uint16_t ch) {
    if (f.p == 1) {
      ops.push_back(copy(in(x), out(x), 1, ch));
      return;
    }
    if (f.sits_out(r)) {
      ops.push_back(send(r + 1, in(x), 1, ch));
      ops.push_back(recv(r + 1, out(x), 1, ch));
      return;
    }
    bool acc = f.absorbs(r);  // the partial sum already lives in the output
    if (acc) ops.push_back(recv_reduce(r - 1, in(x), out(x), 1, ch));
    int v = f.virt(r);
    for (int mask = 1; mask < f.p2; mask <<= 1) {
      int peer = f.real(v ^ mask);
      ChunkRef mine = acc ? out(x) : in(x);
      ops.push_back(send(peer, mine, 1, ch));
      ops.push_back(recv_reduce(peer, mine, out(x), 1, ch));
      acc = true;
    }
    if (f.absorbs(r)) ops.push_back(send(r - 1, out(x), 1, ch));
  }
};

}  // namespace

const Algorithm* make_rd() {
  static const RdAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
