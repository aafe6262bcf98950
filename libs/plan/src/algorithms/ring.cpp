// Ring: the bandwidth-optimal algorithm of NCCL and Open MPI for large messages.
//
// AllReduce = ReduceScatter ring + AllGather ring (Patarasuk & Yuan 2009):
//   T = 2(p-1)a + 2((p-1)/p) n b + ((p-1)/p) n g
// ReduceScatter, AllGather: (p-1)a + ((p-1)/p) n b (+ g for RS); Broadcast / Reduce as a
// pipelined chain of k chunks: (p-1+k-1)(a + (n/k) b).
//
// The buffer is split over C channels (each an independent ring carrying 1/C of the data, odd
// ones reversed when bidirectional) and, within a channel, into p slices of k chunks. Slice q of
// a channel belongs to ring position q; the rank at position q ends the reduce-scatter phase
// holding slice q fully reduced. Ring orders come from params "order<c>" or "order" (identity by
// default); the topology-aware choice is in ring_order.cpp. Channels carry equal shares unless
// param "weights" gives each a number of units (ring_weights.h): a slice is then cut into U units
// (their sum), channel c's piece j of it spanning w_c chunks.

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/topo/topology.h"
#include "common.h"
#include "ring_order.h"
#include "ring_weights.h"

namespace collkit::plan {

namespace {

using namespace algo;

struct Ring {
  int p = 1;                         // ranks
  std::shared_ptr<const Order> ord;  // the channel's order param, decoded once per plan (shared_order)
  bool reversed = false;             // run backwards (a bidirectional ring's odd channels)
  int shift = 0;                     // then rotated: position q reads the reversed order at q + shift
  int pos = 0;                       // this rank's position
  int next = 0, prev = 0;            // ranks
  /// The rank at position q.
  int at(int q) const {
    if (!reversed) return ord->at[static_cast<std::size_t>(q)];
    return ord->at[static_cast<std::size_t>(p - 1 - (q + shift + p) % p)];
  }
};

/// The channels' shares of a slice: channel c holds units [off[c], off[c] + w[c]) of the U, each
/// of its k pieces w[c] chunks; without param "weights" one unit each (U = C).
struct Shares {
  int U = 1;
  std::vector<int> off, w;
};

Shares shares_of(const PlanInfo& info) {
  int C = param_int(info, "channels", 1);
  Shares sh;
  auto it = info.params.find("weights");
  sh.w = it == info.params.end() ? std::vector<int>(static_cast<std::size_t>(std::max(C, 1)), 1)
                                 : param_ints("ring: plan parameter weights", it->second, 1, 1 << 16, "a positive integer per channel");
  if (static_cast<int>(sh.w.size()) != C)
    throw InputError("ring: plan parameter weights has " + std::to_string(sh.w.size()) + " entries for " + std::to_string(C) + " channels");
  sh.off.assign(sh.w.size(), 0);
  std::partial_sum(sh.w.begin(), sh.w.end() - 1, sh.off.begin() + 1);
  sh.U = sh.off.back() + sh.w.back();
  return sh;
}

Ring ring_for(const PlanInfo& info, int rank, int channel, bool reversed) {
  int p = info.req.nranks;
  std::string key = "order" + std::to_string(channel);
  Ring r;
  r.p = p;
  r.ord = shared_order(info, info.params.count(key) ? key : "order", p);
  r.reversed = reversed;
  // A chain keeps its ends when reversed: Broadcast starts at the root (the reversed order turned
  // one place right), Reduce ends there (one place left).
  if (reversed && info.req.coll == Collective::Broadcast) r.shift = -1;
  if (reversed && info.req.coll == Collective::Reduce) r.shift = 1;
  int forward = r.ord->pos[static_cast<std::size_t>(rank)];
  r.pos = reversed ? ((p - 1 - forward - r.shift) % p + p) % p : forward;
  r.next = r.at((r.pos + 1) % p);
  r.prev = r.at((r.pos + p - 1) % p);
  return r;
}

int mod(int a, int p) { return ((a % p) + p) % p; }

/// A chain's chunks (Broadcast, Reduce, per channel) when --pipeline is not given. Its p - 2 hops
/// of fill cost (p - 2) / k of the time, so k grows with the chain: the power of two at or above
/// 4 (p - 1) (fill within a quarter of the time), at most kMaxChainChunks, at most kChainCells
/// chunks over the ranks (auto simulates the default at each channel count it tries: at 512 ranks
/// 512 chunks a channel took 10 s of auto's Reduce, 128 take 4; its pipeline knob then goes
/// deeper), with chunks of kMinChainChunk bytes or more; never fewer than 8, the default before,
/// made for chains of a box. One GB200 NVL72 (72 ranks) at 1 GiB: 8 chunks ran 12.2 x the bound
/// and auto left the ring out (it picked scatter-allgather, 2.48 x); the default, 512, runs 1.44 x.
constexpr int kMinChainChunks = 8;
constexpr int kMaxChainChunks = 512;
constexpr std::uint64_t kChainCells = 1u << 16;
/// auto's deeper pipelines (chain_pipelines) go up to this many chunks over the ranks.
constexpr std::uint64_t kChainSearchCells = 1u << 18;
constexpr std::uint64_t kMinChainChunk = 64u << 10;

int default_chain_chunks(const Request& req, int channels) {
  auto p = static_cast<std::uint64_t>(std::max(req.nranks, 2));
  std::uint64_t k = 1;
  while (k < 4 * (p - 1)) k *= 2;
  std::uint64_t most = std::min<std::uint64_t>(
      {kMaxChainChunks, kChainCells / p, req.bytes / (static_cast<std::uint64_t>(std::max(channels, 1)) * kMinChainChunk)});
  while (k > most && k > kMinChainChunks) k /= 2;
  return static_cast<int>(std::max<std::uint64_t>(k, kMinChainChunks));
}

class RingAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "ring"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllReduce: return "2(p-1)a + 2((p-1)/p)nb + ((p-1)/p)ng";
      case Collective::ReduceScatter: return "(p-1)a + ((p-1)/p)n(b+g)";
      case Collective::AllGather: return "(p-1)a + ((p-1)/p)nb";
      case Collective::Broadcast:
      case Collective::Reduce: return "(p+k-2)(a + (n/k)b), pipelined chain of k chunks";
      default: return "not applicable";
    }
  }

  bool supports(const Request& req, const topo::Topology*, std::string* why) const override {
    if (req.coll == Collective::AlltoAll) {
      if (why) *why = "a ring does not do AlltoAll (use pairwise, bruck or direct)";
      return false;
    }
    return true;
  }

  // More channels than NICs spread a host's share over more in-host cycles (an xGMI mesh has 6
  // disjoint directed ones); slices in flight hide latency; a bidirectional ring uses both
  // directions of every link. "0" is the default, first.
  std::vector<Knob> knobs(const Request& req, const topo::Topology* topo) const override {
    bool chain = req.coll == Collective::Broadcast || req.coll == Collective::Reduce;
    int d = default_channels(req, topo, false);
    std::vector<std::string> channels{"0"};
    for (int c : d > 1 ? std::vector<int>{d / 2, 2 * d} : std::vector<int>{2, 4, 6, 8})
      if (c >= 1 && c <= most_channels(req.nranks) && c != d) channels.push_back(std::to_string(c));
    return {{"channels", channels},
            {"pipeline", chain ? chain_pipelines(req) : std::vector<std::string>{"0", "2", "4"}},
            {"bidirectional", {"0", "1"}}};
  }

  /// A chain's pipelines searched: the default, 32 and 128 chunks, and deeper ones (512, 2048)
  /// where their chunks hold kMinChainChunk bytes and the ranks' chunks stay within
  /// kChainSearchCells: long chains of large messages (NVL72 at 1 GiB: 8 channels of 2048 chunks run
  /// 1.28 x the bound, the default 1.44), not chains whose simulation takes seconds (512 ranks, 16 channels).
  static std::vector<std::string> chain_pipelines(const Request& req) {
    std::vector<std::string> v{"0", "32", "128"};
    auto p = static_cast<std::uint64_t>(std::max(req.nranks, 1));
    for (std::uint64_t k : {512u, 2048u})
      if (req.bytes / k >= kMinChainChunk && k * p <= kChainSearchCells) v.push_back(std::to_string(k));
    return v;
  }

  PlanInfo layout(const Request& req, const topo::Topology* topo, const AlgoOptions& opt) const override {
    PlanInfo info;
    info.req = req;
    int p = req.nranks;
    int channels = opt.channels > 0 ? opt.channels : default_channels(req, topo, opt.bidirectional);
    bool chain = req.coll == Collective::Broadcast || req.coll == Collective::Reduce;
    // Chains pipeline over k chunks to fill the p-1 hops; rings move whole slices per step.
    int k = opt.pipeline > 0 ? opt.pipeline : (chain ? default_chain_chunks(req, channels) : 1);
    info.channels = static_cast<std::uint16_t>(channels);
    info.params["channels"] = std::to_string(channels);
    info.params["pipeline"] = std::to_string(k);
    info.params["bidirectional"] = opt.bidirectional ? "1" : "0";
    // Chains start at the root (Broadcast) or end there (Reduce): rotate the order.
    std::vector<std::vector<int>> orders = ring_orders(req, topo, channels, opt.bidirectional);
    for (int c = 0; c < channels; ++c) {
      std::vector<int>& order = orders[static_cast<std::size_t>(c)];
      if (chain) {
        auto it = std::find(order.begin(), order.end(), req.root);
        std::rotate(order.begin(), it, order.end());
        if (req.coll == Collective::Reduce) std::rotate(order.begin(), order.begin() + 1, order.end());
      }
      bool identity = true;
      for (int q = 0; q < p; ++q) identity = identity && order[static_cast<std::size_t>(q)] == q;
      if (!identity) info.params["order" + std::to_string(c)] = format_order(order);
    }
    // Shares by the rings' routes where equal ones leave a slow ring setting the pace (not for
    // bidirectional rings, whose odd channels run their orders backwards).
    if (topo && !opt.bidirectional && p > 1) {
      // A ring's largest buffer holds every rank's slice (AllGather's output, ReduceScatter's input).
      auto slices = static_cast<std::uint64_t>(chain ? 1 : p);
      int units = weight_units(channels, p, slices * static_cast<std::uint64_t>(k), std::max(input_bytes(req), output_bytes(req)));
      std::vector<int> w = channel_weights(*topo, orders, chain, units);
      if (!w.empty()) info.params["weights"] = format_order(w);
    }
    set_chunks(info);
    return info;
  }

  // The buffers' chunks: U units a slice (C without weights), k pieces each, p slices where a
  // buffer holds every rank's.
  static void set_chunks(PlanInfo& info) {
    auto uc = static_cast<std::uint32_t>(shares_of(info).U), uk = static_cast<std::uint32_t>(param_int(info, "pipeline", 1)),
         up = static_cast<std::uint32_t>(info.req.nranks);
    switch (info.req.coll) {
      case Collective::AllReduce: info.in_chunks = info.out_chunks = uc * up * uk; break;
      case Collective::ReduceScatter:
        info.in_chunks = uc * up * uk;
        info.out_chunks = uc * uk;
        info.scratch_chunks = info.in_chunks;
        info.scratch_bytes = input_bytes(info.req);
        break;
      case Collective::AllGather:
        info.in_chunks = uc * uk;
        info.out_chunks = uc * up * uk;
        break;
      default: info.in_chunks = info.out_chunks = uc * uk; break;
    }
  }

  // One ring leaves each host through one NIC; a cluster's hosts have several (one per rail), so
  // by default there is one channel per NIC of the first rank's host, each ring entering and
  // leaving hosts on its own rail (ring_order), as NCCL spreads its channels over NICs.
  static int default_channels(const Request& req, const topo::Topology* topo, bool bidirectional) {
    int base = bidirectional ? 2 : 1;
    if (!topo || req.nranks < 2 || topo->num_ranks() == 0) return base;
    const std::string& host = topo->host_of(0);
    bool multi_host = false;
    for (int r = 1; r < req.nranks && !multi_host; ++r) multi_host = topo->host_of(static_cast<topo::Rank>(r)) != host;
    if (!multi_host || host.empty()) return base;
    int nics = 0;
    for (const auto& v : topo->vertices())
      if (v.kind == topo::VertexKind::Nic && v.host == host) ++nics;
    // Small messages get fewer channels, as NCCL drops channels while the size is under
    // channels x 512 threads x NCCL_SIMPLE_THREAD_THRESHOLD (64 bytes) = 32 KiB a channel: a
    // 1 KiB AllReduce on 8 rings of 1024 ranks is 33 M ops of empty chunks.
    int most = most_channels(req.nranks);
    auto by_size = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(most), req.bytes / kChannelMinBytes));
    return std::max(base, std::min(std::clamp(nics, base, most), by_size));
  }
  static constexpr std::uint64_t kChannelMinBytes = 32 * 1024;

  // The most channels (rings) a plan gets by default or from auto's search: 32, for hosts with
  // that many NICs or more (a GB200 NVL72 has 72: 16 rings left 56 idle and ran 2 hosts' AllGather
  // at 1.41 x the bound), fewer where C p^2 reaches 2^25 (C rings of p ranks hold about 2 C p^2
  // ops: 1152 ranks keep 16, whose 42 M ops fold within auto's budget); 16 before.
  static int most_channels(int p) {
    auto pp = static_cast<std::uint64_t>(std::max(p, 1)) * static_cast<std::uint64_t>(std::max(p, 1));
    int c = 32;
    while (c > 16 && static_cast<std::uint64_t>(c) * pp >= (1ull << 25)) c /= 2;
    return c;
  }

  // The orders (position -> rank) the channels' programs follow: a bidirectional ring runs its
  // odd channels backwards. Empty where positions do not make the program (p < 2, chains) or
  // chunks are too uneven for image threads to stand for each other (symmetric_chunks()).
  static std::vector<std::vector<int>> program_orders(const PlanInfo& info) {
    int p = info.req.nranks, C = param_int(info, "channels", 1);
    Collective c = info.req.coll;
    bool bidir = param_int(info, "bidirectional", 0) != 0;
    if (p < 2) return {};
    if (c != Collective::AllReduce && c != Collective::AllGather && c != Collective::ReduceScatter) return {};
    if (!symmetric_chunks(info)) return {};
    std::vector<std::vector<int>> orders;
    for (int ch = 0; ch < C; ++ch) {
      std::string key = "order" + std::to_string(ch);
      orders.push_back(param_order(info, info.params.count(key) ? key : "order", p));
      if (bidir && ch % 2 == 1) std::reverse(orders.back().begin(), orders.back().end());
    }
    return orders;
  }

  // Channel c runs at position q what channel 0 runs there, on its own chunks (of its own size:
  // none with weights).
  std::vector<std::vector<int>> channel_images(const PlanInfo& info) const override {
    if (info.params.count("weights")) return {};
    std::vector<std::vector<int>> orders = program_orders(info), maps;
    for (const std::vector<int>& order : orders) {
      maps.emplace_back(order.size());
      for (std::size_t q = 0; q < order.size(); ++q) maps.back()[static_cast<std::size_t>(orders[0][q])] = order[q];
    }
    return maps;
  }

  // A ring's program at a position depends on the position, not on which rank holds it: so
  // moving every rank m positions along every channel's ring (when one rank map does that for
  // all channels) is a symmetry, and so is moving each channel's ring onto the next channel's
  // (when one rank map does that for all). Both need chunks of (nearly) one size, so that the
  // image threads move the same bytes, and the second channels of one share (no weights); chains
  // (Broadcast, Reduce) start at the root, so they state none.
  std::vector<SymmetryAxis> symmetries(const PlanInfo& info) const override {
    std::vector<std::vector<int>> orders = program_orders(info);
    if (orders.empty()) return {};
    int p = info.req.nranks, C = static_cast<int>(orders.size());
    auto up = [](int x) { return static_cast<std::size_t>(x); };
    std::vector<SymmetryAxis> axes;
    // Channel rotation: the rank at position q of channel ch goes to position q of channel ch+1.
    if (C > 1 && !info.params.count("weights")) {
      SymmetryAxis a{std::vector<int>(up(p)), std::vector<int>(up(C)), C};
      for (int q = 0; q < p; ++q) a.rank[up(orders[0][up(q)])] = orders[1][up(q)];
      bool ok = true;
      for (int ch = 0; ch < C && ok; ++ch) {
        a.channel[up(ch)] = (ch + 1) % C;
        for (int q = 0; q < p && ok; ++q) ok = a.rank[up(orders[up(ch)][up(q)])] == orders[up((ch + 1) % C)][up(q)];
      }
      if (ok) axes.push_back(std::move(a));
    }
    // Position shift: the smallest m dividing p that one rank map does on every channel.
    for (int m = 1; m < p; ++m) {
      if (p % m != 0) continue;
      SymmetryAxis a{std::vector<int>(up(p)), std::vector<int>(up(C)), p / m};
      for (int q = 0; q < p; ++q) a.rank[up(orders[0][up(q)])] = orders[0][up((q + m) % p)];
      bool ok = true;
      for (int ch = 0; ch < C && ok; ++ch) {
        a.channel[up(ch)] = ch;
        for (int q = 0; q < p && ok; ++q) ok = a.rank[up(orders[up(ch)][up(q)])] == orders[up(ch)][up((q + m) % p)];
      }
      if (ok) {
        axes.push_back(std::move(a));
        break;
      }
    }
    return axes;
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    check_shape(info);
    int p = info.req.nranks;
    int channels = param_int(info, "channels", 1);
    int k = param_int(info, "pipeline", 1);
    Shares sh = shares_of(info);
    std::vector<Op> ops;
    ops.reserve(static_cast<std::size_t>(channels) * static_cast<std::size_t>(k) * 4 * static_cast<std::size_t>(p));
    if (p == 1) return single_rank(info, sh, channels, k);
    for (int c = 0; c < channels; ++c) channel_ops(info, sh, rank, c, ops);
    return ops;
  }

  // Channels are laid out one after another and none waits on another: channel c is its part.
  std::vector<Op> channel_program(const PlanInfo& info, int rank, int channel) const override {
    check_shape(info);
    if (info.req.nranks == 1 || channel < 0 || channel >= param_int(info, "channels", 1))
      return Algorithm::channel_program(info, rank, channel);
    std::vector<Op> ops;
    ops.reserve(static_cast<std::size_t>(param_int(info, "pipeline", 1)) * 4 * static_cast<std::size_t>(info.req.nranks));
    channel_ops(info, shares_of(info), rank, channel, ops);
    return ops;
  }

 private:
  // A plan file's channels and pipeline are at least 1 (pipeline=0 divided by zero: found by fuzz_plan);
  // its weights, one a channel, cut the buffers into the chunks they hold.
  static void check_shape(const PlanInfo& info) {
    for (const char* key : {"channels", "pipeline"})
      if (int v = param_int(info, key, 1); v < 1)
        throw InputError("ring: plan parameter " + std::string(key) + "=" + std::to_string(v) + " must be >= 1");
    if (!info.params.count("weights")) return;
    std::uint64_t most = static_cast<std::uint64_t>(shares_of(info).U) * static_cast<std::uint64_t>(std::max(info.req.nranks, 1)) *
                         static_cast<std::uint64_t>(param_int(info, "pipeline", 1));
    if (most > std::numeric_limits<std::uint32_t>::max())
      throw InputError("ring: plan parameter weights sums to " + std::to_string(shares_of(info).U) + " units a slice, " +
                       std::to_string(most) + " chunks a buffer, more than a plan holds");
    PlanInfo laid = info;
    set_chunks(laid);
    if (laid.in_chunks != info.in_chunks || laid.out_chunks != info.out_chunks)
      throw InputError("ring: plan parameter weights sums to " + std::to_string(shares_of(info).U) +
                       " units a slice, but the buffers hold " + std::to_string(info.in_chunks) + " and " +
                       std::to_string(info.out_chunks) + " chunks (expected " + std::to_string(laid.in_chunks) + " and " +
                       std::to_string(laid.out_chunks) + ")");
  }

  static void channel_ops(const PlanInfo& info, const Shares& sh, int rank, int c, std::vector<Op>& ops) {
    int p = info.req.nranks, k = param_int(info, "pipeline", 1);
    Ring r = ring_for(info, rank, c, param_int(info, "bidirectional", 0) != 0 && c % 2 == 1);
    Piece pc{&sh, c, k, static_cast<std::uint16_t>(c)};
    switch (info.req.coll) {
      case Collective::AllReduce: all_reduce(ops, r, p, pc); break;
      case Collective::ReduceScatter: reduce_scatter(ops, r, p, pc); break;
      case Collective::AllGather: all_gather(ops, r, p, pc); break;
      case Collective::Broadcast: broadcast(ops, r, p, pc); break;
      case Collective::Reduce: reduce_chain(ops, r, p, pc); break;
      case Collective::AlltoAll: throw InputError("ring: AlltoAll is not supported");
    }
  }

  // Channel c's pieces: chunk index of piece j of slice q, slice-major (q, then the channel's
  // units, then j), so that a rank's slice is contiguous: ReduceScatter's rank r output and
  // AllGather's rank r input are chunks [r U k, (r + 1) U k) of the full buffer whatever the
  // channels; each piece w_c chunks (1 without weights: (q C + c) k + j).
  struct Piece {
    const Shares* sh;
    int c, k;
    std::uint16_t ch;
    std::uint32_t count() const { return static_cast<std::uint32_t>(sh->w[static_cast<std::size_t>(c)]); }
    std::uint32_t local(int j) const {
      auto uc = static_cast<std::size_t>(c);
      return static_cast<std::uint32_t>(sh->off[uc] * k + j * sh->w[uc]);
    }
    std::uint32_t slice(int q, int j) const { return static_cast<std::uint32_t>(q * sh->U * k) + local(j); }
    // The (slice, piece) of a chunk index that slice() gave.
    std::pair<int, int> of(std::uint32_t chunk) const {
      auto per = static_cast<std::uint32_t>(sh->U * k);
      auto uc = static_cast<std::size_t>(c);
      return {static_cast<int>(chunk / per),
              static_cast<int>((chunk % per - static_cast<std::uint32_t>(sh->off[uc] * k)) / static_cast<std::uint32_t>(sh->w[uc]))};
    }
  };

  // One rank: the result is the input (AllGather / ReduceScatter / AllReduce / chains alike).
  static std::vector<Op> single_rank(const PlanInfo& info, const Shares& sh, int channels, int k) {
    std::vector<Op> ops;
    auto per_unit = info.out_chunks / static_cast<std::uint32_t>(sh.U * k);
    for (int c = 0; c < channels; ++c) {
      Piece pc{&sh, c, k, static_cast<std::uint16_t>(c)};
      ops.push_back(copy(in(pc.local(0)), out(pc.local(0)), static_cast<std::uint32_t>(k) * pc.count() * per_unit, pc.ch));
    }
    return ops;
  }

  // Reduce-scatter steps t = 0..p-2: send slice pos-t-1, receive slice pos-t-2 and reduce; the
  // last receive completes slice pos. `acc` is where partial sums live.
  static void rs_phase(std::vector<Op>& ops, const Ring& r, int p, const Piece& pc, Buf acc, bool final_to_output_local) {
    const std::uint32_t n = pc.count();
    for (int t = 0; t <= p - 2; ++t) {
      int qs = mod(r.pos - t - 1, p), qr = mod(r.pos - t - 2, p);
      for (int j = 0; j < pc.k; ++j) {
        ChunkRef from = t == 0 ? in(pc.slice(qs, j)) : ChunkRef{acc, pc.slice(qs, j)};
        ops.push_back(send(r.next, from, n, pc.ch));
        ChunkRef into{acc, pc.slice(qr, j)};
        if (t == p - 2 && final_to_output_local) into = out(pc.local(j));
        ops.push_back(recv_reduce(r.prev, in(pc.slice(qr, j)), into, n, pc.ch));
      }
    }
  }

  // All-gather steps t = 0..p-2 over output slices indexed by `slot(q)`: send slice pos-t,
  // receive slice pos-t-1. The first send reads `first_src(j)`.
  template <class Slot, class First>
  static void ag_phase(std::vector<Op>& ops, const Ring& r, int p, const Piece& pc, Slot slot, First first_src) {
    const std::uint32_t n = pc.count();
    for (int t = 0; t <= p - 2; ++t) {
      int qs = mod(r.pos - t, p), qr = mod(r.pos - t - 1, p);
      for (int j = 0; j < pc.k; ++j) {
        ops.push_back(send(r.next, t == 0 ? first_src(j) : out(slot(qs, j)), n, pc.ch));
        ops.push_back(recv(r.prev, out(slot(qr, j)), n, pc.ch));
      }
    }
  }

  static void all_reduce(std::vector<Op>& ops, const Ring& r, int p, const Piece& pc) {
    rs_phase(ops, r, p, pc, Buf::Output, false);
    auto slot = [&](int q, int j) { return pc.slice(q, j); };
    ag_phase(ops, r, p, pc, slot, [&](int j) { return out(pc.slice(r.pos, j)); });
  }

  static void reduce_scatter(std::vector<Op>& ops, const Ring& r, int p, const Piece& pc) {
    // Slices are laid out by rank, not position: rank r's output is input slice r. Map the
    // position-indexed phase onto rank-indexed chunks by renaming slice q -> order[q].
    std::vector<Op> tmp;
    rs_phase(tmp, r, p, pc, Buf::Scratch, true);
    for (Op& o : tmp) {
      auto rename = [&](ChunkRef& x) {
        if (x.buf == Buf::Output) return;
        auto [q, j] = pc.of(x.chunk);
        x.chunk = pc.slice(r.at(q), j);
      };
      if (o.type != OpType::Recv) rename(o.src);
      if (o.type != OpType::Send) rename(o.dst);
      ops.push_back(o);
    }
  }

  static void all_gather(std::vector<Op>& ops, const Ring& r, int p, const Piece& pc) {
    auto slot = [&](int q, int j) { return pc.slice(r.at(q), j); };
    for (int j = 0; j < pc.k; ++j) ops.push_back(copy(in(pc.local(j)), out(slot(r.pos, j)), pc.count(), pc.ch));
    ag_phase(ops, r, p, pc, slot, [&](int j) { return in(pc.local(j)); });
  }

  // Chain from position 0 (the root) to position p-1, k chunks in flight.
  static void broadcast(std::vector<Op>& ops, const Ring& r, int p, const Piece& pc) {
    const std::uint32_t n = pc.count();
    for (int j = 0; j < pc.k; ++j) {
      auto x = pc.local(j);
      if (r.pos == 0) {
        ops.push_back(copy(in(x), out(x), n, pc.ch));
        ops.push_back(send(r.next, in(x), n, pc.ch));
      } else {
        ops.push_back(recv(r.prev, out(x), n, pc.ch));
        if (r.pos < p - 1) ops.push_back(send(r.next, out(x), n, pc.ch));
      }
    }
  }

  // Chain from position 0 to the root at position p-1, reducing on the way.
  static void reduce_chain(std::vector<Op>& ops, const Ring& r, int p, const Piece& pc) {
    const std::uint32_t n = pc.count();
    for (int j = 0; j < pc.k; ++j) {
      auto x = pc.local(j);
      if (r.pos == 0) {
        ops.push_back(send(r.next, in(x), n, pc.ch));
      } else {
        ops.push_back(recv_reduce(r.prev, in(x), out(x), n, pc.ch));
        if (r.pos < p - 1) ops.push_back(send(r.next, out(x), n, pc.ch));
      }
    }
  }
};

}  // namespace

const Algorithm* make_ring() {
  static const RingAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
