// Two-shot AllReduce: the NVSwitch / xGMI-mesh AllReduce of TensorRT-LLM's and vLLM's custom
// all-reduce kernels for mid and large sizes, where one-shot (`direct`) moves too many bytes.
//   1. direct ReduceScatter: rank r sends slice d of its input to rank d, all p-1 at once, and
//      sums its own slice r and the p-1 copies of it that arrive;
//   2. direct AllGather: rank r sends its reduced slice to every rank, all at once.
//                                 T = 2a + 2((p-1)/p) n b + ((p-1)/p) n g
// against one-shot's a + (p-1) n b + (p-1) n g: each rank sends 2((p-1)/p) n bytes instead of
// (p-1) n, so on a full mesh, where every pair has its own link, two-shot is ~p/2 times faster
// for large n (mi300x x1, 1 GiB: 4.2 ms against 16.8 ms) and one-shot wins only where its one
// step of latency matters. Its own registry entry, not an option of `direct`, so that `auto` and
// `coll-plan sweep` weigh one-shot against two-shot per size.
//
// Slice d is input / output chunk d. As in `direct`, the transfers to the peer at offset s (rank
// r+s) and from r-s run on channel (s-1) mod C, C = min(p-1, 8) or opt.channels, so transfers
// to different peers proceed concurrently; the p-1 sums into slice r are chained by deps, and
// phase 2's sends wait for the last of them.

#include <algorithm>
#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"
#include "direct_phases.h"

namespace collkit::plan {

namespace {

using namespace algo;

int mod(int a, int p) { return ((a % p) + p) % p; }
std::uint32_t u32(int x) { return static_cast<std::uint32_t>(x); }

class TwoShotAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "twoshot"; }

  std::string_view formula(Collective c) const override {
    return c == Collective::AllReduce ? "2a + 2((p-1)/p)nb + ((p-1)/p)ng, p-1 transfers at once" : "not applicable";
  }

  // As for one-shot: across many hosts every rank would push p-1 messages through its NIC at once
  // (and a plan holds p^2 transfers).
  static constexpr int kMaxSpreadRanks = 16;
  bool supports(const Request& req, const topo::Topology* topo, std::string* why) const override {
    auto say = [&](std::string text) {
      if (why) *why = std::move(text);
      return false;
    };
    if (req.coll != Collective::AllReduce)
      return say("two-shot does AllReduce only (direct does the one-shot ReduceScatter and AllGather it is made of)");
    if (topo && req.nranks > kMaxSpreadRanks && !on_one_host(req.nranks, *topo))
      return say("two-shot allreduce is for ranks on one switch-connected host or at most " + std::to_string(kMaxSpreadRanks) +
                 " ranks; these " + std::to_string(req.nranks) + " span hosts");
    return true;
  }

  PlanInfo layout(const Request& req, const topo::Topology*, const AlgoOptions& opt) const override {
    PlanInfo info;
    info.req = req;
    int p = req.nranks;
    int channels = opt.channels > 0 ? opt.channels : std::max(1, std::min(p - 1, 8));
    info.channels = static_cast<std::uint16_t>(channels);
    info.params["channels"] = std::to_string(channels);
    info.in_chunks = info.out_chunks = u32(p);
    return info;
  }

  std::vector<Op> program(const PlanInfo& info, int r) const override {
    if (info.req.coll != Collective::AllReduce) throw InputError("twoshot: " + std::string(to_string(info.req.coll)) + " is not supported");
    int p = info.req.nranks;
    int channels = param_int(info, "channels", 1);
    if (channels < 1) throw InputError("twoshot: plan parameter channels must be >= 1, got " + std::to_string(channels));
    std::vector<Op> ops;
    auto same = [](int q) { return q; };
    auto slice = [](int q) { return in(u32(q)); };
    std::uint32_t reduced = direct_reduce_scatter(ops, p, r, same, slice, 1, out(u32(r)), channels);
    for (int s = 1; s < p; ++s) {
      Op o = send(mod(r + s, p), out(u32(r)), 1, direct_lane(s, channels));
      o.depend_on(reduced);
      ops.push_back(o);
    }
    for (int s = 1; s < p; ++s) ops.push_back(recv(mod(r - s, p), out(u32(mod(r - s, p))), 1, direct_lane(s, channels)));
    return ops;
  }
};

}  // namespace

const Algorithm* make_twoshot() {
  static const TwoShotAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
