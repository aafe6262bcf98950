#include "program.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "collkit/core/error.h"
#include "collkit/exec/world.h"
#include "stream_copy.h"
#include "world_time.h"

namespace collkit::exec::detail {

using plan::Buf;
using plan::OpType;

namespace {

std::vector<std::uint32_t> channel_prev(const std::vector<ExecOp>& ops) {
  std::vector<std::uint32_t> prev(ops.size(), plan::kNoDep), last;
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    if (ops[i].channel >= last.size()) last.resize(ops[i].channel + 1u, plan::kNoDep);
    prev[i] = last[ops[i].channel];
    last[ops[i].channel] = i;
  }
  return prev;
}

bool is_recv(OpType t) { return t == OpType::Recv || t == OpType::RecvReduce; }

// The analysis walks the peers' programs too; past this many steps in all, sends simply go from
// copies (correct, only slower).
constexpr std::int64_t kFenceBudget = 20'000'000;

// The ops of `ops` exchanged with `peer`, per (channel, is a send), in program order: the k-th
// send of one side on a channel matches the k-th receive of the other.
using Exchanges = std::map<std::pair<std::uint16_t, bool>, std::vector<std::uint32_t>>;
Exchanges exchanges_with(const std::vector<ExecOp>& ops, int peer) {
  Exchanges out;
  for (std::uint32_t i = 0; i < ops.size(); ++i)
    if (ops[i].peer == peer && (ops[i].type == OpType::Send || is_recv(ops[i].type)))
      out[{ops[i].channel, ops[i].type == OpType::Send}].push_back(i);
  return out;
}

std::vector<std::vector<std::uint32_t>> fences(const plan::Plan& plan, const RankProgram& me) {
  std::vector<std::vector<std::uint32_t>> out(me.ops.size());
  std::int64_t budget = kFenceBudget;
  // Each op's place among this rank's exchanges with its peer on its channel, of its kind.
  std::vector<std::uint32_t> ordinal(me.ops.size(), 0);
  {
    std::map<std::tuple<int, std::uint16_t, bool>, std::uint32_t> seen;
    for (std::uint32_t i = 0; i < me.ops.size(); ++i)
      if (me.ops[i].type == OpType::Send || is_recv(me.ops[i].type))
        ordinal[i] = seen[{me.ops[i].peer, me.ops[i].channel, me.ops[i].type == OpType::Send}]++;
  }
  // Per peer: its program, compiled only for its order (chunk sizes do not matter here), and its
  // exchanges with this rank.
  std::map<int, std::pair<RankProgram, Exchanges>> peers;
  for (std::uint32_t s = 0; s < me.ops.size() && budget > 0; ++s) {
    const ExecOp& send = me.ops[s];
    if (send.type != OpType::Send) continue;
    int peer = send.peer;
    auto it = peers.find(peer);
    if (it == peers.end()) {
      RankProgram q;
      q.rank = peer;
      for (const plan::Op& o : plan.program(peer)) {
        ExecOp e;
        e.type = o.type;
        e.peer = o.peer;
        e.channel = o.channel;
        e.deps = o.deps;
        q.ops.push_back(e);
      }
      q.channel_prev = channel_prev(q.ops);
      Exchanges x = exchanges_with(q.ops, me.rank);
      it = peers.emplace(peer, std::pair{std::move(q), std::move(x)}).first;
    }
    // Not a structured binding: clang 14 (CI's sanitizer pass) cannot capture one (P1091, clang 16).
    const RankProgram& q = it->second.first;
    const Exchanges& theirs = it->second.second;
    auto find = [&](std::uint16_t channel, bool sends) -> const std::vector<std::uint32_t>* {
      auto f = theirs.find({channel, sends});
      return f == theirs.end() ? nullptr : &f->second;
    };
    // The peer's receive of this send.
    const std::vector<std::uint32_t>* their_recvs = find(send.channel, false);
    if (!their_recvs || ordinal[s] >= their_recvs->size()) continue;
    std::uint32_t their_recv = (*their_recvs)[ordinal[s]];
    // My later receives from the peer, first per channel whose matching send follows that receive.
    std::vector<bool> channel_done(me.channels + 1u, false);
    for (std::uint32_t r = s + 1; r < me.ops.size() && budget > 0; ++r) {
      const ExecOp& o = me.ops[r];
      if (!is_recv(o.type) || o.peer != peer || channel_done[o.channel]) continue;
      const std::vector<std::uint32_t>* their_sends = find(o.channel, true);
      if (!their_sends || ordinal[r] >= their_sends->size()) continue;
      if (happens_before(q, their_recv, (*their_sends)[ordinal[r]], budget)) {
        out[s].push_back(r);
        channel_done[o.channel] = true;
      }
    }
  }
  return out;
}

}  // namespace

bool happens_before(const RankProgram& p, std::uint32_t a, std::uint32_t b, std::int64_t& budget) {
  if (a >= b) return a == b;
  std::vector<std::uint32_t> stack{b};
  std::unordered_map<std::uint32_t, bool> seen;
  while (!stack.empty()) {
    if (--budget < 0) return false;
    std::uint32_t x = stack.back();
    stack.pop_back();
    if (x == a) return true;
    if (x < a || !seen.emplace(x, true).second) continue;
    if (p.channel_prev[x] != plan::kNoDep) stack.push_back(p.channel_prev[x]);
    for (std::uint32_t d : p.ops[x].deps)
      if (d != plan::kNoDep) stack.push_back(d);
  }
  return false;
}

RankProgram compile(const plan::Plan& plan, int rank, bool with_fences) { return compile(plan, rank, plan.program(rank), with_fences); }

RankProgram compile(const plan::Plan& plan, int rank, const std::vector<plan::Op>& ops, bool with_fences) {
  const plan::PlanInfo& info = plan.info();
  RankProgram p;
  p.rank = rank;
  p.channels = info.channels;
  for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) p.region_bytes[static_cast<std::size_t>(b)] = plan::buffer_bytes(info, b);
  p.ops.reserve(ops.size());
  for (const plan::Op& o : ops) {
    ExecOp e;
    e.type = o.type;
    e.peer = o.peer;
    e.channel = o.channel;
    e.src_buf = o.src.buf;
    e.dst_buf = o.dst.buf;
    e.src_off = plan::chunk_offset(info, o.src.buf, o.src.chunk);
    e.dst_off = plan::chunk_offset(info, o.dst.buf, o.dst.chunk);
    const plan::ChunkRef& sized = o.type == OpType::Recv ? o.dst : o.src;
    e.bytes = plan::chunk_bytes(info, sized.buf, sized.chunk, o.count);
    e.deps = o.deps;
    if (e.channel >= p.channels) p.channels = static_cast<std::uint16_t>(e.channel + 1);
    if (e.type == OpType::RecvReduce) p.max_recv_reduce_bytes = std::max(p.max_recv_reduce_bytes, e.bytes);
    p.ops.push_back(e);
  }
  p.channel_prev = channel_prev(p.ops);
  if (with_fences) p.fences = fences(plan, p);
  return p;
}

std::string describe(const ExecOp& op, std::uint32_t index) {
  std::string s = "op " + std::to_string(index) + " (" + std::string(plan::to_string(op.type));
  if (op.type == OpType::Send) s += " to rank " + std::to_string(op.peer);
  else if (op.type == OpType::Recv || op.type == OpType::RecvReduce) s += " from rank " + std::to_string(op.peer);
  return s + ", channel " + std::to_string(op.channel) + ", " + std::to_string(op.bytes) + " bytes)";
}

Runner::Runner(const RankProgram& program, DataType type, RedOp op, double timeout_s)
    : prog_(program), type_(type), op_(op), timeout_s_(timeout_s) {
  by_channel_.resize(prog_.channels);
  for (std::uint32_t i = 0; i < prog_.ops.size(); ++i) by_channel_[prog_.ops[i].channel].push_back(i);
  staging_.resize(prog_.channels);
  for (const ExecOp& o : prog_.ops)
    if (o.type == OpType::RecvReduce && staging_[o.channel].size() < o.bytes) staging_[o.channel].resize(o.bytes);
}

bool Runner::ready(std::uint32_t i) const {
  for (std::uint32_t d : prog_.ops[i].deps)
    if (d != plan::kNoDep && state_[d] != 2) return false;
  return true;
}

std::vector<bool> streaming_copies(const RankProgram& p, const std::array<std::byte*, 3>& regions) {
  std::vector<bool> out(p.ops.size(), false);
  auto at = [&](Buf b, std::uint64_t off) { return reinterpret_cast<std::uintptr_t>(regions[static_cast<std::size_t>(b)]) + off; };
  bool any = false;
  for (const ExecOp& o : p.ops) any = any || (o.type == OpType::Copy && o.bytes >= kStreamingCopyBytes);
  if (!any) return out;
  // Every range some op reads, sorted by start, with the furthest end among those before it: a
  // destination [a, b) is read iff some range starting before b ends after a.
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> reads;
  for (const ExecOp& o : p.ops) {
    if (o.type == OpType::Send || o.type == OpType::Copy || o.type == OpType::Reduce)
      reads.emplace_back(at(o.src_buf, o.src_off), at(o.src_buf, o.src_off) + o.bytes);
    if (o.type == OpType::Reduce || o.type == OpType::RecvReduce)
      reads.emplace_back(at(o.dst_buf, o.dst_off), at(o.dst_buf, o.dst_off) + o.bytes);
  }
  std::sort(reads.begin(), reads.end());
  std::vector<std::uintptr_t> furthest(reads.size());
  for (std::size_t k = 0; k < reads.size(); ++k) furthest[k] = std::max(reads[k].second, k ? furthest[k - 1] : 0);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const ExecOp& o = p.ops[i];
    if (o.type != OpType::Copy || o.bytes < kStreamingCopyBytes) continue;
    std::uintptr_t a = at(o.dst_buf, o.dst_off), b = a + o.bytes, s = at(o.src_buf, o.src_off);
    if (s < b && a < s + o.bytes) continue;  // overlapping: memmove's job
    auto before = static_cast<std::size_t>(
        std::lower_bound(reads.begin(), reads.end(), std::pair<std::uintptr_t, std::uintptr_t>{b, 0}) - reads.begin());
    out[i] = before == 0 || furthest[before - 1] <= a;
  }
  return out;
}

const Runner::Layout& Runner::layout(const std::array<std::byte*, 3>& regions) {
  for (const Layout& l : layouts_)
    if (l.regions == regions) return l;
  layouts_.push_back(Layout{regions, send_guards(regions), streaming_copies(prog_, regions)});
  return layouts_.back();
}

std::vector<Runner::Guard> Runner::send_guards(const std::array<std::byte*, 3>& regions) const {
  // Every op writing each piece of memory; pieces run between consecutive addresses where some
  // op's range starts or ends (chunks split at whole elements, possibly unevenly), so every
  // range is a run of whole pieces, named by their first address.
  auto addr = [&](plan::Buf b, std::uint64_t off) { return reinterpret_cast<std::uintptr_t>(regions[static_cast<std::size_t>(b)]) + off; };
  std::vector<std::uintptr_t> cuts;
  for (const ExecOp& o : prog_.ops) {
    if (o.type == OpType::Send) cuts.insert(cuts.end(), {addr(o.src_buf, o.src_off), addr(o.src_buf, o.src_off) + o.bytes});
    else cuts.insert(cuts.end(), {addr(o.dst_buf, o.dst_off), addr(o.dst_buf, o.dst_off) + o.bytes});
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::unordered_map<std::uintptr_t, std::vector<std::uint32_t>> writers;
  auto units = [&](plan::Buf b, std::uint64_t off, std::uint64_t bytes, auto&& fn) {
    std::uintptr_t start = addr(b, off), end = start + bytes;
    for (auto it = std::lower_bound(cuts.begin(), cuts.end(), start); it != cuts.end() && *it < end; ++it) fn(*it);
  };
  for (std::uint32_t j = 0; j < prog_.ops.size(); ++j) {
    const ExecOp& o = prog_.ops[j];
    if (o.type != OpType::Send) units(o.dst_buf, o.dst_off, o.bytes, [&](std::uintptr_t a) { writers[a].push_back(j); });
  }
  std::vector<Guard> guards(prog_.ops.size(), Guard::None);
  std::int64_t budget = 20'000'000;
  for (std::uint32_t i = 0; i < prog_.ops.size(); ++i) {
    const ExecOp& o = prog_.ops[i];
    if (o.type != OpType::Send) continue;
    // Each later writer must follow one of the send's fences; else the send goes from a copy.
    units(o.src_buf, o.src_off, o.bytes, [&](std::uintptr_t a) {
      auto it = writers.find(a);
      if (it == writers.end() || guards[i] == Guard::Copy) return;
      for (std::uint32_t w : it->second) {
        if (w <= i) continue;
        bool fenced = false;
        for (std::uint32_t f : prog_.fences[i]) fenced = fenced || happens_before(prog_, f, w, budget);
        guards[i] = fenced ? Guard::Wait : Guard::Copy;
        if (!fenced) return;
      }
    });
  }
  return guards;
}

bool Runner::overwrites_waiting_send(const ExecOp& op) const {
  if (op.type == OpType::Send) return false;
  const std::byte* b = regions_[static_cast<std::size_t>(op.dst_buf)] + op.dst_off;
  for (std::uint32_t s : waiting_) {
    const ExecOp& send = prog_.ops[s];
    const std::byte* a = regions_[static_cast<std::size_t>(send.src_buf)] + send.src_off;
    if (a < b + op.bytes && b < a + send.bytes) return true;
  }
  return false;
}

std::size_t Runner::bounce(std::uint64_t bytes) {
  for (std::size_t k = 0; k < free_bounces_.size(); ++k) {
    std::size_t b = free_bounces_[k];
    if (bounces_[b].size() >= bytes) {
      free_bounces_.erase(free_bounces_.begin() + static_cast<std::ptrdiff_t>(k));
      return b;
    }
  }
  bounces_.emplace_back(bytes);
  return bounces_.size() - 1;
}

void Runner::run(Transport& transport, const std::array<std::byte*, 3>& regions) {
  regions_ = regions;
  const Layout& placed = layout(regions);
  const std::vector<Guard>& guards = placed.guards;
  const std::size_t n = prog_.ops.size();
  state_.assign(n, 0);
  cursor_.assign(by_channel_.size(), 0);
  handles_.clear();
  sends_.clear();
  waiting_.clear();
  std::size_t done = 0;
  std::vector<std::uint32_t> finished;
  double last = wall_seconds();
  auto at = [&](Buf b, std::uint64_t off) { return regions_[static_cast<std::size_t>(b)] + off; };
  auto track = [&](std::uint32_t handle, std::uint32_t op, bool send, std::size_t bounce_index = SIZE_MAX) {
    if (handle >= handles_.size()) handles_.resize(handle + 1);
    handles_[handle] = {op, send, bounce_index};
  };

  while (done < n || !sends_.empty()) {
    bool progress = false;
    for (std::size_t c = 0; c < by_channel_.size(); ++c) {
      const auto& list = by_channel_[c];
      while (cursor_[c] < list.size()) {
        std::uint32_t i = list[cursor_[c]];
        if (cursor_[c] > 0 && state_[list[cursor_[c] - 1]] != 2) break;
        if (state_[i] != 0 || !ready(i)) break;
        const ExecOp& o = prog_.ops[i];
        if (!waiting_.empty() && overwrites_waiting_send(o)) break;  // the send finishes soon: its peer has the data
        switch (o.type) {
          case OpType::Send:
            if (guards[i] == Guard::Copy) {
              std::size_t b = bounce(o.bytes);
              std::memcpy(bounces_[b].data(), at(o.src_buf, o.src_off), o.bytes);
              track(transport.post_send(o.peer, o.channel, bounces_[b].data(), o.bytes), i, true, b);
            } else {
              track(transport.post_send(o.peer, o.channel, at(o.src_buf, o.src_off), o.bytes), i, true);
              if (guards[i] == Guard::Wait) waiting_.push_back(i);
            }
            sends_.push_back(i);
            state_[i] = 2;
            ++done;
            break;
          case OpType::Recv:
            track(transport.post_recv(o.peer, o.channel, at(o.dst_buf, o.dst_off), o.bytes), i, false);
            state_[i] = 1;
            break;
          case OpType::RecvReduce:
            track(transport.post_recv(o.peer, o.channel, staging_[c].data(), o.bytes), i, false);
            state_[i] = 1;
            break;
          case OpType::Copy:
            // In place, a copy of a rank's own block onto itself moves nothing (transform.h).
            if (placed.streaming[i])
              copy_streaming(at(o.dst_buf, o.dst_off), at(o.src_buf, o.src_off), o.bytes);
            else if (at(o.dst_buf, o.dst_off) != at(o.src_buf, o.src_off))
              std::memmove(at(o.dst_buf, o.dst_off), at(o.src_buf, o.src_off), o.bytes);
            state_[i] = 2;
            ++done;
            break;
          case OpType::Reduce:
            reduce(type_, op_, at(o.dst_buf, o.dst_off), at(o.dst_buf, o.dst_off), at(o.src_buf, o.src_off),
                   o.bytes / size_of(type_));
            state_[i] = 2;
            ++done;
            break;
        }
        progress = true;
        ++cursor_[c];
        if (state_[i] != 2) break;  // the channel waits for this receive
      }
    }
    finished.clear();
    transport.poll(finished);
    for (std::uint32_t h : finished) {
      InFlight f = handles_[h];
      const ExecOp& o = prog_.ops[f.op];
      if (f.send) {
        sends_.erase(std::find(sends_.begin(), sends_.end(), f.op));
        if (f.bounce != SIZE_MAX) free_bounces_.push_back(f.bounce);
        if (auto w = std::find(waiting_.begin(), waiting_.end(), f.op); w != waiting_.end()) waiting_.erase(w);
      } else {
        if (o.type == OpType::RecvReduce)
          reduce(type_, op_, at(o.dst_buf, o.dst_off), at(o.src_buf, o.src_off), staging_[o.channel].data(),
                 o.bytes / size_of(type_));
        state_[f.op] = 2;
        ++done;
      }
      progress = true;
    }
    World::check_stopped();  // the launcher ending the job, or gone
    if (progress) {
      last = wall_seconds();
    } else {
      if (wall_seconds() - last > timeout_s_) stalled();
      // Nothing to do until a peer moves: give the core away, which matters when ranks outnumber
      // cores (mpirun --oversubscribe), as Open MPI's own progress loop does there.
      std::this_thread::yield();
    }
  }
}

void Runner::stalled() const {
  std::string waits;
  int more = 0;
  for (std::uint32_t i = 0; i < prog_.ops.size(); ++i) {
    if (state_[i] != 1) continue;
    if (waits.empty()) waits = describe(prog_.ops[i], i);
    else ++more;
  }
  for (std::uint32_t s : sends_) {
    if (waits.empty()) waits = describe(prog_.ops[s], s) + " still being sent";
    else ++more;
  }
  if (waits.empty()) waits = "nothing posted (ops wait on each other)";
  char t[32];
  std::snprintf(t, sizeof t, "%g", timeout_s_);
  throw TimeoutError("rank " + std::to_string(prog_.rank) + ": no progress for " + t + " s: waiting on " + waits +
                     (more ? " and " + std::to_string(more) + " more" : std::string()));
}

}  // namespace collkit::exec::detail
