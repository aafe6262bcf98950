// Symbolic verification: the engine runs the plan on values {input chunk, set of ranks} instead
// of data. Every rank's input chunk i starts as {i, {rank}}; a copy or transfer moves a value, a
// reduction unites two values of the same input chunk whose rank sets are disjoint. Since the
// values say exactly which contributions a chunk holds, a plan that ends with the expected value
// in every output chunk computes its collective for any input and any reduction operator that is
// associative and commutative.

#include "collkit/plan/verify.h"

#include <algorithm>
#include <cstdio>
#include <new>
#include <vector>

#include "cells.h"
#include "collkit/core/error.h"
#include "collkit/core/memory.h"
#include "engine.h"
#include "rank_set.h"
#include "verify_channels.h"

namespace collkit::plan {

namespace {

using detail::EngineOp;
using detail::OpFault;
using detail::RankSets;

constexpr std::uint32_t kEmpty = 0xffffffffu;

struct Value {
  std::uint32_t chunk = kEmpty;  ///< input chunk index; kEmpty: nothing written yet
  std::uint32_t set = 0;         ///< RankSets id
  /// The value n cells further along a run (cells.h): the next input chunks, same ranks.
  Value shift(std::uint32_t n) const { return chunk == kEmpty ? *this : Value{chunk + n, set}; }
  bool operator==(const Value&) const = default;
};

/// Consecutive cells holding v, v.shift(1), ...: what a send carries, or an op computes.
struct Piece {
  std::uint32_t size;
  Value v;
};

// Every step goes by pieces (runs of cells whose values continue each other), not by chunks: a
// piece's cells hold consecutive input chunks of one rank set, so one check or one union of rank
// sets answers for all of them, and the first failing chunk is a piece's first.
class Symbolic final : public detail::Machine {
 public:
  Symbolic(const PlanInfo& info, bool per_chunk)
      : info_(info), layout_(info), sets_(static_cast<std::uint32_t>(info.req.nranks)), reduces_(facts(info.req.coll).reduces) {
    cells_.resize(static_cast<std::size_t>(info.req.nranks));
    for (std::size_t r = 0; r < cells_.size(); ++r) {
      // Input chunk c holds {c, {r}}: one run; output and scratch hold nothing: another.
      cells_[r].init(layout_.cells(), Value{}, per_chunk);
      cells_[r].write(0, layout_.in, Value{0, RankSets::singleton(static_cast<std::uint32_t>(r))});
    }
  }

  std::uint32_t send(int rank, const EngineOp& op) override {
    std::uint32_t id = take();
    collect(rank, op.src_buf(), op.src_chunk, op.count, payloads_[id]);
    require(payloads_[id], op.src_buf(), op.src_chunk);
    return id;
  }

  void receive(int rank, const EngineOp& op, std::uint32_t payload) override {
    std::vector<Piece>& in = payloads_[payload];
    if (op.type == OpType::RecvReduce) {
      collect(rank, op.src_buf(), op.src_chunk, op.count, mine_);
      zip(mine_, in, [&](std::uint32_t at, Value mine, Value got) {
        if (mine.chunk == kEmpty) empty(op.src_buf(), op.src_chunk + at);
        return combine(mine, [&] { return detail::chunks_name(op.src_buf(), op.src_chunk + at, 1); }, got,
                       [] { return std::string("received"); });
      });
      write(rank, op.dst_buf(), op.dst_chunk, out_);
    } else {
      write(rank, op.dst_buf(), op.dst_chunk, in);
    }
    in.clear();
    free_.push_back(payload);
  }

  void local(int rank, const EngineOp& op) override {
    collect(rank, op.src_buf(), op.src_chunk, op.count, mine_);
    if (op.type == OpType::Reduce) {
      collect(rank, op.dst_buf(), op.dst_chunk, op.count, theirs_);
      zip(mine_, theirs_, [&](std::uint32_t at, Value src, Value dst) {
        if (src.chunk == kEmpty) empty(op.src_buf(), op.src_chunk + at);
        if (dst.chunk == kEmpty) empty(op.dst_buf(), op.dst_chunk + at);
        return combine(dst, [&] { return detail::chunks_name(op.dst_buf(), op.dst_chunk + at, 1); }, src,
                       [&] { return detail::chunks_name(op.src_buf(), op.src_chunk + at, 1); });
      });
      write(rank, op.dst_buf(), op.dst_chunk, out_);
    } else {
      require(mine_, op.src_buf(), op.src_chunk);
      write(rank, op.dst_buf(), op.dst_chunk, mine_);  // read in full first: ranges may overlap
    }
  }

  // The first output chunk, in rank order, that does not hold what the collective defines.
  std::string check_results() const {
    const Request& req = info_.req;
    auto p = static_cast<std::uint32_t>(req.nranks);
    std::uint32_t in = info_.in_chunks, out = info_.out_chunks;
    std::string layout = shape_error(p, in, out);
    if (!layout.empty()) return "plan: " + std::string(to_string(req.coll)) + " " + layout;
    // Where the expected value stops continuing itself: every `in` chunks for AllGather (the
    // next rank's block), every in/p for AlltoAll; nowhere for the others.
    std::uint32_t period = std::max(1u, req.coll == Collective::AllGather ? in : req.coll == Collective::AlltoAll ? in / p : out);
    std::uint32_t base = layout_.base(Buf::Output);
    for (std::uint32_t r = 0; r < p; ++r) {
      if (req.coll == Collective::Reduce && r != static_cast<std::uint32_t>(req.root)) continue;
      std::string error;
      cells_[r].read(base, base + out, [&](std::uint32_t lo, std::uint32_t hi, Value got) {
        if (!error.empty()) return;
        for (std::uint32_t c = lo - base; c < hi - base && error.empty(); c = (c / period + 1) * period) {
          Value want = expected(r, c, p, in, out), at = got.shift(c - (lo - base));
          if (at.chunk == want.chunk && sets_.equal(at.set, want.set)) continue;
          error = "rank " + std::to_string(r) + " output chunk " + std::to_string(c) + ": holds " +
                  (at.chunk == kEmpty ? "nothing" : format(at)) + " but should hold " + format(want);
        }
      });
      if (!error.empty()) return error;
    }
    return {};
  }

 private:
  // Rank `rank`'s chunks [chunk, chunk + count) of b, as pieces, empty ones included.
  void collect(int rank, Buf b, std::uint32_t chunk, std::uint32_t count, std::vector<Piece>& out) const {
    out.clear();
    std::uint32_t base = layout_.base(b);
    cells_[static_cast<std::size_t>(rank)].read(base + chunk, base + chunk + count,
                                                [&](std::uint32_t lo, std::uint32_t hi, Value v) { out.push_back({hi - lo, v}); });
  }

  // Throws at the first chunk of `pieces` (read from b at `chunk`) that holds nothing.
  static void require(const std::vector<Piece>& pieces, Buf b, std::uint32_t chunk) {
    for (const Piece& p : pieces) {
      if (p.v.chunk == kEmpty) empty(b, chunk);
      chunk += p.size;
    }
  }

  [[noreturn]] static void empty(Buf b, std::uint32_t chunk) {
    throw OpFault{"reads " + detail::chunks_name(b, chunk, 1) + ", which holds nothing yet"};
  }

  void write(int rank, Buf b, std::uint32_t chunk, const std::vector<Piece>& pieces) {
    std::uint32_t at = layout_.base(b) + chunk;
    for (const Piece& p : pieces) {
      cells_[static_cast<std::size_t>(rank)].write(at, at + p.size, p.v);
      at += p.size;
    }
  }

  // out_ = f(a, b) over the common refinement of two piece lists of one length; f gets the
  // offset of each part's first chunk.
  template <class F>
  void zip(const std::vector<Piece>& a, const std::vector<Piece>& b, F f) {
    out_.clear();
    std::size_t i = 0, j = 0;
    std::uint32_t used_a = 0, used_b = 0, at = 0;
    while (i < a.size() && j < b.size()) {
      std::uint32_t n = std::min(a[i].size - used_a, b[j].size - used_b);
      Value v = f(at, a[i].v.shift(used_a), b[j].v.shift(used_b));
      if (!out_.empty() && out_.back().v.shift(out_.back().size) == v) out_.back().size += n;
      else out_.push_back({n, v});
      at += n;
      used_a += n;
      used_b += n;
      if (used_a == a[i].size) {
        ++i;
        used_a = 0;
      }
      if (used_b == b[j].size) {
        ++j;
        used_b = 0;
      }
    }
  }

  std::uint32_t take() {
    if (free_.empty()) {
      payloads_.emplace_back();
      return static_cast<std::uint32_t>(payloads_.size() - 1);
    }
    std::uint32_t id = free_.back();
    free_.pop_back();
    return id;
  }

  std::string format(Value v) const { return "{chunk " + std::to_string(v.chunk) + " from " + sets_.format(v.set) + "}"; }

  // a (+) b, where a is `a_name()` ("output chunk 3") and b `b_name()` ("received"); the names
  // are built only for a message.
  template <class AName, class BName>
  Value combine(Value a, AName a_name, Value b, BName b_name) {
    auto what = [&] { return "adds " + format(b) + " (" + b_name() + ") to " + format(a) + " (" + a_name() + ")"; };
    if (!reduces_) throw OpFault{what() + ", but " + std::string(to_string(info_.req.coll)) + " does not reduce"};
    if (a.chunk != b.chunk) throw OpFault{what() + ": different input chunks"};
    Value v{a.chunk, 0};
    std::uint32_t dup = 0;
    if (!sets_.unite(a.set, b.set, &v.set, &dup)) throw OpFault{what() + ": counts rank " + std::to_string(dup) + " twice"};
    return v;
  }

  // Checks the chunk counts the expected results below rely on.
  std::string shape_error(std::uint32_t p, std::uint32_t in, std::uint32_t out) const {
    auto got = [&] { return "got in_chunks " + std::to_string(in) + ", out_chunks " + std::to_string(out); };
    switch (info_.req.coll) {
      case Collective::AllReduce:
      case Collective::Broadcast:
      case Collective::Reduce:
        if (in != out) return "needs in_chunks = out_chunks, " + got();
        break;
      case Collective::ReduceScatter:
        if (std::uint64_t{out} * p != in) return "needs in_chunks = " + std::to_string(p) + " x out_chunks, " + got();
        break;
      case Collective::AllGather:
        if (std::uint64_t{in} * p != out) return "needs out_chunks = " + std::to_string(p) + " x in_chunks, " + got();
        break;
      case Collective::AlltoAll:
        if (in != out || in % p != 0) return "needs in_chunks = out_chunks, a multiple of " + std::to_string(p) + ", " + got();
        break;
    }
    return {};
  }

  // What rank r's output chunk c holds when the collective is done (docs/plan.md).
  Value expected(std::uint32_t r, std::uint32_t c, std::uint32_t p, std::uint32_t in, std::uint32_t out) const {
    auto one = [](std::uint32_t rank) { return RankSets::singleton(rank); };
    switch (info_.req.coll) {
      case Collective::AllReduce:
      case Collective::Reduce: return {c, sets_.all()};
      case Collective::ReduceScatter: return {r * out + c, sets_.all()};
      case Collective::AllGather: return {c % in, one(c / in)};
      case Collective::AlltoAll: {
        std::uint32_t m = in / p;
        return {r * m + c % m, one(c / m)};
      }
      case Collective::Broadcast: return {c, one(static_cast<std::uint32_t>(info_.req.root))};
    }
    return {};
  }

  const PlanInfo& info_;
  detail::Layout layout_;
  RankSets sets_;
  bool reduces_;
  std::vector<detail::Cells<Value>> cells_;  // per rank: input, output, scratch chunks
  std::vector<std::vector<Piece>> payloads_;
  std::vector<std::uint32_t> free_;
  std::vector<Piece> mine_, theirs_, out_;  // scratch of receive() and local()
};

VerifyResult execute_symbolic(const Plan& plan, ChunkStore store, const VerifyProgress& progress) {
  VerifyResult result;
  try {
    if (plan.nranks() < 1) {
      result.error = "plan: " + std::to_string(plan.nranks()) + " ranks";
      return result;
    }
    bool per_chunk = detail::per_chunk_store(plan.info(), store);
    Symbolic machine(plan.info(), per_chunk);
    detail::EngineStats stats = detail::execute(plan, machine, per_chunk, progress);
    result.ops = stats.ops;
    result.transfers = stats.transfers;
    result.error = machine.check_results();
  } catch (const detail::PlanFault& e) {
    result.error = e.what();
  }
  result.ok = result.error.empty();
  return result;
}

// What the engine holds per op it executes (the op, its deps, payloads in flight, chunk state):
// about 40 bytes, measured on 1-channel rings of 1024 and 2048 ranks (179 and 690 MB peak for
// 4.2 M and 16.8 M ops).
constexpr double kBytesPerOp = 40;

// The plan's ops, from a few ranks' programs scaled to all ranks: expanding every program only
// to count them would cost what verifying does. 0 when a program does not expand (the engine
// then says why). Also the most channels one of those programs uses (`used`), which the engine's
// clocks count.
double estimate_ops(const Plan& plan, int& used) {
  int n = plan.nranks();
  used = 1;
  if (n < 1) return 0;
  double sum = 0;
  int sampled = 0;
  for (int r : {0, n / 2, n - 1}) {
    try {
      std::vector<Op> prog = plan.program(r);
      sum += static_cast<double>(prog.size());
      std::vector<char> seen(std::max<std::size_t>(1, plan.info().channels), 0);
      int here = 0;
      for (const Op& o : prog)
        if (o.channel < seen.size() && !seen[o.channel]) {
          seen[o.channel] = 1;
          ++here;
        }
      used = std::max(used, here);
      ++sampled;
    } catch (const Error&) {
      return 0;
    } catch (const std::bad_alloc&) {
      // A compact plan's few lines can describe a program bigger than the host (a ring over
      // 16777216 ranks): said here, once, rather than as a bare std::bad_alloc.
      throw InputError("verify: rank " + std::to_string(r) + "'s program alone does not fit in the memory this host has; verify the same " +
                       "algorithm on fewer ranks or channels");
    }
  }
  return sum / sampled * n;
}

// "42.9 GB", "181 MB", "38 kB": decimal units, as memory figures are read.
std::string memory_figure(double bytes) {
  char buf[32];
  if (bytes >= 1e9) std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else if (bytes >= 1e6) std::snprintf(buf, sizeof buf, "%.0f MB", bytes / 1e6);
  else std::snprintf(buf, sizeof buf, "%.0f kB", std::max(1.0, bytes / 1e3));
  return buf;
}

// What the engine holds per rank for each pair of the channels it uses: a vector clock per
// channel (used x used counters, for the ordering checks) and the snapshots of it that ops with
// dependents keep, about as much again: 8 bytes per pair, measured on synth plans of 128 and 256
// ranks with 1152 and 2304 channels (1.41 and 10.6 GB peak, 2.1 M and 8.4 M ops). Plans of a few
// channels never notice it; a synth plan's channel per tree arc makes it the larger term.
constexpr double kBytesPerChannelPair = 8;

// Refuses an execution of `ops` ops over `channels` channels a rank that would not fit in `limit`
// bytes (0: the host's available memory), before anything is allocated.
void check_fits(double ops, int nranks, int channels, const std::string& what, std::uint64_t limit) {
  bool given = limit > 0;
  double allowed = static_cast<double>(given ? limit : host_memory_available());
  const double c = channels;
  const double need = ops * kBytesPerOp + nranks * c * c * kBytesPerChannelPair;
  if (allowed <= 0 || need <= allowed) return;
  char count[32];
  if (ops >= 1e6) std::snprintf(count, sizeof count, "%.0f M", ops / 1e6);
  else std::snprintf(count, sizeof count, "%.0f", ops);
  std::string over = channels > 64 ? " on " + std::to_string(channels) + " channels a rank" : std::string();
  throw InputError("verify: " + what + " runs about " + count + " ops" + over + ", which would take about " + memory_figure(need) +
                   ", more than " + (given ? "the limit of " : "the ") + memory_figure(allowed) +
                   (given ? "" : " this host has available") + "; verify the same algorithm on fewer ranks");
}

}  // namespace

VerifyResult verify(const Plan& plan, ChunkStore store, const VerifyProgress& progress, std::uint64_t memory_limit) {
  // Even channel 0 alone would not fit: refused before the channels are compared (which also
  // reads every op).
  int used = 1;
  double ops = estimate_ops(plan, used);
  int channels = std::max<int>(1, plan.info().channels);
  check_fits(ops / channels, plan.nranks(), 1, channels > 1 ? "channel 0 of this plan" : "this plan", memory_limit);
  // Channel 0 alone decides a plan whose channels are its images; a wrong plan is run whole, so
  // that its error names the op and chunk of the plan as written.
  if (auto reduced = detail::reduce_by_channels(plan)) {
    auto n = static_cast<std::size_t>(reduced->channels);
    VerifyProgress scaled;
    if (progress) scaled = [&](std::size_t done, std::size_t total) { progress(done * n, total * n); };
    VerifyResult r = execute_symbolic(*reduced->channel0, store, scaled);
    if (r.ok) {
      r.ops *= n;
      r.transfers *= n;
      r.congruent_channels = reduced->channels - 1;
      return r;
    }
  }
  if (channels > 1) check_fits(ops, plan.nranks(), used, "this plan", memory_limit);
  return execute_symbolic(plan, store, progress);
}

}  // namespace collkit::plan
