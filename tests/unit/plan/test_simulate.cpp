#include <doctest/doctest.h>

#include <limits>

#include "algorithms/common.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"
#include "simulate_internal.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using collkit::InputError;

namespace {

// GB/s to microseconds per byte.
double beta(double gbps) { return 1.0 / (gbps * 1e3); }

bool has_algorithm(std::string_view name) {
  for (const Algorithm* a : algorithms())
    if (a->name() == name) return true;
  return false;
}

SimOptions with(LinkModel model, double per_message_us = 0, double reduce_gbps = 0) {
  SimOptions o;
  o.model = model;
  o.per_message_us = per_message_us;
  o.reduce_gbps = reduce_gbps;
  return o;
}

// A hand-made plan whose buffers are `chunks` chunks of `bytes` in all (a Broadcast request,
// so input and output both hold `bytes`).
ExplicitPlan hand_plan(std::uint64_t bytes, std::uint32_t chunks, std::vector<std::vector<Op>> programs, std::uint16_t channels = 2) {
  PlanInfo info;
  info.req = {Collective::Broadcast, bytes, static_cast<int>(programs.size()), 0};
  info.algorithm = "explicit";
  info.in_chunks = info.out_chunks = chunks;
  info.channels = channels;
  return ExplicitPlan(info, std::move(programs));
}

std::string error_of(const Plan& plan, const collkit::topo::Topology& t) {
  try {
    simulate(plan, t);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("simulate: ring allgather, reducescatter and allreduce match the alpha-beta closed forms") {
  const int p = 8;
  const double bw = 100, lat = 0.5, per_message = 2, reduce = 50;
  auto t = uniform(p, bw, lat);
  double a = 2 * lat + per_message;  // two hops per route, plus the software overhead
  double b = beta(bw), g = beta(reduce);
  double n = 8.0 * 1024 * 1024;
  double f = (p - 1.0) / p;
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    CAPTURE(static_cast<int>(model));
    // AllGather's first op copies the input into place: free here, as the formula has no g.
    auto ag = generate("ring", {Collective::AllGather, 8u << 20, p, 0}, nullptr);
    SimResult r = simulate(*ag, t, with(model, per_message));
    CHECK(r.time_us == doctest::Approx((p - 1) * a + f * n * b).epsilon(1e-9));
    CHECK(r.algbw_gbps == doctest::Approx(n / (r.time_us * 1e3)));
    CHECK(r.busbw_gbps == doctest::Approx(r.algbw_gbps * f));
    CHECK(r.events == 8 * 8);  // per rank: one copy and 7 sends

    auto rs = generate("ring", {Collective::ReduceScatter, 8u << 20, p, 0}, nullptr);
    CHECK(simulate(*rs, t, with(model, per_message, reduce)).time_us ==
          doctest::Approx((p - 1) * a + f * n * (b + g)).epsilon(1e-9));

    auto ar = generate("ring", {Collective::AllReduce, 8u << 20, p, 0}, nullptr);
    SimResult rar = simulate(*ar, t, with(model, per_message, reduce));
    CHECK(rar.time_us == doctest::Approx(2 * (p - 1) * a + 2 * f * n * b + f * n * g).epsilon(1e-9));
    CHECK(rar.busbw_gbps == doctest::Approx(rar.algbw_gbps * 2 * f));
  }
}

TEST_CASE("simulate: recursive doubling and halving-doubling match their closed forms") {
  // "rd" and "rhd" live in libs/plan/src/algorithms/; each check runs when the registry has the
  // algorithm and it supports the request.
  const int p = 8;
  const double bw = 100, lat = 0.5, per_message = 2;
  auto t = uniform(p, bw, lat);
  double a = 2 * lat + per_message, b = beta(bw);
  double n = 8.0 * 1024 * 1024, f = (p - 1.0) / p, logp = 3;
  struct Case {
    const char* algo;
    Collective coll;
    double expected_us;
  };
  const Case cases[] = {
      {"rd", Collective::AllGather, logp * a + f * n * b},
      {"rd", Collective::AllReduce, logp * (a + n * b)},
      {"rhd", Collective::ReduceScatter, logp * a + f * n * b},
      {"rhd", Collective::AllGather, logp * a + f * n * b},
      {"rhd", Collective::AllReduce, 2 * logp * a + 2 * f * n * b},
  };
  int checked = 0;
  for (const Case& c : cases) {
    CAPTURE(c.algo);
    CAPTURE(to_string(c.coll));
    if (!has_algorithm(c.algo)) continue;
    Request req{c.coll, 8u << 20, p, 0};
    if (!algorithm(c.algo).supports(req, &t, nullptr)) continue;
    auto plan = generate(c.algo, req, nullptr);
    for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin})
      CHECK(simulate(*plan, t, with(model, per_message)).time_us == doctest::Approx(c.expected_us).epsilon(0.01));
    ++checked;
  }
  if (checked == 0) MESSAGE("rd / rhd not registered: closed-form checks skipped");
}

TEST_CASE("simulate: on two hosts the ring streams over the thin inter-host link, paying its latency once") {
  // Ring 0 -> 1 -> 2 -> 3 -> 0; 1 -> 2 and 3 -> 0 cross the 10 GB/s link (one direction each),
  // latency 1 + 5 + 1 us. A send completes once its last byte has left, so rank 1 starts its next
  // step's send as soon as the link is free (its data from 0 came long before): the thin link
  // stays busy 3 x 100 us and only the last transfer's 7 us of latency shows. Completing a send
  // on arrival paid the latency every step (3 x 107 us).
  auto t = two_hosts(2, 100, 1, 10, 5);
  auto ag = generate("ring", {Collective::AllGather, 4000000, 4, 0}, nullptr);
  double transfer = 1e6 * beta(10);
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin})
    CHECK(simulate(*ag, t, with(model)).time_us == doctest::Approx(3 * transfer + 7).epsilon(1e-9));
  // With one message in flight per channel a send waits for the previous one to arrive: the
  // latency is paid every step again.
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    SimOptions one = with(model);
    one.max_in_flight = 1;
    CHECK(simulate(*ag, t, one).time_us == doctest::Approx(3 * (transfer + 7)).epsilon(1e-9));
  }
}

TEST_CASE("simulate: two flows into one link take twice as long under both models") {
  using namespace algo;
  auto t = uniform(3, 100, 0);
  const std::uint64_t n = 1000000;  // 10 us at 100 GB/s
  auto one = hand_plan(n, 1, {{send(2, in(0), 1, 0)}, {}, {recv(0, out(0), 1, 0)}});
  auto two = hand_plan(n, 1, {{send(2, in(0), 1, 0)}, {send(2, in(0), 1, 1)}, {recv(0, out(0), 1, 0), recv(1, out(0), 1, 1)}});
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    CHECK(simulate(one, t, with(model)).time_us == doctest::Approx(10));
    CHECK(simulate(two, t, with(model)).time_us == doctest::Approx(20));
  }
  // Queue serves one after the other; MaxMin shares, so both end together.
  CHECK(simulate(two, t, with(LinkModel::Queue)).critical_path.front() == "rank 1 op 0 send to 2 ch 1 ends 20 us");
  SimResult q = simulate(two, t, with(LinkModel::Queue));
  REQUIRE(q.critical_path.size() == 2);
  CHECK(q.critical_path[1] == "rank 2 op 1 recv from 1 ch 1 ends 20 us");
  REQUIRE(!q.busiest.empty());
  CHECK(q.busiest[0].link == 2);  // g2 - sw
  CHECK_FALSE(q.busiest[0].forward);  // sw -> g2
  CHECK(q.busiest[0].bytes == 2 * n);
  CHECK(q.busiest[0].busy_us == doctest::Approx(20));
}

TEST_CASE("simulate: Queue and MaxMin differ where they should") {
  using namespace algo;
  auto t = uniform(4, 100, 0);
  const std::uint64_t n = 1000000;
  SUBCASE("a chain of shared links: a link a waiting transfer leaves idle serves the next (backfilling)") {
    // X: 0 -> 2, Y: 1 -> 2, Z: 1 -> 3. Queue: X 0-10, Y waits for sw->g2 (10-20), and Z takes
    // g1->sw in the gap Y leaves (0-10): all done at 20. Strict FIFO idled g1->sw behind Y and
    // ended Z at 30. MaxMin: every shared link splits in two, all three end at 20.
    auto plan = hand_plan(n, 1,
                          {{send(2, in(0), 1, 0)},
                           {send(2, in(0), 1, 1), send(3, in(0), 1, 0)},
                           {recv(0, out(0), 1, 0), recv(1, out(0), 1, 1)},
                           {recv(1, out(0), 1, 0)}});
    SimResult q = simulate(plan, t, with(LinkModel::Queue));
    CHECK(q.time_us == doctest::Approx(20));
    CHECK(q.critical_path.back() == "rank 2 op 1 recv from 1 ch 1 ends 20 us");
    CHECK(simulate(plan, t, with(LinkModel::MaxMin)).time_us == doctest::Approx(20));
  }
  SUBCASE("rates are recomputed when a flow leaves") {
    // A: 0 -> 2 of n, B: 1 -> 2 of 2n. MaxMin: both at 50 GB/s until A ends at 20, then B alone
    // at 100 GB/s ends at 30 (40 had B kept its half). Queue: A ends at 10, B at 30.
    auto plan = hand_plan(2 * n, 2, {{send(2, in(0), 1, 0)}, {send(2, in(0), 2, 1)}, {recv(0, out(0), 1, 0), recv(1, out(0), 2, 1)}, {}});
    SimResult q = simulate(plan, t, with(LinkModel::Queue));
    SimResult m = simulate(plan, t, with(LinkModel::MaxMin));
    CHECK(q.time_us == doctest::Approx(30));
    CHECK(m.time_us == doctest::Approx(30));
    CHECK(q.critical_path.back() == "rank 2 op 1 recv from 1 ch 1 ends 30 us");
    CHECK(m.critical_path.back() == "rank 2 op 1 recv from 1 ch 1 ends 30 us");  // 40 if B kept its half
  }
}

TEST_CASE("simulate: under Queue a network switch stores a message that fits while the hop behind it is busy") {
  using namespace algo;
  // X: 0 -> 2 and Y: 1 -> 2, both posted at 0 (X first), then Z: 1 -> 3 on Y's channel once Y's
  // send completes; every link 100 GB/s, a message 2 us. The switch stores Y while sw -> g2
  // carries X: Y crosses g1 -> sw at 0-2 and sw -> g2 at 2-4, its send completes at 2, and Z
  // runs at 2-4. Without the store Y waits for both hops at once (2-4) and Z runs at 4-6, as
  // under MaxMin, where X and Y share sw -> g2 and both end at 4.
  auto plan_of = [](std::uint64_t n) {
    return hand_plan(n, 1,
                     {{send(2, in(0), 1, 0)},
                      {send(2, in(0), 1, 1), send(3, in(0), 1, 1)},
                      {recv(0, out(0), 1, 0), recv(1, out(0), 1, 1)},
                      {recv(1, out(0), 1, 1)}});
  };
  const std::uint64_t n = 200000;  // within the default store (256 KiB)
  auto t = uniform(4, 100, 0);     // its switch is a network switch
  SimResult q = simulate(plan_of(n), t, with(LinkModel::Queue));
  CHECK(q.time_us == doctest::Approx(4));
  bool y_left_at_2 = false;
  for (const std::string& line : q.critical_path) y_left_at_2 |= line == "rank 1 op 0 send to 2 ch 1 ends 2 us";
  CHECK(y_left_at_2);
  SimOptions no_store = with(LinkModel::Queue);
  no_store.queue_store_bytes = 0;
  CHECK(simulate(plan_of(n), t, no_store).time_us == doctest::Approx(6));
  CHECK(simulate(plan_of(n), t, with(LinkModel::MaxMin)).time_us == doctest::Approx(6));
  // A message larger than the store moves on both hops at once: 4 us each, 12 in all.
  CHECK(simulate(plan_of(2 * n), t, with(LinkModel::Queue)).time_us == doctest::Approx(12));
  // Inside a host (an NVSwitch) nothing is stored: the same plan on host a of two takes 6.
  CHECK(simulate(plan_of(n), two_hosts(4, 100, 0, 100, 0), with(LinkModel::Queue)).time_us == doctest::Approx(6));
  SimOptions bad = with(LinkModel::Queue);
  bad.queue_store_bytes = -1;
  CHECK_THROWS_AS(check_options(bad), InputError);
}

TEST_CASE("simulate: a Queue transfer that ends just as a hop fills up is done there") {
  // Rate 10 bytes/us, the hop full from 42.1 to 51.7: 41 bytes posted at 38 fit exactly before
  // it. The steps once summed to a sliver short of 41 bytes, which then waited out the full
  // stretch and ended at 51.7.
  collkit::plan::sim::Profile profile;
  std::vector<collkit::plan::sim::Profile::Segment> scratch;
  const collkit::plan::sim::Piece busy{42.1, 51.7, 10};
  profile.add(&busy, 1, 0, 0, scratch);
  collkit::plan::sim::Admission admission;
  const collkit::plan::sim::Admission::Hop hop{&profile, 0, 10};
  collkit::plan::sim::Admission::Admitted a = admission.admit(&hop, 1, 38, 41, 38);
  CHECK(a.left == doctest::Approx(42.1).epsilon(1e-12));
  CHECK(a.last == doctest::Approx(42.1).epsilon(1e-12));
  // Two hops, the second (latency 0.5 behind) full from 62.6: 63 bytes at 10 from 53.6 fit.
  collkit::plan::sim::Profile first, second;
  const collkit::plan::sim::Piece later{62.6, 68.9, 10};
  second.add(&later, 1, 0, 0, scratch);
  const collkit::plan::sim::Admission::Hop hops[2] = {{&first, 0, 20}, {&second, 0.5, 10}};
  a = admission.admit(hops, 2, 55.8, 63, 55.8);
  CHECK(a.left == doctest::Approx(62.1).epsilon(1e-12));
}

TEST_CASE("simulate: Queue lets a link that an earlier transfer uses in part serve the next with the rest") {
  using namespace algo;
  // g0 -> sw at 100 GB/s, sw -> g1 and sw -> g2 at 50. X: 0 -> 1 and Y: 0 -> 2, posted together.
  // X runs at its bottleneck, 50, and takes half of g0 -> sw; Y takes the other half: both end
  // at 20 us, as under MaxMin. Exclusive reservations of each hop at its own rate (X holding
  // g0 -> sw for 10 us at 100) ended Y at 30.
  auto t = uniform(3, 100, 0);
  t.mutable_link(1).bw_gbps = 50;
  t.mutable_link(2).bw_gbps = 50;
  const std::uint64_t n = 1000000;  // 20 us at 50 GB/s
  auto plan = hand_plan(n, 1, {{send(1, in(0), 1, 0), send(2, in(0), 1, 1)}, {recv(0, out(0), 1, 0)}, {recv(0, out(0), 1, 1)}});
  int checked = 0;
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    CAPTURE(static_cast<int>(model));
    SimResult r = simulate(plan, t, with(model));
    CHECK(r.time_us == doctest::Approx(20));
    REQUIRE_FALSE(r.busiest.empty());
    CHECK(r.busiest[0].bytes == 2 * n);  // g0 -> sw, full for 20 us
    CHECK(r.busiest[0].busy_us == doctest::Approx(20));
    ++checked;
  }
  CHECK(checked == 2);
  // A third transfer Z: 0 -> 2 behind Y. Queue serves in post order: X and Y share g0 -> sw
  // until 20; Z waits for sw -> g2 (Y's) and then runs at 50 to 40. MaxMin: X alone on sw -> g1
  // gets 50, Y and Z split sw -> g2 (25 each), so X ends at 20 and Y, Z together at 40.
  auto three = hand_plan(n, 1,
                         {{send(1, in(0), 1, 0), send(2, in(0), 1, 1), send(2, in(0), 1, 2)},
                          {recv(0, out(0), 1, 0)},
                          {recv(0, out(0), 1, 1), recv(0, out(0), 1, 2)}},
                         3);
  SimResult q = simulate(three, t, with(LinkModel::Queue));
  CHECK(q.time_us == doctest::Approx(40));
  CHECK(q.critical_path.back() == "rank 2 op 1 recv from 0 ch 2 ends 40 us");
  CHECK(simulate(three, t, with(LinkModel::MaxMin)).time_us == doctest::Approx(40));
}

TEST_CASE("simulate: a Queue transfer takes room left ahead of later reservations, waits, then goes on") {
  using namespace algo;
  // Every link 100 GB/s. X: 0 -> 1 and Y: 0 -> 2 of n each share g0 -> sw in post order: X 0-10,
  // Y 10-20, so sw -> g2 is taken 10-20 and free before. Z: 1 -> 2 of 2n, posted with them, takes
  // sw -> g2 from 0 to 10 (half its bytes), waits while Y has it, and ends at 30. Reservations of
  // one whole stretch (a gap of 20 us needed) ended Z at 40. MaxMin: X and Y at 50 to 20, Z at 50
  // beside Y, then 100 alone: also 30.
  auto t = uniform(3, 100, 0);
  const std::uint64_t n = 1000000;  // 10 us at 100 GB/s
  auto plan = hand_plan(2 * n, 2,
                        {{send(1, in(0), 1, 0), send(2, in(0), 1, 1)},
                         {send(2, in(0), 2, 0), recv(0, out(0), 1, 0)},
                         {recv(0, out(0), 1, 1), recv(1, out(0), 2, 0)}});
  SimResult q = simulate(plan, t, with(LinkModel::Queue));
  CHECK(q.time_us == doctest::Approx(30));
  CHECK(q.critical_path.back() == "rank 2 op 1 recv from 1 ch 0 ends 30 us");
  CHECK(simulate(plan, t, with(LinkModel::MaxMin)).time_us == doctest::Approx(30));
}

TEST_CASE("simulate: ranks on one vertex copy at its local bandwidth, or for free when unknown") {
  using namespace algo;
  collkit::topo::Topology t;
  t.name = "one-gpu";
  auto v = t.add_vertex(make_vertex("g", collkit::topo::VertexKind::Gpu));
  t.add_rank(v);
  t.add_rank(v);
  auto plan = hand_plan(1000000, 1, {{send(1, in(0), 1, 0)}, {recv(0, out(0), 1, 0)}}, 1);
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    CHECK(simulate(plan, t, with(model, 1)).time_us == doctest::Approx(1));  // per-message only
    t.mutable_vertex(v).local_bw_gbps = 50;
    CHECK(simulate(plan, t, with(model, 1)).time_us == doctest::Approx(21));
    t.mutable_vertex(v).local_bw_gbps = 0;
  }
}

TEST_CASE("simulate: on a calibrated topology reductions are work of the rank's vertex, copies are not") {
  using namespace algo;
  collkit::topo::Topology t;
  t.name = "one-cpu";
  auto v = t.add_vertex(make_vertex("cpu", collkit::topo::VertexKind::Cpu));
  for (int r = 0; r < 3; ++r) t.add_rank(v);
  t.mutable_vertex(v).local_bw_gbps = 10;  // 1 MB: 100 us on the vertex
  auto copies = hand_plan(1000000, 1, {{copy(in(0), out(0), 1, 0)}, {copy(in(0), out(0), 1, 0)}}, 1);
  auto reductions = hand_plan(1000000, 1, {{reduce(in(0), out(0), 1, 0)}, {reduce(in(0), out(0), 1, 0)}}, 1);
  auto recv_reduced = hand_plan(1000000, 1, {{send(1, in(0), 1, 0)}, {recv_reduce(0, in(0), out(0), 1, 0)}}, 1);
  // A third rank reduces while the other two move 1 MB between them.
  auto beside = hand_plan(1000000, 1, {{send(1, in(0), 1, 0)}, {recv(0, out(0), 1, 0)}, {reduce(in(0), out(0), 1, 0)}}, 1);
  int checked = 0;
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    CAPTURE(static_cast<int>(model));
    // Uncalibrated: every rank copies and reduces at reduce_gbps of its own, beside the others.
    CHECK(simulate(copies, t, with(model, 0, 5)).time_us == doctest::Approx(200));
    CHECK(simulate(reductions, t, with(model, 0, 5)).time_us == doctest::Approx(200));
    CHECK(simulate(recv_reduced, t, with(model, 0, 5)).time_us == doctest::Approx(300));  // 100 us transfer, 200 us sum
    CHECK(simulate(beside, t, with(model, 0, 50)).time_us == doctest::Approx(100));       // the sum's 20 us beside it
    collkit::topo::Topology cal = t;
    cal.calibration.emplace();
    cal.calibration->reduce_gbps = 5;  // each of two ranks, both reducing: 10 GB/s on the vertex
    // Copies: each rank's own, at reduce_gbps, as before.
    CHECK(simulate(copies, cal, with(model)).time_us == doctest::Approx(200));
    // The two reductions take turns on the vertex (Queue) or share it (MaxMin): 200 us either way.
    CHECK(simulate(reductions, cal, with(model)).time_us == doctest::Approx(200));
    // The transfer, then the sum on the vertex: 100 + 1 MB / 10 GB/s.
    CHECK(simulate(recv_reduced, cal, with(model)).time_us == doctest::Approx(200));
    // Three ranks on the vertex reduce at 50 GB/s in all: the sum's 20 us and the transfer's
    // 100 us hold the vertex in turn (or share it).
    cal.calibration->reduce_gbps = 50.0 / 3;
    CHECK(simulate(beside, cal, with(model)).time_us == doctest::Approx(120));
    checked += 8;
  }
  CHECK(checked == 16);
}

TEST_CASE("simulate: a calibration's core count caps the reductions at once, one reduction runs on one core") {
  using namespace algo;
  collkit::topo::Topology t;
  t.name = "two-cores";
  auto v = t.add_vertex(make_vertex("cpu", collkit::topo::VertexKind::Cpu));
  for (int r = 0; r < 4; ++r) t.add_rank(v);
  t.mutable_vertex(v).local_bw_gbps = 10;
  t.calibration.emplace();
  t.calibration->reduce_gbps = 5;  // 1 MB: 200 us on one core
  std::vector<std::vector<Op>> four(4, {reduce(in(0), out(0), 1, 0)});
  auto all_four = hand_plan(1000000, 1, four, 1);
  auto alone = hand_plan(1000000, 1, {{reduce(in(0), out(0), 1, 0)}, {}, {}, {}}, 1);
  // No core count (the calibrations before it): the vertex reduces at 4 x 5 GB/s, even for one
  // reduction alone.
  CHECK(simulate(all_four, t, with(LinkModel::Queue)).time_us == doctest::Approx(200));
  CHECK(simulate(alone, t, with(LinkModel::Queue)).time_us == doctest::Approx(50));
  // Four ranks on two cores: two reduce at once, the four take 400 us; one alone runs on its one
  // core, 200 us.
  t.calibration->cores = 2;
  CHECK(simulate(all_four, t, with(LinkModel::Queue)).time_us == doctest::Approx(400));
  CHECK(simulate(alone, t, with(LinkModel::Queue)).time_us == doctest::Approx(200));
  CHECK(simulate(all_four, t, with(LinkModel::MaxMin)).time_us == doctest::Approx(400));  // the cap; no per-op floor there
  // As many cores as ranks: the vertex's rate as before, a lone reduction still one core's.
  t.calibration->cores = 8;
  CHECK(simulate(all_four, t, with(LinkModel::Queue)).time_us == doctest::Approx(200));
  CHECK(simulate(alone, t, with(LinkModel::Queue)).time_us == doctest::Approx(200));
}

TEST_CASE("simulate: a reduction whose operands fit in a core's cache runs at core_cache_factor x the rate") {
  using namespace algo;
  collkit::topo::Topology t;
  t.name = "one-core";
  auto v = t.add_vertex(make_vertex("cpu", collkit::topo::VertexKind::Cpu));
  t.add_rank(v);
  t.add_rank(v);
  t.mutable_vertex(v).local_bw_gbps = 10;
  t.calibration.emplace();
  t.calibration->reduce_gbps = 5;
  t.calibration->cores = 1;
  auto small = hand_plan(300000, 1, {{reduce(in(0), out(0), 1, 0)}, {}}, 1);  // 3 x 300 KB in a 1 MiB cache
  auto large = hand_plan(400000, 1, {{reduce(in(0), out(0), 1, 0)}, {}}, 1);  // 3 x 400 KB past it
  CHECK(simulate(small, t, with(LinkModel::Queue)).time_us == doctest::Approx(60));
  CHECK(simulate(large, t, with(LinkModel::Queue)).time_us == doctest::Approx(80));
  t.calibration->core_cache_factor = 3;  // no cache size: no effect
  CHECK(simulate(small, t, with(LinkModel::Queue)).time_us == doctest::Approx(60));
  t.calibration->core_cache_bytes = 1 << 20;
  int checked = 0;
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    CAPTURE(static_cast<int>(model));
    CHECK(simulate(small, t, with(model)).time_us == doctest::Approx(20));
    CHECK(simulate(large, t, with(model)).time_us == doctest::Approx(80));
    checked += 2;
  }
  CHECK(checked == 4);
  // Uncalibrated, neither term exists: the options' reduction rate, as always.
  t.calibration.reset();
  CHECK(simulate(small, t, with(LinkModel::Queue, 0, 5)).time_us == doctest::Approx(60));
}

TEST_CASE("simulate: errors name the ops") {
  using namespace algo;
  auto t = uniform(4, 100, 0);
  auto five = generate("ring", {Collective::AllReduce, 5 * 1024, 5, 0}, nullptr);
  CHECK(error_of(*five, t) == "simulate: the plan has 5 ranks but topology \"uniform\" maps 4");

  auto dead = hand_plan(1000, 1, {{recv(1, out(0), 1, 0), send(1, in(0), 1, 0)}, {recv(0, out(0), 1, 0), send(0, in(0), 1, 0)}}, 1);
  CHECK(error_of(dead, t) ==
        "simulate: the plan deadlocks: 4 of 4 ops never complete; stuck: rank 0 op 0 recv from 1 ch 0 waits for rank 1 op 1 "
        "send to 0 ch 0; rank 1 op 0 recv from 0 ch 0 waits for rank 0 op 1 send to 1 ch 0");

  // The op errors are verify's, word for word: both come from match_plan() (matched.h).
  auto lonely = hand_plan(1000, 1, {{send(1, in(0), 1, 0)}, {}}, 1);
  CHECK(error_of(lonely, t) ==
        "simulate: rank 0 op 0 (send to 1 ch 0): never received: rank 0 sends 1 message to rank 1 on ch 0 and rank 1 receives 0");
  CHECK(error_of(lonely, t) == "simulate: " + verify(lonely).error);

  auto sizes = hand_plan(1000, 2, {{send(1, in(0), 2, 0)}, {recv(0, out(0), 1, 0)}}, 1);
  CHECK(error_of(sizes, t) ==
        "simulate: rank 1 op 0 (recv from 0 ch 0): receives 1 chunk but its matching send, rank 0 op 0 (send to 1 ch 0), sends 2");

  auto range = hand_plan(1000, 2, {{send(1, in(1), 2, 0)}, {recv(0, out(0), 2, 0)}}, 1);
  CHECK(error_of(range, t) == "simulate: rank 0 op 0 (send to 1 ch 0): input chunks 1-2 are out of range (input has 2 chunks)");

  Op looped = send(1, in(0), 1, 0);
  looped.depend_on(0);
  auto self = hand_plan(1000, 1, {{looped}, {recv(0, out(0), 1, 0)}}, 1);
  CHECK(error_of(self, t) == "simulate: rank 0 op 0 (send to 1 ch 0): dep on op 0 is not an earlier op");
}

TEST_CASE("simulate: deps across channels order the ops") {
  using namespace algo;
  auto t = uniform(3, 100, 0);
  // Rank 0 sends to 1 on channel 0, then, on channel 1 but only after that send, to 2.
  Op second = send(2, in(0), 1, 1);
  second.depend_on(0);
  auto plan = hand_plan(1000000, 1, {{send(1, in(0), 1, 0), second}, {recv(0, out(0), 1, 0)}, {recv(0, out(0), 1, 1)}});
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) CHECK(simulate(plan, t, with(model)).time_us == doctest::Approx(20));
}

TEST_CASE("simulate: without the critical path and busiest links the time is the same, to the bit") {
  // What the planner's searches ask for (only the time): no per-op end times and no per-link
  // tally. A pipelined tree with sends waiting for room in small windows, under both models,
  // with and without a per-message overhead (the Queue model's Post events).
  auto plan = collkit::plan::generate("tree", {collkit::plan::Collective::AllReduce, 64 * 4096, 64, 0}, nullptr, [] {
    collkit::plan::AlgoOptions o;
    o.pipeline = 16;
    return o;
  }());
  collkit::topo::Topology t = collkit::topo::synth({"dgx-h100", 8, "fat-tree"});
  int checked = 0;
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin})
    for (double per_message : {0.0, 1.5})
      for (int window : {1, 2, 8}) {
        SimOptions full = with(model, per_message);
        full.max_in_flight = window;
        SimOptions timing = full;
        timing.critical_path = false;
        timing.top_links = 0;
        SimResult a = simulate(*plan, t, full), b = simulate(*plan, t, timing);
        CHECK(a.time_us > 0);
        CHECK(b.time_us == a.time_us);
        CHECK(b.busbw_gbps == a.busbw_gbps);
        CHECK(b.events == a.events);
        CHECK(!a.critical_path.empty());
        CHECK(!a.busiest.empty());
        CHECK(b.critical_path.empty());
        CHECK(b.busiest.empty());
        ++checked;
      }
  CHECK(checked == 12);
}

TEST_CASE("simulate reports its progress to whoever asks") {
  // 64 ranks on 8 rings, unfolded: 129024 ops, reported after every 65536 done.
  auto plan = collkit::plan::generate("ring", {collkit::plan::Collective::AllReduce, 64 * 8 * 1024, 64, 0}, nullptr, [] {
    collkit::plan::AlgoOptions o;
    o.channels = 8;
    return o;
  }());
  collkit::topo::Topology t = collkit::topo::synth({"dgx-h100", 8, "fat-tree"});
  collkit::plan::SimOptions opt;
  opt.fold_symmetry = false;
  std::vector<std::pair<std::size_t, std::size_t>> heard;
  opt.progress = [&](std::size_t done, std::size_t total) { heard.emplace_back(done, total); };
  collkit::plan::SimResult r = collkit::plan::simulate(*plan, t, opt);
  CHECK(r.time_us > 0);
  REQUIRE(heard.size() == 1);
  CHECK(heard[0].first >= 65536u);
  CHECK(heard[0].second == 129024u);
}

TEST_CASE("simulate: a per-message overhead or reduction rate that is not a finite number >= 0 is refused") {
  auto t = uniform(4, 100, 0.5);
  auto ar = generate("ring", {Collective::AllReduce, 1u << 20, 4, 0}, nullptr);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    // NaN once made every event time NaN and the simulation never ended.
    CHECK_THROWS_WITH_AS(simulate(*ar, t, with(model, nan)),
                         "simulate: the per-message overhead must be a finite number >= 0 (us), got nan", InputError);
    CHECK_THROWS_WITH_AS(simulate(*ar, t, with(model, inf)),
                         "simulate: the per-message overhead must be a finite number >= 0 (us), got inf", InputError);
    CHECK_THROWS_WITH_AS(simulate(*ar, t, with(model, -1)), "simulate: the per-message overhead must be a finite number >= 0 (us), got -1",
                         InputError);
    CHECK_THROWS_WITH_AS(simulate(*ar, t, with(model, 0, nan)), "simulate: the reduction rate must be a finite number >= 0 (GB/s), got nan",
                         InputError);
  }
}
