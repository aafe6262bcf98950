#include "engine.h"

#include <algorithm>
#include <array>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "cells.h"

namespace collkit::plan::detail {

namespace {

constexpr std::uint32_t kNone = 0xffffffffu;
constexpr std::uint8_t kDepTarget = 1u << 4;  // EngineOp::bits: another op depends on it
constexpr std::uint8_t kHasDeps = 1u << 5;    // EngineOp::bits: it has deps (RankState::dep_at)
constexpr std::uint8_t kArrived = 1u << 6;    // EngineOp::bits: a receive's send has run
constexpr std::size_t kStuckShown = 6;

// Race-detection state of one chunk: op index + 1 of the last write (0: the initial contents)
// and of a read since then (0: none). Concurrent reads beyond the first go to a list of the
// engine's (`more`: its index + 1), never changed once made, so runs of chunks can share it; a
// read that happens-after an earlier one replaces it, since whatever is ordered after the later
// read is ordered after both.
struct Access {
  std::uint32_t writer = 0;
  std::uint32_t reader = 0;
  std::uint32_t more = 0;
  Access shift(std::uint32_t) const { return *this; }  // the same for every chunk of a run
  bool operator==(const Access&) const = default;
};

enum class Wait : std::uint8_t { Queued, Message, Dep, Done };

struct RankState {
  std::span<EngineOp> ops;            // in Engine::ops_
  std::vector<std::uint32_t> deps;    // [n, d1..dn] lists
  std::unordered_map<std::uint32_t, std::uint32_t> dep_at;  // op -> its list in deps
  std::vector<std::uint32_t> cursor;  // per channel: its next op (ops.size(): none left)
  std::vector<Wait> wait;             // per channel
  // The channels this rank's program uses, ascending, and each channel's place among them (kNone:
  // unused): the clocks count only these (a synth plan of a GB200 rack has 41 k channels, of which
  // a rank uses about 1300; channels x channels counters were a terabyte).
  std::vector<std::uint32_t> used, dense;
  std::vector<std::uint32_t> clock;                                         // used x used: vector clock of each used channel's last op
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> snapshots;  // clocks of dep targets
  // Per dep target, its dependents not run yet: its snapshot goes with the last of them (an
  // AllReduce's trees on a GB200 rack kept 28 k a rank, 17 GB in all, until the end).
  std::unordered_map<std::uint32_t, std::uint32_t> waiting;
  Cells<Access> access;
};

class Engine {
 public:
  Engine(const Plan& plan, Machine& machine, bool per_chunk)
      : plan_(plan),
        info_(plan.info()),
        machine_(machine),
        layout_(info_),
        p_(plan.nranks()),
        channels_(info_.channels),
        per_chunk_(per_chunk) {}

  std::function<void(std::size_t, std::size_t)> progress;
  static constexpr std::size_t kReportEvery = std::size_t{1} << 16;

  EngineStats run() {
    ranks_.resize(static_cast<std::size_t>(std::max(p_, 0)));
    MatchVisitor visit;
    visit.program = [&](int r, std::uint32_t, const std::vector<Op>& prog) { load(r, prog); };
    visit.pair = [&](std::uint32_t send, std::uint32_t recv) {
      ops_[send].partner = recv;
      ops_[recv].partner = send;
    };
    ids_ = match_plan(plan_, visit);
    for (int r = 0; r < p_; ++r)
      rank(r).ops = std::span<EngineOp>(ops_).subspan(
          ids_.begin[static_cast<std::size_t>(r)], ids_.begin[static_cast<std::size_t>(r) + 1] - ids_.begin[static_cast<std::size_t>(r)]);
    for (int r = 0; r < p_; ++r)
      for (std::uint32_t c : rank(r).used) queue_.push_back(slot(r, static_cast<std::uint16_t>(c)));
    std::size_t total = 0, next_report = kReportEvery;
    for (const RankState& rs : ranks_) total += rs.ops.size();
    while (!queue_.empty()) {
      if (progress && stats_.ops >= next_report) {
        progress(stats_.ops, total);
        next_report = stats_.ops + kReportEvery;
      }
      std::uint32_t s = queue_.front();
      queue_.pop_front();
      advance(static_cast<int>(s / channels_), static_cast<std::uint16_t>(s % channels_));
    }
    report_deadlock();
    return stats_;
  }

 private:
  std::uint32_t slot(int r, std::uint16_t c) const { return static_cast<std::uint32_t>(r) * channels_ + c; }
  RankState& rank(int r) { return ranks_[static_cast<std::size_t>(r)]; }

  int peer(const EngineOp& e) const { return e.transfer() ? ids_.rank_of(e.partner) : -1; }

  // The rank of op `id`; a rank's sends go to a few peers, so the last answer usually holds.
  int rank_of(std::uint32_t id) {
    if (id < last_rank_.first || id >= last_rank_.second) {
      int r = ids_.rank_of(id);
      last_rank_ = {ids_.begin[static_cast<std::size_t>(r)], ids_.begin[static_cast<std::size_t>(r) + 1]};
      last_rank_of_ = r;
    }
    return last_rank_of_;
  }

  std::string describe_op(int r, std::uint32_t x) const {
    const EngineOp& e = ranks_[static_cast<std::size_t>(r)].ops[x];
    return plan::describe_op(e.type, peer(e), e.channel, x);
  }

  [[noreturn]] void fail(int r, std::uint32_t x, const std::string& what) const {
    throw PlanFault("rank " + std::to_string(r) + " " + describe_op(r, x) + ": " + what);
  }

  // Stores rank r's program, which match_plan() has checked, compactly, after the ranks before it.
  void load(int r, const std::vector<Op>& prog) {
    RankState& R = rank(r);
    std::size_t first = ops_.size(), n = prog.size();
    if (ops_.capacity() < first + n) ops_.reserve(ops_ahead(first + n, r, p_, ops_.capacity()));
    R.cursor.assign(channels_, static_cast<std::uint32_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const Op& o = prog[i];
      auto x = static_cast<std::uint32_t>(i);
      EngineOp& e = ops_.emplace_back();
      e.type = o.type;
      e.channel = o.channel;
      e.count = o.count;
      e.src_chunk = o.src.chunk;
      e.dst_chunk = o.dst.chunk;
      e.bits = static_cast<std::uint8_t>(static_cast<unsigned>(o.src.buf) | static_cast<unsigned>(o.dst.buf) << 2);
      if (R.cursor[o.channel] == n) R.cursor[o.channel] = x;
      if (std::size_t nd = o.num_deps(); nd > 0) {
        e.bits |= kHasDeps;
        R.dep_at[x] = static_cast<std::uint32_t>(R.deps.size());
        R.deps.push_back(static_cast<std::uint32_t>(nd));
        R.deps.insert(R.deps.end(), o.deps.begin(), o.deps.begin() + static_cast<std::ptrdiff_t>(nd));
        for (std::size_t k = 0; k < nd; ++k) {
          ops_[first + o.deps[k]].bits |= kDepTarget;  // an earlier op
          ++R.waiting[o.deps[k]];
        }
      }
    }
    R.dense.assign(channels_, kNone);
    R.used.clear();
    for (const EngineOp& e : std::span<const EngineOp>(ops_).subspan(first, n)) R.dense[e.channel] = 0;
    R.wait.assign(channels_, Wait::Done);  // a channel without ops is done
    for (std::uint32_t c = 0; c < channels_; ++c)
      if (R.dense[c] != kNone) {
        R.dense[c] = static_cast<std::uint32_t>(R.used.size());
        R.used.push_back(c);
        R.wait[c] = Wait::Queued;
      }
    R.clock.assign(R.used.size() * R.used.size(), 0);
    R.access.init(layout_.cells(), Access{}, per_chunk_);
  }

  // The first dep of op e that has not run yet, or kNone. Op d of channel c has run exactly
  // when that channel's cursor has passed it.
  std::uint32_t blocking_dep(const RankState& R, const EngineOp& e) const {
    if (!(e.bits & kHasDeps)) return kNone;
    std::uint32_t at = R.dep_at.at(static_cast<std::uint32_t>(&e - R.ops.data()));
    for (std::uint32_t k = 1; k <= R.deps[at]; ++k) {
      std::uint32_t d = R.deps[at + k];
      if (R.cursor[R.ops[d].channel] <= d) return d;
    }
    return kNone;
  }

  // Runs channel c of rank r as far as it can go.
  void advance(int r, std::uint16_t c) {
    RankState& R = rank(r);
    for (;;) {
      std::uint32_t x = R.cursor[c];
      if (x == R.ops.size()) {
        R.wait[c] = Wait::Done;
        return;
      }
      const EngineOp& e = R.ops[x];
      if (blocking_dep(R, e) != kNone) {
        R.wait[c] = Wait::Dep;
        return;
      }
      if ((e.type == OpType::Recv || e.type == OpType::RecvReduce) && !(e.bits & kArrived)) {
        R.wait[c] = Wait::Message;
        return;
      }
      execute(r, R, x);
      std::uint32_t next = x + 1;
      while (next < R.ops.size() && R.ops[next].channel != c) ++next;
      R.cursor[c] = next;
      if (e.bits & kDepTarget)
        for (std::uint32_t c2 : R.used)
          if (R.wait[c2] == Wait::Dep) {
            R.wait[c2] = Wait::Queued;
            queue_.push_back(slot(r, static_cast<std::uint16_t>(c2)));
          }
    }
  }

  void execute(int r, RankState& R, std::uint32_t x) {
    const EngineOp& e = R.ops[x];
    const std::size_t used = R.used.size();
    std::uint32_t* row = &R.clock[std::size_t{R.dense[e.channel]} * used];
    now_.assign(row, row + used);
    if (e.bits & kHasDeps)
      for (std::uint32_t at = R.dep_at.at(x), k = 1; k <= R.deps[at]; ++k) {
        std::uint32_t d = R.deps[at + k];
        const std::vector<std::uint32_t>& snap = R.snapshots.at(d);
        for (std::size_t c = 0; c < used; ++c) now_[c] = std::max(now_[c], snap[c]);
        if (--R.waiting.at(d) == 0) R.snapshots.erase(d);
      }
    now_[R.dense[e.channel]] = x + 1;

    if (e.reads_src()) check_reads(r, R, x, e.src_buf(), e.src_chunk, e.count);
    if (e.type == OpType::Reduce) check_reads(r, R, x, e.dst_buf(), e.dst_chunk, e.count);
    if (e.writes_dst()) check_writes(r, R, x, e.dst_buf(), e.dst_chunk, e.count);
    if (e.reads_src()) record_reads(R, x, e.src_buf(), e.src_chunk, e.count);
    if (e.type == OpType::Reduce) record_reads(R, x, e.dst_buf(), e.dst_chunk, e.count);
    if (e.writes_dst()) record_writes(R, e.dst_buf(), e.dst_chunk, e.count, x);

    try {
      switch (e.type) {
        case OpType::Send: sent(R.ops[x], machine_.send(r, e)); break;
        case OpType::Recv:
        case OpType::RecvReduce:
          machine_.receive(r, e, ops_[e.partner].payload());
          ++stats_.transfers;
          break;
        case OpType::Copy:
        case OpType::Reduce: machine_.local(r, e); break;
      }
    } catch (const OpFault& f) {
      fail(r, x, f.what);
    }
    ++stats_.ops;
    std::copy(now_.begin(), now_.end(), row);
    if (e.bits & kDepTarget) R.snapshots[x] = now_;
  }

  // Send e has run: its payload waits in the op for the receive, which may run now.
  void sent(EngineOp& e, std::uint32_t payload) {
    e.set_payload(payload);
    ops_[e.partner].bits |= kArrived;
    int to = rank_of(e.partner);
    RankState& R = rank(to);
    if (R.wait[e.channel] == Wait::Message) {
      R.wait[e.channel] = Wait::Queued;
      queue_.push_back(slot(to, e.channel));
    }
  }

  // Op j (executed on this rank) happens-before the op being executed, x.
  bool before(const RankState& R, std::uint32_t j, std::uint32_t x) const { return j == x || now_[R.dense[R.ops[j].channel]] >= j + 1; }

  std::string unordered(const RankState& R, std::uint32_t j) const {
    return describe_op(static_cast<int>(&R - ranks_.data()), j) + ", and nothing orders the two (a dep is missing)";
  }

  // The checks and records below go by pieces of equal Access (cells.h): a failing piece's
  // first chunk is the first failing chunk, as a chunk-by-chunk walk would find.
  void check_reads(int r, const RankState& R, std::uint32_t x, Buf b, std::uint32_t chunk, std::uint32_t count) const {
    std::uint32_t base = layout_.base(b);
    R.access.read(base + chunk, base + chunk + count, [&](std::uint32_t lo, std::uint32_t, const Access& a) {
      if (a.writer != 0 && !before(R, a.writer - 1, x))
        fail(r, x, "reads " + chunks_name(b, lo - base, 1) + ", written by " + unordered(R, a.writer - 1));
    });
  }

  void check_writes(int r, const RankState& R, std::uint32_t x, Buf b, std::uint32_t chunk, std::uint32_t count) const {
    std::uint32_t base = layout_.base(b);
    R.access.read(base + chunk, base + chunk + count, [&](std::uint32_t lo, std::uint32_t, const Access& a) {
      auto what = [&] { return "overwrites " + chunks_name(b, lo - base, 1); };
      if (a.writer != 0 && !before(R, a.writer - 1, x)) fail(r, x, what() + ", written by " + unordered(R, a.writer - 1));
      if (a.reader != 0 && !before(R, a.reader - 1, x)) fail(r, x, what() + ", read by " + unordered(R, a.reader - 1));
      if (a.more)
        for (std::uint32_t j : reader_lists_[a.more - 1])
          if (!before(R, j - 1, x)) fail(r, x, what() + ", read by " + unordered(R, j - 1));
    });
  }

  void record_reads(RankState& R, std::uint32_t x, Buf b, std::uint32_t chunk, std::uint32_t count) {
    std::uint32_t base = layout_.base(b);
    pieces_.clear();
    R.access.read(base + chunk, base + chunk + count, [&](std::uint32_t lo, std::uint32_t hi, const Access& a) {
      Access next = a;
      if (a.reader == 0 || (a.more == 0 && before(R, a.reader - 1, x))) {
        next.reader = x + 1;
        next.more = 0;
      } else {
        // Several reads not ordered among themselves: keep those not ordered before x, plus x.
        std::vector<std::uint32_t> all{a.reader};
        if (a.more) all.insert(all.end(), reader_lists_[a.more - 1].begin(), reader_lists_[a.more - 1].end());
        std::erase_if(all, [&](std::uint32_t j) { return before(R, j - 1, x); });
        all.push_back(x + 1);
        next.reader = all.front();
        next.more = 0;
        if (all.size() > 1) {
          reader_lists_.emplace_back(all.begin() + 1, all.end());
          next.more = static_cast<std::uint32_t>(reader_lists_.size());
        }
      }
      pieces_.push_back({lo, hi, next});
    });
    for (const Piece& p : pieces_) R.access.write(p.lo, p.hi, p.access);
  }

  void record_writes(RankState& R, Buf b, std::uint32_t chunk, std::uint32_t count, std::uint32_t x) {
    std::uint32_t base = layout_.base(b);
    R.access.write(base + chunk, base + chunk + count, Access{x + 1, 0, 0});
  }

  // Nothing can run: if ops remain, they wait for each other forever.
  void report_deadlock() {
    std::vector<std::string> stuck;
    std::size_t total = 0;
    for (int r = 0; r < p_; ++r) {
      const RankState& R = rank(r);
      for (std::uint16_t c = 0; c < channels_; ++c) {
        if (R.wait[c] == Wait::Done) continue;
        ++total;
        if (stuck.size() == kStuckShown) continue;
        std::uint32_t x = R.cursor[c];
        const EngineOp& e = R.ops[x];
        std::uint32_t d = blocking_dep(R, e);
        std::string why = d != kNone ? "waits for op " + std::to_string(d) : "waits for a message from rank " + std::to_string(peer(e));
        stuck.push_back("rank " + std::to_string(r) + " " + describe_op(r, x) + " " + why);
      }
    }
    if (total == 0) return;
    std::string text = "deadlock: " + std::to_string(total) + (total == 1 ? " op" : " ops") + " can never run: ";
    for (std::size_t i = 0; i < stuck.size(); ++i) text += (i ? "; " : "") + stuck[i];
    if (total > stuck.size()) text += "; and " + std::to_string(total - stuck.size()) + " more";
    throw PlanFault(text);
  }

  const Plan& plan_;
  const PlanInfo& info_;
  Machine& machine_;
  Layout layout_;
  int p_;
  std::uint16_t channels_;
  std::vector<RankState> ranks_;
  OpIds ids_;
  std::pair<std::uint32_t, std::uint32_t> last_rank_{0, 0};  // rank_of()'s last range and answer
  int last_rank_of_ = 0;
  std::vector<EngineOp> ops_;  // every rank's, by match_plan()'s ids
  std::deque<std::uint32_t> queue_;
  std::vector<std::uint32_t> now_;  // vector clock of the op being executed (over its rank's used channels)
  bool per_chunk_;
  std::vector<std::vector<std::uint32_t>> reader_lists_;  // Access::more
  struct Piece {
    std::uint32_t lo, hi;
    Access access;
  };
  std::vector<Piece> pieces_;  // record_reads() scratch
  EngineStats stats_;
};

}  // namespace

EngineStats execute(const Plan& plan, Machine& machine, bool per_chunk, const std::function<void(std::size_t, std::size_t)>& progress) {
  Engine e(plan, machine, per_chunk);
  e.progress = progress;
  return e.run();
}

bool per_chunk_store(const PlanInfo& info, ChunkStore store) {
  if (store != ChunkStore::Auto) return store == ChunkStore::PerChunk;
  return std::uint64_t(info.req.nranks > 0 ? info.req.nranks : 0) * Layout(info).cells() <= kPerChunkCellsMax;
}

}  // namespace collkit::plan::detail
