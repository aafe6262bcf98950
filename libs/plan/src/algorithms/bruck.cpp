// Bruck et al. 1997: ceil(log p) steps for any p, trading a local rotation for the latency of
// the ring or pairwise exchange.
//
// AllGather: scratch block i holds the slice of rank r+i (mod p). Block 0 is the rank's own;
// at step d = 1, 2, 4, ... it sends blocks [0, min(d, p-d)) to rank r-d and receives the same
// count from rank r+d into blocks [d, ...). A final local rotation (two copies) puts block i at
// output slot r+i.                T = ceil(log p) a + ((p-1)/p) n b
// AlltoAll (index-bit rotation): rotate the input up by r so scratch block i holds the data for
// rank r+i; at step d = 2^k send every block whose index has bit k set to rank r+d and receive
// the same blocks from rank r-d; block i thus travels i ranks in binary. Then block i holds
// rank (r-i)'s data for r, copied to output slot r-i. Blocks of one step are packed into one
// message (one a per step) unless they already form a contiguous run.
//                                 T = ceil(log p) a + (n/2) ceil(log p) b (+ local copies)
// Scratch: p blocks (AllGather), p blocks plus two packing areas (AlltoAll).

#include <algorithm>
#include <string>
#include <utility>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"

namespace collkit::plan {

namespace {

using namespace algo;

using Run = std::pair<std::uint32_t, std::uint32_t>;  // [first, first + count)

// Maximal runs of indices in [0, p) with bit `d` set.
std::vector<Run> runs_with_bit(int p, int d) {
  std::vector<Run> runs;
  for (int i = d; i < p; i += 2 * d) runs.emplace_back(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(std::min(d, p - i)));
  return runs;
}

// Size of the largest packing area any step needs (0 when every step is one run).
std::uint32_t pack_chunks(int p) {
  std::uint32_t h = 0;
  for (int d = 1; d < p; d *= 2) {
    auto runs = runs_with_bit(p, d);
    if (runs.size() < 2) continue;
    std::uint32_t n = 0;
    for (const Run& run : runs) n += run.second;
    h = std::max(h, n);
  }
  return h;
}

int mod(int a, int p) { return ((a % p) + p) % p; }

class BruckAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "bruck"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllGather: return "ceil(log p)a + ((p-1)/p)nb, plus a local rotation";
      case Collective::AlltoAll: return "ceil(log p)a + (n/2)ceil(log p)b, plus local rotations and packing";
      default: return "not applicable";
    }
  }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    if (req.coll == Collective::AllGather || req.coll == Collective::AlltoAll) return true;
    if (why)
      *why = "Bruck's algorithm does AllGather and AlltoAll only (use ring, rd or rhd for the reductions, tree or direct "
             "for Broadcast)";
    return false;
  }

  PlanInfo layout(const Request& req, const topo::Topology*, const AlgoOptions&) const override {
    PlanInfo info;
    info.req = req;
    int p = req.nranks;
    auto up = static_cast<std::uint32_t>(p);
    if (req.coll == Collective::AllGather) {
      info.in_chunks = 1;
      info.out_chunks = up;
      if (p > 1) {
        info.scratch_chunks = up;
        info.scratch_bytes = output_bytes(req);
      }
    } else {
      info.in_chunks = info.out_chunks = up;
      if (p > 1) {
        info.scratch_chunks = up + 2 * pack_chunks(p);
        info.scratch_bytes = input_bytes(req) / up * info.scratch_chunks;
      }
    }
    return info;
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    std::vector<Op> ops;
    int p = info.req.nranks;
    if (p == 1) {
      ops.push_back(copy(in(0), out(0), 1, 0));
      return ops;
    }
    switch (info.req.coll) {
      case Collective::AllGather: all_gather(ops, p, rank); break;
      case Collective::AlltoAll: all_to_all(ops, p, rank); break;
      default: throw InputError("bruck: " + std::string(to_string(info.req.coll)) + " is not supported");
    }
    return ops;
  }

 private:
  static void all_gather(std::vector<Op>& ops, int p, int r) {
    auto up = static_cast<std::uint32_t>(p), ur = static_cast<std::uint32_t>(r);
    ops.push_back(copy(in(0), scratch(0), 1, 0));
    for (int d = 1; d < p; d *= 2) {
      auto cnt = static_cast<std::uint32_t>(std::min(d, p - d));
      ops.push_back(send(mod(r - d, p), scratch(0), cnt, 0));
      ops.push_back(recv(mod(r + d, p), scratch(static_cast<std::uint32_t>(d)), cnt, 0));
    }
    // Block i belongs to rank r+i: blocks [0, p-r) go to [r, p), blocks [p-r, p) to [0, r).
    ops.push_back(copy(scratch(0), out(ur), up - ur, 0));
    if (r > 0) ops.push_back(copy(scratch(up - ur), out(0), ur, 0));
  }

  static void all_to_all(std::vector<Op>& ops, int p, int r) {
    auto up = static_cast<std::uint32_t>(p), ur = static_cast<std::uint32_t>(r);
    std::uint32_t h = pack_chunks(p);
    const std::uint32_t send_area = up, recv_area = up + h;
    // Rotate up by r: block i is for rank r+i.
    ops.push_back(copy(in(ur), scratch(0), up - ur, 0));
    if (r > 0) ops.push_back(copy(in(0), scratch(up - ur), ur, 0));
    for (int d = 1; d < p; d *= 2) {
      int to = mod(r + d, p), from = mod(r - d, p);
      auto runs = runs_with_bit(p, d);
      if (runs.size() == 1) {
        ops.push_back(send(to, scratch(runs[0].first), runs[0].second, 0));
        ops.push_back(recv(from, scratch(runs[0].first), runs[0].second, 0));
        continue;
      }
      std::uint32_t off = 0;
      for (const Run& run : runs) {
        ops.push_back(copy(scratch(run.first), scratch(send_area + off), run.second, 0));
        off += run.second;
      }
      ops.push_back(send(to, scratch(send_area), off, 0));
      ops.push_back(recv(from, scratch(recv_area), off, 0));
      off = 0;
      for (const Run& run : runs) {
        ops.push_back(copy(scratch(recv_area + off), scratch(run.first), run.second, 0));
        off += run.second;
      }
    }
    // Block i came from rank r-i.
    for (int i = 0; i < p; ++i)
      ops.push_back(copy(scratch(static_cast<std::uint32_t>(i)), out(static_cast<std::uint32_t>(mod(r - i, p))), 1, 0));
  }
};

}  // namespace

const Algorithm* make_bruck() {
  static const BruckAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
