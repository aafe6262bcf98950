#include "emitter.h"

#include <algorithm>
#include <string>

namespace collkit::overlap {

std::uint64_t Emitter::Pending::total() const {
  std::uint64_t t = 0;
  for (const auto& [k, v] : bytes) t += v;
  return t;
}

std::vector<int> Emitter::ready() const {
  std::vector<int> d = gates_;
  d.insert(d.end(), chunk_gates_.begin(), chunk_gates_.end());
  if (tail_ >= 0) d.push_back(tail_);
  return d;
}

int Emitter::add(Task t) {
  tasks_->push_back(std::move(t));
  return static_cast<int>(tasks_->size()) - 1;
}

Stream Emitter::stream_of(const CommOp& op) const {
  switch (op.group) {
    case Group::Tp: return Stream::Tp;
    case Group::Ep: return Stream::Ep;
    case Group::Dp:
    case Group::ExpertDp: return op.coll == plan::Collective::AllGather ? Stream::Dp : Stream::DpReduce;
    case Group::Pp: return Stream::Pp;
  }
  return Stream::Dp;
}

namespace {
std::string chunk_name(const std::string& name, int chunk) { return chunk < 0 ? name : name + "[c" + std::to_string(chunk) + "]"; }
}  // namespace

int Emitter::compute(const Segment& s, const ComputeOp& op, double fraction, int chunk, std::vector<int> extra) {
  int id = compute_task(s, chunk_name(op.name, chunk), cm_->time_us(op, fraction), chunk, std::move(extra));
  Task& t = (*tasks_)[static_cast<std::size_t>(id)];
  t.op = op;
  t.fraction = fraction;
  return id;
}

int Emitter::compute_task(const Segment& s, std::string name, double work_us, int chunk, std::vector<int> extra) {
  Task t;
  t.name = std::move(name);
  t.stream = Stream::Compute;
  t.work_us = work_us;
  t.deps = ready();
  t.deps.insert(t.deps.end(), extra.begin(), extra.end());
  t.layer = s.layer;
  t.microbatch = s.microbatch;
  t.backward = s.backward;
  t.chunk = chunk;
  tail_ = add(std::move(t));
  gates_.clear();
  chunk_gates_.clear();
  return tail_;
}

int Emitter::comm_async(const Segment& s, const CommOp& op, std::vector<int> deps, double fraction, int chunk, double wait_share) {
  auto bytes = static_cast<std::uint64_t>(static_cast<double>(op.bytes) * fraction);
  CommEstimate e = comm_->estimate(op.group, op.coll, bytes);
  Task t;
  t.name = chunk_name(op.name, chunk);
  t.stream = stream_of(op);
  // A DP gather and a DP reduction in flight together cross the same NICs (expert-DP too).
  t.share = op.group == Group::Dp || op.group == Group::ExpertDp ? 0 : -1;
  // The calibrated wait for the slowest rank is paid where the ranks meet after computing apart:
  // once per collective of the program. Its chunks follow one another on ranks the first chunk
  // met, so chunk i pays `fraction` of it (the chunks of a collective pay one wait in all). Charged
  // in full per chunk it over-predicted chunked schedules (docs/overlap.md, "Measured").
  // Each chunk is a meeting of its own too: k chunks pay (k - 1) x chunk_sync_us beyond the one
  // wait (the chunks' fractions add up to 1, their 1 - fraction to k - 1).
  // Gradient buckets likewise (wait_share): the serial step's one reduction waits for the skew the
  // ranks gathered over the whole backward pass; buckets launched along it meet the ranks more
  // often, each for the skew gathered since the previous one. Charged in full per bucket, four
  // 1 MB buckets on DP 4 paid four times the one reduction's measured wait.
  const double f = std::clamp(wait_share >= 0 ? wait_share : fraction, 0.0, 1.0);
  t.wait_us = e.sync_us * f + e.chunk_sync_us * (1 - f);
  t.work_us = e.time_us - e.sync_us + t.wait_us;
  t.deps = std::move(deps);
  t.bytes = e.bytes;
  t.layer = s.layer;
  t.microbatch = s.microbatch;
  t.backward = s.backward;
  t.chunk = chunk;
  t.group = op.group;
  t.coll = op.coll;
  return add(std::move(t));
}

int Emitter::comm_blocking(const Segment& s, const CommOp& op) {
  tail_ = comm_async(s, op, ready());
  gates_.clear();
  chunk_gates_.clear();
  return tail_;
}

std::vector<int> Emitter::flush_pending(const Segment& s, std::vector<int> deps) {
  std::vector<int> out;
  for (const auto& [key, bytes] : pending_.bytes) {
    if (bytes == 0) continue;
    std::string name = std::string(to_string(key.first)) + ".grads";
    out.push_back(comm_async(s, CommOp{name, key.first, key.second, bytes}, deps, 1, -1, gradient_share(key.first, key.second, bytes)));
  }
  pending_.bytes.clear();
  return out;
}

void Emitter::count_gradients(const std::vector<Segment>& segments) {
  gradients_.bytes.clear();
  for (const Segment& s : segments)
    if (s.kind == SegmentKind::GradReduce)
      for (const auto& c : s.comm) gradients_.bytes[{c.group, c.coll}] += c.bytes;
}

double Emitter::gradient_share(Group g, plan::Collective c, std::uint64_t bytes) const {
  auto total = gradients_.bytes.find({g, c});
  if (total == gradients_.bytes.end() || total->second == 0) return 1.0;
  return std::min(1.0, static_cast<double>(bytes) / static_cast<double>(total->second));
}

void Emitter::emit_serial(const Segment& s) {
  switch (s.kind) {
    case SegmentKind::Compute:
      for (const auto& op : s.compute) compute(s, op);
      break;
    case SegmentKind::GatherGemm:
      comm_blocking(s, s.comm[0]);
      compute(s, s.compute[0]);
      break;
    case SegmentKind::GemmScatter:
      compute(s, s.compute[0]);
      comm_blocking(s, s.comm[0]);
      break;
    case SegmentKind::Moe:
      comm_blocking(s, s.comm[0]);
      for (const auto& op : s.compute) compute(s, op);
      comm_blocking(s, s.comm[1]);
      break;
    case SegmentKind::ParamGather:
    case SegmentKind::PpRecv:
    case SegmentKind::PpSend:
      for (const auto& c : s.comm) comm_blocking(s, c);
      break;
    case SegmentKind::GradReduce:
      // Without overlap every gradient is reduced after the backward pass, all at once.
      for (const auto& c : s.comm) pending_.bytes[{c.group, c.coll}] += c.bytes;
      break;
    case SegmentKind::StepEnd: emit_step_end(s); break;
  }
}

void Emitter::emit_step_end(const Segment& s) {
  for (int t : flush_pending(s, ready())) {
    tail_ = t;
    in_flight_.push_back(t);
  }
  // The optimizer step: a zero-length compute task that waits for every collective.
  compute_task(s, "optimizer.wait", 0, -1, in_flight_);
}

}  // namespace collkit::overlap
