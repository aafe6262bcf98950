// Adaptation's pure parts: the --inject grammar, finding slow pairs in a probe's times, ring
// orders around them.

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "collkit/core/error.h"
#include "collkit/exec/adapt.h"
#include "collkit/plan/collective.h"

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

TEST_CASE("adapt: the classifier names what lies above the first natural break, nothing in pure noise") {
  using V = std::vector<std::size_t>;
  // A clear outlier: the 4x slow link of a 4-rank ring at 16 MiB (us per MiB of its four pairs),
  // 2.7x the lower quartile, which a fixed 3x threshold missed.
  CHECK(slow_outliers({122, 455, 168, 167}) == V{1});
  // Two outliers of different size: both above the first break, slowest first.
  CHECK(slow_outliers({100, 102, 900, 99, 400, 101}) == V{2, 4});
  // The first break, not the widest: 2.5x then 10x names both.
  CHECK(slow_outliers({100, 101, 102, 250, 2500}) == V{4, 3});
  // A slow rank on a plain 4-rank ring: two of its four pairs.
  CHECK(slow_outliers({126, 391, 472, 115}) == V{2, 1});
  // x2 slow beside a tight healthy band: found.
  CHECK(slow_outliers({100, 103, 98, 200, 101}) == V{3});
  // 1.8x above a band that itself spans 2.2x (100 to 220): noise, nothing named; nor gaps under 1.5x.
  CHECK(slow_outliers({100, 150, 190, 220, 400}).empty());
  CHECK(slow_outliers({100, 120, 140, 160, 200}).empty());
  // Unmeasured entries (0, negative) are never slow and do not count.
  CHECK(slow_outliers({0, 100, -1, 101, 0, 350}) == V{5});
  CHECK(slow_outliers({}).empty());
  CHECK(slow_outliers({100}).empty());
  // A larger least gap: x2 is no longer enough, x4 is.
  CHECK(slow_outliers({100, 103, 98, 200, 101}, 2.5).empty());
  CHECK(slow_outliers({100, 103, 98, 400, 101}, 2.5) == V{3});
  // Pure noise names nothing: 12 pairs each up to 60% above the fastest, in 200 draws.
  unsigned seed = 12345;
  auto uniform = [&seed]() {
    seed = seed * 1103515245u + 12345u;
    return static_cast<double>((seed >> 8) % 10000) / 10000.0;
  };
  int named = 0, draws = 0;
  for (; draws < 200; ++draws) {
    std::vector<double> noise;
    for (int i = 0; i < 12; ++i) noise.push_back(100 * (1 + 0.6 * uniform()));
    named += slow_outliers(noise).empty() ? 0 : 1;
  }
  CHECK(draws == 200);
  CHECK(named == 0);
}

TEST_CASE("adapt: slow pairs from a matrix of times, either direction, slowest first") {
  // 4 ranks, every pair ~100 us, 0->1 at 900 and 3->2 at 400.
  std::vector<std::vector<double>> t(4, std::vector<double>(4, 100));
  for (int i = 0; i < 4; ++i) t[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)] = 0;
  t[0][1] = 900;
  t[3][2] = 400;
  CHECK(slow_pairs(t) == std::vector<std::pair<int, int>>{{0, 1}, {2, 3}});
  CHECK(slow_pairs(t, 5.0).empty());  // 4x, then 2.25x: no break of 5x
  CHECK(healthy_pair_time(t, slow_pairs(t)) == 100);
  std::vector<std::vector<double>> even(3, std::vector<double>(3, 50));
  CHECK(slow_pairs(even).empty());
  CHECK(slow_pairs({}).empty());
  CHECK(healthy_pair_time({}, {}) == 0);
}

TEST_CASE("adapt: the keep-or-roll-back decision after a trial") {
  // Clearly faster (the degraded ring's first iteration is a warm-up outlier; the best is compared).
  TrialVerdict faster = judge_trial({4631, 3222, 3500}, {3000, 2100, 2050});
  CHECK(faster.keep);
  CHECK(faster.before_us == 3222);
  CHECK(faster.trial_us == 2050);
  CHECK(faster.margin == doctest::Approx(2100.0 / 2050 - 1));  // the quieter side's (the trial's 2.4%)
  CHECK(faster.describe().rfind("kept: best 2050 us against 3222 us (-36%", 0) == 0);
  // Unequal counts: the latest of each, as many as the fewer side has. The trial's lucky first
  // iteration (900) is not among its last three; they are slower than the degraded ones.
  TrialVerdict latest = judge_trial({1000, 1010, 1005}, {900, 1200, 1100, 1150, 1300});
  CHECK_FALSE(latest.keep);
  CHECK(latest.trial_us == 1100);
  // And the degraded side's old iterations do not count against a trial of two.
  CHECK(judge_trial({500, 1000, 1010}, {950, 940}).keep);
  // Slower, as the straggler plan at 4 MiB under a 4x slow rank was: rolled back.
  TrialVerdict slower = judge_trial({3254, 3300, 3290}, {3561, 3600, 3580});
  CHECK_FALSE(slower.keep);
  CHECK(slower.describe().rfind("rolled back: best 3561 us against 3254 us (+9%", 0) == 0);
  // One lucky iteration does not win: the trial's best is 10% faster, its median slower.
  TrialVerdict lucky = judge_trial({1000, 1010, 1200}, {900, 1100, 1150});
  CHECK_FALSE(lucky.keep);
  CHECK(lucky.margin == doctest::Approx(0.02));  // the quieter side's noise (1%), at least 2%
  // The margin is the quieter side's noise: the degraded side scatters by 10%, the trial by 5.9%.
  TrialVerdict clear = judge_trial({1000, 1100, 1200}, {850, 900, 950});
  CHECK(clear.keep);
  CHECK(clear.margin == doctest::Approx(900.0 / 850 - 1));
  CHECK_FALSE(judge_trial({1000, 1100, 1200}, {960, 1000, 1050}).keep);  // 4% faster, 4.2% noise
  // 1.5% on a quiet machine is below the least margin (2%): rolled back; 5% is kept.
  CHECK_FALSE(judge_trial({1000, 1001, 1002}, {985, 986, 987}).keep);
  CHECK(judge_trial({1000, 1001, 1002}, {950, 951, 952}).keep);
  // A trial whose first iteration set the plan up: its best still decides.
  CHECK(judge_trial({1000, 1005, 1010}, {5000, 900, 910}).keep);
  // Nothing measured on a side: never kept.
  CHECK_FALSE(judge_trial({}, {900}).keep);
  CHECK_FALSE(judge_trial({1000}, {}).keep);
  CHECK_FALSE(judge_trial({1000}, {0, -1}).keep);
}

TEST_CASE("adapt: the candidates and the slowdown put into the model") {
  // A link: the ring around it, no straggler plan (no rank in two slow pairs).
  auto link = candidates(4, {{0, 1}}, true);
  REQUIRE(link.size() == 1u);
  CHECK(link[0].describe() == "ring 0,2,1,3");
  // A rank, as a plain ring shows it: the ring keeping the slower of its pairs off, and the
  // straggler plan around it (AllReduce only).
  auto rank = candidates(4, {{2, 3}, {1, 2}}, true);
  REQUIRE(rank.size() == 2u);
  CHECK(rank[0].straggler == -1);
  CHECK(rank[1].describe() == "straggler around rank 2");
  CHECK(candidates(4, {{2, 3}, {1, 2}}, false).size() == 1u);
  CHECK(candidates(4, {}, true).empty());
  CHECK(Adaptation{}.describe() == "plain ring");
  CHECK(candidates(4, {{0, 2}}, true).empty());  // the identity ring already avoids it
  // What the model is given: a plain ring's best sends, rank 2 slow (1->2, 2->3 at 800 us per MiB).
  std::vector<std::vector<double>> best(4, std::vector<double>(4, 0));
  best[0][1] = 100;
  best[1][2] = 800;
  best[2][3] = 700;
  best[3][0] = 120;
  auto extra = extra_us_per_mib(best, {{1, 2}, {2, 3}});
  CHECK(extra[1][2] == doctest::Approx(680));  // less the healthy pairs' median (of 100 and 120, the upper)
  CHECK(extra[3][2] == doctest::Approx(580));
  CHECK(extra[0][2] == doctest::Approx(630));  // never measured, rank 2's: their mean
  CHECK(extra[2][0] == doctest::Approx(630));
  CHECK(extra[0][1] == 0);
  CHECK(extra[1][3] == 0);
  // One slow link: only it.
  auto one = extra_us_per_mib(best, {{1, 2}});
  CHECK(one[1][2] == doctest::Approx(800 - 120));
  CHECK(one[0][2] == 0);
}

TEST_CASE("adapt: the prediction puts a ring around a slow link and the straggler plan around a slow rank") {
  using collkit::plan::Collective;
  collkit::plan::Request req{Collective::AllReduce, 4u << 20, 4, 0, 4};
  std::vector<std::vector<double>> link(4, std::vector<double>(4, 0)), rank = link;
  link[0][1] = link[1][0] = 360;  // a 4x link on a machine whose idle rate is 120 us per MiB
  for (int r : {0, 1, 3}) rank[2][static_cast<std::size_t>(r)] = rank[static_cast<std::size_t>(r)][2] = 3600;  // a 31x rank
  double healthy = 2600;
  auto plain = adapted_plan(req, {});
  // predict_us() is the simulator's prediction (no clock is read): the model scaled so that the
  // plain ring on the healthy network takes the healthy time given, an invariant of the model.
  CHECK(predict_us(*plain, req, std::vector<std::vector<double>>(4, std::vector<double>(4, 0)), healthy) == doctest::Approx(healthy));
  double ring_link = predict_us(*plain, req, link, healthy);
  CHECK(ring_link > healthy * 1.2);
  Adaptation around;
  around.order = {0, 2, 1, 3};
  CHECK(predict_us(*adapted_plan(req, around), req, link, healthy) == doctest::Approx(healthy));
  Adaptation straggler;
  straggler.straggler = 2;
  double ring_rank = predict_us(*plain, req, rank, healthy);
  double strag_rank = predict_us(*adapted_plan(req, straggler), req, rank, healthy);
  CHECK(strag_rank < 0.8 * ring_rank);
  CHECK(predict_us(*plain, req, link, 0) == 0);  // no healthy time: no prediction
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

TEST_CASE("adapt: a slow rank is the end of the slowest pair in the most slow pairs, two pairs or more") {
  CHECK(slow_rank({{1, 2}, {2, 3}}) == 2);
  CHECK(slow_rank({{0, 2}, {2, 3}, {1, 2}}) == 2);
  CHECK(slow_rank({{0, 2}, {2, 3}, {1, 2}, {1, 3}}) == 2);  // and a pair between two others
  CHECK(slow_rank({{0, 1}, {1, 2}, {0, 3}}) == -1);         // ranks 0 and 1 in two each: no one rank
  CHECK(slow_rank({{0, 1}}) == -1);                         // one pair: a link
  // The testbed's probe under load: the slow link 0-1 first, noise naming three pairs of rank 2;
  // rank 2 is not an end of the slowest pair, and ranks 0 and 1 tie: no slow rank.
  CHECK(slow_rank({{0, 1}, {2, 3}, {1, 2}, {0, 2}}) == -1);
  CHECK(slow_rank({{1, 3}, {2, 3}, {1, 2}, {0, 2}}) == -1);  // 1 and 3 in two each; 2, in three, not an end
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
