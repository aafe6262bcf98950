// Artifacts: collkit.overlap/1 JSON and the Chrome trace (slices on one track never overlap, as
// Perfetto needs); knobs given by the user are kept; strategies that cannot apply are refused.

#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "collkit/core/error.h"
#include "overlap_testing.h"

using namespace collkit::overlap;
namespace ot = collkit::overlap::testing;

namespace {
Layout tp8() {
  Layout l;
  l.tp = 8, l.sp = true, l.dp = 2, l.seq_len = 2048;
  return l;
}
}  // namespace

TEST_CASE("overlap report: JSON carries the schema, the inputs, every row and the chosen schedule") {
  auto r = ot::run("llama3-8b", tp8(), 2);
  RunContext ctx{&r->workload, &r->topo, r->compute.get(), r->comm.get(), kDefaultContention};
  auto j = nlohmann::json::parse(to_json(r->report, ctx));
  CHECK(j["schema"] == "collkit.overlap/1");
  CHECK(j["layout"]["tp"] == 8);
  CHECK(j["model"]["name"] == "llama3-8b");
  CHECK(j["strategies"].size() == r->report.rows.size());
  CHECK(j["strategies"][0]["name"] == "none");
  CHECK(j["schedule"]["strategy"] == "auto");
  CHECK(j["schedule"]["tasks"].size() == r->report.rows.back().tasks.size());
  CHECK(!j["collectives"].empty());
  for (const auto& c : j["collectives"]) CHECK(c["time_us"].get<double>() > 0);
  // Layer 0's ops: the QKV GEMM of 2048 tokens, K = 4096, N = (32 + 2 x 8) x 128 / 8.
  REQUIRE(j["layers"].size() == 1);
  bool seen = false;
  for (const auto& op : j["layers"][0]["ops"]) {
    if (op["name"] != "qkv") continue;
    seen = true;
    CHECK(op["flops"].get<double>() == doctest::Approx(2.0 * 2048 * 4096 * 768));
    CHECK(op["bound"] == "compute");
    CHECK(op["time_us"].get<double>() > 0);
  }
  CHECK(seen);
}

TEST_CASE("overlap report: trace slices on one track never overlap and carry chunk and bytes") {
  auto r = ot::run("llama3-8b", tp8(), 2);
  RunContext ctx{&r->workload, &r->topo, r->compute.get(), r->comm.get(), kDefaultContention};
  auto j = nlohmann::json::parse(to_trace(r->report.rows.back(), ctx));
  std::map<int, double> track_end;
  int comm = 0, chunked = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    int tid = e["tid"];
    double ts = e["ts"], dur = e["dur"];
    CHECK(ts >= track_end[tid] - 1e-6);
    track_end[tid] = ts + dur;
    if (e["cat"] == "comm") {
      ++comm;
      CHECK(e["args"]["bytes"].get<std::uint64_t>() > 0);
    }
    if (e["args"].contains("chunk")) ++chunked;
  }
  CHECK(comm > 0);
  CHECK(chunked > 0);  // auto decomposed the TP GEMMs
  CHECK(j["otherData"]["strategy"] == "auto");
}

TEST_CASE("overlap report: a knob given is used, a strategy asked for alone goes last") {
  Request req;
  req.strategies = {"tp-decompose"};
  req.fixed = {{"tp-decompose", 4}};
  auto r = ot::run("llama3-8b", tp8(), 2, req);
  const auto& last = r->report.rows.back();
  CHECK(last.name == "tp-decompose");
  REQUIRE(last.choices.size() == 1);
  CHECK(last.choices[0].knob == 4);
}

TEST_CASE("overlap report: strategies that do not apply are refused when asked for, skipped otherwise") {
  Request req;
  req.strategies = {"moe-pipeline"};
  CHECK_THROWS_WITH_AS(ot::run("llama3-8b", tp8(), 2, req), "--strategy moe-pipeline does not apply: the model has no MoE layer",
                       collkit::InputError);
  req.strategies = {"overlap-everything"};
  CHECK_THROWS_WITH_AS(ot::run("llama3-8b", tp8(), 2, req),
                       "unknown strategy \"overlap-everything\" (known: none, dp-bucket, fsdp-prefetch, tp-decompose, moe-pipeline, auto)",
                       collkit::InputError);
  auto r = ot::run("llama3-8b", tp8(), 2);
  CHECK(r->report.skipped.size() == 2);  // fsdp-prefetch and moe-pipeline
}

TEST_CASE("overlap report: combined strategies name the combination") {
  Request req;
  req.strategies = {"tp-decompose", "dp-bucket"};
  auto r = ot::run("llama3-8b", tp8(), 2, req);
  CHECK(r->report.rows.back().name == "dp-bucket+tp-decompose");
  CHECK(r->report.rows.back().choices.size() == 2);
}
