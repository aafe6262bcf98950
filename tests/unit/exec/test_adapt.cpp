// Adaptation's pure parts: the --inject grammar, finding slow pairs in a probe's times, ring
// orders around them.

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "collkit/core/error.h"
#include "collkit/exec/adapt.h"

using namespace collkit::exec;

TEST_CASE("adapt: --inject parses links and ranks, each bad part is named") {
  Injection inj = parse_injection("slow-link=3-1:x4,slow-rank=2:x2.5", 4);
  REQUIRE(inj.slow.size() == 2);
  CHECK(inj.slow[0].a == 1);
  CHECK(inj.slow[0].b == 3);
  CHECK(inj.factor(1, 3) == 4);
  CHECK(inj.factor(3, 1) == 4);
  CHECK(inj.factor(2, 0) == 2.5);
  CHECK(inj.factor(0, 2) == 2.5);
  CHECK(inj.factor(0, 1) == 1);
  int checked = 0;
  const std::pair<const char*, const char*> bad[] = {
      {"slow-link=0-4:x4", "--inject slow-link=0-4:x4: \"4\" is not a rank of 0..3"},
      {"slow-link=1-1:x4", "--inject \"slow-link=1-1:x4\": a link joins two different ranks"},
      {"slow-link=1:x4", "--inject \"slow-link=1:x4\": a link is two ranks joined by '-', got \"1\""},
      {"slow-rank=2:x0.5", "--inject \"slow-rank=2:x0.5\": the factor must be a number from 1 to 1000, got \"0.5\""},
      {"slow-rank=2:xfast", "--inject \"slow-rank=2:xfast\": the factor must be a number from 1 to 1000, got \"fast\""},
      {"drop-link=0-1:x2", "--inject \"drop-link=0-1:x2\": unknown fault \"drop-link\" (expected slow-link or slow-rank)"},
      {"slow-link 0-1", "--inject \"slow-link 0-1\": expected slow-link=A-B:xF or slow-rank=R:xF (F a factor >= 1)"},
      {"", "--inject \"\": expected slow-link=A-B:xF or slow-rank=R:xF (F a factor >= 1)"},
  };
  for (auto [spec, error] : bad) {
    const char* injected = spec;  // CAPTURE takes a variable: clang 14 cannot capture a structured binding
    CAPTURE(injected);
    CHECK_THROWS_WITH_AS(parse_injection(spec, 4), error, collkit::InputError);
    ++checked;
  }
  CHECK(checked == 8);
}

TEST_CASE("adapt: slow pairs are those well above the median pair, either direction, slowest first") {
  // 4 ranks, every pair ~100 us, 0->1 at 900 and 3->2 at 400.
  std::vector<std::vector<double>> t(4, std::vector<double>(4, 100));
  for (int i = 0; i < 4; ++i) t[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)] = 0;
  t[0][1] = 900;
  t[3][2] = 400;
  CHECK(slow_pairs(t) == std::vector<std::pair<int, int>>{{0, 1}, {2, 3}});
  CHECK(slow_pairs(t, 5.0) == std::vector<std::pair<int, int>>{{0, 1}});
  std::vector<std::vector<double>> even(3, std::vector<double>(3, 50));
  CHECK(slow_pairs(even).empty());
  CHECK(slow_pairs({}).empty());
}

TEST_CASE("adapt: ring orders avoid the slow pairs where a cycle without them exists") {
  CHECK(ring_order_avoiding(4, {}) == std::vector<int>{0, 1, 2, 3});
  CHECK(ring_order_avoiding(4, {{0, 2}}) == std::vector<int>{0, 1, 2, 3});  // already avoided: kept
  int checked = 0;
  for (int n : {4, 5, 8, 16})
    for (auto avoid : std::vector<std::vector<std::pair<int, int>>>{{{0, 1}}, {{0, 1}, {2, 3}}, {{0, 1}, {1, 2}}, {{1, 2}, {0, n - 1}}}) {
      CAPTURE(n);
      auto order = ring_order_avoiding(n, avoid);
      std::set<int> ranks(order.begin(), order.end());
      CHECK(ranks.size() == static_cast<std::size_t>(n));
      CHECK(order.size() == static_cast<std::size_t>(n));
      int kept = 0;
      for (auto p : ring_pairs(order)) kept += std::find(avoid.begin(), avoid.end(), p) != avoid.end();
      // On 4 ranks, avoiding both of rank 1's pairs with 0 and 2 leaves it one neighbour: one stays.
      bool impossible = n == 4 && avoid == std::vector<std::pair<int, int>>{{0, 1}, {1, 2}};
      CHECK(kept == (impossible ? 1 : 0));
      ++checked;
    }
  CHECK(checked == 16);
  // Rank 1's three pairs on 4 ranks: it needs two neighbours, so two are kept; the first listed (the
  // slowest) is the one avoided.
  auto star = ring_order_avoiding(4, {{1, 2}, {0, 1}, {1, 3}});
  auto kept = ring_pairs(star);
  CHECK(std::find(kept.begin(), kept.end(), std::pair<int, int>{1, 2}) == kept.end());
  CHECK(std::find(kept.begin(), kept.end(), std::pair<int, int>{0, 1}) != kept.end());
  CHECK(std::find(kept.begin(), kept.end(), std::pair<int, int>{1, 3}) != kept.end());
  // Three ranks have one cycle: a slow pair on it cannot be avoided, and the order says so by keeping it.
  auto three = ring_order_avoiding(3, {{0, 1}});
  CHECK(three.size() == 3);
  CHECK(ring_pairs({0, 1, 2, 3}) == std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}, {0, 3}});
  CHECK(ring_pairs({0, 1}) == std::vector<std::pair<int, int>>{{0, 1}});
}

TEST_CASE("adapt: a slow rank is the one rank in the most slow pairs, two pairs or more") {
  CHECK(slow_rank({{1, 2}, {2, 3}}) == 2);
  CHECK(slow_rank({{0, 2}, {2, 3}, {1, 2}}) == 2);
  CHECK(slow_rank({{0, 2}, {2, 3}, {1, 2}, {1, 3}}) == 2);  // and a pair between two others
  CHECK(slow_rank({{0, 1}, {1, 2}, {0, 3}}) == -1);         // ranks 0 and 1 in two each: no one rank
  CHECK(slow_rank({{0, 1}}) == -1);                         // one pair: a link
  CHECK(slow_rank({}) == -1);
}

TEST_CASE("adapt: a ring around slow links, the straggler plan around a rank no ring avoids") {
  // A link: a ring without it.
  Adaptation link = adapt_to(4, {{0, 1}}, true);
  CHECK(link.straggler == -1);
  CHECK(link.order == std::vector<int>{0, 2, 1, 3});
  CHECK(link.describe() == "ring 0,2,1,3");
  // Both ring links of rank 2 slow, as the plain ring sees a slow rank 2: on 4 ranks no ring
  // avoids them (rank 2 has one other neighbour), so the straggler plan around rank 2.
  Adaptation rank = adapt_to(4, {{1, 2}, {2, 3}}, true);
  CHECK(rank.straggler == 2);
  CHECK(rank.order.empty());
  CHECK(rank.describe() == "straggler around rank 2");
  // The straggler plan is an AllReduce: for AllGather, the ring keeping the slowest pair off.
  Adaptation gather = adapt_to(4, {{1, 2}, {2, 3}}, false);
  CHECK(gather.straggler == -1);
  CHECK(gather.order.size() == 4u);
  // On 6 ranks a ring avoids rank 2's two slow pairs: tried first (they may be links); once every
  // ring through rank 2 is known slow, the straggler plan.
  Adaptation first = adapt_to(6, {{1, 2}, {2, 3}}, true);
  CHECK(first.straggler == -1);
  auto kept = ring_pairs(first.order);
  CHECK(std::find(kept.begin(), kept.end(), std::pair<int, int>{1, 2}) == kept.end());
  CHECK(std::find(kept.begin(), kept.end(), std::pair<int, int>{2, 3}) == kept.end());
  CHECK(adapt_to(6, {{1, 2}, {2, 3}, {0, 2}, {2, 4}, {2, 5}}, true).straggler == 2);
}

TEST_CASE("adapt: the detector names slow pairs once two iterations agree, from the best time per pair") {
  // A plain ring on 4 ranks sends 0->1, 1->2, 2->3, 3->0; rank 2 slow: 1->2 and 2->3 take 8x.
  auto ring_times = [](double slow, double noisy) {
    std::vector<std::vector<double>> t(4, std::vector<double>(4, 0));
    t[0][1] = 100 * noisy;
    t[1][2] = 100 * slow;
    t[2][3] = 100 * slow;
    t[3][0] = 100;
    return t;
  };
  Detector d(4, 3.0);
  CHECK_FALSE(d.observe(ring_times(8, 1)));  // one iteration: not yet
  CHECK(d.found().empty());
  CHECK(d.observe(ring_times(8, 1)));  // two agree: named
  CHECK(d.found() == std::vector<std::pair<int, int>>{{1, 2}, {2, 3}});
  CHECK_FALSE(d.observe(ring_times(8, 1)));  // nothing new
  // An iteration where rank 0 was not scheduled (its send 20x) changes nothing: the best is kept.
  CHECK_FALSE(d.observe(ring_times(8, 20)));
  CHECK(d.best()[0][1] == 100);
  // The straggler plan then sends over every pair of rank 2: all slow, named as the new set.
  std::vector<std::vector<double>> all(4, std::vector<double>(4, 0));
  for (int f : {0, 1, 3}) {
    all[static_cast<std::size_t>(f)][2] = 900;
    all[2][static_cast<std::size_t>(f)] = 900;
  }
  all[0][1] = all[1][3] = all[3][0] = 100;
  CHECK_FALSE(d.observe(all));
  CHECK(d.observe(all));
  CHECK(slow_rank(d.found()) == 2);
  CHECK(d.found().size() == 3u);
  // Nothing slow: never named.
  Detector healthy(4, 3.0);
  int named = 0;
  for (int i = 0; i < 5; ++i) named += healthy.observe(ring_times(1.2, 1)) ? 1 : 0;
  CHECK(named == 0);
}
