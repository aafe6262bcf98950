// Reduce by reduce-scatter + gather (Rabenseifner's Reduce; MPICH's reduce_scatter_gather): for
// large messages, where a chain's pipeline or a tree's depth costs more than moving the vector
// twice. The mirror image of scatter_allgather.
//   1. reduce-scatter of p slices, after which position v holds slice v summed over all ranks:
//      ring:   p-1 steps around the ring                       (p-1) a + ((p-1)/p) n (b + g)
//      direct: every rank sends slice q to position q at once  a + ((p-1)/p) n (b + g)
//   2. gather: every rank sends its reduced slice to the root, all at once:
//                                                              a + ((p-1)/p) n b  (the root's link)
//   T = ring: p a + 2((p-1)/p) n b + ((p-1)/p) n g;  direct: 2a + 2((p-1)/p) n b + ((p-1)/p) n g
// Non-root ranks keep their partial sums in their output, which a Reduce leaves undefined there.
//
// Ranks are taken in positions (param "order": the rank at each position, the root first; the
// topology's ring order rotated to the root, identity rotated without one). Param
// "reduce_scatter" is "direct" when a topology puts every rank on one host (a switch-connected
// domain, where a rank may talk to all others at once), else "ring". The ring variant runs C
// channels (opt.channels, default 1) each on 1/C of the vector, chunk c*p + v being channel c's
// slice v; the direct one has p chunks and, as `direct`, spreads the transfers to different peers
// over C lanes (default min(p-1, 8)).

#include <algorithm>
#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"
#include "direct_phases.h"
#include "ring_order.h"

namespace collkit::plan {

namespace {

using namespace algo;

int mod(int a, int p) { return ((a % p) + p) % p; }
std::uint32_t u32(int x) { return static_cast<std::uint32_t>(x); }

class ReduceScatterGatherAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "reducescatter_gather"; }

  std::string_view formula(Collective c) const override {
    return c == Collective::Reduce ? "ring: pa + 2((p-1)/p)nb + ((p-1)/p)ng; direct (one host): 2a + 2((p-1)/p)nb + ((p-1)/p)ng"
                                   : "not applicable";
  }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    if (req.coll == Collective::Reduce) return true;
    if (why) *why = "reduce-scatter + gather does Reduce only (scatter_allgather is its mirror for Broadcast)";
    return false;
  }

  PlanInfo layout(const Request& req, const topo::Topology* topo, const AlgoOptions& opt) const override {
    PlanInfo info;
    info.req = req;
    int p = req.nranks;
    bool direct = topo && on_one_host(p, *topo);
    int channels = opt.channels > 0 ? opt.channels : direct ? std::max(1, std::min(p - 1, 8)) : 1;
    info.channels = static_cast<std::uint16_t>(channels);
    info.params["channels"] = std::to_string(channels);
    info.params["reduce_scatter"] = direct ? "direct" : "ring";
    std::vector<int> order = ring_order(req, topo, 0);
    std::rotate(order.begin(), std::find(order.begin(), order.end(), req.root), order.end());
    bool identity = true;
    for (int q = 0; q < p; ++q) identity = identity && order[static_cast<std::size_t>(q)] == q;
    if (!identity) info.params["order"] = format_order(order);
    info.in_chunks = info.out_chunks = direct ? u32(p) : u32(channels) * u32(p);
    return info;
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    if (info.req.coll != Collective::Reduce)
      throw InputError("reducescatter_gather: " + std::string(to_string(info.req.coll)) + " is not supported");
    int p = info.req.nranks;
    int channels = param_int(info, "channels", 1);
    auto it = info.params.find("reduce_scatter");
    std::string rs = it == info.params.end() ? "ring" : it->second;
    if (rs != "ring" && rs != "direct")
      throw InputError("reducescatter_gather: plan parameter reduce_scatter=\"" + rs + "\": expected ring or direct");
    std::uint32_t want = rs == "direct" ? u32(p) : u32(channels) * u32(p);
    if (channels < 1 || info.in_chunks != want || info.out_chunks != want)
      throw InputError("reducescatter_gather: plan parameter channels=" + std::to_string(channels) + " does not match " +
                       std::to_string(info.out_chunks) + " chunks for " + std::to_string(p) + " ranks");
    auto order = shared_order(info, "order", p);
    auto at = [&order](int v) { return order->at[static_cast<std::size_t>(v)]; };
    int v = order->pos[static_cast<std::size_t>(rank)];
    std::vector<Op> ops;
    if (rs == "direct") {
      auto slice = [](int q) { return in(u32(q)); };
      std::uint32_t reduced = direct_reduce_scatter(ops, p, v, at, slice, 1, out(u32(v)), channels);
      // Position v's gather transfer is its one to offset p-v, on that offset's lane.
      if (v != 0) {
        Op o = send(at(0), out(u32(v)), 1, direct_lane(p - v, channels));
        o.depend_on(reduced);
        ops.push_back(o);
      } else {
        for (int u = 1; u < p; ++u) ops.push_back(recv(at(u), out(u32(u)), 1, direct_lane(p - u, channels)));
      }
      return ops;
    }
    for (int c = 0; c < channels; ++c) ring_channel(ops, p, v, at, c);
    return ops;
  }

 private:
  // Ring reduce-scatter of channel c's slices, partial sums in the output, then the gather.
  template <class At>
  static void ring_channel(std::vector<Op>& ops, int p, int v, const At& at, int c) {
    auto ch = static_cast<std::uint16_t>(c);
    std::uint32_t base = u32(c) * u32(p);
    auto slice = [base](int q) { return base + u32(q); };
    if (p == 1) {
      ops.push_back(copy(in(base), out(base), 1, ch));
      return;
    }
    int next = at(mod(v + 1, p)), prev = at(mod(v - 1, p));
    // Step t sends the partial sum of slice v-t-1 received at step t-1 and adds its own input to
    // slice v-t-2; the last step completes slice v.
    for (int t = 0; t + 1 < p; ++t) {
      int qs = mod(v - t - 1, p), qr = mod(v - t - 2, p);
      ops.push_back(send(next, t == 0 ? in(slice(qs)) : out(slice(qs)), 1, ch));
      ops.push_back(recv_reduce(prev, in(slice(qr)), out(slice(qr)), 1, ch));
    }
    if (v != 0) {
      ops.push_back(send(at(0), out(slice(v)), 1, ch));
    } else {
      for (int u = 1; u < p; ++u) ops.push_back(recv(at(u), out(slice(u)), 1, ch));
    }
  }
};

}  // namespace

const Algorithm* make_reducescatter_gather() {
  static const ReduceScatterGatherAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
