// Reducing a plan to its channel 0 (verify_channels.h). Why it is sound, in the terms of
// verify.cpp's symbolic values {input chunk, set of ranks}: let channel c of rank g(r) run the ops
// of channel 0 of rank r with every peer q read as g(q) and every chunk x read as s(x), where g is
// a permutation of ranks and s renames a chunk's block (when a buffer holds a block per rank) by g
// and shifts its place in the block by d, the same d for the input and the output. Then
//  - the channels are independent: messages match per channel, no two channels touch one chunk
//    (checked below), and a dep that crosses channels points to a lower channel only (channel 0
//    has none): channel 0 runs as it would alone, and by induction on the channel, channel c's
//    deps on lower channels wait on ops that run whatever channel c does, so they only delay
//    its ops (a program whose messages match in a fixed order ends the same whichever way its
//    ops are delayed, as a Kahn network does) and order more accesses, which adds no race. So a
//    race, deadlock or mismatch of the plan is one within a channel, and channel 0's are the
//    plan's own;
//  - channel c's execution is the image of channel 0's: input chunk x of rank r starts as
//    {x, {r}} and its image, chunk s(x) of rank g(r), as {s(x), {g(r)}}; copies, transfers and
//    unions of disjoint rank sets commute with renaming, and so do the engine's checks;
//  - what each collective asks of an output chunk commutes with the renaming too ({x, all ranks}
//    for AllReduce; {x, {q}} in block q for AllGather; ...), given that the root of Broadcast and
//    Reduce stays where it is.
// So channel c ends right wherever channel 0 does, and the channels' chunks cover every buffer:
// channel 0 run alone, its chunks renumbered densely, decides the plan.

#include "verify_channels.h"

#include <algorithm>
#include <array>
#include <limits>
#include <thread>
#include <vector>

#include "algorithms/common.h"
#include "collkit/core/error.h"

namespace collkit::plan::detail {

namespace {

constexpr std::int64_t kUnset = std::numeric_limits<std::int64_t>::min();

// A buffer's chunk x as (block, place in the block): a blocked buffer holds a block per rank
// (AllGather's output, ReduceScatter's input, AlltoAll's both), whose blocks a rank map renames.
struct Shape {
  std::uint32_t n = 0;    // chunks
  std::uint32_t blk = 0;  // chunks a block (n when not blocked)
  bool blocked = false;
  std::uint32_t block(std::uint32_t x) const { return blocked ? x / blk : 0; }
  std::uint32_t place(std::uint32_t x) const { return blocked ? x % blk : x; }
};

// nullopt where the chunk counts are not the collective's (verify() reports that).
std::optional<std::array<Shape, 3>> shapes(const PlanInfo& info) {
  auto p = static_cast<std::uint32_t>(info.req.nranks);
  Shape in{info.in_chunks, info.in_chunks, false}, out{info.out_chunks, info.out_chunks, false};
  if (in.n == 0 || out.n == 0) return std::nullopt;
  switch (info.req.coll) {
    case Collective::AllGather:
      if (std::uint64_t{in.n} * p != out.n) return std::nullopt;
      out = {out.n, in.n, true};
      break;
    case Collective::ReduceScatter:
      if (std::uint64_t{out.n} * p != in.n) return std::nullopt;
      in = {in.n, out.n, true};
      break;
    case Collective::AlltoAll:
      if (in.n != out.n || in.n % p != 0) return std::nullopt;
      in = out = {in.n, in.n / p, true};
      break;
    default:
      if (in.n != out.n) return std::nullopt;
  }
  // Scratch laid out as the input (a reduce-scatter's partial sums) is renamed as the input.
  Shape scratch = info.scratch_chunks == in.n ? in : Shape{info.scratch_chunks, info.scratch_chunks, false};
  return std::array<Shape, 3>{in, out, scratch};
}

bool is_transfer(OpType t) { return t == OpType::Send || t == OpType::Recv || t == OpType::RecvReduce; }
bool reads_src(OpType t) { return t != OpType::Recv; }
bool writes_dst(OpType t) { return t != OpType::Send; }
std::size_t at(int x) { return static_cast<std::size_t>(x); }

// An op of channel 0 as its images are compared with it; 20 bytes, since a 1024-rank ring's
// channel 0 holds 4 M. Fields the op does not use stay 0.
struct FrameOp {
  std::uint32_t src = 0, dst = 0, count = 0;
  std::int32_t peer = -1;
  OpType type = OpType::Send;
  Buf src_buf = Buf::Input, dst_buf = Buf::Input;
  std::uint8_t deps = 0;  // how many; their places in the channel follow in the rank's dep list
};

// Channel 0's ops per rank, served as a one-channel plan with its chunks renumbered densely.
class ChannelZeroPlan final : public Plan {
 public:
  struct Renumber {
    std::array<Shape, 3> from;
    std::array<std::uint32_t, 3> blk{};             // chunks a block after renumbering
    std::array<std::vector<std::uint32_t>, 3> lut;  // place in a block -> new place
  };

  ChannelZeroPlan(PlanInfo info, std::vector<std::vector<FrameOp>> ops, std::vector<std::vector<std::uint32_t>> deps, Renumber renumber)
      : Plan(std::move(info)), ops_(std::move(ops)), deps_(std::move(deps)), renumber_(std::move(renumber)) {}

  // Each rank's program is served once, as the engine reads it, and its ops freed as they go:
  // the engine's copy then reuses their memory instead of faulting in as much again.
  std::vector<Op> program(int rank) const override {
    if (served_.empty()) served_.assign(ops_.size(), 0);
    if (served_.at(at(rank))++) throw Error("channel 0's program of rank " + std::to_string(rank) + " was already served");
    std::vector<FrameOp> frames = std::move(ops_.at(at(rank)));
    std::vector<std::uint32_t> deps = std::move(deps_.at(at(rank)));
    std::vector<Op> prog(frames.size());
    std::size_t d = 0;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const FrameOp& f = frames[i];
      Op& o = prog[i];
      o.type = f.type;
      o.peer = f.peer;
      o.count = f.count;
      o.channel = 0;
      o.src = {f.src_buf, reads_src(f.type) ? chunk(f.src_buf, f.src) : 0};
      o.dst = {f.dst_buf, writes_dst(f.type) ? chunk(f.dst_buf, f.dst) : 0};
      for (std::uint8_t k = 0; k < f.deps; ++k) o.deps[k] = deps[d++];
    }
    return prog;
  }
  bool is_explicit() const override { return false; }

 private:
  std::uint32_t chunk(Buf b, std::uint32_t x) const {
    auto i = static_cast<std::size_t>(b);
    const Shape& s = renumber_.from[i];
    return s.block(x) * renumber_.blk[i] + renumber_.lut[i][s.place(x)];
  }

  mutable std::vector<std::vector<FrameOp>> ops_;
  mutable std::vector<std::vector<std::uint32_t>> deps_;
  mutable std::vector<char> served_;
  Renumber renumber_;
};

class Reducer {
 public:
  explicit Reducer(const Plan& plan) : plan_(plan), info_(plan.info()), p_(plan.nranks()), nch_(info_.channels) {}

  std::optional<ChannelReduction> run() {
    if (p_ < 2 || nch_ < 2 || !algo::even_chunks(info_)) return std::nullopt;
    auto sh = shapes(info_);
    if (!sh) return std::nullopt;
    shape_ = *sh;
    if (!rank_maps()) return std::nullopt;
    for (std::size_t b = 0; b < 3; ++b) touched_[b].assign(shape_[b].blk, 0);
    Scratch main;
    main.delta.assign(at(nch_), {kUnset, kUnset, kUnset});
    main.delta[0] = {0, 0, 0};
    frames_.resize(at(p_));
    deps_.resize(at(p_));
    // Channel 0 first (every rank), then every channel against it: rank 0 alone, which finds
    // the channels' shifts, then the others on a few threads (2 cores: 1.9 -> 1.5 s at 1024).
    for (int r = 0; r < p_; ++r)
      if (!store_channel0(r, main)) return std::nullopt;
    if (!compare_channels(0, main)) return std::nullopt;
    if (!compare_rest(main)) return std::nullopt;
    delta_ = main.delta;
    if (!partitions()) return std::nullopt;
    return reduced();
  }

 private:
  // Rank maps from channel 0 onto each channel, as the plan proposes them: its channel images,
  // or a stated symmetry that moves the channels round one cycle. Checked op by op afterwards.
  bool rank_maps() {
    maps_ = plan_.channel_images();
    if (maps_.size() != at(nch_)) maps_ = from_axes();
    if (maps_.size() != at(nch_)) return false;
    inv_.assign(at(nch_), std::vector<int>(at(p_), -1));
    for (int ch = 0; ch < nch_; ++ch) {
      const std::vector<int>& g = maps_[at(ch)];
      if (g.size() != at(p_)) return false;
      for (int r = 0; r < p_; ++r) {
        int x = g[at(r)];
        // Channel 0 is its own frame: its map must be the identity.
        if (x < 0 || x >= p_ || inv_[at(ch)][at(x)] != -1 || (ch == 0 && x != r)) return false;
        inv_[at(ch)][at(x)] = r;
      }
    }
    // Broadcast and Reduce ask something of the root alone: it must stay where it is.
    Collective coll = info_.req.coll;
    if (coll == Collective::Broadcast || coll == Collective::Reduce)
      for (int ch = 0; ch < nch_; ++ch)
        if (maps_[at(ch)][at(info_.req.root)] != info_.req.root) return false;
    return true;
  }

  std::vector<std::vector<int>> from_axes() const {
    for (const SymmetryAxis& a : plan_.symmetries()) {
      if (a.rank.size() != at(p_) || a.channel.size() != at(nch_)) continue;
      std::vector<std::vector<int>> maps(at(nch_));
      std::vector<int> cur(at(p_));
      for (int r = 0; r < p_; ++r) cur[at(r)] = r;
      int c = 0;
      bool cycle = true;
      for (int t = 0; t < nch_ && cycle; ++t) {
        cycle = c >= 0 && c < nch_ && maps[at(c)].empty();
        if (!cycle) break;
        maps[at(c)] = cur;
        for (int& x : cur) x = x >= 0 && x < p_ ? a.rank[at(x)] : -1;
        c = a.channel[at(c)];
      }
      if (cycle && c == 0) return maps;
    }
    return {};
  }

  // Per thread: what index_ops() records of the rank at hand, and the channels' shifts as far
  // as that thread has found them.
  struct Scratch {
    std::vector<std::uint16_t> channel_of;           // per op
    std::vector<std::uint32_t> place;                // per op, its place in its channel
    std::vector<std::uint32_t> count;                // ops per channel
    std::vector<std::array<std::int64_t, 3>> delta;  // per channel, per buffer: shift of places
  };

  // Ranks 1.. on threads, each with its own shifts; they must agree where two found one.
  bool compare_rest(Scratch& main) {
    unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    if (p_ < 64) threads = 1;
    std::vector<Scratch> scratch(threads, main);
    std::vector<char> ok(threads, 1);
    auto work = [&](unsigned t) {
      try {
        for (int r = 1 + static_cast<int>(t); r < p_ && ok[t]; r += static_cast<int>(threads))
          ok[t] = compare_channels(r, scratch[t]) ? 1 : 0;
      } catch (...) {
        ok[t] = 0;  // verify() then runs the whole plan, which reports what went wrong
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (std::thread& th : pool) th.join();
    if (std::find(ok.begin(), ok.end(), 0) != ok.end()) return false;
    for (const Scratch& sc : scratch)
      for (std::size_t c = 0; c < main.delta.size(); ++c)
        for (std::size_t b = 0; b < 3; ++b) {
          std::int64_t mine = sc.delta[c][b], &have = main.delta[c][b];
          if (mine == kUnset) continue;
          if (have == kUnset) have = mine;
          if (have != mine) return false;
        }
    return true;
  }

  // What the engine would reject on its own is left to it: the reduction then does not apply.
  bool well_formed(int r, const Op& o, std::uint32_t index, const Scratch& sc) const {
    if (o.type > OpType::Reduce || o.channel >= nch_ || o.count == 0) return false;
    auto in_range = [&](ChunkRef x) {
      if (x.buf > Buf::Scratch) return false;
      const Shape& s = shape_[static_cast<std::size_t>(x.buf)];
      return std::uint64_t{x.chunk} + o.count <= s.n && std::uint64_t{s.place(x.chunk)} + o.count <= s.blk;
    };
    if (reads_src(o.type) && !in_range(o.src)) return false;
    if (writes_dst(o.type) && !in_range(o.dst)) return false;
    if (is_transfer(o.type) && (o.peer < 0 || o.peer >= p_ || o.peer == r)) return false;
    std::size_t n = o.num_deps();
    for (std::size_t k = n; k < kMaxDeps; ++k)
      if (o.deps[k] != kNoDep) return false;
    // A dep may wait on an earlier op of its own channel or of a lower one (channels staggered,
    // as hier's are), never of a higher one.
    for (std::size_t k = 0; k < n; ++k)
      if (o.deps[k] >= index || sc.channel_of[o.deps[k]] > o.channel) return false;
    return true;
  }

  // Checks every op of `prog` (rank r's program, or one channel of it) and records where each
  // sits in its channel.
  bool index_ops(int r, const std::vector<Op>& prog, Scratch& sc) const {
    sc.channel_of.resize(prog.size());
    sc.place.resize(prog.size());
    sc.count.assign(at(nch_), 0);
    for (std::size_t i = 0; i < prog.size(); ++i) {
      sc.channel_of[i] = prog[i].channel;
      if (!well_formed(r, prog[i], static_cast<std::uint32_t>(i), sc)) return false;
      sc.place[i] = sc.count[prog[i].channel]++;
    }
    return true;
  }

  // Channel 0 as the plan makes it alone (cheaper than the whole program); compare_channels()
  // checks it against the whole program.
  bool store_channel0(int r, Scratch& sc) {
    std::vector<Op> prog;
    try {
      prog = plan_.channel_program(r, 0);
    } catch (const Error&) {
      return false;
    }
    if (!index_ops(r, prog, sc) || sc.count[0] != prog.size()) return false;
    std::vector<FrameOp>& frames = frames_[at(r)];
    frames.reserve(prog.size());
    for (const Op& o : prog) {
      FrameOp f;
      f.type = o.type;
      f.count = o.count;
      if (is_transfer(o.type)) f.peer = o.peer;
      if (reads_src(o.type)) {
        f.src_buf = o.src.buf;
        f.src = o.src.chunk;
        touch(o.src, o.count);
      }
      if (writes_dst(o.type)) {
        f.dst_buf = o.dst.buf;
        f.dst = o.dst.chunk;
        touch(o.dst, o.count);
      }
      f.deps = static_cast<std::uint8_t>(o.num_deps());
      for (std::uint8_t k = 0; k < f.deps; ++k) deps_[at(r)].push_back(o.deps[k]);
      frames.push_back(f);
    }
    return true;
  }

  void touch(ChunkRef x, std::uint32_t count) {
    auto b = static_cast<std::size_t>(x.buf);
    std::uint32_t from = shape_[b].place(x.chunk);
    std::fill_n(touched_[b].begin() + from, count, 1);
  }

  // Chunk x of channel ch at rank g(r) against chunk y of channel 0 at rank r: its block renamed
  // back, its place shifted by the channel's shift of that buffer (set by the first it meets).
  bool same_chunk(int ch, Buf b, std::uint32_t x, std::uint32_t y, Scratch& sc) const {
    const Shape& s = shape_[static_cast<std::size_t>(b)];
    if (s.blocked && static_cast<std::uint32_t>(inv_[at(ch)][s.block(x)]) != s.block(y)) return false;
    std::int64_t d = std::int64_t{s.place(x)} - std::int64_t{s.place(y)};
    std::int64_t& want = sc.delta[at(ch)][static_cast<std::size_t>(b)];
    if (want == kUnset) want = d;
    return want == d;
  }

  // Every op of rank r's program against its counterpart in channel 0: channel 0's own (the
  // identity map) as well, which makes the stored channel 0 the plan's.
  bool compare_channels(int r, Scratch& sc) const {
    std::vector<Op> prog;
    try {
      prog = plan_.program(r);
    } catch (const Error&) {
      return false;
    }
    sc.channel_of.resize(prog.size());
    sc.place.resize(prog.size());
    sc.count.assign(at(nch_), 0);
    std::vector<std::size_t> dep_at(at(nch_), 0);
    for (std::size_t i = 0; i < prog.size(); ++i) {
      const Op& o = prog[i];
      sc.channel_of[i] = o.channel;
      if (!well_formed(r, o, static_cast<std::uint32_t>(i), sc)) return false;
      int ch = o.channel;
      std::uint32_t place = sc.place[i] = sc.count[at(ch)]++;
      int r0 = inv_[at(ch)][at(r)];
      const std::vector<FrameOp>& frames = frames_[at(r0)];
      if (place >= frames.size()) return false;
      const FrameOp& f = frames[place];
      // Deps within the channel are the frame's; those on lower channels (none in channel 0,
      // which has none lower) only hold the op back until ops that run regardless.
      std::size_t own = 0, nd = o.num_deps();
      for (std::size_t k = 0; k < nd; ++k) own += sc.channel_of[o.deps[k]] == o.channel ? 1 : 0;
      if (o.type != f.type || o.count != f.count || own != f.deps) return false;
      if (is_transfer(o.type) && inv_[at(ch)][at(o.peer)] != f.peer) return false;
      if (reads_src(o.type) && (o.src.buf != f.src_buf || !same_chunk(ch, o.src.buf, o.src.chunk, f.src, sc))) return false;
      if (writes_dst(o.type) && (o.dst.buf != f.dst_buf || !same_chunk(ch, o.dst.buf, o.dst.chunk, f.dst, sc))) return false;
      // Deps name the same places in the channel; the frame's list holds them in op order, so
      // a cursor per channel walks it.
      if (f.deps) {
        std::size_t& d = dep_at[at(ch)];
        for (std::size_t k = 0; k < nd; ++k) {
          if (sc.channel_of[o.deps[k]] != o.channel) continue;
          if (d >= deps_[at(r0)].size() || deps_[at(r0)][d++] != sc.place[o.deps[k]]) return false;
        }
      }
    }
    for (int ch = 0; ch < nch_; ++ch)
      if (sc.count[at(ch)] != frames_[at(inv_[at(ch)][at(r)])].size()) return false;
    return true;
  }

  // The channels' chunks: in every buffer channel 0 touches, its places shifted by each
  // channel's shift tile the block exactly; the input and the output shift alike.
  bool partitions() {
    std::array<std::size_t, 3> used{};
    for (std::size_t b = 0; b < 3; ++b) {
      const Shape& s = shape_[b];
      std::vector<std::uint32_t> places;
      for (std::uint32_t x = 0; x < s.blk; ++x)
        if (touched_[b][x]) places.push_back(x);
      used[b] = places.size();
      if (places.empty()) continue;
      std::vector<char> cover(s.blk, 0);
      for (int ch = 0; ch < nch_; ++ch) {
        std::int64_t d = delta_[at(ch)][b];
        if (d == kUnset) return false;
        for (std::uint32_t x : places) {
          std::int64_t y = std::int64_t{x} + d;
          if (y < 0 || y >= s.blk || cover[static_cast<std::size_t>(y)]) return false;
          cover[static_cast<std::size_t>(y)] = 1;
        }
      }
      if (places.size() * static_cast<std::size_t>(nch_) != s.blk) return false;
    }
    if (!used[0] || !used[1]) return false;
    const Shape &in = shape_[0], &out = shape_[1];
    if (in.blk != out.blk || touched_[0] != touched_[1]) return false;
    for (int ch = 0; ch < nch_; ++ch)
      if (delta_[at(ch)][0] != delta_[at(ch)][1]) return false;
    return true;
  }

  std::optional<ChannelReduction> reduced() {
    ChannelZeroPlan::Renumber ren;
    ren.from = shape_;
    PlanInfo sub = info_;
    sub.channels = 1;
    sub.params["channels"] = "1";
    auto uc = static_cast<std::uint64_t>(nch_);
    if (info_.req.bytes % uc != 0) return std::nullopt;
    sub.req.bytes = info_.req.bytes / uc;
    std::array<std::uint32_t, 3> chunks{};
    for (std::size_t b = 0; b < 3; ++b) {
      const Shape& s = shape_[b];
      ren.lut[b].assign(s.blk, 0);
      std::uint32_t next = 0;
      for (std::uint32_t x = 0; x < s.blk; ++x)
        if (touched_[b][x]) ren.lut[b][x] = next++;
      ren.blk[b] = next;
      chunks[b] = s.blk ? s.n / s.blk * next : 0;
    }
    sub.in_chunks = chunks[0];
    sub.out_chunks = chunks[1];
    sub.scratch_chunks = chunks[2];
    sub.scratch_bytes = chunks[2] ? chunk_bytes(info_, Buf::Scratch, 0, 1) * chunks[2] : 0;
    // Every chunk keeps its bytes, so the engine's byte checks are the whole plan's.
    if (!algo::even_chunks(sub)) return std::nullopt;
    for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch})
      if (buffer_chunks(sub, b) && chunk_bytes(sub, b, 0, 1) != chunk_bytes(info_, b, 0, 1)) return std::nullopt;
    ChannelReduction result;
    result.channels = nch_;
    result.channel0 = std::make_unique<ChannelZeroPlan>(std::move(sub), std::move(frames_), std::move(deps_), std::move(ren));
    return result;
  }

  const Plan& plan_;
  const PlanInfo& info_;
  int p_;
  int nch_;
  std::array<Shape, 3> shape_{};
  std::vector<std::vector<int>> maps_, inv_;        // per channel: rank of channel 0's frame -> rank, and back
  std::vector<std::array<std::int64_t, 3>> delta_;  // per channel, per buffer: shift of places
  std::array<std::vector<char>, 3> touched_;        // per buffer: places channel 0 touches anywhere
  std::vector<std::vector<FrameOp>> frames_;        // per rank: channel 0's ops
  std::vector<std::vector<std::uint32_t>> deps_;    // per rank: channel 0's deps, as places
};

}  // namespace

std::optional<ChannelReduction> reduce_by_channels(const Plan& plan) { return Reducer(plan).run(); }

}  // namespace collkit::plan::detail
