#include "engine.h"

#include <algorithm>
#include <array>
#include <deque>
#include <unordered_map>
#include <vector>

#include "cells.h"

namespace collkit::plan::detail {

namespace {

constexpr std::uint32_t kNone = 0xffffffffu;
constexpr std::uint8_t kDepTarget = 1u << 4;  // EngineOp::bits: another op depends on it
constexpr std::uint8_t kHasDeps = 1u << 5;    // EngineOp::bits: it has deps (RankState::dep_at)
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
  std::vector<EngineOp> ops;
  std::vector<std::uint32_t> deps;    // [n, d1..dn] lists
  std::unordered_map<std::uint32_t, std::uint32_t> dep_at;  // op -> its list in deps
  std::vector<std::uint32_t> cursor;  // per channel: its next op (ops.size(): none left)
  std::vector<Wait> wait;             // per channel
  std::vector<std::uint32_t> clock;   // channels x channels: vector clock of each channel's last op
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> snapshots;  // clocks of dep targets
  Cells<Access> access;
};

// Messages in flight on one (sender, receiver, channel) link, a FIFO threaded through a pool.
struct Link {
  std::int32_t from = 0, to = 0;
  std::uint16_t channel = 0;
  std::uint32_t sends = 0, recvs = 0;
  std::uint32_t head = kNone, tail = kNone;
};
struct Message {
  std::uint32_t op = 0;
  std::uint32_t payload = 0;
  std::uint32_t next = kNone;
};

std::string plural(std::uint64_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

class Engine {
 public:
  Engine(const Plan& plan, Machine& machine, bool per_chunk)
      : plan_(plan), info_(plan.info()), machine_(machine), layout_(info_), p_(plan.nranks()), channels_(info_.channels),
        per_chunk_(per_chunk) {
    link_cache_.fill({~std::uint64_t{0}, 0});
    for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) {
      Shape& sh = shapes_[static_cast<std::size_t>(b)];
      sh.bytes = buffer_bytes(info_, b);
      sh.chunks = buffer_chunks(info_, b);
      sh.elem = info_.req.elem_bytes;
      std::uint64_t elems = sh.elem ? sh.bytes / sh.elem : 0;
      sh.even = sh.chunks && elems % sh.chunks == 0 ? elems / sh.chunks * sh.elem : 0;
    }
  }

  std::function<void(std::size_t, std::size_t)> progress;
  static constexpr std::size_t kReportEvery = std::size_t{1} << 16;

  EngineStats run() {
    if (p_ < 1) throw PlanFault("plan: " + std::to_string(p_) + " ranks");
    if (channels_ < 1) throw PlanFault("plan: 0 channels");
    for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) {
      const Shape& sh = shapes_[static_cast<std::size_t>(b)];
      if (sh.elem == 0 || sh.bytes % sh.elem != 0)
        throw PlanFault("plan: the " + std::string(to_string(b)) + " buffer's " + plural(sh.bytes, "byte") + " are not a whole number of " +
                        std::to_string(sh.elem) + "-byte elements");
    }
    ranks_.resize(static_cast<std::size_t>(p_));
    for (int r = 0; r < p_; ++r) load(r);
    check_matching();
    for (int r = 0; r < p_; ++r)
      for (std::uint16_t c = 0; c < channels_; ++c) queue_.push_back(slot(r, c));
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

  struct Shape {
    std::uint64_t bytes = 0;
    std::uint32_t chunks = 0;
    std::uint32_t elem = 1;
    std::uint64_t even = 0;  // bytes per chunk when all chunks are equal, else 0
  };

  std::uint64_t bytes(Buf b, std::uint32_t chunk, std::uint32_t count) const {
    const Shape& sh = shapes_[static_cast<std::size_t>(b)];
    return sh.even ? sh.even * count : chunk_bytes(sh.bytes, sh.chunks, chunk, count, sh.elem);
  }

  int peer(const EngineOp& e) const {
    if (e.type == OpType::Send) return links_[e.link].to;
    if (e.type == OpType::Recv || e.type == OpType::RecvReduce) return links_[e.link].from;
    return -1;
  }

  std::string describe_op(int r, std::uint32_t x) const {
    const EngineOp& e = ranks_[static_cast<std::size_t>(r)].ops[x];
    return describe(e.type, peer(e), e.channel, x);
  }

  [[noreturn]] void fail(int r, std::uint32_t x, const std::string& what) const {
    throw PlanFault("rank " + std::to_string(r) + " " + describe_op(r, x) + ": " + what);
  }

  // Reads rank r's program, checks each op on its own, and stores it compactly.
  void load(int r) {
    std::vector<Op> prog;
    try {
      prog = plan_.program(r);
    } catch (const Error& e) {
      throw PlanFault("rank " + std::to_string(r) + ": cannot expand its program: " + e.what());
    }
    RankState& R = rank(r);
    R.ops.reserve(prog.size());
    for (std::size_t i = 0; i < prog.size(); ++i) {
      const Op& o = prog[i];
      auto x = static_cast<std::uint32_t>(i);
      auto bad = [&](const std::string& what) {
        throw PlanFault("rank " + std::to_string(r) + " " + describe(o.type, o.peer, o.channel, x) + ": " + what);
      };
      EngineOp e;
      e.type = o.type;
      e.channel = o.channel;
      e.count = o.count;
      e.src_chunk = o.src.chunk;
      e.dst_chunk = o.dst.chunk;
      e.bits = static_cast<std::uint8_t>(static_cast<unsigned>(o.src.buf) | static_cast<unsigned>(o.dst.buf) << 2);
      if (o.type > OpType::Reduce) bad("unknown op type " + std::to_string(static_cast<int>(o.type)));
      if (o.channel >= channels_)
        bad("channel " + std::to_string(o.channel) + " is out of range (the plan has " + plural(channels_, "channel") + ")");
      if (o.count == 0) bad("count is 0");
      if (e.reads_src()) check_range(o.src, o.count, bad);
      if (e.writes_dst()) check_range(o.dst, o.count, bad);
      bool transfer = o.type == OpType::Send || o.type == OpType::Recv || o.type == OpType::RecvReduce;
      if (transfer) {
        if (o.peer < 0 || o.peer >= p_) bad("peer " + std::to_string(o.peer) + " is not a rank of " + std::to_string(p_));
        if (o.peer == r) bad("its peer is its own rank");
        bool send = o.type == OpType::Send;
        e.link = link_id(send ? r : o.peer, send ? o.peer : r, o.channel, send);
      }
      if (o.type != OpType::Send && o.type != OpType::Recv) {
        std::uint64_t sb = bytes(o.src.buf, o.src.chunk, o.count), db = bytes(o.dst.buf, o.dst.chunk, o.count);
        if (sb != db)
          bad(chunks_name(o.src.buf, o.src.chunk, o.count) + " (" + plural(sb, "byte") + ") and " +
                            chunks_name(o.dst.buf, o.dst.chunk, o.count) + " (" + plural(db, "byte") + ") differ in size");
      }
      std::size_t n = o.num_deps();
      for (std::size_t k = n; k < kMaxDeps; ++k)
        if (o.deps[k] != kNoDep) bad("deps must be packed at the front of the list");
      if (n > 0) {
        e.bits |= kHasDeps;
        R.dep_at[x] = static_cast<std::uint32_t>(R.deps.size());
        R.deps.push_back(static_cast<std::uint32_t>(n));
        for (std::size_t k = 0; k < n; ++k) {
          if (o.deps[k] >= x) bad("dep on op " + std::to_string(o.deps[k]) + " is not an earlier op");
          R.deps.push_back(o.deps[k]);
        }
      }
      R.ops.push_back(e);
    }
    for (const auto& entry : R.dep_at)
      for (std::uint32_t k = 1; k <= R.deps[entry.second]; ++k) R.ops[R.deps[entry.second + k]].bits |= kDepTarget;
    R.cursor.assign(channels_, static_cast<std::uint32_t>(R.ops.size()));
    for (std::size_t i = R.ops.size(); i-- > 0;) R.cursor[R.ops[i].channel] = static_cast<std::uint32_t>(i);
    R.wait.assign(channels_, Wait::Queued);
    R.clock.assign(std::size_t{channels_} * channels_, 0);
    R.access.init(layout_.cells(), Access{}, per_chunk_);
  }

  template <class Bad>
  void check_range(ChunkRef ref, std::uint32_t count, Bad bad) const {
    if (ref.buf > Buf::Scratch) bad("unknown buffer " + std::to_string(static_cast<int>(ref.buf)));
    std::uint32_t n = shapes_[static_cast<std::size_t>(ref.buf)].chunks;
    if (std::uint64_t{ref.chunk} + count > n)
      bad(chunks_name(ref.buf, ref.chunk, count) + (count == 1 ? " is" : " are") + " out of range (" +
          std::string(to_string(ref.buf)) + " has " + plural(n, "chunk") + ")");
  }

  // The link's id, counting the send or receive on it. A rank's program talks to a few peers,
  // so a small cache in front of the hash map serves nearly every lookup.
  std::uint32_t link_id(int from, int to, std::uint16_t c, bool send) {
    std::uint64_t key = (static_cast<std::uint64_t>(from) * static_cast<std::uint64_t>(p_) + static_cast<std::uint64_t>(to)) * channels_ + c;
    auto& cached = link_cache_[(key * 0x9e3779b97f4a7c15ull) >> 58];
    if (cached.first != key) {
      auto [it, fresh] = link_ids_.try_emplace(key, static_cast<std::uint32_t>(links_.size()));
      if (fresh) links_.push_back({from, to, c});
      cached = {key, it->second};
    }
    ++(send ? links_[cached.second].sends : links_[cached.second].recvs);
    return cached.second;
  }

  // Every send has a receive and the other way round; names the first op, in rank and program
  // order, that has no partner.
  void check_matching() {
    bool ok = std::all_of(links_.begin(), links_.end(), [](const Link& l) { return l.sends == l.recvs; });
    if (ok) return;
    std::vector<std::uint32_t> sent(links_.size()), received(links_.size());
    for (int r = 0; r < p_; ++r) {
      const RankState& R = rank(r);
      for (std::size_t i = 0; i < R.ops.size(); ++i) {
        const EngineOp& e = R.ops[i];
        if (e.type == OpType::Copy || e.type == OpType::Reduce) continue;
        const Link& l = links_[e.link];
        bool send = e.type == OpType::Send;
        std::uint32_t k = ++(send ? sent : received)[e.link];
        if (k <= (send ? l.recvs : l.sends)) continue;
        fail(r, static_cast<std::uint32_t>(i),
             std::string(send ? "never received" : "never matched") + ": rank " + std::to_string(l.from) + " sends " +
                 plural(l.sends, "message") + " to rank " + std::to_string(l.to) + " on ch " + std::to_string(l.channel) +
                 " and rank " + std::to_string(l.to) + " receives " + std::to_string(l.recvs));
      }
    }
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
      if ((e.type == OpType::Recv || e.type == OpType::RecvReduce) && links_[e.link].head == kNone) {
        R.wait[c] = Wait::Message;
        return;
      }
      execute(r, R, x);
      std::uint32_t next = x + 1;
      while (next < R.ops.size() && R.ops[next].channel != c) ++next;
      R.cursor[c] = next;
      if (e.bits & kDepTarget)
        for (std::uint16_t c2 = 0; c2 < channels_; ++c2)
          if (R.wait[c2] == Wait::Dep) {
            R.wait[c2] = Wait::Queued;
            queue_.push_back(slot(r, c2));
          }
    }
  }

  void execute(int r, RankState& R, std::uint32_t x) {
    const EngineOp& e = R.ops[x];
    std::uint32_t* row = &R.clock[std::size_t{e.channel} * channels_];
    now_.assign(row, row + channels_);
    if (e.bits & kHasDeps)
      for (std::uint32_t at = R.dep_at.at(x), k = 1; k <= R.deps[at]; ++k) {
        const std::vector<std::uint32_t>& snap = R.snapshots.at(R.deps[at + k]);
        for (std::uint16_t c = 0; c < channels_; ++c) now_[c] = std::max(now_[c], snap[c]);
      }
    now_[e.channel] = x + 1;

    Message msg;
    if (e.type == OpType::Recv || e.type == OpType::RecvReduce) msg = pop(r, e, x);

    if (e.reads_src()) check_reads(r, R, x, e.src_buf(), e.src_chunk, e.count);
    if (e.type == OpType::Reduce) check_reads(r, R, x, e.dst_buf(), e.dst_chunk, e.count);
    if (e.writes_dst()) check_writes(r, R, x, e.dst_buf(), e.dst_chunk, e.count);
    if (e.reads_src()) record_reads(R, x, e.src_buf(), e.src_chunk, e.count);
    if (e.type == OpType::Reduce) record_reads(R, x, e.dst_buf(), e.dst_chunk, e.count);
    if (e.writes_dst()) record_writes(R, e.dst_buf(), e.dst_chunk, e.count, x);

    try {
      switch (e.type) {
        case OpType::Send: push(e, x, machine_.send(r, e)); break;
        case OpType::Recv:
        case OpType::RecvReduce:
          machine_.receive(r, e, msg.payload);
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

  void push(const EngineOp& e, std::uint32_t x, std::uint32_t payload) {
    std::uint32_t m;
    if (free_.empty()) {
      m = static_cast<std::uint32_t>(pool_.size());
      pool_.emplace_back();
    } else {
      m = free_.back();
      free_.pop_back();
    }
    pool_[m] = {x, payload, kNone};
    Link& l = links_[e.link];
    if (l.tail == kNone)
      l.head = m;
    else
      pool_[l.tail].next = m;
    l.tail = m;
    RankState& to = rank(l.to);
    if (to.wait[l.channel] == Wait::Message) {
      to.wait[l.channel] = Wait::Queued;
      queue_.push_back(slot(l.to, l.channel));
    }
  }

  // Takes the message a receive matches and checks that both sides move the same data.
  Message pop(int r, const EngineOp& e, std::uint32_t x) {
    Link& l = links_[e.link];
    std::uint32_t m = l.head;
    Message msg = pool_[m];
    l.head = msg.next;
    if (l.head == kNone) l.tail = kNone;
    free_.push_back(m);
    const EngineOp& s = rank(l.from).ops[msg.op];
    auto sender = [&] { return "its matching send, rank " + std::to_string(l.from) + " " + describe_op(l.from, msg.op) + ","; };
    if (s.count != e.count)
      fail(r, x, "receives " + plural(e.count, "chunk") + " but " + sender() + " sends " + std::to_string(s.count));
    std::uint64_t sb = bytes(s.src_buf(), s.src_chunk, s.count), rb = bytes(e.dst_buf(), e.dst_chunk, e.count);
    if (sb != rb)
      fail(r, x, "receives " + plural(rb, "byte") + " into " + chunks_name(e.dst_buf(), e.dst_chunk, e.count) + " but " +
                        sender() + " sends " + plural(sb, "byte") + " from " + chunks_name(s.src_buf(), s.src_chunk, s.count));
    return msg;
  }

  // Op j (executed on this rank) happens-before the op being executed, x.
  bool before(const RankState& R, std::uint32_t j, std::uint32_t x) const {
    return j == x || now_[R.ops[j].channel] >= j + 1;
  }

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
    std::string text = "deadlock: " + plural(total, "op") + " can never run: ";
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
  std::vector<Link> links_;
  std::unordered_map<std::uint64_t, std::uint32_t> link_ids_;
  std::array<std::pair<std::uint64_t, std::uint32_t>, 64> link_cache_;
  std::array<Shape, 3> shapes_;
  std::vector<Message> pool_;
  std::vector<std::uint32_t> free_;
  std::deque<std::uint32_t> queue_;
  std::vector<std::uint32_t> now_;  // vector clock of the op being executed
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

std::string describe(OpType type, int peer, std::uint16_t channel, std::uint32_t index) {
  std::string text = "op " + std::to_string(index) + " (" + std::string(to_string(type));
  if (type == OpType::Send) text += " to " + std::to_string(peer);
  if (type == OpType::Recv || type == OpType::RecvReduce) text += " from " + std::to_string(peer);
  return text + " ch " + std::to_string(channel) + ")";
}

std::string chunks_name(Buf b, std::uint32_t chunk, std::uint32_t count) {
  std::string text = std::string(to_string(b)) + (count == 1 ? " chunk " : " chunks ") + std::to_string(chunk);
  if (count != 1) text += "-" + std::to_string(std::uint64_t{chunk} + count - 1);
  return text;
}

}  // namespace collkit::plan::detail
