// The straggler-aware AllReduce (algorithms/straggler.cpp): every rank count, straggler and
// pipeline verified and interpreted; the bytes through the straggler's links are the least an
// AllReduce allows (n/(p-1) per link and direction), and bad parameters are refused.

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <utility>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "plan_testing.h"

using namespace collkit;
using namespace collkit::plan;
using namespace collkit::plan::testing;

namespace {

std::unique_ptr<Plan> straggler_plan(int p, int s, int pieces, std::uint64_t bytes) {
  AlgoOptions opt;
  opt.pipeline = pieces;
  PlanInfo info = generate("straggler", Request{Collective::AllReduce, bytes, p, 0, 8}, nullptr, opt)->info();
  info.params["straggler"] = std::to_string(s);
  return std::make_unique<GeneratedPlan>(std::move(info), algorithm("straggler"));
}

}  // namespace

TEST_CASE("straggler: every rank count, straggler and pipeline verifies and computes AllReduce") {
  int checked = 0;
  for (int p : kRankCounts) {
    if (p < 2) {
      std::string why;
      CHECK_FALSE(algorithm("straggler").supports(Request{Collective::AllReduce, 64, p}, nullptr, &why));
      CHECK(why == "straggler needs a slow rank and at least one other (2 ranks or more)");
      continue;
    }
    std::vector<int> stragglers = p <= 9 ? std::vector<int>{} : std::vector<int>{0, p / 2, p - 1};
    for (int s = 0; p <= 9 && s < p; ++s) stragglers.push_back(s);
    for (int s : stragglers)
      for (int pieces : {1, 3}) {
        // Uneven: slices and pieces differ by an element.
        for (std::uint64_t bytes : {8ull * 4 * 3 * static_cast<std::uint64_t>(p - 1) * 7, 8ull * 101}) {
          auto plan = straggler_plan(p, s, pieces, bytes);
          INFO(describe_plan(plan->info()));
          VerifyResult v = check_plan(*plan);
          CHECK(v.ok);
          ++checked;
        }
      }
  }
  CHECK(checked == 2 * 2 * (2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 3 * 4));
}

TEST_CASE("straggler: n/(p-1) bytes each way on each of the straggler's links, nothing else through it") {
  const int p = 5, s = 2, pieces = 4;
  const std::uint64_t bytes = 8ull * 4 * pieces * 64;  // 16 pieces of 64 elements
  auto plan = straggler_plan(p, s, pieces, bytes);
  std::map<std::pair<int, int>, std::uint64_t> sent;  // (from, to) -> bytes
  for (int r = 0; r < p; ++r)
    for (const Op& o : plan->program(r))
      if (o.type == OpType::Send) sent[{r, o.peer}] += chunk_bytes(plan->info(), o.src.buf, o.src.chunk, o.count);
  int links = 0;
  for (int f = 0; f < p; ++f) {
    if (f == s) continue;
    CHECK(sent[{s, f}] == bytes / (p - 1));
    CHECK(sent[{f, s}] == bytes / (p - 1));
    links += 2;
  }
  CHECK(links == 2 * (p - 1));
  // Out of the straggler: its input once (a ring sends 2((p-1)/p)n to one neighbour).
  std::uint64_t out_of_s = 0;
  for (const auto& [pair, b] : sent)
    if (pair.first == s) out_of_s += b;
  CHECK(out_of_s == bytes);
  // The fast ranks' ring carries everything else: 2((m-1)/m)n per fast rank, m = p - 1.
  for (int f = 0; f < p; ++f) {
    if (f == s) continue;
    std::uint64_t to_fast = 0;
    for (int g = 0; g < p; ++g)
      if (g != s) to_fast += sent[{f, g}];
    CHECK(to_fast == 2 * bytes / (p - 1) * (p - 2));
  }
}

TEST_CASE("straggler: bad parameters are refused, each named") {
  auto plan = straggler_plan(4, 1, 2, 8 * 96);
  PlanInfo info = plan->info();
  info.params["straggler"] = "4";
  CHECK_THROWS_WITH_AS(GeneratedPlan(info, algorithm("straggler")).program(0), "straggler: plan parameter straggler must be a rank of 0..3",
                       InputError);
  info = plan->info();
  info.params["pipeline"] = "0";
  CHECK_THROWS_WITH_AS(GeneratedPlan(info, algorithm("straggler")).program(0), "straggler: plan parameter pipeline must be >= 1, got 0",
                       InputError);
  info = plan->info();
  info.params["pipeline"] = "3";
  CHECK_THROWS_WITH_AS(GeneratedPlan(info, algorithm("straggler")).program(0),
                       "straggler: the plan's chunks and channels do not match its pipeline (expected 9 chunks, 4 channels)", InputError);
  std::string why;
  CHECK_FALSE(algorithm("straggler").supports(Request{Collective::AllGather, 64, 4}, nullptr, &why));
  CHECK(why == "straggler does AllReduce only");
  CHECK_FALSE(algorithm("straggler").in_auto(Request{Collective::AllReduce, 64, 4}, nullptr, &why));
}
