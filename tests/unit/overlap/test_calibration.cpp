// What coll-overlap run adds to the model, without MPI: --scale, the GEMM each op runs as, the
// calibration file and what it changes in the model, and the timeline's communication slowdown
// and single communication stream.

#include <doctest/doctest.h>

#include <cmath>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/overlap/calibration.h"
#include "collkit/overlap/timeline.h"
#include "overlap_testing.h"

using namespace collkit::overlap;

namespace {
Task task(const char* name, Stream s, double us, std::vector<int> deps = {}) {
  Task t;
  t.name = name;
  t.stream = s;
  t.work_us = us;
  t.deps = std::move(deps);
  return t;
}

std::string error_of(const std::string& text) {
  try {
    parse_calibration(text, "cal.json");
  } catch (const collkit::InputError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("scale: hidden, head width, FFN, vocabulary, layers and sequence shrink, heads and experts stay") {
  Model m = load_model("llama3-8b");
  Model s = scale_model(m, 16);
  CHECK(s.hidden == 256);
  CHECK(s.ffn == 896);
  CHECK(s.head_dim == 8);
  CHECK(s.heads == m.heads);
  CHECK(s.kv_heads == m.kv_heads);
  CHECK(s.layers == 2);
  CHECK(s.vocab == 128256 / 16);
  CHECK(s.name == "llama3-8b/16");
  CHECK(scale_model(m, 1).hidden == m.hidden);
  // A factor larger than a dimension leaves 1, never 0; a MoE model keeps a MoE layer.
  Model x = scale_model(load_model("mixtral-8x7b"), 1000);
  CHECK(x.layers == 1);
  CHECK(x.head_dim == 1);
  CHECK(x.moe->experts == 8);
  CHECK(x.is_moe_layer(0));
  Layout l;
  l.seq_len = 4096;
  CHECK(scale_layout(l, 64).seq_len == 64);
  CHECK_THROWS_WITH_AS(scale_model(m, 0), "--scale must be a positive integer, got 0", collkit::InputError);
  CHECK_THROWS_WITH_AS(scale_layout(l, -2), "--scale must be a positive integer, got -2", collkit::InputError);
}

TEST_CASE("exec_shape: a chunk keeps k and n and takes its share of the rows, mult becomes repetitions") {
  ComputeOp g{"fc1", OpKind::Gemm, 1024, 256, 512, 1, 0, 0};
  CHECK(exec_shape(g, 0.25) == GemmShape{256, 256, 512, 1});
  CHECK(exec_shape(g, 1e-9) == GemmShape{1, 256, 512, 1});
  ComputeOp experts{"experts", OpKind::Gemm, 100, 64, 32, 4, 0, 0};
  CHECK(exec_shape(experts, 1) == GemmShape{100, 64, 32, 4});
  ComputeOp half{"lm_head", OpKind::Gemm, 100, 64, 32, 2.5, 0, 0};  // 2.5 products: 3 of 83 rows (rounded)
  CHECK(exec_shape(half, 1) == GemmShape{83, 64, 32, 3});
}

TEST_CASE("exec_shape: attention runs as the GEMM of its FLOPs, for every mode and pass") {
  int checked = 0;
  for (Mode mode : {Mode::Train, Mode::Prefill, Mode::Decode}) {
    Layout l;
    l.tp = 2;
    l.seq_len = 256;
    l.micro_batch = 2;
    l.mode = mode;
    Workload w = build_workload(scale_model(load_model("llama3-8b"), 16), l);
    for (const Segment& s : w.segments)
      for (const ComputeOp& op : s.compute) {
        if (op.kind != OpKind::Attention) continue;
        GemmShape g = exec_shape(op, 1);
        double flops = 2.0 * static_cast<double>(g.m * g.k * g.n);
        CHECK(std::abs(flops / op.flops - 1) < 0.02);
        ++checked;
      }
  }
  CHECK(checked > 0);
  MESSAGE("attention ops checked: " << checked);
}

TEST_CASE("calibration: the sample of a shape, else the nearest at its FLOP rate") {
  Calibration c;
  CHECK_FALSE(c.gemm_us({8, 8, 8, 1}).has_value());
  c.gemms = {{{64, 64, 64, 1}, 10}, {{512, 512, 512, 1}, 1000}};
  CHECK(*c.gemm_us({64, 64, 64, 1}) == doctest::Approx(10));
  CHECK(*c.gemm_us({64, 64, 64, 3}) == doctest::Approx(30));
  // Nearest to (128, 64, 64) is (64, 64, 64): twice its FLOPs.
  CHECK(*c.gemm_us({128, 64, 64, 1}) == doctest::Approx(20));
  CHECK(*c.gemm_us({512, 512, 256, 1}) == doctest::Approx(500));
}

TEST_CASE("calibration: a collective's sample, else a line through its samples, else proportional") {
  using collkit::plan::Collective;
  Calibration c;
  CHECK_FALSE(c.comm_us(Collective::AllReduce, 2, 100).has_value());
  c.collectives = {{Collective::AllReduce, 2, 1000, 20, std::nullopt},
                   {Collective::AllReduce, 2, 3000, 40, std::nullopt},
                   {Collective::AllGather, 2, 1000, 10, std::nullopt}};
  CHECK(*c.comm_us(Collective::AllReduce, 2, 1000) == doctest::Approx(20));
  CHECK(*c.comm_us(Collective::AllReduce, 2, 2000) == doctest::Approx(30));  // t = 10 + bytes / 100
  CHECK(*c.comm_us(Collective::AllGather, 2, 4000) == doctest::Approx(40));
  CHECK_FALSE(c.comm_us(Collective::AllReduce, 4, 1000).has_value());
  CHECK_FALSE(c.comm_us(Collective::AlltoAll, 2, 1000).has_value());
}

TEST_CASE("calibration: JSON round trip and errors that name the field") {
  Calibration c;
  c.source = "host: 2 ranks";
  c.ranks = 2;
  c.compute_slowdown = 0.5;
  c.comm_slowdown = 0.25;
  c.sync_us = 40;
  c.gemms = {{{64, 32, 16, 2}, 12.5}};
  c.collectives = {{collkit::plan::Collective::ReduceScatter, 2, 4096, 33.25, Group::Tp}};
  Calibration back = parse_calibration(to_json(c), "cal.json");
  CHECK(back.source == c.source);
  CHECK(back.ranks == 2);
  CHECK(back.compute_slowdown == 0.5);
  CHECK(back.comm_slowdown == 0.25);
  CHECK(back.sync_us == 40);
  REQUIRE(back.gemms.size() == 1);
  CHECK(back.gemms[0].shape == GemmShape{64, 32, 16, 2});
  CHECK(back.gemms[0].time_us == 12.5);
  REQUIRE(back.collectives.size() == 1);
  CHECK(back.collectives[0].coll == collkit::plan::Collective::ReduceScatter);
  CHECK(back.collectives[0].bytes == 4096);
  CHECK(back.collectives[0].group == Group::Tp);
  const std::string head =
      R"({"schema": "collkit.overlap-calibration/1", "source": "x", "ranks": 2, "compute_slowdown": 0.1, "comm_slowdown": 0.1, "sync_us": 0, )";
  CHECK(error_of(head + R"("gemms": [{"m": 0, "k": 1, "n": 1, "reps": 1, "time_us": 1}], "collectives": []})") ==
        "cal.json: /gemms/0/m: must be a positive integer, got 0");
  CHECK(error_of(head + R"("gemms": [], "collectives": [{"collective": "gather", "nranks": 2, "bytes": 8, "time_us": 1}]})") ==
        "cal.json: /collectives/0/collective: unknown collective \"gather\"");
  CHECK(error_of(head + R"("gemms": [], "collectives": [{"collective": "allreduce", "nranks": 1, "bytes": 8, "time_us": 1}]})") ==
        "cal.json: /collectives/0/nranks: must be at least 2");
  CHECK(error_of(head + R"("gemms": [], "collectives": [], "extra": 1})").find("extra") != std::string::npos);
  CHECK(error_of(R"({"schema": "collkit.overlap/1"})").find("cal.json") == 0);
}

TEST_CASE("timeline: communication slows while compute runs, one stream serialises the collectives") {
  // 10 us of compute beside 10 us of communication slowed by 1.0 (half speed) while compute runs:
  // 5 us of its work done by t = 10, the other 5 at full speed: it ends at 15.
  std::vector<Task> t = {task("gemm", Stream::Compute, 10), task("ag", Stream::Tp, 10)};
  simulate(t, Contention{0, 1.0, false});
  CHECK(t[0].end_us == doctest::Approx(10));
  CHECK(t[1].end_us == doctest::Approx(15));
  // Two collectives on different streams run at once, or one after the other on one stream.
  std::vector<Task> u = {task("a2a", Stream::Ep, 10), task("grads", Stream::DpReduce, 10)};
  simulate(u, Contention{});
  CHECK(u[1].end_us == doctest::Approx(10));
  simulate(u, Contention{0, 0, true});
  CHECK(u[1].start_us == doctest::Approx(10));
  CHECK(u[1].end_us == doctest::Approx(20));
  CHECK_THROWS_AS(simulate(u, Contention{0, -1, false}), collkit::InputError);
}

TEST_CASE("calibration fed to the model: measured GEMM times and collectives replace roofline and plans") {
  Layout l;
  l.tp = 2;
  l.sp = true;
  l.seq_len = 256;
  auto r = testing::run("llama3-8b", l, 1);
  Calibration c;
  c.ranks = 2;
  c.gemms = {{{256, 4096, 3072, 1}, 1234}};
  c.collectives = {{collkit::plan::Collective::AllGather, 2, 2097152, 77, Group::Tp},
                   {collkit::plan::Collective::ReduceScatter, 2, 2097152, 88, Group::Tp}};
  ComputeOp qkv{"qkv", OpKind::Gemm, 256, 4096, 3072, 1, 0, 0};
  double before = r->compute->time_us(qkv);
  r->compute->set_calibration(&c);
  CHECK(r->compute->time_us(qkv) == doctest::Approx(1234));
  CHECK(r->compute->time_us(qkv, 0.5) == doctest::Approx(617));  // nearest shape, at its rate
  r->compute->set_calibration(nullptr);
  CHECK(r->compute->time_us(qkv) == doctest::Approx(before));
  CommModel comm(r->topo, l);
  comm.set_calibration(&c);
  CommEstimate e = comm.estimate(Group::Tp, collkit::plan::Collective::AllGather, 2097152);
  CHECK(e.algorithm == "measured");
  CHECK(e.time_us == doctest::Approx(77));
  // The serial step's wait per collective comes on top of each.
  c.sync_us = 10;
  CommModel synced(r->topo, l);
  synced.set_calibration(&c);
  CHECK(synced.estimate(Group::Tp, collkit::plan::Collective::ReduceScatter, 2097152).time_us == doctest::Approx(98));
}

TEST_CASE("calibration: the example in docs/overlap.md parses") {
  std::string doc = collkit::read_file(std::string(COLLKIT_DOCS_DIR) + "/overlap.md");
  auto at = doc.find("{\"schema\": \"collkit.overlap-calibration/1\"");
  REQUIRE(at != std::string::npos);
  std::string text = doc.substr(at, doc.find("```", at) - at);
  Calibration c = parse_calibration(text, "docs/overlap.md");
  CHECK(c.ranks == 2);
  CHECK(c.gemms.size() == 1);
  CHECK(c.collectives.size() == 1);
}

TEST_CASE("calibration: a TP and a DP collective of one size are samples of their own") {
  using collkit::plan::Collective;
  Calibration c;
  c.collectives = {{Collective::AllGather, 2, 1000, 20, Group::Tp}, {Collective::AllGather, 2, 1000, 60, Group::Dp}};
  CHECK(*c.comm_us(Collective::AllGather, Group::Tp, 2, 1000) == doctest::Approx(20));
  CHECK(*c.comm_us(Collective::AllGather, Group::Dp, 2, 1000) == doctest::Approx(60));
  CHECK(*c.comm_us(Collective::AllGather, Group::Dp, 2, 2000) == doctest::Approx(120));  // its own group's line
  // A kind never measured borrows every group's samples of that rank count; group-less asks, their mean.
  CHECK(*c.comm_us(Collective::AllGather, Group::Ep, 2, 1000) == doctest::Approx(20));
  CHECK(*c.comm_us(Collective::AllGather, 2, 1000) == doctest::Approx(40));
  CHECK_FALSE(c.comm_us(Collective::AllGather, Group::Tp, 4, 1000).has_value());
  // A file from before groups were recorded: its samples serve every group.
  Calibration old;
  old.collectives = {{Collective::AllGather, 2, 1000, 30, std::nullopt}};
  CHECK(*old.comm_us(Collective::AllGather, Group::Dp, 2, 1000) == doctest::Approx(30));
  CHECK(*old.comm_us(Collective::AllGather, Group::Tp, 2, 1000) == doctest::Approx(30));

  // Round trip, and a file without "group" still parses.
  c.ranks = 4;
  Calibration back = parse_calibration(to_json(c), "cal.json");
  REQUIRE(back.collectives.size() == 2);
  CHECK(back.collectives[0].group == Group::Tp);
  CHECK(back.collectives[1].group == Group::Dp);
  const std::string head =
      R"({"schema": "collkit.overlap-calibration/1", "source": "x", "ranks": 2, "compute_slowdown": 0.1, "comm_slowdown": 0.1, "sync_us": 0, "gemms": [], )";
  Calibration plain =
      parse_calibration(head + R"("collectives": [{"collective": "allgather", "nranks": 2, "bytes": 8, "time_us": 1}]})", "cal.json");
  REQUIRE(plain.collectives.size() == 1);
  CHECK_FALSE(plain.collectives[0].group.has_value());
  CHECK(error_of(head + R"("collectives": [{"collective": "allgather", "nranks": 2, "bytes": 8, "time_us": 1, "group": "xx"}]})") ==
        "cal.json: /collectives/0/group: unknown group \"xx\" (known: tp, ep, dp, expert-dp, pp)");

  // The model asks by group: on TP 2 x DP 2 a TP and a DP AllGather of one size cost their own samples.
  Layout l;
  l.tp = 2;
  l.dp = 2;
  l.zero = 3;
  l.seq_len = 256;
  auto r = testing::run("llama3-8b", l, 1);
  CommModel comm(r->topo, l);
  comm.set_calibration(&c);
  CHECK(comm.estimate(Group::Tp, Collective::AllGather, 1000).time_us == doctest::Approx(20));
  CHECK(comm.estimate(Group::Dp, Collective::AllGather, 1000).time_us == doctest::Approx(60));
}

TEST_CASE("calibration: a collective cut into chunks pays the wait for the slowest rank once, not once a chunk") {
  using collkit::plan::Collective;
  Layout l;
  l.tp = 2;
  l.sp = true;
  l.seq_len = 256;
  auto r = testing::run("llama3-8b", l, 1);
  // One sample per collective: a chunk costs its share of the bytes, so the chunks of a collective
  // add up to the whole, and what is left is the wait.
  Calibration c;
  c.ranks = 2;
  c.sync_us = 500;
  c.collectives = {{Collective::AllGather, 2, 1 << 20, 100, Group::Tp}, {Collective::ReduceScatter, 2, 1 << 20, 100, Group::Tp}};
  CommModel comm(r->topo, l);
  comm.set_calibration(&c);
  CommEstimate whole = comm.estimate(Group::Tp, Collective::AllGather, 1 << 20);
  CHECK(whole.time_us == doctest::Approx(600));
  CHECK(whole.sync_us == doctest::Approx(500));
  const Contention none_at_all{0, 0, true};
  StrategyResult serial = evaluate(r->workload, *r->compute, comm, {}, none_at_all);
  int collectives = 0;
  for (const Task& t : serial.tasks) collectives += t.stream != Stream::Compute && t.work_us > 0;
  REQUIRE(collectives > 0);
  int checked = 0;
  for (int chunks : {2, 4, 8}) {
    StrategyResult chunked = evaluate(r->workload, *r->compute, comm, {{"tp-decompose", chunks}}, none_at_all);
    int pieces = 0;
    for (const Task& t : chunked.tasks) pieces += t.stream != Stream::Compute && t.work_us > 0;
    CHECK(pieces == chunks * collectives);
    // The same communication in all as the serial step: the chunks' bytes, and one wait per collective
    // (charged per chunk, it was (chunks - 1) x 500 us a collective more).
    CHECK(chunked.stats.comm_us == doctest::Approx(serial.stats.comm_us).epsilon(1e-4));
    CHECK(chunked.stats.comm_wait_us == doctest::Approx(serial.stats.comm_wait_us).epsilon(1e-4));
    ++checked;
  }
  CHECK(checked == 3);
  // Uncalibrated there is no wait: an estimate's sync_us is 0.
  CommModel plain(r->topo, l);
  CHECK(plain.estimate(Group::Tp, Collective::AllGather, 1 << 20).sync_us == 0);
}

TEST_CASE("overlap model, calibrated: communication alone leaves the wait for the slowest rank out, the step pays it") {
  using collkit::plan::Collective;
  Layout l;
  l.tp = 2;
  l.sp = true;
  l.seq_len = 256;
  auto r = testing::run("llama3-8b", l, 1);
  // The same samples with and without a calibrated wait: coll-overlap run measures communication
  // alone with the compute skipped, where no rank waits for one descheduled while computing.
  Calibration with, without;
  with.ranks = without.ranks = 2;
  with.sync_us = 500;
  with.collectives =
      without.collectives = {{Collective::AllGather, 2, 1 << 20, 100, Group::Tp}, {Collective::ReduceScatter, 2, 1 << 20, 100, Group::Tp}};
  CommModel with_wait(r->topo, l), no_wait(r->topo, l);
  with_wait.set_calibration(&with);
  no_wait.set_calibration(&without);
  Calibration chunk_cost = with;
  chunk_cost.chunk_sync_us = 50;
  CommModel meetings(r->topo, l);
  meetings.set_calibration(&chunk_cost);
  const Contention serial_stream{0, 0, true};
  int checked = 0;
  for (int chunks : {0, 2, 4}) {
    std::vector<Choice> knobs;
    if (chunks > 0) knobs.push_back({"tp-decompose", chunks});
    StrategyResult a = evaluate(r->workload, *r->compute, with_wait, knobs, serial_stream);
    StrategyResult b = evaluate(r->workload, *r->compute, no_wait, knobs, serial_stream);
    int collectives = 0;
    for (const Task& t : b.tasks) collectives += t.stream != Stream::Compute && t.work_us > 0;
    REQUIRE(collectives > 0);
    // Communication alone is the collectives' own time either way; the waits are counted apart,
    // one per collective of the program (tp-decompose: its chunks share it).
    const int per_program = chunks > 0 ? collectives / chunks : collectives;
    CHECK(a.stats.comm_us == doctest::Approx(b.stats.comm_us).epsilon(1e-9));
    CHECK(b.stats.comm_wait_us == 0);
    CHECK(a.stats.comm_wait_us == doctest::Approx(500.0 * per_program).epsilon(1e-9));
    // A measured cost per further chunk: k chunks of a collective pay k - 1 of it beyond the one wait;
    // a schedule that cuts nothing pays none.
    StrategyResult m = evaluate(r->workload, *r->compute, meetings, knobs, serial_stream);
    const int further = chunks > 0 ? per_program * (chunks - 1) : 0;
    CHECK(m.stats.comm_us == doctest::Approx(b.stats.comm_us).epsilon(1e-9));
    CHECK(m.stats.comm_wait_us == doctest::Approx(500.0 * per_program + 50.0 * further).epsilon(1e-9));
    if (chunks == 0) {
      // Serial: the step is compute, communication and the waits, all exposed; nothing overlaps.
      CHECK(a.step_us == doctest::Approx(b.step_us + 500.0 * per_program).epsilon(1e-9));
      CHECK(a.stats.exposed_comm_us == doctest::Approx(a.stats.comm_us + a.stats.comm_wait_us).epsilon(1e-9));
      CHECK(std::abs(a.overlap_ratio) < 1e-9);
    }
    ++checked;
  }
  CHECK(checked == 3);
}

TEST_CASE("calibration: gradient buckets share the step's wait for the slowest rank, a further meeting each") {
  using collkit::plan::Collective;
  Calibration c;
  c.ranks = 2;
  c.sync_us = 500;
  c.chunk_sync_us = 20;
  for (Collective coll : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
    c.collectives.push_back({coll, 2, 1 << 20, 100, Group::Dp});
  const Contention serial_stream{0, 0, true};
  // The gradient reductions' waits and how many there are (the dp-reduce stream).
  auto reductions = [](const StrategyResult& r) {
    std::pair<double, int> out{0, 0};
    for (const Task& t : r.tasks)
      if (t.stream == Stream::DpReduce && t.work_us > 0) out.first += t.wait_us, ++out.second;
    return out;
  };
  int checked = 0;
  for (int zero : {0, 3}) {
    Layout l;
    l.dp = 2;
    l.zero = zero;
    l.seq_len = 256;
    auto r = testing::run("llama3-8b", l, 1);
    CommModel comm(r->topo, l);
    comm.set_calibration(&c);
    // Serial: one reduction of every gradient at the step end, one wait.
    const std::pair<double, int> serial = reductions(evaluate(r->workload, *r->compute, comm, {}, serial_stream));
    CHECK(serial.second == 1);
    CHECK(serial.first == doctest::Approx(500));
    // In buckets (ZeRO 0: 1 MB; ZeRO 3: one per layer): the one wait shared by bytes, and a further
    // meeting per bucket beyond the first. Charged in full per bucket it was n x 500 us.
    std::vector<Choice> knobs = {zero == 3 ? Choice{"fsdp-prefetch", 1} : Choice{"dp-bucket", 1}};
    const std::pair<double, int> buckets = reductions(evaluate(r->workload, *r->compute, comm, knobs, serial_stream));
    CHECK(buckets.second > 2);
    CHECK(buckets.first == doctest::Approx(500 + 20.0 * (buckets.second - 1)).epsilon(1e-6));
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE("overlap model, calibrated: a further chunk's wait from a serial and a chunked step, at least 0") {
  // Excess (step - compute alone - communication alone): 2000 us over 20 collectives serial (100
  // each); 5000 chunked, 20 collectives in 3 chunks each: 3000 us past the 20 first chunks, over 40
  // further chunks. With 2 whole collectives more (dp-bucket beside), those pay 100 each first.
  CHECK(chunk_sync(2000, 20, 5000, 20, 40) == doctest::Approx(75));
  CHECK(chunk_sync(2000, 20, 5000, 22, 40) == doctest::Approx(70));
  CHECK(chunk_sync(2000, 20, 1500, 20, 40) == 0);  // chunking cost nothing more: 0, never negative
  CHECK(chunk_sync(2000, 20, 5000, 20, 0) == 0);   // no further chunks: nothing to divide by
  CHECK(chunk_sync(2000, 0, 5000, 20, 40) == 0);   // no serial collective: no rate to start from
  Calibration c;
  c.ranks = 4;
  c.sync_us = 10;
  c.chunk_sync_us = 75;
  CHECK(parse_calibration(to_json(c), "c.json").chunk_sync_us == 75);
  // Files from before it was measured have none: 0.
  const std::string old = R"({"schema": "collkit.overlap-calibration/1", "source": "x", "ranks": 2, "compute_slowdown": 0.1, )"
                          R"("comm_slowdown": 0.1, "sync_us": 0, "gemms": [], "collectives": []})";
  CHECK(parse_calibration(old, "c.json").chunk_sync_us == 0);
}

TEST_CASE("calibration: the serial step fixes the samples' level, their relative costs kept") {
  using collkit::plan::Collective;
  // A level is what the serial step measured over what the samples say it takes; 1 where either is 0.
  CHECK(level(130, 100) == doctest::Approx(1.3));
  CHECK(level(0, 100) == 1);
  CHECK(level(100, 0) == 1);
  Calibration c;
  c.ranks = 2;
  c.gemms = {{{64, 64, 64, 1}, 10}, {{512, 512, 512, 1}, 1000}};
  c.collectives = {{Collective::AllReduce, 2, 1000, 20, Group::Dp}, {Collective::AllReduce, 2, 3000, 40, Group::Dp}};
  c.compute_scale = 0.75;
  c.comm_scale = 1.5;
  // Every lookup, exact, nearest, per group or group-less, at the level.
  CHECK(*c.gemm_us({64, 64, 64, 3}) == doctest::Approx(30 * 0.75));
  CHECK(*c.gemm_us({128, 64, 64, 1}) == doctest::Approx(20 * 0.75));
  CHECK(*c.comm_us(Collective::AllReduce, Group::Dp, 2, 1000) == doctest::Approx(20 * 1.5));
  CHECK(*c.comm_us(Collective::AllReduce, Group::Dp, 2, 2000) == doctest::Approx(30 * 1.5));  // through the line
  CHECK(*c.comm_us(Collective::AllReduce, 2, 3000) == doctest::Approx(40 * 1.5));
  // Fed to the model: a serial step's compute and collectives move by the levels, the wait does not.
  Layout l;
  l.dp = 2;
  l.seq_len = 64;
  auto r = testing::run("llama3-8b", l, 1);
  c.sync_us = 5;
  CommModel comm(r->topo, l);
  comm.set_calibration(&c);
  CHECK(comm.estimate(Group::Dp, Collective::AllReduce, 1000).time_us == doctest::Approx(20 * 1.5 + 5));
  // Written and read back; files from before the levels were measured keep their samples' own (1).
  Calibration back = parse_calibration(to_json(c), "c.json");
  CHECK(back.compute_scale == 0.75);
  CHECK(back.comm_scale == 1.5);
  const std::string head = R"({"schema": "collkit.overlap-calibration/1", "source": "x", "ranks": 2, "compute_slowdown": 0.1, )"
                           R"("comm_slowdown": 0.1, "sync_us": 0, "gemms": [], "collectives": [])";
  Calibration old = parse_calibration(head + "}", "c.json");
  CHECK(old.compute_scale == 1);
  CHECK(old.comm_scale == 1);
  CHECK(error_of(head + R"(, "compute_scale": 0})") == "cal.json: /compute_scale: must be > 0, got 0");
  CHECK(error_of(head + R"(, "comm_scale": -1})").find("/comm_scale") != std::string::npos);
}

TEST_CASE("overlap schedules: a report's rows read back by name and knobs, and predicted again alike") {
  Layout l;
  l.tp = 2;
  l.sp = true;
  l.dp = 2;
  l.seq_len = 256;
  Request req;
  req.strategies = {"auto"};
  auto r = testing::run("llama3-8b", l, 1, req);
  RunContext ctx{&r->workload, &r->topo, r->compute.get(), r->comm.get(), req.contention};
  std::vector<NamedSchedule> back = parse_schedules(to_json(r->report, ctx), "o.json");
  REQUIRE(back.size() == r->report.rows.size());
  Report again = evaluate_schedules(r->workload, *r->compute, *r->comm, back, req);
  REQUIRE(again.rows.size() == r->report.rows.size());
  int checked = 0;
  for (std::size_t i = 0; i < back.size(); ++i) {
    const StrategyResult& was = r->report.rows[i];
    CHECK(back[i].name == was.name);
    REQUIRE(back[i].choices.size() == was.choices.size());
    for (std::size_t k = 0; k < was.choices.size(); ++k) {
      CHECK(back[i].choices[k].strategy == was.choices[k].strategy);
      CHECK(back[i].choices[k].knob == was.choices[k].knob);
    }
    CHECK(again.rows[i].name == was.name);
    CHECK(again.rows[i].step_us == doctest::Approx(was.step_us).epsilon(1e-12));
    CHECK(again.rows[i].speedup == doctest::Approx(was.speedup).epsilon(1e-12));
    ++checked;
  }
  CHECK(checked >= 3);  // none, each strategy that applies, auto

  auto error = [](const std::string& text) {
    try {
      parse_schedules(text, "o.json");
    } catch (const collkit::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = R"({"schema": "collkit.overlap/1", "strategies": )";
  CHECK(error(head + R"([{"name": "x", "knobs": {"nope": 2}}]})") == "o.json: /strategies/0/knobs/nope: unknown strategy \"nope\"");
  CHECK(error(head + R"([{"name": "x", "knobs": {"tp-decompose": 0}}]})") ==
        "o.json: /strategies/0/knobs/tp-decompose: must be in 1..1024, got 0");
  CHECK(error(head + R"([]})") == "o.json: /strategies: no schedules");
  CHECK(error(R"({"schema": "collkit.overlap-calibration/1", "strategies": []})").starts_with("o.json: "));
}

TEST_CASE("calibration: the schedules measured beside the rows are every knob a calibrated model may choose") {
  Layout l;
  l.tp = 2;
  l.sp = true;
  l.dp = 2;
  l.seq_len = 256;
  auto r = testing::run("llama3-8b", l, 1);
  Request req;
  std::vector<StrategyResult> all = knob_schedules(r->workload, *r->compute, *r->comm, req);
  // dp-bucket {25, 80, 200, 1} and tp-decompose {2 (= tp), 4, 8, 16}; fsdp-prefetch and
  // moe-pipeline do not apply.
  REQUIRE(all.size() == 8);
  std::vector<std::string> names;
  for (const StrategyResult& s : all) {
    REQUIRE(s.choices.size() == 1);
    names.push_back(s.choices[0].strategy + "=" + std::to_string(s.choices[0].knob));
  }
  CHECK(names == std::vector<std::string>{"dp-bucket=25", "dp-bucket=80", "dp-bucket=200", "dp-bucket=1", "tp-decompose=2",
                                          "tp-decompose=4", "tp-decompose=8", "tp-decompose=16"});
  // A knob the request fixes is the only one.
  req.fixed = {{"tp-decompose", 3}};
  all = knob_schedules(r->workload, *r->compute, *r->comm, req);
  REQUIRE(all.size() == 5);
  CHECK(all.back().choices[0].knob == 3);
}
