// Trees: NCCL's double binary tree for AllReduce (Sanders, Speck & Traeff 2009; NCCL 2.4), a
// pipelined binary tree for Broadcast and Reduce.
//
// The binary tree is NCCL's ncclGetBtree over ranks 0..p-1: rank r's parent clears r's lowest
// set bit and sets the next one (or only clears it, when that leaves the range); its children
// are r -/+ half its lowest bit; rank 0 is the root with the single child 2^floor(log2(p-1)).
// Odd ranks are leaves. The second tree mirrors the first (r -> p-1-r) when p is even and shifts
// it by one (r -> r+1) when p is odd, so the first tree's leaves are the second's interior
// nodes: every rank is interior in at most one tree (rank 0, the first root, excepted when p
// is odd), and the two trees together use each rank's links evenly.
//
// AllReduce: each tree carries half the vector, pipelined over k chunks. Per chunk, a rank
// receives and sums its children's partial sums and sends the result to its parent (reduce up);
// the root then has the total and sends it back down (broadcast down). Up and down run on
// separate channels (tree t: channels 2t and 2t+1), so chunk j+1 goes up while chunk j comes
// down; a rank's down-step for chunk j waits on its up-step for chunk j.
//                                 T = (2 ceil(log p) + k) a + 2 n b + n g  (k chunks per tree)
// Broadcast / Reduce: one binary tree rooted at the root (ranks renumbered r -> r - root),
// pipelined over k chunks on one channel; an interior rank forwards each chunk to two children.
//                                 T = (ceil(log p) + k)(a + 2 (n/k) b)  (+ n g for Reduce)

#include <array>
#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"

namespace collkit::plan {

namespace {

using namespace algo;

struct Node {
  int parent = -1;
  std::array<int, 2> child{-1, -1};
};

// NCCL's ncclGetBtree (src/graph/trees.cc), written out.
Node btree(int p, int r) {
  Node n;
  int bit = 1;
  while (bit < p && (bit & r) == 0) bit <<= 1;
  if (r == 0) {
    if (p > 1) n.child[1] = bit >> 1;
    return n;
  }
  n.parent = (r ^ bit) | (bit << 1);
  if (n.parent >= p) n.parent = r ^ bit;
  int low = bit >> 1;
  if (low == 0) return n;
  n.child[0] = r - low;
  while (low > 0 && r + low >= p) low >>= 1;
  n.child[1] = low > 0 ? r + low : -1;
  return n;
}

// The same tree with every rank x renamed map(x).
template <class Map>
Node renamed(int p, int v, Map map) {
  Node b = btree(p, v);
  Node n;
  n.parent = b.parent < 0 ? -1 : map(b.parent);
  for (std::size_t i = 0; i < 2; ++i) n.child[i] = b.child[i] < 0 ? -1 : map(b.child[i]);
  return n;
}

// Tree t (0 or 1) of the double binary tree, seen from rank r.
Node dtree(int p, int r, int t) {
  if (t == 0) return btree(p, r);
  if (p % 2 == 0) return renamed(p, p - 1 - r, [p](int x) { return p - 1 - x; });
  return renamed(p, (r - 1 + p) % p, [p](int x) { return (x + 1) % p; });
}

// The binary tree rooted at `root`.
Node rooted(int p, int r, int root) {
  return renamed(p, (r - root + p) % p, [p, root](int x) { return (x + root) % p; });
}

class TreeAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "tree"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllReduce: return "(2ceil(log p) + k)a + 2nb + ng, double binary tree, k chunks per tree";
      case Collective::Broadcast: return "(ceil(log p) + k)(a + 2(n/k)b), pipelined binary tree of k chunks";
      case Collective::Reduce: return "(ceil(log p) + k)(a + 2(n/k)(b+g)), pipelined binary tree of k chunks";
      default: return "not applicable";
    }
  }

  // Deeper pipelines fill the tree's log p levels with more, smaller chunks.
  std::vector<Knob> knobs(const Request&, const topo::Topology*) const override { return {{"pipeline", {"0", "32", "128"}}}; }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    switch (req.coll) {
      case Collective::AllReduce:
      case Collective::Broadcast:
      case Collective::Reduce: return true;
      default:
        if (why)
          *why = "trees do AllReduce, Broadcast and Reduce only (use ring, rhd, bruck, pairwise or direct for " +
                 std::string(to_string(req.coll)) + ")";
        return false;
    }
  }

  PlanInfo layout(const Request& req, const topo::Topology*, const AlgoOptions& opt) const override {
    PlanInfo info;
    info.req = req;
    int k = opt.pipeline > 0 ? opt.pipeline : 8;
    bool two = req.coll == Collective::AllReduce;
    info.params["pipeline"] = std::to_string(k);
    info.channels = two ? 4 : 1;
    info.in_chunks = info.out_chunks = static_cast<std::uint32_t>(two ? 2 * k : k);
    return info;
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    int p = info.req.nranks;
    int k = param_int(info, "pipeline", 8);
    bool two = info.req.coll == Collective::AllReduce;
    if (k < 1 || info.in_chunks != static_cast<std::uint32_t>(two ? 2 * k : k))
      throw InputError("tree: plan parameter pipeline=" + std::to_string(k) + " does not match " +
                       std::to_string(info.in_chunks) + " chunks");
    std::vector<Op> ops;
    if (p == 1) {
      ops.push_back(copy(in(0), out(0), info.out_chunks, 0));
      return ops;
    }
    switch (info.req.coll) {
      case Collective::AllReduce: all_reduce(ops, p, rank, k); break;
      case Collective::Broadcast: broadcast(ops, rooted(p, rank, info.req.root), rank == info.req.root, k); break;
      case Collective::Reduce: {
        std::vector<std::uint32_t> unused(static_cast<std::size_t>(k));
        reduce_up(ops, rooted(p, rank, info.req.root), 0, k, 0, unused);
        break;
      }
      default: throw InputError("tree: " + std::string(to_string(info.req.coll)) + " is not supported");
    }
    return ops;
  }

 private:
  // Reduce chunks [base, base+k) up the tree on channel ch; last[j] = the op after which chunk
  // base+j of the output is final for this rank's part (its last write or read).
  static void reduce_up(std::vector<Op>& ops, const Node& n, std::uint32_t base, int k, std::uint16_t ch,
                        std::vector<std::uint32_t>& last) {
    for (int j = 0; j < k; ++j) {
      std::uint32_t x = base + static_cast<std::uint32_t>(j);
      bool summed = false;
      for (int c : n.child) {
        if (c < 0) continue;
        ops.push_back(recv_reduce(c, summed ? out(x) : in(x), out(x), 1, ch));
        summed = true;
      }
      if (n.parent >= 0) ops.push_back(send(n.parent, summed ? out(x) : in(x), 1, ch));
      if (!summed && n.parent < 0) ops.push_back(copy(in(x), out(x), 1, ch));
      last[static_cast<std::size_t>(j)] = static_cast<std::uint32_t>(ops.size() - 1);
    }
  }

  static void broadcast(std::vector<Op>& ops, const Node& n, bool root, int k) {
    auto uk = static_cast<std::uint32_t>(k);
    if (root) ops.push_back(copy(in(0), out(0), uk, 0));
    for (std::uint32_t x = 0; x < uk; ++x) {
      if (!root) ops.push_back(recv(n.parent, out(x), 1, 0));
      for (int c : n.child)
        if (c >= 0) ops.push_back(send(c, root ? in(x) : out(x), 1, 0));
    }
  }

  // Both trees up (channels 0 and 2), then both down (channels 1 and 3).
  static void all_reduce(std::vector<Op>& ops, int p, int r, int k) {
    std::array<std::vector<std::uint32_t>, 2> last;
    std::array<Node, 2> node{dtree(p, r, 0), dtree(p, r, 1)};
    for (int t = 0; t < 2; ++t) {
      last[static_cast<std::size_t>(t)].resize(static_cast<std::size_t>(k));
      reduce_up(ops, node[static_cast<std::size_t>(t)], static_cast<std::uint32_t>(t * k), k, static_cast<std::uint16_t>(2 * t),
                last[static_cast<std::size_t>(t)]);
    }
    for (int t = 0; t < 2; ++t) {
      const Node& n = node[static_cast<std::size_t>(t)];
      bool interior = n.child[0] >= 0 || n.child[1] >= 0;
      auto ch = static_cast<std::uint16_t>(2 * t + 1);
      for (int j = 0; j < k; ++j) {
        std::uint32_t x = static_cast<std::uint32_t>(t * k + j);
        std::uint32_t up_done = last[static_cast<std::size_t>(t)][static_cast<std::size_t>(j)];
        bool first = true;
        if (n.parent >= 0) {
          // Overwrites out(x), which the up-step may still be sending from.
          Op o = recv(n.parent, out(x), 1, ch);
          if (interior) o.depend_on(up_done);
          ops.push_back(o);
          first = false;
        }
        for (int c : n.child) {
          if (c < 0) continue;
          Op o = send(c, out(x), 1, ch);
          if (first) o.depend_on(up_done);  // the root: the sum is complete
          first = false;
          ops.push_back(o);
        }
      }
    }
  }
};

}  // namespace

const Algorithm* make_tree() {
  static const TreeAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
