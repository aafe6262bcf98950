#include "program.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <cstring>

#include "collkit/core/error.h"
#include "world_time.h"

namespace collkit::exec::detail {

using plan::Buf;
using plan::OpType;

RankProgram compile(const plan::Plan& plan, int rank) {
  const plan::PlanInfo& info = plan.info();
  RankProgram p;
  p.rank = rank;
  p.channels = info.channels;
  std::array<std::uint64_t, 3> chunk{};
  for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) {
    auto i = static_cast<std::size_t>(b);
    p.region_bytes[i] = plan::buffer_bytes(info, b);
    std::uint32_t n = plan::buffer_chunks(info, b);
    chunk[i] = n == 0 ? 0 : p.region_bytes[i] / n;
  }
  std::vector<plan::Op> ops = plan.program(rank);
  p.ops.reserve(ops.size());
  for (const plan::Op& o : ops) {
    ExecOp e;
    e.type = o.type;
    e.peer = o.peer;
    e.channel = o.channel;
    e.src_buf = o.src.buf;
    e.dst_buf = o.dst.buf;
    e.src_off = chunk[static_cast<std::size_t>(o.src.buf)] * o.src.chunk;
    e.dst_off = chunk[static_cast<std::size_t>(o.dst.buf)] * o.dst.chunk;
    Buf sized = o.type == OpType::Recv ? o.dst.buf : o.src.buf;
    e.bytes = chunk[static_cast<std::size_t>(sized)] * o.count;
    e.deps = o.deps;
    if (e.channel >= p.channels) p.channels = static_cast<std::uint16_t>(e.channel + 1);
    if (e.type == OpType::RecvReduce) p.max_recv_reduce_bytes = std::max(p.max_recv_reduce_bytes, e.bytes);
    p.ops.push_back(e);
  }
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

const std::vector<bool>& Runner::copied_sends(const std::array<std::byte*, 3>& regions) {
  for (const auto& [key, flags] : copies_)
    if (key == regions) return flags;
  // The last op writing each unit of memory; units are the largest size every op's range is a
  // multiple of (every buffer splits into equal chunks).
  std::uint64_t unit = 0;
  for (const ExecOp& o : prog_.ops) unit = std::gcd(unit, o.bytes);
  std::unordered_map<std::uintptr_t, std::uint32_t> last_write;
  auto units = [&](plan::Buf b, std::uint64_t off, std::uint64_t bytes, auto&& fn) {
    auto base = reinterpret_cast<std::uintptr_t>(regions[static_cast<std::size_t>(b)]) + off;
    for (std::uint64_t k = 0; unit && k < bytes; k += unit) fn(base + k);
  };
  for (std::uint32_t j = 0; j < prog_.ops.size(); ++j) {
    const ExecOp& o = prog_.ops[j];
    if (o.type != OpType::Send) units(o.dst_buf, o.dst_off, o.bytes, [&](std::uintptr_t a) { last_write[a] = j; });
  }
  std::vector<bool> flags(prog_.ops.size(), false);
  for (std::uint32_t i = 0; i < prog_.ops.size(); ++i) {
    const ExecOp& o = prog_.ops[i];
    if (o.type != OpType::Send) continue;
    units(o.src_buf, o.src_off, o.bytes, [&](std::uintptr_t a) {
      auto it = last_write.find(a);
      if (it != last_write.end() && it->second > i) flags[i] = true;
    });
  }
  copies_.emplace_back(regions, std::move(flags));
  return copies_.back().second;
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
  const std::vector<bool>& copied = copied_sends(regions);
  const std::size_t n = prog_.ops.size();
  state_.assign(n, 0);
  cursor_.assign(by_channel_.size(), 0);
  handles_.clear();
  sends_.clear();
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
        switch (o.type) {
          case OpType::Send:
            if (copied[i]) {
              std::size_t b = bounce(o.bytes);
              std::memcpy(bounces_[b].data(), at(o.src_buf, o.src_off), o.bytes);
              track(transport.post_send(o.peer, o.channel, bounces_[b].data(), o.bytes), i, true, b);
            } else {
              track(transport.post_send(o.peer, o.channel, at(o.src_buf, o.src_off), o.bytes), i, true);
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
      } else {
        if (o.type == OpType::RecvReduce)
          reduce(type_, op_, at(o.dst_buf, o.dst_off), at(o.src_buf, o.src_off), staging_[o.channel].data(),
                 o.bytes / size_of(type_));
        state_[f.op] = 2;
        ++done;
      }
      progress = true;
    }
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
  throw SystemError("rank " + std::to_string(prog_.rank) + ": no progress for " + t + " s: waiting on " + waits +
                    (more ? " and " + std::to_string(more) + " more" : std::string()));
}

}  // namespace collkit::exec::detail
