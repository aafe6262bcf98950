// The interpreter: real numbers through plans, against values worked out by hand and against
// the reference of plan_testing.h.

#include <doctest/doctest.h>

#include <limits>

#include "algorithms/common.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "interpret.h"
#include "plan_testing.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using namespace collkit::plan::algo;
using collkit::plan::interp::RedOp;

TEST_CASE("interpret: every reduction operator on a ring allreduce") {
  // Rank r holds r+1 in every element.
  int p = 5;
  auto plan = generate("ring", Request{Collective::AllReduce, 8ull * 10, p, 0}, nullptr, {});
  interp::Buffers in;
  for (int r = 0; r < p; ++r) in.emplace_back(10, r + 1);
  CHECK(interp::run(*plan, RedOp::Sum, in)[3] == std::vector<std::int64_t>(10, 15));
  CHECK(interp::run(*plan, RedOp::Prod, in)[0] == std::vector<std::int64_t>(10, 120));
  CHECK(interp::run(*plan, RedOp::Min, in)[4] == std::vector<std::int64_t>(10, 1));
  CHECK(interp::run(*plan, RedOp::Max, in)[1] == std::vector<std::int64_t>(10, 5));
}

TEST_CASE("interpret: ring allgather and reducescatter place blocks by rank") {
  int p = 3;
  interp::Buffers in{{10, 11}, {20, 21}, {30, 31}};
  auto ag = generate("ring", Request{Collective::AllGather, 8ull * 6, p, 0}, nullptr, AlgoOptions{2, 1, true, {}});
  CHECK(interp::run(*ag, RedOp::Sum, in)[1] == std::vector<std::int64_t>{10, 11, 20, 21, 30, 31});
  interp::Buffers rs_in{{1, 2, 3, 4, 5, 6}, {10, 20, 30, 40, 50, 60}, {100, 200, 300, 400, 500, 600}};
  auto rs = generate("ring", Request{Collective::ReduceScatter, 8ull * 6, p, 0}, nullptr, AlgoOptions{2, 1, false, {}});
  interp::Buffers out = interp::run(*rs, RedOp::Sum, rs_in);
  CHECK(out[0] == std::vector<std::int64_t>{111, 222});
  CHECK(out[2] == std::vector<std::int64_t>{555, 666});
}

TEST_CASE("interpret: sum and product wrap around, so any order gives the same bits") {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  CHECK(interp::apply(RedOp::Sum, kMax, 1) == kMin);
  CHECK(interp::apply(RedOp::Prod, kMin, -1) == kMin);
  CHECK(interp::apply(RedOp::Min, -3, 2) == -3);
  CHECK(interp::apply(RedOp::Max, -3, 2) == 2);
  CHECK(interp::to_string(RedOp::Prod) == "prod");
}

TEST_CASE("interpret: the reference follows each collective's definition") {
  interp::Buffers in{{1, 2, 3, 4}, {5, 6, 7, 8}};
  auto ref = [&](Collective c, int root = 0) { return reference(Request{c, 32, 2, root}, RedOp::Sum, in); };
  CHECK(*ref(Collective::AllReduce)[1] == std::vector<std::int64_t>{6, 8, 10, 12});
  CHECK(*ref(Collective::ReduceScatter)[1] == std::vector<std::int64_t>{10, 12});
  CHECK(*ref(Collective::AlltoAll)[0] == std::vector<std::int64_t>{1, 2, 5, 6});
  CHECK(*ref(Collective::AlltoAll)[1] == std::vector<std::int64_t>{3, 4, 7, 8});
  CHECK(*ref(Collective::Broadcast, 1)[0] == std::vector<std::int64_t>{5, 6, 7, 8});
  CHECK_FALSE(ref(Collective::Reduce, 1)[0].has_value());
  CHECK(*ref(Collective::Reduce, 1)[1] == std::vector<std::int64_t>{6, 8, 10, 12});
  interp::Buffers halves{{1, 2}, {5, 6}};
  CHECK(*reference(Request{Collective::AllGather, 32, 2, 0}, RedOp::Sum, halves)[0] == std::vector<std::int64_t>{1, 2, 5, 6});
}

TEST_CASE("interpret: copies and reductions with overlapping ranges read before they write") {
  // One rank: out = in, then out[1..2] = out[0..1] (a shifted copy), then out[0..1] += out[1..2].
  std::vector<Op> prog{copy(in(0), out(0), 3, 0), copy(out(0), out(1), 2, 0), reduce(out(1), out(0), 2, 0)};
  ExplicitPlan plan = hand_plan(Request{Collective::Broadcast, 24, 1, 0}, 3, 3, 1, {prog});
  CHECK(interp::run(plan, RedOp::Sum, {{1, 2, 3}}) == interp::Buffers{{2, 3, 2}});
}

TEST_CASE("interpret: refuses what it cannot run") {
  // 3 ranks x 1 chunk of a 32-byte vector: chunk 1 starts at byte 10.
  auto plan = generate("ring", Request{Collective::AllReduce, 32, 3, 0}, nullptr, {});
  interp::Buffers inputs(3, std::vector<std::int64_t>(4));
  CHECK_THROWS_WITH_AS(interp::run(*plan, RedOp::Sum, inputs), "interpret: input chunk 1 starts at byte 10, not on an 8-byte element",
                       collkit::InputError);
  auto even = generate("ring", Request{Collective::AllReduce, 48, 3, 0}, nullptr, {});
  CHECK_THROWS_WITH_AS(interp::run(*even, RedOp::Sum, interp::Buffers(2)), "interpret: 2 input buffers for 3 ranks",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(interp::run(*even, RedOp::Sum, interp::Buffers(3, std::vector<std::int64_t>(5))),
                       "interpret: rank 0's input has 5 elements, the plan needs 6", collkit::InputError);
  // A wrong plan: the verifier's message.
  std::vector<std::vector<Op>> progs{{recv(1, out(1), 1, 0), send(1, in(0), 1, 0)}, {recv(0, out(0), 1, 0), send(0, in(0), 1, 0)}};
  CHECK_THROWS_WITH_AS(interp::run(hand_plan(Request{Collective::AllGather, 32, 2, 0}, 1, 2, 1, progs), RedOp::Sum,
                                   interp::Buffers(2, std::vector<std::int64_t>(2))),
                       "deadlock: 2 ops can never run: rank 0 op 0 (recv from 1 ch 0) waits for a message from rank 1; rank 1 op 0 "
                       "(recv from 0 ch 0) waits for a message from rank 0",
                       collkit::InputError);
}
