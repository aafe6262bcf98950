#pragma once
// Helpers for testing plans; any algorithm's tests can use them.
//
//   check_plan(plan)      verify(plan) must pass, then the interpreter runs it on seeded random
//                         inputs under sum, prod, min and max, and every output it defines must
//                         equal the reference computed straight from the collective's definition.
//                         Give the request elem_bytes = 8 (any count of elements then works),
//                         or bytes whose every chunk boundary falls on 8 (8 x in_chunks x
//                         out_chunks x nranks works for all).
//   verify_error(plan)    verify()'s message, "" when the plan is correct (for mutation tests);
//                         like check_plan, it runs both chunk stores and checks they agree.
//   reference(...)        the expected outputs (nullopt for ranks a Reduce leaves undefined).
//   random_inputs(...)    seeded inputs of the right shape.
//   hand_plan(...)        an ExplicitPlan from hand-written programs (build ops with the helpers
//                         of algorithms/common.h: algo::send, algo::recv_reduce, algo::in(3)...).
//   describe_plan(info)   "ring allreduce p=4 bytes=512 {bidirectional=0,channels=1,pipeline=1}",
//                         for INFO() lines.
//   axis_holds(plan, a, n) whether a stated symmetry holds op for op (for symmetry tests).
//
// Typical use:
//   for (int p : kRankCounts) {
//     auto plan = generate("tree", Request{Collective::AllReduce, 64 * 8 * p, p}, nullptr, {});
//     check_plan(*plan);
//   }

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/plan.h"
#include "collkit/plan/verify.h"
#include "interpret.h"

namespace collkit::plan::testing {

/// The rank counts every algorithm is tested on (STYLE.md rule 10).
inline constexpr int kRankCounts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 24, 32};

inline std::string describe_plan(const PlanInfo& info) {
  std::string text = info.algorithm + " " + std::string(to_string(info.req.coll)) + " p=" + std::to_string(info.req.nranks) +
                     " bytes=" + std::to_string(info.req.bytes);
  if (facts(info.req.coll).has_root) text += " root=" + std::to_string(info.req.root);
  text += " {";
  bool first = true;
  for (const auto& [k, v] : info.params) {
    text += (first ? "" : ",") + k + "=" + v;
    first = false;
  }
  return text + "}";
}

/// verify() under both chunk stores, which must agree word for word.
/// Whether symmetry axis `a` holds op for op: thread (r, c) runs what thread (a(r), a(c)) runs,
/// peers mapped, equal counts, deps at the same place of the image thread. Counts the ops compared.
inline bool axis_holds(const Plan& plan, const SymmetryAxis& a, std::size_t& compared) {
  auto at = [](int x) { return static_cast<std::size_t>(x); };
  int p = plan.nranks(), C = plan.info().channels;
  for (int r = 0; r < p; ++r) {
    std::vector<Op> mine = plan.program(r), theirs = plan.program(a.rank[at(r)]);
    // Per channel, the ops in order with their place in the channel.
    auto split = [C](const std::vector<Op>& ops, std::vector<std::uint32_t>& place) {
      std::vector<std::vector<std::uint32_t>> by(static_cast<std::size_t>(C));
      place.assign(ops.size(), 0);
      for (std::size_t i = 0; i < ops.size(); ++i) {
        place[i] = static_cast<std::uint32_t>(by[ops[i].channel].size());
        by[ops[i].channel].push_back(static_cast<std::uint32_t>(i));
      }
      return by;
    };
    std::vector<std::uint32_t> pm, pt;
    auto x = split(mine, pm), y = split(theirs, pt);
    for (int c = 0; c < C; ++c) {
      const std::vector<std::uint32_t>&xs = x[at(c)], &ys = y[at(a.channel[at(c)])];
      if (xs.size() != ys.size()) return false;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const Op &o = mine[xs[i]], &q = theirs[ys[i]];
        if (o.type != q.type || o.count != q.count || o.num_deps() != q.num_deps()) return false;
        if ((o.type == OpType::Send || o.type == OpType::Recv || o.type == OpType::RecvReduce) && a.rank[at(o.peer)] != q.peer)
          return false;
        for (std::size_t k = 0; k < o.num_deps(); ++k)
          if (a.channel[mine[o.deps[k]].channel] != theirs[q.deps[k]].channel || pm[o.deps[k]] != pt[q.deps[k]]) return false;
        ++compared;
      }
    }
  }
  return true;
}

inline VerifyResult verify_both(const Plan& plan) {
  VerifyResult per_chunk = verify(plan, ChunkStore::PerChunk), runs = verify(plan, ChunkStore::Runs);
  CHECK_MESSAGE(per_chunk.error == runs.error, "per chunk: " << per_chunk.error << "; runs: " << runs.error);
  CHECK(per_chunk.ops == runs.ops);
  CHECK(per_chunk.transfers == runs.transfers);
  return per_chunk;
}

inline std::string verify_error(const Plan& plan) { return verify_both(plan).error; }

inline interp::Buffers random_inputs(const PlanInfo& info, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<std::int64_t> value(-40, 40);
  std::size_t elements = input_bytes(info.req) / 8;
  interp::Buffers in(static_cast<std::size_t>(info.req.nranks), std::vector<std::int64_t>(elements));
  for (auto& buf : in)
    for (auto& x : buf) x = value(gen);
  return in;
}

/// Each rank's output by the collective's definition; nullopt where it defines none (a
/// Reduce's non-root ranks).
inline std::vector<std::optional<std::vector<std::int64_t>>> reference(const Request& req, interp::RedOp op,
                                                                       const interp::Buffers& in) {
  auto p = static_cast<std::size_t>(req.nranks);
  std::size_t ein = in.at(0).size(), eout = output_bytes(req) / 8;
  std::vector<std::optional<std::vector<std::int64_t>>> out(p);
  auto fold = [&](std::size_t e) {
    std::int64_t acc = in[0][e];
    for (std::size_t s = 1; s < p; ++s) acc = interp::apply(op, acc, in[s][e]);
    return acc;
  };
  for (std::size_t r = 0; r < p; ++r) {
    std::vector<std::int64_t> v(eout);
    switch (req.coll) {
      case Collective::AllReduce:
        for (std::size_t e = 0; e < eout; ++e) v[e] = fold(e);
        break;
      case Collective::Reduce:
        if (r != static_cast<std::size_t>(req.root)) continue;
        for (std::size_t e = 0; e < eout; ++e) v[e] = fold(e);
        break;
      case Collective::ReduceScatter:
        for (std::size_t e = 0; e < eout; ++e) v[e] = fold(r * eout + e);
        break;
      case Collective::AllGather:
        for (std::size_t s = 0; s < p; ++s)
          for (std::size_t e = 0; e < ein; ++e) v[s * ein + e] = in[s][e];
        break;
      case Collective::AlltoAll: {
        std::size_t block = ein / p;
        for (std::size_t s = 0; s < p; ++s)
          for (std::size_t e = 0; e < block; ++e) v[s * block + e] = in[s][r * block + e];
        break;
      }
      case Collective::Broadcast: v = in[static_cast<std::size_t>(req.root)]; break;
    }
    out[r] = std::move(v);
  }
  return out;
}

/// Runs the interpreter under `op` and compares with the reference; "" when equal, else the
/// first difference.
inline std::string interpret_mismatch(const Plan& plan, interp::RedOp op, std::uint64_t seed) {
  interp::Buffers in = random_inputs(plan.info(), seed);
  interp::Buffers got = interp::run(plan, op, in);
  auto want = reference(plan.info().req, op, in);
  for (std::size_t r = 0; r < want.size(); ++r) {
    if (!want[r]) continue;
    if (got[r].size() != want[r]->size())
      return "rank " + std::to_string(r) + ": " + std::to_string(got[r].size()) + " output elements, want " +
             std::to_string(want[r]->size());
    for (std::size_t e = 0; e < got[r].size(); ++e)
      if (got[r][e] != (*want[r])[e])
        return std::string(to_string(op)) + ": rank " + std::to_string(r) + " output element " + std::to_string(e) +
               ": got " + std::to_string(got[r][e]) + ", want " + std::to_string((*want[r])[e]);
  }
  return {};
}

/// verify() must pass and the interpreter must agree with the reference under every operator.
inline VerifyResult check_plan(const Plan& plan, std::uint64_t seed = 1) {
  INFO(describe_plan(plan.info()));
  VerifyResult v = verify_both(plan);
  CHECK_MESSAGE(v.ok, v.error);
  if (!v.ok) return v;
  for (interp::RedOp op : interp::kRedOps) {
    std::string diff = interpret_mismatch(plan, op, seed);
    CHECK_MESSAGE(diff.empty(), diff);
    if (!diff.empty()) break;
  }
  return v;
}

/// What rank 0's program of `good` with plan parameter `key` set to `bad` is refused with (a
/// malformed plan file: the InputError's text), or "accepted" where it is not refused.
inline std::string refusal(const PlanInfo& good, const std::string& algo, const std::string& key, const std::string& bad) {
  PlanInfo info = good;
  info.params[key] = bad;
  try {
    GeneratedPlan(info, algorithm(algo)).program(0);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

inline ExplicitPlan hand_plan(Request req, std::uint32_t in_chunks, std::uint32_t out_chunks, std::uint16_t channels,
                              std::vector<std::vector<Op>> programs) {
  PlanInfo info;
  info.req = req;
  info.algorithm = "explicit";
  info.in_chunks = in_chunks;
  info.out_chunks = out_chunks;
  info.channels = channels;
  return ExplicitPlan(std::move(info), std::move(programs));
}

}  // namespace collkit::plan::testing
