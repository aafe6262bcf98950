#include "schedule.h"

#include <algorithm>

#include "collkit/core/error.h"
#include "collkit/exec/backend.h"
#include "collkit/plan/matched.h"

namespace collkit::exec::detail {

using plan::OpType;

namespace {

struct RankState {
  std::vector<std::vector<std::uint32_t>> by_channel;
  std::vector<std::uint32_t> cursor;
  std::vector<std::uint8_t> state;  // 0 not reached, 1 receive posted, 2 done
};

}  // namespace

GlobalSchedule make_schedule(const plan::Plan& plan) {
  // Which send each receive takes, from the pass the engine and the simulator share; it also
  // checks every op and that both sides move the same bytes.
  GlobalSchedule g;
  std::vector<std::uint32_t> partner;
  plan::MatchVisitor visit;
  visit.program = [&](int r, std::uint32_t first, const std::vector<plan::Op>& ops) {
    g.programs.push_back(compile(plan, r, ops, /*with_fences=*/false));
    partner.resize(first + ops.size(), plan::kNoDep);
  };
  visit.pair = [&](std::uint32_t send, std::uint32_t recv) {
    partner[send] = recv;
    partner[recv] = send;
  };
  plan::OpIds ids;
  try {
    ids = plan::match_plan(plan, visit);
  } catch (const plan::PlanFault& e) {
    throw Error(std::string("plan: ") + e.what());
  }

  const int n = plan.nranks();
  std::vector<RankState> ranks(static_cast<std::size_t>(n));
  std::size_t total = 0;
  for (int r = 0; r < n; ++r) {
    const RankProgram& p = g.programs[static_cast<std::size_t>(r)];
    RankState& st = ranks[static_cast<std::size_t>(r)];
    st.by_channel.resize(p.channels);
    for (std::uint32_t i = 0; i < p.ops.size(); ++i) st.by_channel[p.ops[i].channel].push_back(i);
    st.cursor.assign(p.channels, 0);
    st.state.assign(p.ops.size(), 0);
    total += p.ops.size();
  }
  struct Posted {
    int rank;
    std::uint32_t op;
    int from;  // its send: rank, op
    std::uint32_t send;
  };
  std::vector<Posted> posted;  // receives reached, not yet matched
  std::size_t done = 0;

  auto ready = [&](int r, std::uint32_t i) {
    const RankState& st = ranks[static_cast<std::size_t>(r)];
    for (std::uint32_t d : g.programs[static_cast<std::size_t>(r)].ops[i].deps)
      if (d != plan::kNoDep && st.state[d] != 2) return false;
    return true;
  };

  while (done < total) {
    // Everything that can start without a peer, to a fixpoint (deps cross channels).
    for (bool moved = true; moved;) {
      moved = false;
      for (int r = 0; r < n; ++r) {
        RankState& st = ranks[static_cast<std::size_t>(r)];
        const RankProgram& p = g.programs[static_cast<std::size_t>(r)];
        for (std::size_t c = 0; c < st.by_channel.size(); ++c) {
          const auto& list = st.by_channel[c];
          while (st.cursor[c] < list.size()) {
            std::uint32_t i = list[st.cursor[c]];
            if (st.cursor[c] > 0 && st.state[list[st.cursor[c] - 1]] != 2) break;
            if (st.state[i] != 0 || !ready(r, i)) break;
            switch (p.ops[i].type) {
              case OpType::Send:
                g.steps.push_back({StepKind::Reach, r, i, -1, 0});
                st.state[i] = 2;
                ++done;
                break;
              case OpType::Copy:
              case OpType::Reduce:
                g.steps.push_back({StepKind::Local, r, i, -1, 0});
                st.state[i] = 2;
                ++done;
                break;
              case OpType::Recv:
              case OpType::RecvReduce: {
                std::uint32_t s = partner[ids.id(r, i)];
                int from = ids.rank_of(s);
                posted.push_back({r, i, from, s - ids.begin[static_cast<std::size_t>(from)]});
              }
                st.state[i] = 1;
                break;
            }
            ++st.cursor[c];
            moved = true;
            if (st.state[i] != 2) break;
          }
        }
      }
    }
    if (done == total) break;

    // One round: every posted receive whose send has been reached.
    std::vector<Posted> matched, waiting;
    for (const Posted& x : posted) {
      if (ranks[static_cast<std::size_t>(x.from)].state[x.send] != 2) {
        waiting.push_back(x);
        continue;
      }
      g.steps.push_back({StepKind::Transfer, x.rank, x.op, x.from, x.send});
      matched.push_back(x);
    }
    // Nothing matched: every op left waits, through channel order and deps on earlier ops, on a
    // posted receive (so there is one) whose send is never reached.
    if (matched.empty()) {
      const Posted& x = posted.front();
      throw Error("plan: deadlock: rank " + std::to_string(x.rank) + " " +
                  describe(g.programs[static_cast<std::size_t>(x.rank)].ops[x.op], x.op) + " waits for rank " + std::to_string(x.from) +
                  " " + describe(g.programs[static_cast<std::size_t>(x.from)].ops[x.send], x.send) + ", which is never reached");
    }
    g.steps.push_back({StepKind::RoundEnd, -1, 0, -1, 0});
    ++g.rounds;
    for (const Posted& x : matched) {
      ranks[static_cast<std::size_t>(x.rank)].state[x.op] = 2;
      ++done;
    }
    posted = std::move(waiting);
  }
  return g;
}

RegionAddrs region_layout(const plan::Request& req, int rank, bool in_place, bool staged) {
  // Far-apart bases: separate allocations never overlap.
  constexpr std::uint64_t kApart = 1ull << 56;
  if (!in_place) return {kApart, 2 * kApart, 3 * kApart};
  InPlaceOffsets ip = in_place_offsets(req, rank);
  return {staged ? 4 * kApart : kApart + ip.input_offset, kApart + ip.output_offset, 3 * kApart};
}

std::vector<bool> sends_to_copy(const GlobalSchedule& s, int rank, const RegionAddrs& regions) {
  const RankProgram& p = s.programs[static_cast<std::size_t>(rank)];
  struct Write {
    std::size_t at;  // step index
    std::uint64_t begin, end;
  };
  std::vector<Write> writes;                 // by step index
  std::vector<std::size_t> reach(p.ops.size(), 0), round_end(p.ops.size(), 0);
  std::vector<std::uint32_t> sends_in_round;  // sends of this rank transferred in the current round
  auto addr = [&](plan::Buf b, std::uint64_t off) { return regions[static_cast<std::size_t>(b)] + off; };
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    switch (st.kind) {
      case StepKind::Local:
        if (st.rank == rank) {
          const ExecOp& o = p.ops[st.op];
          writes.push_back({k, addr(o.dst_buf, o.dst_off), addr(o.dst_buf, o.dst_off) + o.bytes});
        }
        break;
      case StepKind::Reach:
        if (st.rank == rank) reach[st.op] = k;
        break;
      case StepKind::Transfer:
        if (st.rank == rank) {
          const ExecOp& o = p.ops[st.op];
          writes.push_back({k, addr(o.dst_buf, o.dst_off), addr(o.dst_buf, o.dst_off) + o.bytes});
        }
        if (st.peer == rank) sends_in_round.push_back(st.peer_op);
        break;
      case StepKind::RoundEnd:
        for (std::uint32_t op : sends_in_round) round_end[op] = k;
        sends_in_round.clear();
        break;
    }
  }
  std::vector<bool> copy(p.ops.size(), false);
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    const ExecOp& o = p.ops[i];
    if (o.type != OpType::Send) continue;
    std::uint64_t b = addr(o.src_buf, o.src_off), e = b + o.bytes;
    auto first = std::upper_bound(writes.begin(), writes.end(), reach[i], [](std::size_t at, const Write& w) { return at < w.at; });
    for (auto w = first; w != writes.end() && w->at < round_end[i]; ++w)
      if (w->begin < e && b < w->end) {
        copy[i] = true;
        break;
      }
  }
  return copy;
}

SendCopies send_copies(const GlobalSchedule& s, const plan::Request& req, int rank, bool staged) {
  SendCopies out;
  const auto& ops = s.programs[static_cast<std::size_t>(rank)].ops;
  for (std::size_t pi = 0; pi < 2; ++pi) {
    std::vector<bool> copy = sends_to_copy(s, rank, region_layout(req, rank, pi == 1, staged));
    std::uint64_t used = 0;
    out.offset[pi].assign(ops.size(), kNoCopy);
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (copy[i]) {
        out.offset[pi][i] = used;
        used += (ops[i].bytes + 255) / 256 * 256;  // aligned for the copy engines and kernels
      }
    out.bytes = std::max(out.bytes, used);
  }
  return out;
}

std::string describe_op(const GlobalSchedule& s, int rank, std::uint32_t op) {
  return describe(s.programs[static_cast<std::size_t>(rank)].ops[op], op);
}

}  // namespace collkit::exec::detail
