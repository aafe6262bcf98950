// Synthesised AllGather (docs/synth.md, ForestColl arXiv 2402.06787): k spanning out-trees per
// rank, packed into the links sends are routed over at the best rate k trees allow
// (synth/routed.h, rate.h, split.h, trees.h). Each rank's input is split into k pieces, one per
// tree it roots, each piece into `pipeline` chunks; along a tree every rank receives a chunk from
// its parent and forwards it to its children, so chunk i+1 comes down while chunk i goes on, each
// tree arc on a channel of its own. Param "channels" is k (the --channels flag: trees per rank,
// not the plan's channel count, which is p k times the largest fan-out). The trees are stored in
// the plan (param "trees": per tree, every rank's parent, -1 at the root; trees by root rank, k
// each) so that a rank's program needs no topology.
//                                 T ~ (depth + m - 1) (n / (p k m)) / u, u = one tree's rate

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "bounds_internal.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "common.h"
#include "synth/rate.h"
#include "synth/routed.h"
#include "synth/split.h"
#include "synth/trees.h"

namespace collkit::plan {

namespace {

using namespace algo;

/// Rank vertices beyond this: not offered yet (splitting and packing grow as p^3 max flows; 32
/// dgx-a100 ranks take seconds, docs/synth.md).
constexpr int kMaxRanks = 16;
constexpr int kDefaultPipeline = 16;

/// Trees per rank when the user does not say: the fewest of 1, 2, 4 within 5% of the best rate
/// of the three (rate_for_trees; the exact k is often in the hundreds). More trees reach closer
/// to the optimum but cost channels and smaller messages: on the presets 8 simulated slower than
/// 1, 2 or 4 wherever they tie on rate, and a rate up to 4% higher with more trees did not pay
/// (dgx-a100 x2: k = 4 for 1.8% more rate took 1.13 x the bound, k = 1 1.06; docs/synth.md).
std::int64_t default_trees(const topo::Topology& t, int p) {
  std::vector<double> rate;
  for (std::int64_t k : {1, 2, 4}) rate.push_back(synth::rate_for_trees(t, p, k));
  double best = *std::max_element(rate.begin(), rate.end());
  for (std::size_t i = 0; i < rate.size(); ++i)
    if (rate[i] >= best * 0.95) return std::int64_t{1} << i;
  return 4;
}

/// Per tree (by root rank, k each), every rank's parent rank, -1 at the root. Memoised per
/// (topology, p, k): `auto` lays a plan out once per knob value.
std::vector<std::vector<int>> synthesise(const topo::Topology& t, int p, std::int64_t k) {
  // Packed over the links the sends' routes take (routed.h), not every link the rate could use.
  static std::mutex mu;
  static std::map<std::tuple<std::uint64_t, int, std::int64_t>, std::vector<std::vector<int>>> memo;
  auto key = std::make_tuple(t.fingerprint(), p, k);
  {
    std::lock_guard lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  topo::Topology routed = synth::routed_links(t, p);
  double x = synth::rate_for_trees(routed, p, k);
  synth::SplitGraph g = synth::split_switches(routed, p, k, x / static_cast<double>(k));
  synth::Packing pk = synth::pack_trees(g);
  std::vector<int> rank_of(t.num_vertices(), -1);
  for (int r = 0; r < p; ++r) rank_of[t.rank_vertex(static_cast<topo::Rank>(r))] = r;
  std::vector<std::vector<int>> trees;
  std::vector<std::vector<std::vector<int>>> by_root(static_cast<std::size_t>(p));
  for (const synth::Tree& tr : pk.trees) {
    std::vector<int> parent(static_cast<std::size_t>(p), -1);
    for (std::size_t a : tr.arcs) parent[static_cast<std::size_t>(rank_of[g.nodes[g.arcs[a].to]])] = rank_of[g.nodes[g.arcs[a].from]];
    by_root[static_cast<std::size_t>(rank_of[g.nodes[tr.root]])].push_back(std::move(parent));
  }
  for (auto& list : by_root)
    for (auto& parent : list) trees.push_back(std::move(parent));
  std::lock_guard lock(mu);
  memo.emplace(key, trees);
  return trees;
}

std::string format_trees(const std::vector<std::vector<int>>& trees) {
  std::string s;
  for (std::size_t i = 0; i < trees.size(); ++i) {
    if (i) s += ';';
    for (std::size_t r = 0; r < trees[i].size(); ++r) s += (r ? "," : "") + std::to_string(trees[i][r]);
  }
  return s;
}

/// The "trees" parameter read back and checked: p k trees, tree t rooted at rank t / k, every
/// rank's parent chain reaching the root.
std::vector<std::vector<int>> parse_trees(const PlanInfo& info, int p, int k) {
  auto it = info.params.find("trees");
  if (it == info.params.end()) throw InputError("synth: plan parameter trees is missing");
  auto bad = [](const std::string& why) { return InputError("synth: plan parameter trees: " + why); };
  std::vector<std::vector<int>> trees(1);
  const std::string& s = it->second;
  const char* c = s.data();
  const char* end = c + s.size();
  while (c < end) {
    int v = 0;
    auto [q, ec] = std::from_chars(c, end, v);
    if (ec != std::errc() || v < -1 || v >= p)
      throw bad("expected ranks -1.." + std::to_string(p - 1) + " at character " + std::to_string(c - s.data()));
    trees.back().push_back(v);
    c = q;
    if (c < end && *c == ';') trees.emplace_back();
    if (c < end && (*c == ',' || *c == ';')) ++c;
  }
  if (trees.size() != static_cast<std::size_t>(p) * static_cast<std::size_t>(k))
    throw bad(std::to_string(trees.size()) + " trees, expected " + std::to_string(p * k));
  for (std::size_t t = 0; t < trees.size(); ++t) {
    const std::vector<int>& parent = trees[t];
    int root = static_cast<int>(t) / k;
    if (parent.size() != static_cast<std::size_t>(p))
      throw bad("tree " + std::to_string(t) + " has " + std::to_string(parent.size()) + " ranks");
    for (int r = 0; r < p; ++r) {
      int at = r;
      for (int step = 0; step < p && at != root && at >= 0; ++step) at = parent[static_cast<std::size_t>(at)];
      if (at != root || parent[static_cast<std::size_t>(root)] != -1)
        throw bad("tree " + std::to_string(t) + " does not lead rank " + std::to_string(r) + " to its root " + std::to_string(root));
    }
  }
  return trees;
}

/// The most children a rank has in any tree: channels per tree.
int fanout(const std::vector<std::vector<int>>& trees) {
  int most = 1;
  for (const std::vector<int>& parent : trees) {
    std::vector<int> children(parent.size(), 0);
    for (int up : parent)
      if (up >= 0) most = std::max(most, ++children[static_cast<std::size_t>(up)]);
  }
  return most;
}

class SynthAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "synth"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllGather: return "(depth + m - 1)(n/(p k m))/u: k trees per rank packed at the topology's rate, m chunks each";
      case Collective::ReduceScatter: return "(depth + m - 1)(n/(p k m))/u + ng: the AllGather trees reversed, summing on the way up";
      case Collective::AllReduce: return "2(depth + m - 1)(n/(p k m))/u + ng: ReduceScatter up the trees, then AllGather down them";
      default: return "not applicable";
    }
  }

  std::vector<Knob> knobs(const Request&, const topo::Topology*) const override {
    return {{"channels", {"0", "1", "2", "4"}}, {"pipeline", {"0", "4", "64"}}};
  }

  bool supports(const Request& req, const topo::Topology* t, std::string* why) const override {
    auto no = [&](std::string w) {
      if (why) *why = std::move(w);
      return false;
    };
    if (req.coll != Collective::AllGather && req.coll != Collective::ReduceScatter && req.coll != Collective::AllReduce)
      return no("synth does AllGather, ReduceScatter and AllReduce only so far (docs/synth.md)");
    if (!t) return no("synth needs a topology");
    if (req.nranks > kMaxRanks) return no("synth packs trees for at most " + std::to_string(kMaxRanks) + " ranks so far");
    if (static_cast<std::size_t>(req.nranks) > t->num_ranks()) return no("the topology has fewer ranks");
    std::vector<double> w = bounds::rank_weights(*t, req.nranks);
    for (double x : w)
      if (x > 1) return no("synth needs one rank per GPU (ranks sharing a vertex are not handled yet)");
    return true;
  }

  PlanInfo layout(const Request& req, const topo::Topology* t, const AlgoOptions& opt) const override {
    std::string why;
    if (!supports(req, t, &why)) throw InputError("synth: " + why);
    PlanInfo info;
    info.req = req;
    int p = req.nranks;
    std::int64_t k = opt.channels > 0 ? opt.channels : (p > 1 ? default_trees(synth::routed_links(*t, p), p) : 1);
    int m = opt.pipeline > 0 ? opt.pipeline : kDefaultPipeline;
    // Each tree takes at least one channel (per phase): refuse before synthesising so many.
    std::int64_t phases = req.coll == Collective::AllReduce ? 2 : 1;
    if (p > 1 && phases * p * k > 65535)
      throw InputError("synth: " + std::to_string(k) + " trees per rank need at least " + std::to_string(phases * p * k) +
                       " channels, more than a plan holds (65535)");
    info.params["channels"] = std::to_string(k);
    info.params["pipeline"] = std::to_string(m);
    int slots = 1;
    if (p > 1) {
      std::vector<std::vector<int>> trees = synthesise(*t, p, k);
      slots = fanout(trees);
      info.params["trees"] = format_trees(trees);
    }
    bool both = phases == 2;
    std::int64_t channels = p > 1 ? phases * p * k * slots : 1;
    if (channels > 65535)
      throw InputError("synth: " + std::to_string(k) + " trees per rank need " + std::to_string(channels) +
                       " channels, more than a plan holds (65535)");
    info.channels = static_cast<std::uint16_t>(channels);
    auto slice = static_cast<std::uint32_t>(k * m), whole = static_cast<std::uint32_t>(p * k * m);
    bool gather = req.coll == Collective::AllGather;
    info.in_chunks = gather ? slice : whole;
    info.out_chunks = gather || both ? whole : slice;
    if (!gather && p > 1) {
      // A rank's partial sums of the slices it relays, laid out as its input.
      info.scratch_chunks = whole;
      info.scratch_bytes = input_bytes(req);
    }
    return info;
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    int p = info.req.nranks;
    int k = param_int(info, "channels", 1);
    int m = param_int(info, "pipeline", kDefaultPipeline);
    bool gather = info.req.coll == Collective::AllGather, both = info.req.coll == Collective::AllReduce;
    auto slice = static_cast<std::uint32_t>(k * m), whole = static_cast<std::uint32_t>(p * k * m);
    if (k < 1 || m < 1 || info.in_chunks != (gather ? slice : whole) || info.out_chunks != (gather || both ? whole : slice))
      throw InputError("synth: plan parameters channels=" + std::to_string(k) + ", pipeline=" + std::to_string(m) + " do not match " +
                       std::to_string(info.in_chunks) + " input chunks");
    std::vector<Op> ops;
    if (p == 1) {
      ops.push_back(copy(in(0), out(0), info.out_chunks, 0));
      return ops;
    }
    std::vector<std::vector<int>> trees = parse_trees(info, p, k);
    int slots = fanout(trees);
    if (gather)
      ops.push_back(copy(in(0), out(static_cast<std::uint32_t>(rank) * slice), slice, static_cast<std::uint16_t>(rank * k * slots)));
    // Each tree arc has a channel of its own (tree t, the child's place among its parent's
    // children): one channel sends one message after another, so a parent feeds its children (or
    // takes from them) at once only on separate channels, as ForestColl gives each a threadblock.
    // AllReduce's second phase (the AllGather) runs on a second such set of channels.
    std::vector<Tree> places;
    for (std::size_t t = 0; t < trees.size(); ++t) {
      const std::vector<int>& parent = trees[t];
      int root = static_cast<int>(t) / k;
      std::vector<int> children;
      for (int c = 0; c < p; ++c)
        if (parent[static_cast<std::size_t>(c)] == rank) children.push_back(c);
      int first = static_cast<int>(t) * slots;
      int up_ch = first;
      if (rank != root) {
        int above = parent[static_cast<std::size_t>(rank)];
        for (int c = 0; c < rank; ++c) up_ch += parent[static_cast<std::size_t>(c)] == above;
      }
      places.push_back({parent[static_cast<std::size_t>(rank)], std::move(children), first, up_ch});
    }
    auto um = static_cast<std::uint32_t>(m);
    // Per tree and chunk, the op after which the root holds the chunk's total (AllReduce).
    std::vector<std::uint32_t> total(trees.size() * um, kNoDep);
    for (std::size_t t = 0; t < trees.size() && !gather; ++t) {
      int root = static_cast<int>(t) / k;
      std::uint32_t mine = static_cast<std::uint32_t>(static_cast<int>(t) % k) * um,
                    theirs = static_cast<std::uint32_t>(root) * slice + mine;
      for (std::uint32_t i = 0; i < um; ++i)
        total[t * um + i] = up(ops, places[t], in(theirs + i), rank != root ? scratch(theirs + i) : both ? out(theirs + i) : out(mine + i));
    }
    int shift = both ? p * k * slots : 0;
    for (std::size_t t = 0; t < trees.size() && (gather || both); ++t) {
      int root = static_cast<int>(t) / k;
      std::uint32_t mine = static_cast<std::uint32_t>(static_cast<int>(t) % k) * um,
                    theirs = static_cast<std::uint32_t>(root) * slice + mine;
      Tree place = places[t];
      place.first += shift;
      place.up_ch += shift;
      for (std::uint32_t i = 0; i < um; ++i)
        down(ops, place, rank == root && gather ? in(mine + i) : out(theirs + i), rank == root, total[t * um + i]);
    }
    return ops;
  }

 private:
  /// One rank's place in one tree: its parent (-1 at the root), children, the tree's first
  /// channel (child q's arc is on first + q) and the channel of the arc to its parent.
  struct Tree {
    int parent;
    std::vector<int> children;
    int first;
    int up_ch;
  };

  /// AllGather, one chunk down the tree: received from the parent into `at` (not at the root),
  /// then sent on to each child, each send after the receive (at the root, after op `ready`).
  static void down(std::vector<Op>& ops, const Tree& t, ChunkRef at, bool root, std::uint32_t ready) {
    std::uint32_t got = root ? ready : kNoDep;
    if (!root) {
      got = static_cast<std::uint32_t>(ops.size());
      ops.push_back(recv(t.parent, at, 1, static_cast<std::uint16_t>(t.up_ch)));
    }
    for (std::size_t q = 0; q < t.children.size(); ++q) {
      int ch = t.first + static_cast<int>(q);
      Op o = send(t.children[q], at, 1, static_cast<std::uint16_t>(ch));
      if (got != kNoDep && (root || ch != t.up_ch)) o.depend_on(got);
      ops.push_back(o);
    }
  }

  /// ReduceScatter, one chunk up the (reversed) tree: each child's partial sum added to this
  /// rank's input chunk `own` in `acc` (a chain: each addition after the one before, on the
  /// children's channels), then the sum sent to the parent, or left in `acc` at the root. Returns,
  /// at the root, the op that completes the sum.
  static std::uint32_t up(std::vector<Op>& ops, const Tree& t, ChunkRef own, ChunkRef acc) {
    std::uint32_t last = kNoDep;
    for (std::size_t q = 0; q < t.children.size(); ++q) {
      Op o = recv_reduce(t.children[q], last == kNoDep ? own : acc, acc, 1, static_cast<std::uint16_t>(t.first + static_cast<int>(q)));
      if (last != kNoDep) o.depend_on(last);
      last = static_cast<std::uint32_t>(ops.size());
      ops.push_back(o);
    }
    if (t.parent >= 0) {
      Op o = send(t.parent, last == kNoDep ? own : acc, 1, static_cast<std::uint16_t>(t.up_ch));
      if (last != kNoDep && ops[last].channel != t.up_ch) o.depend_on(last);
      ops.push_back(o);
      return kNoDep;
    }
    if (last == kNoDep) {
      last = static_cast<std::uint32_t>(ops.size());
      ops.push_back(copy(own, acc, 1, static_cast<std::uint16_t>(t.first)));
    }
    return last;
  }
};

}  // namespace

const Algorithm* make_synth() {
  static const SynthAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
