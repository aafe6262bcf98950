#include <doctest/doctest.h>

#include <algorithm>

#include "collkit/core/error.h"
#include "collkit/plan/planner.h"
#include "sim_topologies.h"

using namespace collkit;
using namespace collkit::plan;

TEST_CASE("evaluate keeps the fastest applicable candidate and leaves out those beyond the op budget") {
  topo::Topology t = testing::two_hosts(4, 100, 1, 25, 2);
  Request req{Collective::AllReduce, 1 << 20, 8, 0};
  Evaluation ev = evaluate(req, t);
  REQUIRE(ev.best >= 0);
  for (const Candidate& c : ev.candidates)
    if (c.applicable) CHECK(ev.candidates[static_cast<std::size_t>(ev.best)].time_us <= c.time_us);

  SimOptions tight;
  tight.op_budget = 10;  // every candidate of 8 ranks has more ops than that
  Evaluation none = evaluate(req, t, {}, tight);
  CHECK(none.best == -1);
  int over_budget = 0;
  for (const Candidate& c : none.candidates)
    if (c.why_not.find("auto's budget") != std::string::npos) {
      ++over_budget;
      CHECK(c.why_not.find("beyond auto's budget of 0 M (generate it by name to simulate it)") != std::string::npos);
    }
  CHECK(over_budget == static_cast<int>(ev.candidates.size()) - static_cast<int>(std::count_if(
                           ev.candidates.begin(), ev.candidates.end(), [](const Candidate& c) { return !c.applicable; })));
  CHECK_THROWS_WITH_AS(plan_for("auto", req, &t, {}, tight), "no algorithm can do allreduce on 8 ranks", InputError);
  CHECK(plan_for("ring", req, &t, {}, tight)->info().predicted_us > 0);  // by name: still simulated
}
