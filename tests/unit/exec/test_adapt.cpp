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
