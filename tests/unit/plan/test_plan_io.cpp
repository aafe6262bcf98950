#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/io.h"

using namespace collkit::plan;
using collkit::InputError;

namespace {
std::string err(const std::string& text) {
  try {
    from_json(text, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
std::string ring4() { return to_json(*generate("ring", {Collective::AllReduce, 4096, 4, 0}, nullptr)); }
std::string with(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}
}  // namespace

TEST_CASE("collective facts: names, bytes, bus bandwidth factors") {
  CHECK(parse_collective("AllReduce") == Collective::AllReduce);
  CHECK(parse_collective("all_gather") == Collective::AllGather);
  CHECK(parse_collective("reduce-scatter") == Collective::ReduceScatter);
  CHECK_FALSE(parse_collective("allscatter").has_value());
  CHECK(input_bytes({Collective::AllGather, 1024, 4, 0}) == 256);
  CHECK(output_bytes({Collective::AllGather, 1024, 4, 0}) == 1024);
  CHECK(output_bytes({Collective::ReduceScatter, 1024, 4, 0}) == 256);
  CHECK(busbw_factor(Collective::AllReduce, 8) == doctest::Approx(1.75));
  CHECK(busbw_factor(Collective::AllGather, 8) == doctest::Approx(0.875));
  CHECK(busbw_factor(Collective::Broadcast, 8) == 1.0);
  CHECK(algbw_gbps(1000000, 1000) == doctest::Approx(1.0));
  CHECK_THROWS_WITH_AS(check({Collective::Broadcast, 64, 4, 4}), "broadcast: root 4 is not a rank of 4", InputError);
  CHECK_THROWS_WITH_AS(check({Collective::AlltoAll, 10, 4, 0}), "alltoall: 10 bytes do not split evenly over 4 ranks", InputError);
  CHECK_THROWS_WITH_AS(check({Collective::AllReduce, 10, 0, 0}), "allreduce: the number of ranks must be >= 1, got 0", InputError);
}

TEST_CASE("chunks split buffers exactly, without overflow") {
  CHECK(chunk_bytes(10, 4, 0, 1) == 2);
  CHECK(chunk_bytes(10, 4, 1, 1) == 3);
  CHECK(chunk_bytes(10, 4, 0, 4) == 10);
  std::uint64_t big = std::uint64_t{16} << 30;
  CHECK(chunk_bytes(big, 4096, 0, 4096) == big);
  CHECK(chunk_bytes(big, 4096, 4095, 1) == big / 4096);
}

TEST_CASE("generated and explicit plans round-trip through JSON") {
  auto gen = generate("ring", {Collective::ReduceScatter, 3 * 1024, 3, 0}, nullptr, {2, 1, true, {}});
  std::string text = to_json(*gen);
  auto back = from_json(text, "p.json");
  CHECK_FALSE(back->is_explicit());
  CHECK(to_json(*back) == text);
  for (int r = 0; r < 3; ++r) CHECK(back->program(r).size() == gen->program(r).size());

  ExplicitPlan ex = materialize(*gen);
  std::string etext = to_json(ex);
  auto eback = from_json(etext, "e.json");
  CHECK(eback->is_explicit());
  CHECK(eback->info().algorithm == "ring");
  CHECK(to_json(*eback) == etext);
  auto a = ex.program(1), b = eback->program(1);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].type == b[i].type);
    CHECK(a[i].peer == b[i].peer);
    CHECK(a[i].src == b[i].src);
    CHECK(a[i].dst == b[i].dst);
    CHECK(a[i].channel == b[i].channel);
    CHECK(a[i].deps == b[i].deps);
  }
}

TEST_CASE("malformed plan files get one precise line each") {
  std::string good = ring4();
  CHECK(err(with(good, "collkit.plan/1", "collkit.plan/3")) ==
        "p.json: /schema: unsupported version \"collkit.plan/3\" (this collkit reads \"collkit.plan/1\")");
  CHECK(err(with(good, "\"allreduce\"", "\"allscatter\"")) ==
        "p.json: /collective: unknown collective \"allscatter\" (expected allreduce, reducescatter, allgather, alltoall, broadcast or reduce)");
  CHECK(err(with(good, "\"algorithm\": \"ring\"", "\"algorithm\": \"spiral\"")).rfind("p.json: /algorithm: unknown algorithm \"spiral\" (known: ring", 0) == 0);
  CHECK(err(with(good, "\"nranks\": 4", "\"nranks\": 0")) == "p.json: /nranks: must be between 1 and 16777216, got 0");
  CHECK(err(with(good, "\"channels\": 1", "\"channel\": 1")) ==
        "p.json: /: unknown field \"channel\" (expected schema, collective, bytes, nranks, root, elem_bytes, algorithm, made_by, params, "
        "chunks, scratch_bytes, channels, topology, predicted_us, bound_us, channel_nics, channel_paths, programs, provenance)");
  CHECK(err(with(good, "\"input\": 4", "\"input\": 0")) == "p.json: /chunks/input: must be >= 1, got 0");

  // A root past int once narrowed to a rank: 4294967297 verified as root 1.
  std::string bcast = to_json(*generate("ring", {Collective::Broadcast, 4096, 4, 1}, nullptr));
  CHECK(err(with(bcast, "\"root\": 1", "\"root\": 4294967297")) == "p.json: /root: root 4294967297 is not a rank of 4");
  CHECK(err(with(bcast, "\"root\": 1", "\"root\": -1")) == "p.json: /root: root -1 is not a rank of 4");
  std::string ex = to_json(materialize(*generate("ring", {Collective::AllReduce, 4096, 2, 0}, nullptr)));
  CHECK(err(with(ex, "\"peer\":1", "\"peer\":7")) == "p.json: /programs/0/0/peer: peer 7 is not a rank of 2");
  CHECK(err(with(ex, "\"op\":\"send\"", "\"op\":\"put\"")) ==
        "p.json: /programs/0/0/op: unknown op \"put\" (expected send, recv, recv_reduce, copy or reduce)");
  CHECK(err(with(ex, "[\"input\",0]", "[\"heap\",0]")) ==
        "p.json: /programs/0/1/src/0: unknown buffer \"heap\" (expected input, output or scratch)");
  CHECK(err(with(ex, "\"op\":\"send\",", "\"op\":\"send\",\"deps\":[0],")) ==
        "p.json: /programs/0/0/deps/0: dependency 0 is not an earlier op of this rank");
  CHECK(err(with(ex, "\"algorithm\": \"explicit\"", "\"algorithm\": \"ring\"")) == "p.json: /algorithm: a plan with programs must say \"explicit\"");
}

TEST_CASE("the registry names every algorithm and refuses unknown ones") {
  CHECK_FALSE(algorithms().empty());
  CHECK(algorithm("ring").name() == "ring");
  CHECK_THROWS_AS(algorithm("spiral"), InputError);
  CHECK_THROWS_WITH_AS(generate("ring", {Collective::AlltoAll, 64, 4, 0}, nullptr),
                       "algorithm ring cannot do alltoall on 4 ranks: a ring does not do AlltoAll (use pairwise, bruck or direct)", InputError);
}

TEST_CASE("generate refuses what a plan file cannot hold, so every plan it makes loads") {
  auto opts = [](int channels, int pipeline) {
    AlgoOptions o;
    o.channels = channels;
    o.pipeline = pipeline;
    return o;
  };
  // --channels 65536 was once written as "channels": 0; the others as plans the loader refuses.
  CHECK_THROWS_WITH_AS(generate("ring", {Collective::AllReduce, 1024, 4, 0}, nullptr, opts(65536, 0)),
                       "channels must be between 0 (the algorithm's) and 65535 (what a plan holds), got 65536", InputError);
  CHECK_THROWS_WITH_AS(generate("ring", {Collective::AllReduce, 1024, 16777217, 0}, nullptr),
                       "allreduce: the number of ranks must be at most 16777216 (what a plan holds), got 16777217", InputError);
  CHECK_THROWS_WITH_AS(generate("ring", {Collective::AllReduce, std::uint64_t{1} << 63, 4, 0}, nullptr),
                       "allreduce: the size must be at most 9223372036854775807 bytes (what a plan holds), got 9223372036854775808",
                       InputError);
  CHECK_THROWS_WITH_AS(generate("ring", {Collective::AllReduce, 1024, 8, 0}, nullptr, opts(0, 1000000000)),
                       "1 channels x 8 ranks x pipeline 1000000000 make more than 4294967295 chunks (what a plan holds)", InputError);
  CHECK_THROWS_WITH_AS(generate("ring", {Collective::AllReduce, 1024, 65538, 0}, nullptr, opts(65535, 0)),
                       "65535 channels x 65538 ranks x pipeline 1 make more than 4294967295 chunks (what a plan holds)", InputError);
  // At the limits a plan still round-trips.
  auto edge = generate("ring", {Collective::AllReduce, 1u << 20, 4, 0}, nullptr, opts(65535, 1));
  CHECK(from_json(to_json(*edge), "edge.json")->info().channels == 65535);
}

TEST_CASE("a ring plan file with pipeline or channels 0 is refused, not divided by (found by fuzz_plan)") {
  const std::string plan = R"({"schema": "collkit.plan/1", "collective": "allreduce", "bytes": 4096, "nranks": NR, "algorithm": "ring",
    "params": {"channels": "2", "pipeline": "0"}, "chunks": {"input": 16, "output": 16, "scratch": 0}, "scratch_bytes": 0, "channels": 2})";
  int checked = 0;
  for (const char* nranks : {"1", "2"}) {
    std::string text = plan;
    text.replace(text.find("NR"), 2, nranks);
    auto p = from_json(text, "p.json");
    CHECK_THROWS_WITH_AS(p->program(0), "ring: plan parameter pipeline=0 must be >= 1", InputError);
    std::string channels = text;
    const std::string params = R"("channels": "2", "pipeline": "0")";
    channels.replace(channels.find(params), params.size(), R"("channels": "0", "pipeline": "2")");
    CHECK_THROWS_WITH_AS(from_json(channels, "p.json")->program(0), "ring: plan parameter channels=0 must be >= 1", InputError);
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE("plans carry provenance, compact and explicit, and the loader ignores it") {
  int checked = 0;
  for (bool explicit_form : {false, true}) {
    auto gen = generate("ring", {Collective::AllReduce, 4096, 4, 0}, nullptr);
    std::string text = explicit_form ? to_json(materialize(*gen)) : to_json(*gen);
    nlohmann::json j = nlohmann::json::parse(text);
    REQUIRE(j.contains("provenance"));
    CHECK(j["provenance"]["tool"] == "library");
    CHECK(j["provenance"].contains("version"));
    CHECK(j["provenance"].contains("date"));
    j["provenance"] = {{"tool", "coll-plan"}, {"command", {"coll-plan", "generate"}}, {"anything", 1}};
    auto back = from_json(j.dump(), "p.json");
    CHECK(back->is_explicit() == explicit_form);
    CHECK(to_json(*back) == text);
    ++checked;
  }
  CHECK(checked == 2);
}
