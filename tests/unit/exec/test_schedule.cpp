// The GPU backends' global schedule (libs/exec/src/schedule.h), run on the host the two ways the
// backends run it: in step order, as the cuda backend does on one stream per GPU, and as an NCCL
// group may (a round's transfers in any order: here forward and reversed, receive-and-reduce
// after the group's copies). Every algorithm, collective and rank count, out of place and in place
// (direct or staged, as coll-run decides), must give the collective's exact answer. This is what
// checks the cuda and nccl backends' ordering and their copies of overwritten sends without a GPU.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "collkit/core/error.h"
#include "collkit/exec/backend.h"
#include "collkit/exec/pattern.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/transform.h"
#include "schedule.h"

namespace collkit::exec {

namespace {

using detail::StepKind;
using plan::Buf;
using plan::OpType;

enum class Order { Steps, RoundForward, RoundReversed };

struct RankMemory {
  std::vector<std::byte> in, out, scratch, inplace, stage;
  std::array<std::byte*, 3> regions{};
  detail::SendCopies copies;
  std::vector<std::byte> bounce;  // the copies of sends overwritten before their data moves
};

// Runs the schedule on host memory; returns the wrong elements over all ranks.
std::uint64_t run_on_host(const plan::Plan& p, const Job& job, bool in_place, bool staged, Order order) {
  detail::GlobalSchedule g = detail::make_schedule(p);
  const plan::Request& req = job.req;
  const int n = p.nranks();
  const std::size_t esize = size_of(job.type);
  std::vector<RankMemory> mem(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    RankMemory& m = mem[static_cast<std::size_t>(r)];
    InPlaceOffsets ip = in_place_offsets(req, r);
    m.in.assign(plan::input_bytes(req), std::byte{0});
    m.out.assign(plan::output_bytes(req), std::byte{0});
    m.scratch.assign(p.info().scratch_bytes, std::byte{0});
    m.inplace.assign(ip.buffer_bytes, std::byte{0});
    m.regions = {m.in.data(), m.out.data(), m.scratch.data()};
    if (in_place) {
      m.regions[0] = m.inplace.data() + ip.input_offset;
      m.regions[1] = m.inplace.data() + ip.output_offset;
    }
    fill_input(job, r, m.regions[0]);
    if (in_place && staged) {
      m.stage.assign(m.regions[0], m.regions[0] + plan::input_bytes(req));
      m.regions[0] = m.stage.data();
    }
    m.copies = detail::send_copies(g, req, r, staged);
    m.bounce.assign(m.copies.bytes, std::byte{0});
  }
  auto op_of = [&](int r, std::uint32_t i) -> const detail::ExecOp& { return g.programs[static_cast<std::size_t>(r)].ops[i]; };
  auto at = [&](int r, Buf b, std::uint64_t off) { return mem[static_cast<std::size_t>(r)].regions[static_cast<std::size_t>(b)] + off; };
  const std::size_t pi = in_place ? 1 : 0;
  auto source = [&](int r, std::uint32_t i) -> const std::byte* {
    RankMemory& m = mem[static_cast<std::size_t>(r)];
    if (std::uint64_t off = m.copies.offset[pi][i]; off != detail::kNoCopy) return m.bounce.data() + off;
    return at(r, op_of(r, i).src_buf, op_of(r, i).src_off);
  };
  auto elems = [&](std::uint64_t bytes) { return static_cast<std::size_t>(bytes / esize); };

  std::vector<detail::Step> round;
  for (const detail::Step& st : g.steps) {
    switch (st.kind) {
      case StepKind::Local: {
        const detail::ExecOp& o = op_of(st.rank, st.op);
        std::byte* dst = at(st.rank, o.dst_buf, o.dst_off);
        if (o.type == OpType::Reduce) reduce(job.type, job.op, dst, dst, at(st.rank, o.src_buf, o.src_off), elems(o.bytes));
        else std::memmove(dst, at(st.rank, o.src_buf, o.src_off), o.bytes);
        break;
      }
      case StepKind::Reach: {
        RankMemory& m = mem[static_cast<std::size_t>(st.rank)];
        const detail::ExecOp& o = op_of(st.rank, st.op);
        if (std::uint64_t off = m.copies.offset[pi][st.op]; off != detail::kNoCopy)
          std::memcpy(m.bounce.data() + off, at(st.rank, o.src_buf, o.src_off), o.bytes);
        break;
      }
      case StepKind::Transfer:
        if (order == Order::Steps) {  // the cuda backend: now, reducing straight from the sender's bytes
          const detail::ExecOp& o = op_of(st.rank, st.op);
          std::byte* dst = at(st.rank, o.dst_buf, o.dst_off);
          if (o.type == OpType::Recv) std::memmove(dst, source(st.peer, st.peer_op), o.bytes);
          else reduce(job.type, job.op, dst, at(st.rank, o.src_buf, o.src_off), source(st.peer, st.peer_op), elems(o.bytes));
        } else {
          round.push_back(st);
        }
        break;
      case StepKind::RoundEnd: {
        if (order == Order::RoundReversed) std::reverse(round.begin(), round.end());
        // The group: receives land (receive-and-reduce in staging); then the reduction kernels.
        std::vector<std::vector<std::byte>> staged_in(round.size());
        for (std::size_t k = 0; k < round.size(); ++k) {
          const detail::Step& t = round[k];
          const detail::ExecOp& o = op_of(t.rank, t.op);
          const std::byte* src = source(t.peer, t.peer_op);
          if (o.type == OpType::Recv) std::memmove(at(t.rank, o.dst_buf, o.dst_off), src, o.bytes);
          else staged_in[k].assign(src, src + o.bytes);
        }
        for (std::size_t k = 0; k < round.size(); ++k) {
          const detail::Step& t = round[k];
          const detail::ExecOp& o = op_of(t.rank, t.op);
          if (o.type == OpType::RecvReduce)
            reduce(job.type, job.op, at(t.rank, o.dst_buf, o.dst_off), at(t.rank, o.src_buf, o.src_off), staged_in[k].data(),
                   elems(o.bytes));
        }
        round.clear();
        break;
      }
    }
  }
  std::uint64_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    std::byte* out = at(r, Buf::Output, 0);
    bool defined = req.coll != plan::Collective::Reduce || r == req.root;
    if (job.op == RedOp::Avg && plan::facts(req.coll).reduces && defined) scale_mean(job.type, out, output_count(job), n);
    wrong += count_wrong(job, r, out);
  }
  return wrong;
}

struct Case {
  DataType type;
  RedOp op;
};

}  // namespace

TEST_CASE("the global schedule runs every algorithm correctly in step order and in any order within a round") {
  const plan::Collective colls[] = {plan::Collective::AllReduce, plan::Collective::ReduceScatter, plan::Collective::AllGather,
                                    plan::Collective::AlltoAll,  plan::Collective::Broadcast,     plan::Collective::Reduce};
  const Case cases[] = {{DataType::Float32, RedOp::Sum}, {DataType::Int8, RedOp::Prod}, {DataType::Float16, RedOp::Max},
                        {DataType::Float64, RedOp::Avg}};
  int plans_run = 0;
  for (int n : {2, 3, 4, 5, 8})
    for (plan::Collective coll : colls)
      for (const plan::Algorithm* algo : plan::algorithms())
        for (int channels : {0, 2}) {
          int root = plan::facts(coll).has_root ? n - 1 : 0;
          plan::Request probe{coll, 4096, n, root};
          std::string why;
          if (!algo->supports(probe, nullptr, &why)) continue;
          plan::AlgoOptions ao;
          ao.channels = channels;
          std::unique_ptr<plan::Plan> first;
          try {
            first = plan::plan_for(algo->name(), probe, nullptr, ao);
          } catch (const InputError&) {
            continue;
          }
          for (const Case& c : cases) {
            if (!plan::facts(coll).reduces && c.op != RedOp::Sum) continue;
            std::uint64_t esize = size_of(c.type);
            std::uint64_t step = plan::granularity(first->info()).step;
            REQUIRE(step > 0);
            std::uint64_t count = step * std::max<std::uint64_t>(1, 24 / step);
            auto p = plan::resized(*first, count * esize, esize);
            Job job{p->info().req, c.type, c.op};
            bool direct = plan::in_place_problem(*p).empty();
            std::string what = std::string(algo->name()) + " " + std::string(plan::to_string(coll)) + " n=" + std::to_string(n) +
                               " channels=" + std::to_string(channels) + " " + std::string(to_string(c.type)) + " " +
                               std::string(to_string(c.op)) + (direct ? " in place direct" : " in place staged");
            INFO(what);
            for (Order order : {Order::Steps, Order::RoundForward, Order::RoundReversed}) {
              CHECK(run_on_host(*p, job, false, false, order) == 0);
              CHECK(run_on_host(*p, job, true, !direct, order) == 0);
            }
            ++plans_run;
          }
        }
  CHECK(plans_run > 100);
}

TEST_CASE("a receive no send matches is named, not run") {
  plan::PlanInfo info;
  info.req = {plan::Collective::Broadcast, 64, 2, 0};
  info.algorithm = "explicit";
  plan::Op recv;
  recv.type = OpType::Recv;
  recv.peer = 0;
  recv.dst = {Buf::Output, 0};
  plan::ExplicitPlan p(info, {{}, {recv}});
  CHECK_THROWS_WITH_AS(detail::make_schedule(p),
                       "plan: rank 1 op 0 (recv from 0 ch 0): never matched: rank 0 sends 0 messages to rank 1 on ch 0 and rank 1 "
                       "receives 1",
                       Error);
}

TEST_CASE("a deadlock is named with the send a receive waits for") {
  plan::PlanInfo info;
  info.req = {plan::Collective::AllGather, 128, 2, 0};
  info.algorithm = "explicit";
  info.in_chunks = 1;
  info.out_chunks = 2;
  auto op = [](OpType type, int peer, Buf buf, std::uint32_t chunk) {
    plan::Op o;
    o.type = type;
    o.peer = peer;
    (type == OpType::Send ? o.src : o.dst) = {buf, chunk};
    return o;
  };
  // Each rank receives before it sends: neither send is ever reached.
  plan::ExplicitPlan p(info, {{op(OpType::Recv, 1, Buf::Output, 1), op(OpType::Send, 1, Buf::Input, 0)},
                              {op(OpType::Recv, 0, Buf::Output, 0), op(OpType::Send, 0, Buf::Input, 0)}});
  CHECK_THROWS_WITH_AS(detail::make_schedule(p),
                       "plan: deadlock: rank 0 op 0 (recv from rank 1, channel 0, 64 bytes) waits for rank 1 op 1 (send to rank 0, "
                       "channel 0, 64 bytes), which is never reached",
                       Error);
}

}  // namespace collkit::exec
