// Broadcast by scatter + allgather (van de Geijn; MPICH's scatter_ring_allgather and
// scatter_recursive_doubling_allgather, Open MPI's scatter_allgather): for large messages, where
// a chain's pipeline or a tree's depth costs more than moving the vector twice.
//   1. scatter: the root splits the vector into p slices and sends slice v to position v;
//   2. allgather of the slices.
// Param "allgather" picks both phases' shape:
//   ring: binomial scatter (position v receives slices [v, v + lowbit(v)) from v - lowbit(v) and
//         hands the upper halves on, largest first), then p-1 ring steps, each rank passing on
//         the slice it got last:  T = (ceil(log p) + p-1) a + 2((p-1)/p) n b
//   rd (p a power of two): binomial scatter, then log p exchanges of doubling groups:
//                               T = 2 log p a + 2((p-1)/p) n b
//   direct: the root sends every slice at once, then every rank sends its slice to every other
//         at once, p-1 transfers on separate lanes as in `direct`:  T = 2a + 2((p-1)/p) n b
//         (on a full mesh 2a + 2(n/p) b: the root's links carry n/p each, not n as one-shot's)
// No rank receives a slice it already holds: the root receives nothing, and a rank skips the
// allgather transfers of the slices its scatter subtree brought it (the sender skips them too).
// Default: "direct" when a topology puts every rank on one host (a switch-connected domain),
// "ring" across hosts (the doubling's last steps would push n/2 per rank through the NICs; a
// ring crosses each host boundary once), and without a topology "rd" for a power of two, else
// "ring".
//
// Ranks are taken in positions (param "order": the rank at each position, the root first; the
// topology's ring order rotated to the root, identity rotated without one), so ring neighbours
// and the first doubling partners are NVLink neighbours. Ring and rd run C channels
// (opt.channels, default 1) each on 1/C of the vector, chunk c*p + v being channel c's slice v;
// direct has p chunks and spreads its transfers over C lanes (default min(p-1, 8)).

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
bool power_of_two(int p) { return p > 0 && (p & (p - 1)) == 0; }

// Which slices each position holds after the binomial scatter: [v, v + low(v)), all for the root.
struct Scatter {
  int p = 1, top = 1;  // top: the smallest power of two >= p
  explicit Scatter(int nranks) : p(nranks) {
    while (top < p) top *= 2;
  }
  int low(int v) const { return v == 0 ? top : v & -v; }
  bool holds(int v, int q) const { return v == 0 || (q >= v && q < v + low(v)); }
};

class ScatterAllgatherAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "scatter_allgather"; }

  std::string_view formula(Collective c) const override {
    return c == Collective::Broadcast
               ? "ring: (ceil(log p) + p-1)a + 2((p-1)/p)nb; rd (p a power of two): 2 log p a + 2((p-1)/p)nb; direct (one "
                 "host): 2a + 2((p-1)/p)nb"
               : "not applicable";
  }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    if (req.coll == Collective::Broadcast) return true;
    if (why) *why = "scatter + allgather does Broadcast only (reducescatter_gather is its mirror for Reduce)";
    return false;
  }

  PlanInfo layout(const Request& req, const topo::Topology* topo, const AlgoOptions& opt) const override {
    PlanInfo info;
    info.req = req;
    int p = req.nranks;
    std::string ag = topo ? (on_one_host(p, *topo) ? "direct" : "ring") : (power_of_two(p) ? "rd" : "ring");
    int channels = opt.channels > 0 ? opt.channels : ag == "direct" ? std::max(1, std::min(p - 1, 8)) : 1;
    info.channels = static_cast<std::uint16_t>(channels);
    info.params["channels"] = std::to_string(channels);
    info.params["allgather"] = ag;
    std::vector<int> order = ring_order(req, topo, 0);
    std::rotate(order.begin(), std::find(order.begin(), order.end(), req.root), order.end());
    bool identity = true;
    for (int q = 0; q < p; ++q) identity = identity && order[static_cast<std::size_t>(q)] == q;
    if (!identity) info.params["order"] = format_order(order);
    info.in_chunks = info.out_chunks = ag == "direct" ? u32(p) : u32(channels) * u32(p);
    return info;
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    if (info.req.coll != Collective::Broadcast)
      throw InputError("scatter_allgather: " + std::string(to_string(info.req.coll)) + " is not supported");
    int p = info.req.nranks;
    int channels = param_int(info, "channels", 1);
    auto it = info.params.find("allgather");
    std::string ag = it == info.params.end() ? "ring" : it->second;
    if (ag != "ring" && ag != "rd" && ag != "direct")
      throw InputError("scatter_allgather: plan parameter allgather=\"" + ag + "\": expected ring, rd or direct");
    if (ag == "rd" && !power_of_two(p))
      throw InputError("scatter_allgather: plan parameter allgather=rd needs a power-of-two rank count, got " + std::to_string(p));
    std::uint32_t want = ag == "direct" ? u32(p) : u32(channels) * u32(p);
    if (channels < 1 || info.in_chunks != want || info.out_chunks != want)
      throw InputError("scatter_allgather: plan parameter channels=" + std::to_string(channels) + " does not match " +
                       std::to_string(info.out_chunks) + " chunks for " + std::to_string(p) + " ranks");
    auto order = shared_order(info, "order", p);
    auto at = [&order](int v) { return order->at[static_cast<std::size_t>(v)]; };
    int v = order->pos[static_cast<std::size_t>(rank)];
    std::vector<Op> ops;
    if (ag == "direct") {
      direct(ops, p, v, at, channels);
      return ops;
    }
    Scatter sc(p);
    for (int c = 0; c < channels; ++c) {
      auto ch = static_cast<std::uint16_t>(c);
      std::uint32_t base = u32(c) * u32(p);
      // The root sends from its input; the others pass on what they received.
      auto held = [&](int q) { return v == 0 ? in(base + u32(q)) : out(base + u32(q)); };
      if (v != 0) ops.push_back(recv(at(v - sc.low(v)), out(base + u32(v)), u32(std::min(v + sc.low(v), p) - v), ch));
      for (int m = sc.low(v) / 2; m >= 1; m /= 2)
        if (v + m < p) ops.push_back(send(at(v + m), held(v + m), u32(std::min(v + 2 * m, p) - (v + m)), ch));
      if (ag == "ring") {
        int next = mod(v + 1, p), prev = mod(v - 1, p);
        for (int t = 0; t + 1 < p; ++t) {
          int qs = mod(v - t, p), qr = mod(v - t - 1, p);
          if (!sc.holds(next, qs)) ops.push_back(send(at(next), held(qs), 1, ch));
          if (!sc.holds(v, qr)) ops.push_back(recv(at(prev), out(base + u32(qr)), 1, ch));
        }
      } else {
        // Before the step of `mask`, a position holds its aligned group of `mask` slices.
        for (int mask = 1; mask < p; mask <<= 1) {
          int w = v ^ mask, mine = v & ~(mask - 1), theirs = w & ~(mask - 1);
          if (!sc.holds(w, mine)) ops.push_back(send(at(w), held(mine), u32(mask), ch));
          if (!sc.holds(v, theirs)) ops.push_back(recv(at(w), out(base + u32(theirs)), u32(mask), ch));
        }
      }
      // Last, so the root's transfers start at once (they read the input, not this copy).
      if (v == 0) ops.push_back(copy(in(base), out(base), u32(p), ch));
    }
    return ops;
  }

 private:
  // The transfer from position u to w runs on the lane of offset w-u. The root sends slice v and
  // then slice 0 to each position v; position v passes slice v on to every position but the root.
  template <class At>
  static void direct(std::vector<Op>& ops, int p, int v, const At& at, int lanes) {
    auto lane = [p, lanes](int offset) { return direct_lane(mod(offset, p), lanes); };
    if (v == 0) {
      for (int s = 1; s < p; ++s) ops.push_back(send(at(s), in(u32(s)), 1, lane(s)));
      for (int s = 1; s < p; ++s) ops.push_back(send(at(s), in(0), 1, lane(s)));
      ops.push_back(copy(in(0), out(0), u32(p), 0));
      return;
    }
    auto got = static_cast<std::uint32_t>(ops.size());
    ops.push_back(recv(at(0), out(u32(v)), 1, lane(v)));
    for (int s = 1; s < p; ++s) {
      if (mod(v + s, p) == 0) continue;
      Op o = send(at(mod(v + s, p)), out(u32(v)), 1, lane(s));
      o.depend_on(got);
      ops.push_back(o);
    }
    for (int s = 1; s < p; ++s) ops.push_back(recv(at(mod(v - s, p)), out(u32(mod(v - s, p))), 1, lane(s)));
  }
};

}  // namespace

const Algorithm* make_scatter_allgather() {
  static const ScatterAllgatherAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
