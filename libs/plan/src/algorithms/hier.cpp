// Hierarchical (2-D) collectives for N hosts of g ranks each, p = N g: rings inside each host,
// rings across hosts among the ranks of one local index (one rail each, all g in parallel).
//
// AllReduce (REFERENCE Part B, "Hierarchical 2-D AR"; NCCL's CollNet/2-D and Horovod's
// hierarchical allreduce have this shape):
//   1. intra-host ReduceScatter ring: local rank l ends with slice l (n/g) summed over its host;
//   2. inter-host AllReduce ring of slice l among the N ranks of local index l;
//   3. intra-host AllGather ring of the slices.
//   T = 2(g-1)a_i + 2((g-1)/g) n b_i + 2(N-1)a_o + 2((N-1)/N)(n/g) b_o (+ reduction terms).
// Against a flat ring spread over g rails the bandwidth term gains only (p-1)/p / (N-1)/N, but
// the inter-host latency falls from 2(p-1)a_o to 2(N-1)a_o.
// ReduceScatter: phase 1 then an inter-host ReduceScatter; AllGather: an inter-host AllGather
// then phase 3. AlltoAll (the 2-D / rail-aligned exchange of DeepEP and NCCL's PXN): rank
// (h, l) first hands every block for ranks (., l') to its host-mate (h, l'), which owns rail l';
// then each rank sends over its rail to (h', l) the g blocks bound there, straight into their
// final place: (g-1)a_i + ((g-1)/g)nb_i + (N-1)a_o + ((N-1)/N)nb_o, with N-1 instead of p-1
// inter-host messages per rank.
//
// Params: "hosts" = N, "local" = g, "order" = the rank at position h*g + l (identity when
// absent), "channels" (AllReduce: independent copies on 1/C of the data each). The grouping
// comes from the topology at layout time, so program() needs none.

#include <algorithm>
#include <numeric>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/topo/topology.h"
#include "common.h"
#include "host_rings.h"

namespace collkit::plan {

namespace {

using namespace algo;

int mod(int a, int m) { return ((a % m) + m) % m; }

struct Grid {
  int hosts = 1, local = 1;
  std::shared_ptr<const Order> order;  // position <-> rank
  int h = 0, l = 0;                     // this rank's host and local index
  int at(int host, int loc) const { return order->at[static_cast<std::size_t>(host * local + loc)]; }
  int intra_next() const { return at(h, mod(l + 1, local)); }
  int intra_prev() const { return at(h, mod(l - 1, local)); }
  int inter_next() const { return at(mod(h + 1, hosts), l); }
  int inter_prev() const { return at(mod(h - 1, hosts), l); }
};

// Contiguous runs (first chunk, count) covering a set of chunks, in ascending order.
using Runs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
Runs runs_of(std::vector<std::uint32_t> chunks) {
  std::sort(chunks.begin(), chunks.end());
  Runs runs;
  for (std::uint32_t c : chunks) {
    if (!runs.empty() && runs.back().first + runs.back().second == c)
      ++runs.back().second;
    else
      runs.push_back({c, 1});
  }
  return runs;
}

// The chunks of local slice l' for ReduceScatter / AllGather: the blocks of ranks (h', l') for all h'.
Runs block_slice(const Grid& g, int loc) {
  std::vector<std::uint32_t> chunks;
  for (int h = 0; h < g.hosts; ++h) chunks.push_back(static_cast<std::uint32_t>(g.at(h, loc)));
  return runs_of(std::move(chunks));
}

class HierAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "hier"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllReduce: return "2(g-1)a_i + 2((g-1)/g)nb_i + 2(N-1)a_o + 2((N-1)/N)(n/g)b_o";
      case Collective::ReduceScatter: return "(g-1)a_i + ((g-1)/g)nb_i + (N-1)a_o + ((N-1)/N)(n/g)b_o";
      case Collective::AllGather: return "(N-1)a_o + ((N-1)/N)(n/g)b_o + (g-1)a_i + ((g-1)/g)nb_i";
      case Collective::AlltoAll: return "(g-1)a_i + ((g-1)/g)nb_i + (N-1)a_o + ((N-1)/N)nb_o";
      default: return "not applicable";
    }
  }

  // AllReduce's inter-host algorithm and its channels: which wins depends on hosts and size.
  std::vector<Knob> knobs(const Request& req, const topo::Topology*) const override {
    if (req.coll != Collective::AllReduce) return {};
    return {{"inter", {"", "ring", "rhd", "rd", "tree"}}, {"channels", {"0", "2", "4", "8"}}};
  }

  bool supports(const Request& req, const topo::Topology* topo, std::string* why) const override {
    return !host_grid(req, topo, why).empty();
  }

  // The hosts' rank cycles when hier applies, else none and the reason in *why: supports() and
  // layout() share one host_cycles(), most of a layout's cost at 16384 ranks.
  static std::vector<std::vector<int>> host_grid(const Request& req, const topo::Topology* topo, std::string* why) {
    auto say = [&](std::string text) {
      if (why) *why = std::move(text);
      return std::vector<std::vector<int>>{};
    };
    if (facts(req.coll).has_root) return say("hier does AllReduce, ReduceScatter, AllGather and AlltoAll only");
    if (!topo) return say("hier needs a topology to group ranks by host");
    auto hosts = host_cycles(req.nranks, *topo);
    if (hosts.empty())
      return say("the topology does not place ranks 0.." + std::to_string(req.nranks - 1) + " on hosts");
    for (std::size_t h = 1; h < hosts.size(); ++h)
      if (hosts[h].size() != hosts[0].size())
        return say("hosts hold unequal numbers of ranks (host 0: " + std::to_string(hosts[0].size()) + ", host " +
                   std::to_string(h) + ": " + std::to_string(hosts[h].size()) + "); hier needs the same number on each");
    return hosts;
  }

  PlanInfo layout(const Request& req, const topo::Topology* topo, const AlgoOptions& opt) const override {
    std::string why;
    auto hosts = host_grid(req, topo, &why);
    if (hosts.empty()) throw InputError("hier: " + why);
    std::vector<int> order;
    for (const auto& cycle : hosts) order.insert(order.end(), cycle.begin(), cycle.end());
    auto n = static_cast<std::uint32_t>(hosts.size()), g = static_cast<std::uint32_t>(hosts[0].size());
    int channels = req.coll == Collective::AllReduce && opt.channels > 0 ? opt.channels : 1;
    auto uc = static_cast<std::uint32_t>(channels), p = static_cast<std::uint32_t>(req.nranks);

    PlanInfo info;
    info.req = req;
    info.channels = static_cast<std::uint16_t>(channels);
    info.params["hosts"] = std::to_string(n);
    info.params["local"] = std::to_string(g);
    info.params["channels"] = std::to_string(channels);
    bool identity = true;
    for (std::size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == static_cast<int>(i);
    if (!identity) info.params["order"] = format_order(order);
    switch (req.coll) {
      case Collective::AllReduce: {
        // The inter-host phase: a ring for few hosts (bandwidth-optimal, 2(N-1) steps), recursive
        // halving-doubling beyond (2 log N steps: the latency term that dominates at scale, and a
        // plan that stays small at 16k ranks). Its chunks per slice come from its own layout.
        std::string inter = opt.inter.empty() ? (n <= kRingHostsMax ? "ring" : "rhd") : opt.inter;
        info.params["inter"] = inter;
        std::uint32_t m = inter == "ring" ? n : inter_layout(inter, static_cast<int>(n)).in_chunks;
        info.params["slice_chunks"] = std::to_string(m);
        info.in_chunks = info.out_chunks = uc * g * m;
        // Each hier channel takes as many lanes as the embedded algorithm uses.
        if (inter != "ring" && n > 1) {
          info.channels = static_cast<std::uint16_t>(uc * inter_layout(inter, static_cast<int>(n)).channels);
          info.scratch_chunks = info.in_chunks;
          info.scratch_bytes = input_bytes(req);
        }
        break;
      }
      case Collective::AlltoAll:
        info.in_chunks = info.out_chunks = info.scratch_chunks = p;
        info.scratch_bytes = input_bytes(req);
        break;
      case Collective::ReduceScatter:
        info.in_chunks = p;
        info.out_chunks = 1;
        info.scratch_chunks = p;
        info.scratch_bytes = input_bytes(req);
        break;
      default:
        info.in_chunks = 1;
        info.out_chunks = p;
        break;
    }
    return info;
  }

  // Hosts up to which the inter-host AllReduce is a ring by default.
  static constexpr std::uint32_t kRingHostsMax = 16;

  // The layout of the embedded inter-host AllReduce among n ranks (one per host).
  static PlanInfo inter_layout(const std::string& name, int n) {
    const Algorithm& a = algorithm(name);
    Request r{Collective::AllReduce, static_cast<std::uint64_t>(n), n, 0};
    std::string why;
    if (name == "hier" || !a.supports(r, nullptr, &why))
      throw InputError("hier: the inter-host algorithm " + name + " cannot do allreduce without a topology" + (why.empty() ? "" : ": " + why));
    PlanInfo info = a.layout(r, nullptr, {});
    info.req = r;
    info.algorithm = name;
    if (info.scratch_chunks != 0 || info.in_chunks != info.out_chunks || info.channels > kMaxDeps)
      throw InputError("hier: the inter-host algorithm " + name + " needs scratch or more than " + std::to_string(kMaxDeps) +
                       " channels, which hier cannot embed");
    return info;
  }

  // Every rank at grid position (h, l) runs the same phases relative to its position: moving
  // every rank one local index along (l -> l+1) is a symmetry, and so is moving every rank one
  // host along when the inter-host phase is a ring (ReduceScatter, AllGather and AlltoAll always;
  // AllReduce with inter=ring), or the inter-host algorithm's own symmetries (rd, rhd: h -> h xor
  // 2^j) lifted to hosts. Only with every chunk the same size, so image threads move equal bytes.
  // AllReduce's channel c runs channel 0's phases on the same ranks, on its own chunks, its
  // phases held back until channel c-1's have ended (Stagger): verify() checks that op for op
  // and runs channel 0 alone (docs/plan.md, "Verifying by channels").
  std::vector<std::vector<int>> channel_images(const PlanInfo& info) const override {
    if (info.req.coll != Collective::AllReduce || info.channels < 2 || info.req.nranks < 1) return {};
    std::vector<int> same(static_cast<std::size_t>(info.req.nranks));
    std::iota(same.begin(), same.end(), 0);
    return std::vector<std::vector<int>>(info.channels, same);
  }

  std::vector<SymmetryAxis> symmetries(const PlanInfo& info) const override {
    int N = param_int(info, "hosts", 1), g = param_int(info, "local", 1), p = info.req.nranks;
    if (N * g != p || p < 2) return {};
    if (!symmetric_chunks(info)) return {};
    auto order = shared_order(info, "order", p);
    auto at = [&](int h, int l) { return order->at[static_cast<std::size_t>(h * g + l)]; };
    auto axis = [&](auto move, int order_of) {
      SymmetryAxis a;
      a.order = order_of;
      a.rank.assign(static_cast<std::size_t>(p), 0);
      for (int h = 0; h < N; ++h)
        for (int l = 0; l < g; ++l) {
          auto [h2, l2] = move(h, l);
          a.rank[static_cast<std::size_t>(at(h, l))] = at(h2, l2);
        }
      for (int c = 0; c < std::max<int>(1, info.channels); ++c) a.channel.push_back(c);
      return a;
    };
    std::vector<SymmetryAxis> axes;
    if (g > 1) axes.push_back(axis([&](int h, int l) { return std::pair{h, (l + 1) % g}; }, g));
    if (N < 2) return axes;
    auto it = info.params.find("inter");
    std::string inter = it == info.params.end() ? "ring" : it->second;
    if (info.req.coll != Collective::AllReduce || inter == "ring") {
      axes.push_back(axis([&](int h, int l) { return std::pair{(h + 1) % N, l}; }, N));
    } else if ((inter == "rd" || inter == "rhd") && (N & (N - 1)) == 0) {
      for (int x = 1; x < N; x *= 2) axes.push_back(axis([&](int h, int l) { return std::pair{h ^ x, l}; }, 2));
    }
    return axes;
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    Grid g;
    g.hosts = param_int(info, "hosts", 1);
    g.local = param_int(info, "local", 1);
    if (g.hosts < 1 || g.local < 1 || g.hosts * g.local != info.req.nranks)
      throw InputError("plan parameters hosts=" + std::to_string(g.hosts) + ", local=" + std::to_string(g.local) +
                       ": their product must be nranks=" + std::to_string(info.req.nranks));
    g.order = shared_order(info, "order", info.req.nranks);
    if (rank < 0 || rank >= info.req.nranks) throw InputError("hier: rank " + std::to_string(rank) + " is not in the plan");
    int pos = g.order->pos[static_cast<std::size_t>(rank)];
    g.h = pos / g.local;
    g.l = pos % g.local;
    std::vector<Op> ops;
    switch (info.req.coll) {
      case Collective::AllReduce: {
        auto it = info.params.find("inter");
        std::string inter = it == info.params.end() ? "ring" : it->second;
        PlanInfo sub;
        if (inter != "ring" && g.hosts > 1) sub = inter_layout(inter, g.hosts);
        int m = param_int(info, "slice_chunks", g.hosts);
        if (inter == "ring" ? m != g.hosts : (g.hosts > 1 && static_cast<std::uint32_t>(m) != sub.in_chunks))
          throw InputError("hier: plan parameter slice_chunks=" + std::to_string(m) + " does not fit the inter-host " + inter);
        Stagger st;
        for (int c = 0; c < param_int(info, "channels", 1); ++c) all_reduce(ops, g, c, m, inter == "ring" ? nullptr : &sub, st);
        break;
      }
      case Collective::ReduceScatter: reduce_scatter(ops, g); break;
      case Collective::AllGather: all_gather(ops, g); break;
      case Collective::AlltoAll: all_to_all(ops, g); break;
      default: throw InputError("hier: " + std::string(to_string(info.req.coll)) + " is not supported");
    }
    return ops;
  }

 private:
  // `m` chunks per local slice; `inter` (null: the built-in ring) is the inter-host AllReduce among
  // the hosts' ranks of one local index, embedded: its ranks are hosts, its input is slice l's
  // partial sum, its output slice l of the output.
  // Channels run their phases one after another on the shared links: channel c starts its
  // intra-host ReduceScatter when channel c-1's has ended, and its AllGather when c-1's has, so
  // the channels go through the phases staggered and one channel's inter-host phase (on the
  // NICs) overlaps the next one's intra-host phases (on NVLink), as a pipeline.
  struct Stagger {
    std::uint32_t rs_end = kNoDep, ag_end = kNoDep;
  };

  static void all_reduce(std::vector<Op>& ops, const Grid& g, int c, int m, const PlanInfo* inter, Stagger& st) {
    // Hier channel c owns lanes [c*S, (c+1)*S), S the embedded algorithm's channels; the intra
    // phases run on the first.
    int lanes = inter && g.hosts > 1 ? inter->channels : 1;
    auto ch = static_cast<std::uint16_t>(c * lanes);
    auto N = static_cast<std::uint32_t>(m);
    std::uint32_t base = static_cast<std::uint32_t>(c * g.local * m);
    auto slice = [&](int loc) { return base + static_cast<std::uint32_t>(loc) * N; };  // N chunks from here
    auto sub = [&](int host) { return slice(g.l) + static_cast<std::uint32_t>(host); };

    // 1. intra-host ReduceScatter: after it, slice l of `acc` holds the host's sum. An embedded
    // algorithm gets its input apart from its output (scratch), as it was written for.
    Buf acc = inter && g.hosts > 1 ? Buf::Scratch : Buf::Output;
    for (int t = 0; t + 1 < g.local; ++t) {
      int qs = mod(g.l - t - 1, g.local), qr = mod(g.l - t - 2, g.local);
      ops.push_back(send(g.intra_next(), t == 0 ? in(slice(qs)) : ChunkRef{acc, slice(qs)}, N, ch));
      if (t == 0 && st.rs_end != kNoDep) ops.back().depend_on(st.rs_end);
      ops.push_back(recv_reduce(g.intra_prev(), in(slice(qr)), ChunkRef{acc, slice(qr)}, N, ch));
    }
    if (g.local > 1) st.rs_end = static_cast<std::uint32_t>(ops.size() - 1);
    Buf part = g.local > 1 ? acc : Buf::Input;  // where slice l's partial sum lives
    // 2. inter-host AllReduce of slice l among local index l.
    std::vector<std::uint32_t> join;
    if (g.hosts > 1 && inter) {
      join = embed(ops, g, *inter, part, slice(g.l), ch);
    } else if (g.hosts > 1) {
      for (int t = 0; t + 1 < g.hosts; ++t) {
        int qs = mod(g.h - t - 1, g.hosts), qr = mod(g.h - t - 2, g.hosts);
        ops.push_back(send(g.inter_next(), t == 0 ? ChunkRef{part, sub(qs)} : out(sub(qs)), 1, ch));
        ops.push_back(recv_reduce(g.inter_prev(), ChunkRef{part, sub(qr)}, out(sub(qr)), 1, ch));
      }
      for (int t = 0; t + 1 < g.hosts; ++t) {
        int qs = mod(g.h - t, g.hosts), qr = mod(g.h - t - 1, g.hosts);
        ops.push_back(send(g.inter_next(), out(sub(qs)), 1, ch));
        ops.push_back(recv(g.inter_prev(), out(sub(qr)), 1, ch));
      }
    } else if (g.local == 1) {
      ops.push_back(copy(in(base), out(base), N, ch));  // one rank: the sum is the input
    }
    // 3. intra-host AllGather of the reduced slices, after every lane of phase 2.
    auto join_at = ops.size();
    for (int t = 0; t + 1 < g.local; ++t) {
      int qs = mod(g.l - t, g.local), qr = mod(g.l - t - 1, g.local);
      ops.push_back(send(g.intra_next(), out(slice(qs)), N, ch));
      ops.push_back(recv(g.intra_prev(), out(slice(qr)), N, ch));
    }
    if (join_at < ops.size()) {
      for (std::uint32_t d : join) ops[join_at].depend_on(d);
      if (st.ag_end != kNoDep) ops[join_at].depend_on(st.ag_end);
      st.ag_end = static_cast<std::uint32_t>(ops.size() - 1);
    }
  }

  // Input and scratch chunk r is rank r's block; output is one chunk.
  // Appends host h's program of `sub` with its ranks mapped to this local index's ranks, its
  // input to `part` and its output to the output, both from chunk `first`, on lanes from `ch`.
  // Lanes other than `ch` do not follow the intra-host phases by program order, so their first
  // op waits explicitly for the op before the embedding, and a nop-free join at the end: the
  // next op on `ch` waits for the last op of every other lane (at most kMaxDeps lanes).
  static std::vector<std::uint32_t> embed(std::vector<Op>& ops, const Grid& g, const PlanInfo& sub, Buf part, std::uint32_t first,
                                          std::uint16_t ch) {
    auto offset = static_cast<std::uint32_t>(ops.size());
    std::vector<std::uint32_t> last(sub.channels, kNoDep);
    std::vector<char> started(sub.channels, 0);
    for (Op o : algorithm(sub.algorithm).program(sub, g.h)) {
      std::uint16_t lane = o.channel;
      if (o.peer >= 0) o.peer = g.at(o.peer, g.l);
      auto place = [&](ChunkRef& x) {
        x = ChunkRef{x.buf == Buf::Input ? part : Buf::Output, first + x.chunk};
      };
      if (o.type != OpType::Recv) place(o.src);
      if (o.type != OpType::Send) place(o.dst);
      o.channel = static_cast<std::uint16_t>(ch + lane);
      for (auto& d : o.deps)
        if (d != kNoDep) d += offset;
      if (lane != 0 && !started[lane] && offset > 0) o.depend_on(offset - 1);
      started[lane] = 1;
      last[lane] = static_cast<std::uint32_t>(ops.size());
      ops.push_back(o);
    }
    std::vector<std::uint32_t> join;
    for (std::size_t lane = 1; lane < last.size(); ++lane)
      if (last[lane] != kNoDep) join.push_back(last[lane]);
    return join;
  }

  static void reduce_scatter(std::vector<Op>& ops, const Grid& g) {
    for (int t = 0; t + 1 < g.local; ++t) {
      Runs rs = block_slice(g, mod(g.l - t - 1, g.local)), rr = block_slice(g, mod(g.l - t - 2, g.local));
      for (auto [c, n] : rs) ops.push_back(send(g.intra_next(), t == 0 ? in(c) : scratch(c), n, 0));
      for (auto [c, n] : rr) ops.push_back(recv_reduce(g.intra_prev(), in(c), scratch(c), n, 0));
    }
    Buf part = g.local > 1 ? Buf::Scratch : Buf::Input;
    auto block = [&](int host) { return static_cast<std::uint32_t>(g.at(host, g.l)); };
    if (g.hosts == 1) {
      ops.push_back(copy(ChunkRef{part, block(0)}, out(0), 1, 0));
      return;
    }
    for (int t = 0; t + 1 < g.hosts; ++t) {
      int qs = mod(g.h - t - 1, g.hosts), qr = mod(g.h - t - 2, g.hosts);
      ops.push_back(send(g.inter_next(), t == 0 ? ChunkRef{part, block(qs)} : scratch(block(qs)), 1, 0));
      ChunkRef into = t + 2 == g.hosts ? out(0) : scratch(block(qr));
      ops.push_back(recv_reduce(g.inter_prev(), ChunkRef{part, block(qr)}, into, 1, 0));
    }
  }

  // Input is one chunk; output chunk r is rank r's block.
  static void all_gather(std::vector<Op>& ops, const Grid& g) {
    auto block = [&](int host) { return static_cast<std::uint32_t>(g.at(host, g.l)); };
    ops.push_back(copy(in(0), out(block(g.h)), 1, 0));
    for (int t = 0; t + 1 < g.hosts; ++t) {
      int qs = mod(g.h - t, g.hosts), qr = mod(g.h - t - 1, g.hosts);
      ops.push_back(send(g.inter_next(), t == 0 ? in(0) : out(block(qs)), 1, 0));
      ops.push_back(recv(g.inter_prev(), out(block(qr)), 1, 0));
    }
    for (int t = 0; t + 1 < g.local; ++t) {
      Runs rs = block_slice(g, mod(g.l - t, g.local)), rr = block_slice(g, mod(g.l - t - 1, g.local));
      for (auto [c, n] : rs) ops.push_back(send(g.intra_next(), out(c), n, 0));
      for (auto [c, n] : rr) ops.push_back(recv(g.intra_prev(), out(c), n, 0));
    }
  }

  // Input chunk r: the block for rank r; output chunk r: the block from rank r. Scratch chunk
  // l*N + h' at rank (h, l'): the block rank (h, l) sends to rank (h', l').
  static void all_to_all(std::vector<Op>& ops, const Grid& g) {
    auto N = static_cast<std::uint32_t>(g.hosts);
    auto held = [&](int from_local, int to_host) {
      return scratch(static_cast<std::uint32_t>(from_local) * N + static_cast<std::uint32_t>(to_host));
    };
    auto block = [](int r) { return static_cast<std::uint32_t>(r); };
    // 1. to the rail owner on this host; sends are eager, so all sends go first.
    for (int h = 0; h < g.hosts; ++h) ops.push_back(copy(in(block(g.at(h, g.l))), held(g.l, h), 1, 0));
    for (int d = 1; d < g.local; ++d) {
      int to = mod(g.l + d, g.local);
      for (int h = 0; h < g.hosts; ++h) ops.push_back(send(g.at(g.h, to), in(block(g.at(h, to))), 1, 0));
    }
    for (int d = 1; d < g.local; ++d) {
      int from = mod(g.l - d, g.local);
      for (int h = 0; h < g.hosts; ++h) ops.push_back(recv(g.at(g.h, from), held(from, h), 1, 0));
    }
    // 2. over the rail, into the final place.
    for (int l = 0; l < g.local; ++l) ops.push_back(copy(held(l, g.h), out(block(g.at(g.h, l))), 1, 0));
    for (int d = 1; d < g.hosts; ++d) {
      int to = mod(g.h + d, g.hosts);
      for (int l = 0; l < g.local; ++l) ops.push_back(send(g.at(to, g.l), held(l, to), 1, 0));
    }
    for (int d = 1; d < g.hosts; ++d) {
      int from = mod(g.h - d, g.hosts);
      for (int l = 0; l < g.local; ++l) ops.push_back(recv(g.at(from, g.l), out(block(g.at(from, l))), 1, 0));
    }
  }
};

}  // namespace

const Algorithm* make_hier() {
  static const HierAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
