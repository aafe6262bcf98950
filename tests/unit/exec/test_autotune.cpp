// coll-run autotune's choice from a run: the fastest measured per size against auto's, as a table.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "collkit/core/error.h"
#include "collkit/exec/autotune.h"
#include "collkit/exec/harness.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/io.h"
#include "collkit/plan/tuning.h"

using namespace collkit::exec;

namespace {

Row row(std::uint64_t bytes, const std::string& algo, double us, int channels = 1) {
  Row r;
  r.bytes = bytes;
  r.algorithm = algo;
  r.out_of_place.ran = true;
  r.out_of_place.time_us = us;
  r.predicted_us = us / 2;
  r.plan_json = R"({"schema": "collkit.plan/1", "channels": )" + std::to_string(channels) + "}";
  return r;
}

Table table(const std::string& algo, std::vector<Row> rows) {
  Table t;
  t.algorithm = algo;
  t.rows = std::move(rows);
  return t;
}

}  // namespace

TEST_CASE("autotune: the fastest measured per size, against auto's choice, merged into ranges") {
  Results r;
  r.nranks = 4;
  r.tables.push_back(table("auto", {row(1024, "tree", 100), row(65536, "tree", 400), row(1 << 20, "ring", 900)}));
  r.tables.push_back(table("ring", {row(1024, "ring", 150, 2), row(65536, "ring", 300, 2), row(1 << 20, "ring", 880, 2)}));
  r.tables.push_back(table("rd", {row(1024, "rd", 50), row(65536, "rd", 250), row(1 << 20, "rd", 1200)}));
  r.tables.push_back(table("tree", {row(1024, "tree", 110), row(65536, "tree", 390)}));
  std::vector<TunedSize> t = tune_from(r);
  REQUIRE(t.size() == 3);
  CHECK(t[0].model_choice == "tree");
  CHECK(t[0].best == "rd");
  CHECK(t[0].gain() == doctest::Approx(2.0));
  CHECK(t[0].best_nccl == "tree");
  CHECK(t[1].best == "rd");
  CHECK(t[1].best_nccl == "ring");
  CHECK(t[1].best_nccl_channels == 2);
  // 1M: auto chose ring; the ring table's 880 us against auto's 900 is the same algorithm: gain 1.
  CHECK(t[2].best == "ring");
  CHECK(t[2].best_channels == 2);
  CHECK(t[2].gain() == 1.0);

  collkit::plan::TuningTable table_ = tuning_table(t, collkit::plan::Collective::AllReduce, 4, "vm");
  // 1K and 64K: rd, but NCCL's choice differs (tree, then ring): two ranges; 1M: ring.
  REQUIRE(table_.ranges.size() == 3);
  CHECK(table_.ranges[0].min_bytes == 0);
  CHECK(table_.ranges[0].max_bytes == 65535u);
  CHECK(table_.ranges[0].measured_us_at_min == 50);
  CHECK(table_.ranges[1].algorithm == "rd");
  CHECK(table_.ranges[1].nccl->algorithm == collkit::plan::NcclAlgo::Ring);
  CHECK(table_.ranges[2].algorithm == "ring");
  CHECK(!table_.ranges[2].max_bytes);
  CHECK(table_.find(std::uint64_t{1} << 40)->algorithm == "ring");

  Results no_auto;
  no_auto.tables.push_back(table("ring", {row(1024, "ring", 150)}));
  CHECK_THROWS_WITH_AS(tune_from(no_auto), "autotune: the run has no `auto` table to compare the measured choice with",
                       collkit::InputError);
}

TEST_CASE("results and autotune's table: provenance once at the top, with the iterations and warm-up measured") {
  Results r;
  r.nranks = 4;
  r.iters = 7;
  r.warmup_iters = 2;
  Row measured = row(1024, "ring", 10);
  measured.plan_json =
      collkit::plan::to_json(*collkit::plan::generate("ring", {collkit::plan::Collective::AllReduce, 1024, 4, 0}, nullptr));
  REQUIRE(nlohmann::json::parse(measured.plan_json).contains("provenance"));
  r.tables.push_back(table("auto", {measured}));
  nlohmann::json j = nlohmann::json::parse(to_json(r));
  CHECK(j["iters"] == 7);
  CHECK(j["warmup_iters"] == 2);
  CHECK(j["provenance"]["tool"] == "library");
  CHECK(j["provenance"].contains("version"));
  CHECK(j["provenance"].contains("date"));
  const nlohmann::json& plan = j["tables"][0]["rows"][0]["plan"];
  CHECK(plan["schema"] == "collkit.plan/1");
  CHECK_FALSE(plan.contains("provenance"));  // the file's own says where the whole run came from

  collkit::plan::TuningTable t = tuning_table(tune_from(r), collkit::plan::Collective::AllReduce, 4, "");
  std::string text = collkit::plan::write_tuning_table(t);
  CHECK_FALSE(nlohmann::json::parse(text).contains("iters"));  // a predicted table (sweep) says none
  t.iters = r.iters;
  t.warmup_iters = r.warmup_iters;
  text = collkit::plan::write_tuning_table(t);
  nlohmann::json tj = nlohmann::json::parse(text);
  CHECK(tj["iters"] == 7);
  CHECK(tj["warmup_iters"] == 2);
  CHECK(tj["provenance"]["tool"] == "library");
  collkit::plan::TuningTable back = collkit::plan::read_tuning_table("t.json", text);
  CHECK(back.iters == 7);
  CHECK(back.warmup_iters == 2);
  CHECK(collkit::plan::write_tuning_table(back) == text);
  tj["iters"] = -1;
  CHECK_THROWS_WITH_AS(collkit::plan::read_tuning_table("t.json", tj.dump()), "t.json: /iters: must be a count >= 0, got -1",
                       collkit::InputError);
}
