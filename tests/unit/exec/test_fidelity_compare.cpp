// compare_results(): coll-run's results against the simulator, row by row.

#include <doctest/doctest.h>

#include <string>

#include "collkit/core/error.h"
#include "collkit/exec/fidelity.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/io.h"
#include "collkit/topo/synth.h"

using collkit::exec::compare_results;

namespace {

// A results file as coll-run writes it, trimmed to what compare reads: three measured rows (one
// without a prediction) and one size the plan did not run at.
std::string results(const std::string& plan_json) {
  return R"({"schema": "collkit.results/1", "backend": "mpi", "nranks": 4, "tables": [
    {"collective": "allreduce", "algorithm": "ring", "type": "float", "rows": [
      {"bytes": 1024, "algorithm": "ring", "out_of_place": {"time_us": 10.0}, "predicted_us": 8.0, "plan": )" +
         plan_json + R"(},
      {"bytes": 4096, "algorithm": "ring", "out_of_place": {"time_us": 20.0}, "predicted_us": 30.0, "plan": )" +
         plan_json + R"(},
      {"bytes": 16384, "algorithm": "ring", "out_of_place": {"time_us": 40.0}, "predicted_us": 41.0, "plan": )" +
         plan_json + R"(},
      {"bytes": 65536, "algorithm": "ring", "out_of_place": {"time_us": 80.0}, "plan": )" +
         plan_json + R"(},
      {"bytes": 262144, "algorithm": "ring", "out_of_place": null, "plan": )" +
         plan_json + R"(}
    ]}]})";
}

}  // namespace

TEST_CASE("compare: measured against recorded predictions, median and worst |error|") {
  auto plan = collkit::plan::generate("ring", {collkit::plan::Collective::AllReduce, 1024, 4, 0}, nullptr);
  auto f = compare_results("r.json", results(collkit::plan::to_json(*plan)), nullptr);
  REQUIRE(f.rows.size() == 3);
  CHECK(f.skipped == 2);
  CHECK(f.rows[0].error_percent() == doctest::Approx(-20));
  CHECK(f.rows[1].error_percent() == doctest::Approx(50));
  CHECK(f.rows[2].error_percent() == doctest::Approx(2.5));
  CHECK(f.median_abs_error_percent == doctest::Approx(20));
  CHECK(f.worst_abs_error_percent == doctest::Approx(50));
  CHECK(f.worst_row == 1);
  CHECK(f.rows[1].bytes == 4096);
  CHECK(f.rows[1].type == "float");
}

TEST_CASE("compare: with a topology every row's plan is simulated again") {
  collkit::topo::Topology t = collkit::topo::synth({"dgx-h100", 1, ""});
  auto plan = collkit::plan::generate("ring", {collkit::plan::Collective::AllReduce, 1024, 4, 0}, &t);
  auto f = compare_results("r.json", results(collkit::plan::to_json(*plan)), &t);
  REQUIRE(f.rows.size() == 4);  // the row without a recorded prediction now has one
  double simulated = collkit::plan::simulate(*plan, t).time_us;
  CHECK(simulated > 0);
  for (const auto& r : f.rows) CHECK(r.predicted_us == doctest::Approx(simulated));
}

TEST_CASE("compare: bad results files are refused with the file and field") {
  CHECK_THROWS_WITH_AS(compare_results("r.json", R"({"schema": "collkit.plan/1"})", nullptr),
                       "r.json: /schema: expected \"collkit.results/1\", got \"collkit.plan/1\"", collkit::InputError);
  CHECK_THROWS_WITH_AS(compare_results("r.json", R"({"schema": "collkit.results/1", "tables": []})", nullptr),
                       "r.json: no row has both a measured time and a prediction (run coll-run with --topo, or give --topo here to "
                       "simulate the rows' plans)",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(
      compare_results("r.json", R"({"schema": "collkit.results/1", "tables": [{"collective": "allreduce", "rows": [{"bytes": 1}]}]})",
                      nullptr),
      "r.json: /tables/0/rows/0: missing field \"algorithm\"", collkit::InputError);
}

TEST_CASE("compare: judged by the block median when asked, and refused where a row has none") {
  auto plan = collkit::plan::generate("ring", {collkit::plan::Collective::AllReduce, 1024, 4, 0}, nullptr);
  std::string plan_json = collkit::plan::to_json(*plan);
  std::string with = R"({"schema": "collkit.results/1", "tables": [{"collective": "allreduce", "rows": [
      {"bytes": 1024, "algorithm": "ring", "out_of_place": {"time_us": 16.0, "block_median_us": 10.0}, "predicted_us": 12.0, "plan": )" +
                     plan_json + "}]}]}";
  auto mean = compare_results("r.json", with, nullptr);
  REQUIRE(mean.rows.size() == 1);
  CHECK(mean.rows[0].measured_us == doctest::Approx(16));
  CHECK(mean.rows[0].error_percent() == doctest::Approx(-25));
  auto block = compare_results("r.json", with, nullptr, {}, collkit::exec::Measured::BlockMedian);
  REQUIRE(block.rows.size() == 1);
  CHECK(block.rows[0].measured_us == doctest::Approx(10));
  CHECK(block.rows[0].error_percent() == doctest::Approx(20));
  CHECK_THROWS_WITH_AS(compare_results("r.json", results(plan_json), nullptr, {}, collkit::exec::Measured::BlockMedian),
                       "r.json: /tables/0/rows/0/out_of_place: has no block_median_us (measured by a coll-run before it was "
                       "recorded): compare its mean, --measured mean",
                       collkit::InputError);
}
