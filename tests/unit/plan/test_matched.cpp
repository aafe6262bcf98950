#include <doctest/doctest.h>

#include <map>
#include <utility>

#include "algorithms/common.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/matched.h"
#include "plan/plan_testing.h"

namespace collkit::plan {

using testing::hand_plan;

namespace {

// Every pair match_plan() reports, and the programs it hands over, by id.
struct Seen {
  std::map<std::uint32_t, std::uint32_t> pairs;  // send -> receive
  std::vector<std::pair<int, std::uint32_t>> programs;
  OpIds ids;
};

Seen run(const Plan& plan) {
  Seen s;
  MatchVisitor visit;
  visit.program = [&](int r, std::uint32_t first, const std::vector<Op>&) { s.programs.emplace_back(r, first); };
  visit.pair = [&](std::uint32_t send, std::uint32_t recv) {
    CHECK(s.pairs.count(send) == 0);
    s.pairs[send] = recv;
  };
  s.ids = match_plan(plan, visit);
  return s;
}

}  // namespace

TEST_CASE("match_plan pairs the k-th send of each link with its k-th receive, across channels and peers") {
  using namespace algo;
  // Rank 0 sends three messages to 1 (two on ch 0, one on ch 1) and one to 2; rank 1 takes its
  // ch-1 message first, then ch 0's in order; rank 2 receives from 0 and sends to 1.
  auto p = hand_plan({Collective::AllGather, 3 * 64, 3, 0}, 1, 3, 2,
                     {{send(1, in(0), 1, 0), send(1, in(0), 1, 1), send(2, in(0), 1, 0), send(1, in(0), 1, 0)},
                      {recv(0, out(1), 1, 1), recv(0, out(0), 1, 0), recv(2, out(2), 1, 0), recv(0, out(0), 1, 0)},
                      {recv(0, out(0), 1, 0), send(1, in(0), 1, 0)}});
  Seen s = run(p);
  REQUIRE(s.ids.begin == std::vector<std::uint32_t>{0, 4, 8, 10});
  CHECK(s.programs == std::vector<std::pair<int, std::uint32_t>>{{0, 0}, {1, 4}, {2, 8}});
  // (rank, op) -> id: rank 0 ops 0-3, rank 1 ops 4-7, rank 2 ops 8-9.
  std::map<std::uint32_t, std::uint32_t> want{{0, 5}, {1, 4}, {2, 8}, {3, 7}, {9, 6}};
  CHECK(s.pairs == want);
  int checked = 0;
  for (auto [send, recv] : want) {
    CHECK(s.ids.rank_of(send) != s.ids.rank_of(recv));
    CHECK(s.ids.id(s.ids.rank_of(recv), s.ids.index_of(recv)) == recv);
    ++checked;
  }
  CHECK(checked == 5);
}

TEST_CASE("match_plan: every generated plan pairs all its transfers") {
  int plans = 0;
  for (const char* algo : {"ring", "tree", "rhd", "direct", "pairwise", "bruck"})
    for (int p : {2, 5, 8}) {
      Request req{std::string(algo) == "pairwise" || std::string(algo) == "bruck" ? Collective::AlltoAll : Collective::AllReduce,
                  std::uint64_t(64) * p * p, p, 0};
      auto plan = generate(algo, req, nullptr);
      std::size_t transfers = 0;
      for (int r = 0; r < p; ++r)
        for (const Op& o : plan->program(r)) transfers += o.type == OpType::Send;
      Seen s = run(*plan);
      CHECK(s.pairs.size() == transfers);
      ++plans;
    }
  CHECK(plans == 18);
}

TEST_CASE("match_plan: errors") {
  using namespace algo;
  auto err = [](const Plan& p) {
    try {
      match_plan(p, {});
    } catch (const PlanFault& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto p = hand_plan({Collective::AllGather, 128, 2, 0}, 1, 2, 1, {{send(1, in(0), 1, 0), send(1, in(0), 1, 0)}, {recv(0, out(0), 1, 0)}});
  CHECK(err(p) == "rank 0 op 1 (send to 1 ch 0): never received: rank 0 sends 2 messages to rank 1 on ch 0 and rank 1 receives 1");
  auto q = hand_plan({Collective::AllGather, 128, 2, 0}, 1, 2, 1,
                     {{send(1, in(0), 1, 0)}, {recv_reduce(0, out(0), out(0), 1, 0), recv(0, out(1), 1, 0)}});
  CHECK(err(q) == "rank 1 op 1 (recv from 0 ch 0): never matched: rank 0 sends 1 message to rank 1 on ch 0 and rank 1 receives 2");
  auto c = hand_plan({Collective::AllGather, 128, 2, 0}, 1, 2, 1, {{send(1, in(0), 1, 3)}, {recv(0, out(0), 1, 0)}});
  CHECK(err(c) == "rank 0 op 0 (send to 1 ch 3): channel 3 is out of range (the plan has 1 channel)");
}

}  // namespace collkit::plan
