// Straggler-aware AllReduce (StragglAR's idea, arXiv 2505.23523): one rank s is slow, every
// byte through its links costs more; the other m = p-1 ranks reduce among themselves while s's
// data is still on its way, and s's links carry as few bytes as an AllReduce allows.
//   - The buffer is m slices, slice k owned by fast rank f_k (the ranks other than s, in order),
//     each slice cut into P pieces (params "pipeline", default 4).
//   - s sends piece q of slice k to f_k, all m slices at once on channel k (one channel per link
//     of s), and receives the result of slice k back from f_k on the same channel.
//   - The fast ranks run a ring ReduceScatter over the slices among themselves (channel m); f_k
//     then adds s's pieces of slice k as they arrive and returns each at once to s (piece by
//     piece, so s's two directions overlap), then the fast ring AllGathers the finished slices.
// Every element must cross s's boundary twice (s's value out and the sum in, or the partial sum
// in and the sum out), 2n bytes over s's 2m link-directions: n/m per link and direction is the
// least, which this plan moves (a ring moves 2((p-1)/p)n through each of s's two ring links, a
// two-shot n/p twice each way). With pieces pipelined, s's part takes ~(1 + 1/P) n/m at s's
// links' rate; the fast ranks' ring, 2((m-1)/m)n at theirs, runs beside it.
//   T ~ max(2(m-1)a + 2((m-1)/m)n b + ((m-1)/m)n g,  2Pa + (1 + 1/P)(n/m) b_s) + (n/m) g
// A rank whose one NIC is what is slow (a shared bandwidth, not per link) would take 2n through
// it here against a ring's 2((p-1)/p)n; this plan is for a rank whose links are slow each
// (coll-run --inject slow-rank, docs/adapt.md), or late.

#include <algorithm>
#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"

namespace collkit::plan {

namespace {

using namespace algo;

int mod(int a, int p) { return ((a % p) + p) % p; }
std::uint32_t u32(int x) { return static_cast<std::uint32_t>(x); }
std::uint16_t u16(int x) { return static_cast<std::uint16_t>(x); }

constexpr int kDefaultPipeline = 4;

class StragglerAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "straggler"; }

  std::string_view formula(Collective c) const override {
    return c == Collective::AllReduce ? "max(fast ring of p-1: 2((p-2)/(p-1))nb, straggler: (1+1/P)(n/(p-1))b_s) + (n/(p-1))g"
                                      : "not applicable";
  }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    auto say = [&](std::string text) {
      if (why) *why = std::move(text);
      return false;
    };
    if (req.coll != Collective::AllReduce) return say("straggler does AllReduce only");
    if (req.nranks < 2) return say("straggler needs a slow rank and at least one other (2 ranks or more)");
    return true;
  }

  // Laid out around a rank that coll-run adapt names at run time: on a healthy network it is an
  // uneven plan that `auto` has no reason to weigh.
  bool in_auto(const Request&, const topo::Topology*, std::string* why) const override {
    if (why) *why = "straggler is laid out around a slow rank that coll-run adapt finds; auto does not weigh it";
    return false;
  }

  PlanInfo layout(const Request& req, const topo::Topology*, const AlgoOptions& opt) const override {
    PlanInfo info;
    info.req = req;
    int p = req.nranks, m = p - 1;
    int pieces = opt.pipeline > 0 ? opt.pipeline : kDefaultPipeline;
    info.params["straggler"] = std::to_string(p - 1);
    info.params["pipeline"] = std::to_string(pieces);
    info.channels = u16(m + 1);
    info.in_chunks = info.out_chunks = u32(m * pieces);
    return info;
  }

  std::vector<Op> program(const PlanInfo& info, int r) const override {
    if (info.req.coll != Collective::AllReduce)
      throw InputError("straggler: " + std::string(to_string(info.req.coll)) + " is not supported");
    int p = info.req.nranks, m = p - 1;
    if (m < 1) throw InputError("straggler: needs 2 ranks or more");
    int s = param_int(info, "straggler", p - 1);
    int pieces = param_int(info, "pipeline", kDefaultPipeline);
    if (s < 0 || s >= p) throw InputError("straggler: plan parameter straggler must be a rank of 0.." + std::to_string(p - 1));
    if (pieces < 1) throw InputError("straggler: plan parameter pipeline must be >= 1, got " + std::to_string(pieces));
    if (info.in_chunks != u32(m * pieces) || info.out_chunks != u32(m * pieces) || info.channels != u16(m + 1))
      throw InputError("straggler: the plan's chunks and channels do not match its pipeline (expected " + std::to_string(m * pieces) +
                       " chunks, " + std::to_string(m + 1) + " channels)");
    auto fast = [&](int k) { return k < s ? k : k + 1; };  // fast index -> rank
    auto slice = [&](int k) { return u32(k * pieces); };   // its first chunk
    const std::uint32_t P = u32(pieces);
    std::vector<Op> ops;
    if (r == s) {
      for (int k = 0; k < m; ++k)
        for (int q = 0; q < pieces; ++q) ops.push_back(send(fast(k), in(slice(k) + u32(q)), 1, u16(k)));
      for (int k = 0; k < m; ++k)
        for (int q = 0; q < pieces; ++q) ops.push_back(recv(fast(k), out(slice(k) + u32(q)), 1, u16(k)));
      return ops;
    }
    int k = r < s ? r : r - 1;
    const std::uint16_t ring = u16(m);
    int right = fast(mod(k + 1, m)), left = fast(mod(k - 1, m));
    // 1. Ring ReduceScatter among the fast ranks: slice k summed over them into out.
    std::uint32_t reduced = 0;
    if (m == 1) {
      ops.push_back(copy(in(slice(k)), out(slice(k)), P, ring));
    } else {
      for (int j = 0; j + 1 < m; ++j) {
        int sent = mod(k - j - 1, m), got = mod(k - j - 2, m);
        ops.push_back(send(right, j == 0 ? in(slice(sent)) : out(slice(sent)), P, ring));
        ops.push_back(recv_reduce(left, in(slice(got)), out(slice(got)), P, ring));
      }
    }
    reduced = u32(static_cast<int>(ops.size()) - 1);
    // 2. The straggler's pieces of slice k, added as they come, each sent back at once.
    std::uint32_t last_piece = 0;
    for (int q = 0; q < pieces; ++q) {
      Op o = recv_reduce(s, out(slice(k) + u32(q)), out(slice(k) + u32(q)), 1, u16(k));
      if (q == 0) o.depend_on(reduced);
      ops.push_back(o);
      last_piece = u32(static_cast<int>(ops.size()) - 1);
      ops.push_back(send(s, out(slice(k) + u32(q)), 1, u16(k)));
    }
    // 3. Ring AllGather of the finished slices among the fast ranks.
    for (int j = 0; j + 1 < m; ++j) {
      int sent = mod(k - j, m), got = mod(k - j - 1, m);
      Op o = send(right, out(slice(sent)), P, ring);
      if (j == 0) o.depend_on(last_piece);
      ops.push_back(o);
      ops.push_back(recv(left, out(slice(got)), P, ring));
    }
    return ops;
  }
};

}  // namespace

const Algorithm* make_straggler() {
  static const StragglerAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
