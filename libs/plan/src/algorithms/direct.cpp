// Direct (one-shot): every transfer goes straight from the rank that has the data to the rank
// that needs it, all at once. Right for switch-connected groups (NVSwitch, one IB switch) and
// small messages, where one step of latency beats log p or p-1 steps; on anything else it
// oversubscribes links.
//
// AllReduce (one-shot, as NCCL/TensorRT-LLM do it over NVSwitch): every rank sends its whole
// vector to every other rank and sums all p copies locally.
//                                 T = a + (p-1) n b + (p-1) n g  (per-rank link, p-1 at once)
// ReduceScatter: send input slice d to rank d, sum the p-1 arrivals.
//                                 T = a + ((p-1)/p) n (b + g)
// AllGather: send the own slice to every rank.    T = a + ((p-1)/p) n b
// AlltoAll: send block d to rank d.               T = a + ((p-1)/p) n b
// Broadcast: the root sends to every rank.        T = a + (p-1) n b  (the root's link)
// Reduce: every rank sends to the root, which sums. T = a + (p-1) n (b + g)
//
// The transfer to the peer at offset s (rank r+s) runs on channel (s-1) mod C, C = min(p-1, 8)
// or opt.channels, so transfers to different peers proceed concurrently. A rank posts all its
// sends, then its receives; receives that reduce into one output are chained by dependencies
// so no two reductions write it at the same time.

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

class DirectAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "direct"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllReduce: return "a + (p-1)nb + (p-1)ng, p-1 transfers at once";
      case Collective::ReduceScatter: return "a + ((p-1)/p)n(b+g)";
      case Collective::AllGather:
      case Collective::AlltoAll: return "a + ((p-1)/p)nb";
      case Collective::Broadcast: return "a + (p-1)nb through the root's link";
      case Collective::Reduce: return "a + (p-1)n(b+g) through the root's link";
    }
    return "not applicable";
  }

  // One-shot is for switch-connected groups (an NVSwitch host) and small groups: across many
  // hosts every rank would push (p-1) whole vectors through its NIC. AlltoAll is direct by nature.
  static constexpr int kMaxSpreadRanks = 16;
  bool supports(const Request& req, const topo::Topology* topo, std::string* why) const override {
    if (!topo || req.coll == Collective::AlltoAll || req.nranks <= kMaxSpreadRanks || on_one_host(req.nranks, *topo)) return true;
    if (why)
      *why = "one-shot " + std::string(to_string(req.coll)) + " is for ranks on one switch-connected host or at most " +
             std::to_string(kMaxSpreadRanks) + " ranks; these " + std::to_string(req.nranks) + " span hosts";
    return false;
  }

  PlanInfo layout(const Request& req, const topo::Topology*, const AlgoOptions& opt) const override {
    PlanInfo info;
    info.req = req;
    int p = req.nranks;
    int channels = opt.channels > 0 ? opt.channels : std::max(1, std::min(p - 1, 8));
    info.channels = static_cast<std::uint16_t>(channels);
    info.params["channels"] = std::to_string(channels);
    auto up = u32(p);
    switch (req.coll) {
      case Collective::ReduceScatter: info.in_chunks = up; break;
      case Collective::AllGather: info.out_chunks = up; break;
      case Collective::AlltoAll: info.in_chunks = info.out_chunks = up; break;
      default: break;  // one chunk each
    }
    return info;
  }

  // Rank r sends to r + s and receives from r - s on lane (s - 1) mod lanes, as rank 0 does to
  // s and -s: the shift of every rank one place on is a symmetry (not of the rooted ones).
  std::vector<SymmetryAxis> symmetries(const PlanInfo& info) const override {
    if (info.req.coll == Collective::Broadcast || info.req.coll == Collective::Reduce) return {};
    return shift_axes(info);
  }

  std::vector<Op> program(const PlanInfo& info, int r) const override {
    int p = info.req.nranks;
    int channels = param_int(info, "channels", 1);
    if (channels < 1) throw InputError("direct: plan parameter channels must be >= 1, got " + std::to_string(channels));
    auto ch = [channels](int s) { return direct_lane(s, channels); };
    auto same = [](int q) { return q; };
    auto whole = [](int) { return in(0); };
    auto slice = [](int q) { return in(u32(q)); };
    std::vector<Op> ops;
    int root = info.req.root;
    switch (info.req.coll) {
      // Every rank sums all p copies of the vector (AllReduce) or of its own slice (ReduceScatter).
      case Collective::AllReduce: direct_reduce_scatter(ops, p, r, same, whole, 1, out(0), channels); break;
      case Collective::ReduceScatter: direct_reduce_scatter(ops, p, r, same, slice, 1, out(0), channels); break;
      // The own block's copy after the sends, so that the transfers start at once.
      case Collective::AllGather:
        for (int s = 1; s < p; ++s) ops.push_back(send(mod(r + s, p), in(0), 1, ch(s)));
        ops.push_back(copy(in(0), out(u32(r)), 1, 0));
        for (int s = 1; s < p; ++s) ops.push_back(recv(mod(r - s, p), out(u32(mod(r - s, p))), 1, ch(s)));
        break;
      case Collective::AlltoAll:
        for (int s = 1; s < p; ++s) ops.push_back(send(mod(r + s, p), in(u32(mod(r + s, p))), 1, ch(s)));
        ops.push_back(copy(in(u32(r)), out(u32(r)), 1, 0));
        for (int s = 1; s < p; ++s) ops.push_back(recv(mod(r - s, p), out(u32(mod(r - s, p))), 1, ch(s)));
        break;
      case Collective::Broadcast:
        if (r == root) {
          ops.push_back(copy(in(0), out(0), 1, 0));
          for (int s = 1; s < p; ++s) ops.push_back(send(mod(root + s, p), in(0), 1, ch(s)));
        } else {
          ops.push_back(recv(root, out(0), 1, ch(mod(r - root, p))));
        }
        break;
      case Collective::Reduce:
        if (r == root) {
          if (p == 1) ops.push_back(copy(in(0), out(0), 1, 0));
          // Receive from root+s on channel ch(s), as the reduce-scatter does from r-s: mirror the offsets.
          for (int s = 1; s < p; ++s) {
            Op o = recv_reduce(mod(root + s, p), s == 1 ? in(0) : out(0), out(0), 1, ch(s));
            if (s > 1) o.depend_on(u32(static_cast<int>(ops.size()) - 1));
            ops.push_back(o);
          }
        } else {
          ops.push_back(send(root, in(0), 1, ch(mod(r - root, p))));
        }
        break;
    }
    return ops;
  }
};

}  // namespace

const Algorithm* make_direct() {
  static const DirectAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
