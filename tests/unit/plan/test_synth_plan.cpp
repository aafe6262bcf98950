#include <doctest/doctest.h>

#include <algorithm>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using collkit::topo::Topology;

TEST_CASE("synth plan: AllGather from packed trees verifies and nears the bound") {
  // The factors are what the simulator gives today (docs/synth.md, "The synth algorithm"): the
  // bound counts GPUs relaying over PCIe, which the routes of GPU-to-GPU sends never take
  // (dgx-a100 x1: ring 1.106, synth 1.19; mi300x x1: ring 7.99, synth 1.14), and a pipelined
  // tree pays its depth.
  struct Case {
    const char* node;
    int hosts;
    double factor;    // simulated time over the bound, at most
    bool beats_ring;  // and below ring's
  };
  for (Case c :
       {Case{"dgx-a100", 1, 1.25, false}, Case{"dgx-a100", 2, 1.2, true}, Case{"dgx1-v100", 1, 1.5, true}, Case{"mi300x", 1, 1.2, true}}) {
    CAPTURE(c.node);
    CAPTURE(c.hosts);
    Topology t = collkit::topo::synth({c.node, c.hosts, ""});
    int p = static_cast<int>(t.num_ranks());
    Request req{Collective::AllGather, std::uint64_t{1} << 30, p, 0};
    auto plan = generate("synth", req, &t);
    VerifyResult v = verify(*plan);
    CHECK_MESSAGE(v.ok, v.error);
    int k = std::stoi(plan->info().params.at("channels"));
    CHECK(plan->info().channels % (p * k) == 0);  // a channel per tree arc slot
    double bound = lower_bound(req, t).time_us();
    double us = simulate(*plan, t).time_us;
    MESSAGE(std::string(c.node) << " x" << c.hosts << ": k " << k << ", simulated " << us << " us, bound " << bound << " us");
    CHECK(us >= bound * (1 - 1e-9));
    CHECK(us <= bound * c.factor);
    if (c.beats_ring) CHECK(us < simulate(*generate("ring", req, &t), t).time_us);
    // Param "channels" is the --channels flag that makes the same plan again (auto states it).
    AlgoOptions again;
    again.channels = k;
    CHECK(generate("synth", req, &t, again)->info().params == plan->info().params);
  }
}

TEST_CASE("synth plan: ReduceScatter on the reversed trees verifies and nears the bound") {
  struct Case {
    const char* node;
    int hosts;
    double factor;
    bool beats_ring;
  };
  for (Case c :
       {Case{"dgx-a100", 1, 1.15, false}, Case{"dgx-a100", 2, 1.3, true}, Case{"dgx1-v100", 1, 1.5, true}, Case{"mi300x", 1, 1.2, true}}) {
    CAPTURE(c.node);
    CAPTURE(c.hosts);
    Topology t = collkit::topo::synth({c.node, c.hosts, ""});
    int p = static_cast<int>(t.num_ranks());
    Request req{Collective::ReduceScatter, std::uint64_t{1} << 30, p, 0};
    auto plan = generate("synth", req, &t);
    VerifyResult v = verify(*plan);
    CHECK_MESSAGE(v.ok, v.error);
    double bound = lower_bound(req, t).time_us();
    double us = simulate(*plan, t).time_us;
    MESSAGE(std::string(c.node) << " x" << c.hosts << ": simulated " << us << " us, bound " << bound << " us");
    CHECK(us >= bound * (1 - 1e-9));
    CHECK(us <= bound * c.factor);
    if (c.beats_ring) CHECK(us < simulate(*generate("ring", req, &t), t).time_us);
  }
}

TEST_CASE("synth plan: AllReduce as ReduceScatter up the trees then AllGather down them") {
  // Against the best of the classic AllReduce algorithms (ring, tree, hier, twoshot, rhd,
  // direct) on the same topology.
  struct Case {
    const char* node;
    int hosts;
    double factor;
    bool beats_classic;
  };
  for (Case c : {Case{"dgx-a100", 1, 1.2, false}, Case{"dgx-a100", 2, 1.2, true}, Case{"dgx1-v100", 1, 1.5, true}}) {
    CAPTURE(c.node);
    CAPTURE(c.hosts);
    Topology t = collkit::topo::synth({c.node, c.hosts, ""});
    int p = static_cast<int>(t.num_ranks());
    Request req{Collective::AllReduce, std::uint64_t{1} << 30, p, 0};
    auto plan = generate("synth", req, &t);
    VerifyResult v = verify(*plan);
    CHECK_MESSAGE(v.ok, v.error);
    double bound = lower_bound(req, t).time_us();
    double us = simulate(*plan, t).time_us;
    double classic = 1e300;
    for (const char* a : {"ring", "tree", "hier", "twoshot", "rhd", "direct"})
      if (algorithm(a).supports(req, &t, nullptr)) classic = std::min(classic, simulate(*generate(a, req, &t), t).time_us);
    MESSAGE(std::string(c.node) << " x" << c.hosts << ": simulated " << us << " us, best classic " << classic << " us, bound " << bound
                                << " us");
    CHECK(us >= bound * (1 - 1e-9));
    CHECK(us <= bound * c.factor);
    if (c.beats_classic) CHECK(us < classic);
  }
}

TEST_CASE("synth plan: a star, a changed tree edge caught, bad trees refused") {
  Topology star = uniform(4, 100, 1);
  Request req{Collective::AllGather, 1 << 20, 4, 0};
  auto plan = generate("synth", req, &star);
  CHECK(verify(*plan).ok);
  // Rank 1 receives tree 0's chunks from a rank that does not send them.
  ExplicitPlan bad = materialize(*plan);
  bool changed = false;
  for (Op& o : bad.mutable_program(1))
    if (!changed && o.type == OpType::Recv && o.channel == 0) {
      o.peer = o.peer == 2 ? 3 : 2;
      changed = true;
    }
  REQUIRE(changed);
  CHECK_FALSE(verify(bad).ok);
  // ReduceScatter: a partial sum sent up to the wrong parent.
  auto rs = generate("synth", {Collective::ReduceScatter, 1 << 20, 4, 0}, &star);
  CHECK(verify(*rs).ok);
  ExplicitPlan bad_rs = materialize(*rs);
  changed = false;
  for (Op& o : bad_rs.mutable_program(1))
    if (!changed && o.type == OpType::Send && o.channel == 0) {
      o.peer = o.peer == 2 ? 3 : 2;
      changed = true;
    }
  REQUIRE(changed);
  CHECK_FALSE(verify(bad_rs).ok);
  // AllReduce: the root sends a chunk's total before it has summed it.
  auto ar = generate("synth", {Collective::AllReduce, 1 << 20, 4, 0}, &star);
  CHECK(verify(*ar).ok);
  ExplicitPlan bad_ar = materialize(*ar);
  changed = false;
  for (Op& o : bad_ar.mutable_program(0))
    if (!changed && o.type == OpType::Send && o.num_deps() == 1) {
      o.deps.fill(kNoDep);
      changed = true;
    }
  REQUIRE(changed);
  CHECK_FALSE(verify(bad_ar).ok);
  // The stored trees are checked when a program is made.
  PlanInfo info = plan->info();
  info.params["trees"] = "-1,0,0,0";
  GeneratedPlan one_tree(info, algorithm("synth"));
  CHECK_THROWS_WITH_AS(one_tree.program(0), "synth: plan parameter trees: 1 trees, expected 4", collkit::InputError);
  info.params["trees"] = "-1,0,0,0;1,-1,3,2;2,2,-1,2;3,3,3,-1";
  GeneratedPlan cycle(info, algorithm("synth"));
  CHECK_THROWS_WITH_AS(cycle.program(0), "synth: plan parameter trees: tree 1 does not lead rank 2 to its root 1", collkit::InputError);
  info.params["trees"] = "-1,-1,0,0;1,-1,1,1;2,2,-1,2;3,3,3,-1";
  GeneratedPlan two_roots(info, algorithm("synth"));
  CHECK_THROWS_WITH_AS(two_roots.program(0), "synth: plan parameter trees: tree 0 does not lead rank 1 to its root 0", collkit::InputError);
  // More trees than a plan has channels for: refused before synthesising them, or after, when
  // it is the fan-out that takes the channels (a star's trees have fan-out 3).
  AlgoOptions many;
  many.channels = 20000;
  CHECK_THROWS_WITH_AS(generate("synth", req, &star, many),
                       "synth: 20000 trees per rank need at least 80000 channels, more than a plan holds (65535)", collkit::InputError);
  many.channels = 6000;
  CHECK_THROWS_WITH_AS(generate("synth", req, &star, many),
                       "synth: 6000 trees per rank need 72000 channels, more than a plan holds (65535)", collkit::InputError);
  // Not offered where it cannot work yet.
  std::string why;
  CHECK_FALSE(algorithm("synth").supports({Collective::Broadcast, 1 << 20, 4, 0}, &star, &why));
  CHECK(why == "synth does AllGather, ReduceScatter and AllReduce only so far (docs/synth.md)");
}
