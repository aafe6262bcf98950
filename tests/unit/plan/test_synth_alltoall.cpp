#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/synth.h"
#include "plan/plan_testing.h"
#include "plan/sim_topologies.h"
#include "synth/mcf.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using collkit::topo::Topology;

namespace {

/// Four routers in a ring (links of `bw`), a GPU on each (links of 10 bw). The concurrent flow's
/// optimum is bw / 2: the routers' cut into two halves carries 2 x 2 pairs each way over 2 links,
/// and every pair two hops apart splits its flow over both ways round. The route between two such
/// ranks takes one way only, so the LP reaches it by relaying half through the GPU on the other side.
Topology ring_of_routers(double bw) {
  Topology t;
  t.name = "router-ring";
  std::vector<collkit::topo::VertexId> router;
  for (int i = 0; i < 4; ++i) router.push_back(t.add_vertex(make_vertex("r" + std::to_string(i), collkit::topo::VertexKind::NetSwitch)));
  for (int i = 0; i < 4; ++i) {
    collkit::topo::VertexId g = t.add_vertex(make_vertex("g" + std::to_string(i), collkit::topo::VertexKind::Gpu));
    t.add_link(make_link(g, router[static_cast<std::size_t>(i)], 10 * bw, 0.5));
    t.add_rank(g);
  }
  for (int i = 0; i < 4; ++i)
    t.add_link(make_link(router[static_cast<std::size_t>(i)], router[static_cast<std::size_t>((i + 1) % 4)], bw, 1));
  return t;
}

double param(const Plan& plan, const std::string& key) { return std::stod(plan.info().params.at(key)); }

AlgoOptions eight_chunks() {
  AlgoOptions o;
  o.pipeline = 8;
  return o;
}

}  // namespace

TEST_CASE("synth alltoall: the flow LP's optimum on topologies whose optimum is known") {
  struct Case {
    const char* name;
    Topology t;
    double rate;   // lambda*, GB/s per ordered pair
    bool relays;   // whether reaching it takes relays
    bool cut;      // whether collkit's AlltoAll cut bound finds the cut that sets it
    double queue;  // simulated under Queue over the LP's time, at most
  };
  // A star: each GPU's link carries its p - 1 pieces out and in; two switches joined by a thin
  // link: 2 x 2 pairs cross 10 GB/s each way; the ring of routers above, whose tight cut (two
  // routers against two) is not among the bound's candidates (each vertex, host, switch).
  for (Case c :
       {Case{"star", uniform(4, 90, 1), 30, false, true, 1.001}, Case{"two switches", two_hosts(2, 100, 1, 10, 1), 2.5, false, true, 1.001},
        Case{"ring of 4", ring_of_routers(40), 20, true, false, 1.001}}) {
    CAPTURE(c.name);
    int p = static_cast<int>(c.t.num_ranks());
    synth::ConcurrentFlow f = synth::max_concurrent_flow(c.t, p);
    CHECK(f.rate_gbps == doctest::Approx(c.rate).epsilon(1e-9));
    CHECK(f.relays.empty() == !c.relays);
    // The plan's simulated time is the LP's under fair sharing (1 GiB: the routes' latencies are
    // 1e-5 of it), and under Queue too: a transfer takes what its links have left.
    Request req{Collective::AlltoAll, std::uint64_t{1} << 30, p, 0};
    auto plan = generate("synth", req, &c.t);
    double lp = param(*plan, "lp_us"), bound = lower_bound(req, c.t).bandwidth_us;
    CHECK(param(*plan, "lp_gbps") == doctest::Approx(c.rate).epsilon(1e-8));
    if (c.cut) CHECK(lp == doctest::Approx(bound).epsilon(1e-8));
    CHECK(lp >= bound * (1 - 1e-6));  // the simplex's tolerance
    CHECK(plan->info().params.at("relays").empty() == !c.relays);
    SimOptions fair;
    fair.model = LinkModel::MaxMin;
    double us = simulate(*plan, c.t, fair).time_us, queue = simulate(*plan, c.t).time_us;
    MESSAGE(std::string(c.name) << ": LP " << lp << " us, bound " << bound << " us, simulated " << us << " us (Queue " << queue << " us)");
    CHECK(us >= lp * (1 - 1e-9));
    CHECK(us <= lp * 1.001);
    CHECK(queue >= lp * (1 - 1e-9));
    CHECK(queue <= lp * c.queue);
    // Small, with chunks fine enough to keep the relays (the default makes none under 16 KiB).
    auto small = generate("synth", {Collective::AlltoAll, 8 * 64 * 4 * std::uint64_t(p), p, 0, 8}, &c.t, eight_chunks());
    CHECK(small->info().params.at("relays").empty() == !c.relays);
    check_plan(*small);
  }
}

TEST_CASE("synth alltoall: plans from the LP verify on presets and near its optimum") {
  // DGX-1's cube-mesh relays over NVLink what its PCIe routes cannot carry: 1.003 x the LP under
  // Queue (1.26 while Queue reserved each hop of a route at its own rate; docs/synth.md, "AlltoAll").
  // dgx-a100 and mi300x x1 send a share through host memory beside the LP's routes (host_chunks):
  // faster than the LP over routes, held to the cut bound (1.053 and 1.069 x it; their host
  // paths' ceilings 1.050 and 1.066) and to the LP with the host paths, which they state.
  struct Case {
    const char* node;
    int hosts;
    double queue;
    double host;  // with a host share: simulated over the cut bound, at most
  };
  for (Case c :
       {Case{"dgx-a100", 1, 1.001, 1.06}, Case{"dgx1-v100", 1, 1.01, 0}, Case{"mi300x", 1, 1.001, 1.075}, Case{"dgx-h100", 2, 1.01, 0}}) {
    CAPTURE(c.node);
    Topology t = collkit::topo::synth({c.node, c.hosts, ""});
    int p = static_cast<int>(t.num_ranks());
    Request req{Collective::AlltoAll, std::uint64_t{1} << 30, p, 0};
    auto plan = generate("synth", req, &t);
    VerifyResult v = verify(*plan);
    CHECK_MESSAGE(v.ok, v.error);
    SimOptions fair;
    fair.model = LinkModel::MaxMin;
    double lp = param(*plan, "lp_us"), us = simulate(*plan, t, fair).time_us, queue = simulate(*plan, t).time_us;
    double bound = lower_bound(req, t).bandwidth_us;
    MESSAGE(std::string(c.node) << " x" << c.hosts << ": LP " << lp << " us, cut bound " << bound << " us, simulated " << us
                                << " us (Queue " << queue << " us)");
    CHECK(lp >= bound * (1 - 1e-6));  // the simplex's tolerance
    CHECK(plan->info().params.count("host_chunks") == (c.host > 0 ? 1u : 0u));
    // The optimum the plan states is the LP over every path its sends may take: no plan beats it.
    CHECK(us >= lp * (1 - 1e-9));
    CHECK(queue >= lp * (1 - 1e-9));
    if (c.host > 0) {
      double routes_lp = static_cast<double>(req.bytes / static_cast<std::uint64_t>(p)) * 1e-3 / synth::max_concurrent_flow(t, p).rate_gbps;
      CHECK(us >= bound * (1 - 1e-9));
      CHECK(queue < routes_lp);
      CHECK(queue <= bound * c.host);
    } else {
      CHECK(us >= lp * (1 - 1e-9));
      CHECK(us <= lp * 1.02);
      CHECK(queue <= lp * c.queue);
    }
    if (c.hosts == 1) check_plan(*generate("synth", {Collective::AlltoAll, 8 * 64 * std::uint64_t(p * p), p, 0, 8}, &t, eight_chunks()));
  }
}

TEST_CASE("synth alltoall: ranks sharing a vertex copy through its local bandwidth") {
  // Two GPUs of two ranks each on a switch. Straight, the two pairs inside a GPU take 2 lambda of
  // its 20 GB/s copy bandwidth (lambda = 10) while the links carry 4 lambda of 100; relaying a
  // share x of them through the other GPU's ranks trades copy for link: 2 lambda (1 - x) <= 20
  // and 4 lambda (1 + x) <= 100 give lambda* = 17.5 at x = 3/7.
  Topology t = uniform(2, 100, 1);
  for (collkit::topo::VertexId v : {collkit::topo::VertexId{1}, collkit::topo::VertexId{2}}) t.mutable_vertex(v).local_bw_gbps = 20;
  t.add_rank(1);
  t.add_rank(2);
  Request req{Collective::AlltoAll, std::uint64_t{1} << 30, 4, 0};
  auto plan = generate("synth", req, &t);
  CHECK(param(*plan, "lp_gbps") == doctest::Approx(17.5).epsilon(1e-8));
  CHECK_FALSE(plan->info().params.at("relays").empty());
  SimOptions fair;
  fair.model = LinkModel::MaxMin;
  double lp = param(*plan, "lp_us"), us = simulate(*plan, t, fair).time_us;
  CHECK(us >= lp * (1 - 1e-9));
  CHECK(us <= lp * 1.001);
  check_plan(*generate("synth", {Collective::AlltoAll, 8 * 64 * 16, 4, 0, 8}, &t, eight_chunks()));
  // All ranks on one vertex of unknown copy speed: nothing bounds the rate, no LP optimum stated.
  Topology one = uniform(1, 100, 1);
  for (int r = 0; r < 2; ++r) one.add_rank(1);
  auto free = generate("synth", {Collective::AlltoAll, 8 * 64 * 9, 3, 0, 8}, &one);
  CHECK(free->info().params.count("lp_us") == 0);
  check_plan(*free);
}

TEST_CASE("synth alltoall: a changed relay is caught, bad input refused") {
  Topology ring = ring_of_routers(40);
  auto plan = generate("synth", {Collective::AlltoAll, 1 << 22, 4, 0}, &ring);
  CHECK(verify(*plan).ok);
  // A relay forwards the wrong chunk of what it holds.
  ExplicitPlan bad = materialize(*plan);
  bool changed = false;
  for (int r = 0; r < 4 && !changed; ++r)
    for (Op& o : bad.mutable_program(r))
      if (!changed && o.type == OpType::Send && o.src.buf == Buf::Scratch) {
        o.src.chunk ^= 1;
        changed = true;
      }
  REQUIRE(changed);
  CHECK_FALSE(verify_error(bad).empty());

  std::string why;
  Request req{Collective::AlltoAll, 1 << 20, 4, 0};
  CHECK_FALSE(algorithm("synth").supports(req, nullptr, &why));
  CHECK(why == "AlltoAll needs a topology (the flow LP runs over its routes)");
  CHECK_THROWS_WITH_AS(generate("synth", req, nullptr),
                       "algorithm synth cannot do alltoall on 4 ranks: AlltoAll needs a topology (the flow LP runs over its routes)",
                       collkit::InputError);
  Topology big = uniform(257, 100, 1);
  CHECK_THROWS_WITH_AS(generate("synth", {Collective::AlltoAll, 257 << 10, 257, 0}, &big),
                       "algorithm synth cannot do alltoall on 257 ranks: the AlltoAll flow LP takes at most 64 ranks, beyond (up to 256) "
                       "only where the straight routes reach the cut bound, not here: more than 256 ranks",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(generate("synth", {Collective::AlltoAll, 1 << 20, 8, 0}, &ring),
                       "algorithm synth cannot do alltoall on 8 ranks: the topology has fewer ranks", collkit::InputError);
  // The stored relays are checked when a program is made.
  PlanInfo info = plan->info();
  auto refused = [&](const std::string& relays) {
    info.params["relays"] = relays;
    return GeneratedPlan(info, algorithm("synth"));
  };
  CHECK_THROWS_WITH_AS(refused("0>2").program(0), "synth: plan parameter relays: expected s>via>d:chunks at character 2",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(refused("0>0>2:1").program(0),
                       "synth: plan parameter relays: 0>0>2:1 is not three distinct ranks 0..3 and a positive chunk count",
                       collkit::InputError);
  CHECK_THROWS_WITH_AS(refused("1>0>2:1;0>1>2:1").program(0), "synth: plan parameter relays: relays out of order at 1",
                       collkit::InputError);
  info.params["relays"] = plan->info().params.at("relays");
  auto lanes = [&](const std::string& text) {
    PlanInfo x = info;
    x.params["lanes"] = text;
    return GeneratedPlan(x, algorithm("synth"));
  };
  CHECK_THROWS_WITH_AS(lanes("0,1,2").program(0), "synth: plan parameter lanes: 1 ranks, expected 4", collkit::InputError);
  CHECK_THROWS_WITH_AS(lanes("0,2,1;0,1,2;0,1,2;0,1,2").program(0),
                       "synth: plan parameter lanes: expected the next lane number at character 2", collkit::InputError);
  CHECK_THROWS_WITH_AS(lanes("0,1;0,1,2;0,1,2;0,1,2").program(0), "synth: plan parameter lanes: rank 0 has 2 peers, expected 3",
                       collkit::InputError);
  PlanInfo few = info;
  few.params["lanes"] = "0,1,2;0,1,2;0,1,2;0,1,2";  // a lane per peer: 12 channels before the relays'
  few.channels = 12;
  auto relayed = std::count(few.params.at("relays").begin(), few.params.at("relays").end(), ';') + 1;
  CHECK_THROWS_WITH_AS(
      GeneratedPlan(few, algorithm("synth")).program(0),
      ("synth: plan parameters lanes and relays need " + std::to_string(12 + relayed) + " channels, the plan has 12").c_str(),
      collkit::InputError);
  REQUIRE(info.params.at("pipeline") == "64");
  CHECK_THROWS_WITH_AS(refused("0>1>2:65").program(0), "synth: plan parameter relays: commodity 0>2 relays more than its 64 chunks",
                       collkit::InputError);
}

TEST_CASE("synth alltoall: hosts with more NICs than ranks spread each lane over them (lane_nics)") {
  // A 3x3 torus of one GPU a host, two NICs a host: through its own NIC alone each rank sends its
  // 8 blocks at 25 GB/s, the LP over those routes is 1.26 x the bound (each GPU's 31.5 GB/s PCIe
  // link); each lane through both NICs in turn reaches the bound under MaxMin, and so does the
  // LP through any NIC.
  collkit::topo::Topology t = collkit::topo::synth({"pcie-8gpu:gpus=1", 9, "torus:dims=3x3"});
  Request req{Collective::AlltoAll, 9ull * 64 * 64 * 1024, 9, 0};
  auto plan = generate("synth", req, &t, {});
  const PlanInfo& info = plan->info();
  REQUIRE(info.params.count("lane_nics"));
  CHECK(info.params.at("lane_nics") == "2");
  CHECK(info.channel_nics == std::vector<std::int16_t>{0, 1});
  CHECK(verify(*plan).ok);
  SimOptions maxmin;
  maxmin.model = LinkModel::MaxMin;
  double bound = lower_bound(req, t).time_us(), fair = simulate(*plan, t, maxmin).time_us, lp = std::stod(info.params.at("lp_us"));
  // The LP the relays come from keeps to each rank's own NIC (25 GB/s over 8 blocks); the one the
  // plan states may take both, and is the bound.
  double own_lp = static_cast<double>(req.bytes / 9) * 1e-3 / synth::max_concurrent_flow(t, 9).rate_gbps;
  CHECK(own_lp == doctest::Approx(static_cast<double>(req.bytes / 9) * 1e-3 / (25.0 / 8)).epsilon(1e-6));
  CHECK(lp == doctest::Approx(bound).epsilon(1e-6));
  synth::ConcurrentFlow any_nic = synth::max_concurrent_flow(t, 9, {.every_nic = true});
  CHECK(any_nic.rate_gbps == doctest::Approx(31.5 / 8).epsilon(1e-9));
  CHECK(any_nic.paths == 9 * 8 * 2 - 9 * 8);                                 // through NIC 0 or 1; the own NIC's path is the route
  CHECK(synth::max_concurrent_flow(t, 9, {.host_paths = true}).paths == 0);  // one rank a host
  PlanInfo one = info;
  one.params.erase("lane_nics");
  one.channel_nics.clear();
  one.channels = static_cast<std::uint16_t>(info.channels / 2);
  double own = simulate(GeneratedPlan(one, algorithm("synth")), t, maxmin).time_us;
  MESSAGE("3x3 torus AlltoAll, MaxMin: " << fair / bound << " x the bound through both NICs, " << own / bound << " through its own");
  CHECK(fair <= bound * 1.01);
  CHECK(fair >= lp * (1 - 1e-6));
  CHECK(fair < 0.9 * own_lp);
  CHECK(own >= own_lp * (1 - 1e-6));
  // A 4x4 torus: the LP over the own-NIC routes relays (1.09 x the bound); lanes through both
  // NICs without relays send an antipodal pair's chunks both ways round its ring of 4. Both
  // reach the bound under MaxMin; Queue now prefers the plan without lane_nics (1.006 x, lanes 1.012;
  // 1.082 and 1.054 under the Queue model before 2026-12-07: docs/plan.md, "Link models").
  collkit::topo::Topology t44 = collkit::topo::synth({"pcie-8gpu:gpus=1", 16, "torus:dims=4x4"});
  Request req44{Collective::AlltoAll, std::uint64_t{256} << 20, 16, 0};
  auto plan44 = generate("synth", req44, &t44, {});
  CHECK(verify(*plan44).ok);
  double bound44 = lower_bound(req44, t44).time_us(), fair44 = simulate(*plan44, t44, maxmin).time_us;
  MESSAGE("4x4 torus AlltoAll, MaxMin: " << fair44 / bound44 << " x the bound");
  CHECK(fair44 <= bound44 * 1.01);
  // The Queue model's prediction against the bound (a model figure; no clock is read).
  double predicted44 = simulate(*plan44, t44).time_us;
  CHECK(predicted44 <= bound44 * 1.015);
  // Where each rank has a NIC of its own (DGX hosts) lanes keep to it.
  collkit::topo::Topology two = collkit::topo::synth({"dgx-h100", 2, ""});
  CHECK_FALSE(generate("synth", {Collective::AlltoAll, 16ull * 16 * 64 * 1024, 16, 0}, &two, {})->info().params.count("lane_nics"));
  // Out of range, or beside relays, refused in one line.
  int refused = 0;
  for (const char* bad : {"0", "9"}) {
    PlanInfo b = info;
    b.params["lane_nics"] = bad;
    CHECK_THROWS_WITH_AS(GeneratedPlan(b, algorithm("synth")).program(0),
                         (std::string("synth: plan parameter lane_nics ") + bad + " is not 1 to 8" +
                          (std::string(bad) == "9" ? " (1 where chunks are relayed or staged through host memory)" : ""))
                             .c_str(),
                         collkit::InputError);
    ++refused;
  }
  CHECK(refused == 2);
}

TEST_CASE("synth alltoall: beyond 64 ranks the straight routes, where they reach the cut bound") {
  // 65 ranks on one switch: every rank's link carries its 64 pieces each way, the cut bound's, so
  // no LP is solved and nothing is relayed; the plan verifies and lands near the bound.
  Topology star = uniform(65, 100, 1);
  Request req{Collective::AlltoAll, std::uint64_t{65} << 16, 65, 0};
  auto plan = generate("synth", req, &star);
  CHECK(plan->info().params.at("lp") == "routes");
  CHECK(plan->info().params.at("relays").empty());
  CHECK(param(*plan, "lp_gbps") == doctest::Approx(100.0 / 64));
  CHECK_MESSAGE(verify(*plan).ok, verify(*plan).error);
  double ratio_predicted = simulate(*plan, star).time_us / lower_bound(req, star).time_us();  // no clock is read
  MESSAGE("65 ranks on one switch: " << ratio_predicted << " x the bound");
  CHECK(ratio_predicted <= 1.1);
  std::string why;
  CHECK_FALSE(algorithm("synth").in_auto(req, &star, &why));
  CHECK(why == "auto weighs synth's AlltoAll up to 64 ranks (beyond, --algo synth makes it)");
  // A GB200 NVL72 rack: the routes keep to NVLink, the bound counts the Grace C2C links beside it.
  Topology rack = collkit::topo::synth({"gb200-nvl72", 1, ""});
  CHECK_THROWS_WITH_AS(generate("synth", {Collective::AlltoAll, std::uint64_t{72} << 16, 72, 0}, &rack),
                       "algorithm synth cannot do alltoall on 72 ranks: the AlltoAll flow LP takes at most 64 ranks, beyond (up to 256) "
                       "only where the straight routes reach the cut bound, not here: the straight routes take 1.250 x the cut bound's "
                       "time",
                       collkit::InputError);
}
