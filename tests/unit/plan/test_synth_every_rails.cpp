// Every rank's trees by rails (docs/synth.md, "Every rank's trees by rails"): AllGather,
// ReduceScatter and AllReduce on hosts of one size whose links differ (one NIC slower than its
// rail's others), where host 0's pattern needs hosts alike. Each root's trees are its Broadcast
// trees by rails; the LP gives each tree a share of its root's slice (param tree_units), so that
// the rails off the slow NIC carry what it cannot. Read back from generated plans, checked against
// the bound and the slow link, verified, computed by the interpreter and simulated against equal
// shares; malformed shares in a plan file are refused in one line.

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/synth_read.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/show.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/synth_info.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/routing.h"
#include "plan/sim_topologies.h"
#include "plan_testing.h"
#include "synth/symmetric.h"

using namespace collkit;
using namespace collkit::plan;

namespace {

auto at(int x) { return static_cast<std::size_t>(x); }

// Every rank's trees by rails (--inter rails), m steps a tree (0: the default).
PlanInfo every_rails_plan(const topo::Topology& t, Collective c, int m, std::uint64_t bytes = std::uint64_t{1} << 30) {
  AlgoOptions o;
  o.inter = "rails";
  o.pipeline = m;
  PlanInfo info = algorithm("synth").layout({c, bytes, static_cast<int>(t.num_ranks()), 0}, &t, o);
  info.algorithm = "synth";
  return info;
}

// 4 x dgx-h100 (32 ranks) with host 1's NIC 2 at a quarter of its 50 GB/s: the cut around host 1
// binds (7.25 of 8 rails; at half rate on 4 hosts, or on 2, another cut does).
topo::Topology slow_nic(topo::LinkId* slow = nullptr) {
  topo::Topology t = testing::preset("dgx-h100", 4);
  topo::LinkId l = testing::link_between(t, "node1/nic2", "fabric/leaf2.0");
  t.mutable_link(l).bw_gbps /= 4;
  if (slow) *slow = l;
  return t;
}

}  // namespace

TEST_CASE("synth every rank's trees by rails: a NIC at a quarter rate, the trees through it take fewer units, near the bound's rate") {
  topo::LinkId slow = 0;
  topo::Topology t = slow_nic(&slow);
  int checked = 0;
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
    CAPTURE(to_string(c));
    PlanInfo w = every_rails_plan(t, c, 0);
    REQUIRE(w.params.count("tree_units") == 1);
    SynthTrees st = read_synth_trees(w);
    const int p = 32, k = st.k;
    REQUIRE(st.trees.size() == static_cast<std::size_t>(p * k));
    REQUIRE(st.units.size() == st.trees.size());
    // Every root's trees are rooted at it and its units sum to one slice.
    const int slice = std::accumulate(st.units.begin(), st.units.begin() + k, 0);
    for (int r = 0; r < p; ++r) {
      CHECK(std::accumulate(st.units.begin() + r * k, st.units.begin() + (r + 1) * k, 0) == slice);
      CHECK(st.trees[static_cast<std::size_t>(r * k)][static_cast<std::size_t>(r)] == -1);
    }
    // The trees through the slow link carry fewer units on average than those off it.
    int through = 0, through_units = 0, off_units = 0;
    for (std::size_t j = 0; j < st.trees.size(); ++j) {
      bool on = testing::tree_crosses(t, st.trees[j], slow);
      through += on;
      (on ? through_units : off_units) += st.units[j];
    }
    const int trees = p * k;
    REQUIRE(through >= 1);
    REQUIRE(through < trees);
    CHECK(static_cast<double>(through_units) / through < 0.75 * static_cast<double>(off_units) / (trees - through));
    // The LP's rate per root is near the bound's (host 1's NICs, 7.25 of 8 rails; the bound also
    // counts PCIe paths no route takes, 1.2% here): a root's slice at it takes about the bound's
    // time, a phase of AllReduce's two.
    const double packed = std::stod(w.params.at("packed_gbps"));
    const double slice_bytes = static_cast<double>(w.req.bytes) / p, phases = c == Collective::AllReduce ? 2 : 1;
    const double bound_us = c == Collective::AllReduce ? lower_bound(w.req, t).rs_ag_us : lower_bound(w.req, t).time_us();
    CHECK(phases * slice_bytes / packed * 1e-3 == doctest::Approx(bound_us).epsilon(0.02));
    GeneratedPlan weighted(w, algorithm("synth"));
    CHECK(weights_note(w).find(", tree shares ") == 0);  // coll-plan's summary lines: rank 0's k shares
    SynthInfo si = synth_info(weighted, nullptr, {});
    CHECK(si.tree_units == std::vector<int>(st.units.begin(), st.units.begin() + k));
    CHECK(describe_synth_info(si).find("units of a root's slice") != std::string::npos);
    CHECK(verify(weighted).ok);
    // Equal shares (each tree a k-th of the slice, the same buffers): the slow rail sets every
    // root's pace.
    REQUIRE(slice % k == 0);
    PlanInfo e = w;
    e.params["tree_units"] = algo::format_order(std::vector<int>(st.units.size(), slice / k));
    double weighted_over_equal_predicted = simulated_us(weighted, t) / simulated_us(GeneratedPlan(e, algorithm("synth")), t);  // no clock
    CHECK(weighted_over_equal_predicted < 0.75);
    ++checked;
  }
  CHECK(checked == 3);
}

TEST_CASE("synth every rank's trees by rails: a host short of a GPU, its rails lined up by device index, near the routed optimum") {
  // 3 x dgx-h100 with node1's GPU 3 left out (23 ranks): node1's slot 3 is empty, GPU 4 stands in
  // for it (its NIC carries rails 3 and 4), and node1's NIC 3, which no GPU's route takes, is lost
  // to every plan: the routed optimum is below the bound's, which counts a PCIe path to it.
  topo::Topology t = testing::without_rank(testing::preset("dgx-h100", 3), "node1/gpu3");
  const int p = 23;
  REQUIRE(t.num_ranks() == p);
  std::string why;
  std::optional<synth::HostGrid> g = synth::rail_hosts(t, p, &why);
  REQUIRE_MESSAGE(g, why);
  CHECK((g->num_hosts() == 3 && g->local == 8 && g->holes()));
  CHECK(g->rank[at(8 + 3)] == -1);
  CHECK(t.vertex(t.rank_vertex(static_cast<topo::Rank>(g->holder(1, 3)))).id == "node1/gpu4");
  CHECK_FALSE(synth::equal_hosts(t, p, nullptr));
  int checked = 0;
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
    CAPTURE(to_string(c));
    PlanInfo w = every_rails_plan(t, c, 0, std::uint64_t{p} << 22);  // 4 MiB a rank
    GeneratedPlan plan(w, algorithm("synth"));
    CHECK(verify(plan).ok);
    // The LP's shares reach nearly the best the routes allow, which the bound's cut exceeds.
    SynthInfo si = synth_info(plan, &t, {});
    CHECK(si.packed_gbps > 0.95 * si.routed_gbps);
    CHECK(si.routed_gbps < 0.97 * si.optimal_gbps);
    // The ring enters and leaves the short host over fewer rails than its other hosts.
    double rails_over_ring = simulated_us(plan, t) / simulated_us(*generate("ring", w.req, &t), t);  // no clock
    CHECK(rails_over_ring < 0.9);
    ++checked;
  }
  CHECK(checked == 3);
  // Broadcast from a root on the short host (rank 10, node1's GPU 2): piece 3 taken there by GPU 4,
  // which stands in for the slot, near the routed optimum (the root sending it off itself ran 1.22
  // x that).
  PlanInfo bcast = algorithm("synth").layout({Collective::Broadcast, std::uint64_t{p} << 22, p, 10}, &t, {});
  bcast.algorithm = "synth";
  GeneratedPlan rooted(bcast, algorithm("synth"));
  CHECK(verify(rooted).ok);
  SynthInfo bi = synth_info(rooted, &t, {});
  const double simulated_over_routed = bi.time_us / bi.routed_us;  // the simulator's prediction over the routed optimum's: no clock
  CHECK(simulated_over_routed < 1.08);
  CHECK(algorithm("synth").in_auto({Collective::AllGather, std::uint64_t{p} << 22, p, 0}, &t, &why));
  CHECK(plan_for("auto", {Collective::AllGather, std::uint64_t{p} << 22, p, 0}, &t)->info().algorithm == "synth");
}

TEST_CASE("synth every rank's trees by rails: computed by the interpreter at a few elements a unit, with and without shares") {
  int checked = 0;
  for (bool degraded : {true, false})
    for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
      CAPTURE(degraded);
      CAPTURE(to_string(c));
      // Two hosts of two PCIe GPUs, host 1's second NIC at a quarter (as coll_run_mpi runs them).
      topo::Topology t = testing::preset("pcie-8gpu:gpus=2", 2);
      if (degraded) t.mutable_link(testing::link_between(t, "node1/nic1", "fabric/leaf1.0")).bw_gbps /= 4;
      PlanInfo info = every_rails_plan(t, c, 2, std::uint64_t{1} << 20);
      CHECK(info.params.count("tree_units") == (degraded ? 1u : 0u));
      // A few elements a chunk: the units (or k m chunks) of each of the 4 slices.
      const std::uint64_t chunks = c == Collective::AllGather ? info.out_chunks : info.in_chunks;
      info.req.bytes = std::uint64_t{8} * chunks;
      info.req.elem_bytes = 8;
      if (info.scratch_chunks > 0) info.scratch_bytes = input_bytes(info.req);
      testing::check_plan(GeneratedPlan(info, algorithm("synth")));
      ++checked;
    }
  CHECK(checked == 6);
}

TEST_CASE("synth every rank's trees by rails: auto's path on 16 and 4 hosts with a slow NIC, not beyond 256 ranks") {
  // 16 x dgx-h100 (128 ranks) with one NIC at half rate: host 0's pattern needs hosts alike, so
  // synth lays every rank's trees by rails out (laid out here, not simulated).
  topo::Topology t = testing::preset("dgx-h100", 16);
  t.mutable_link(testing::link_between(t, "node3/nic2", "fabric/leaf2.0")).bw_gbps /= 2;
  std::string why;
  CHECK(algorithm("synth").in_auto({Collective::AllGather, std::uint64_t{1} << 30, 128, 0}, &t, &why));
  PlanInfo info = algorithm("synth").layout({Collective::AllGather, std::uint64_t{1} << 30, 128, 0}, &t, {});
  CHECK(info.params.count("tree_units") == 1);
  CHECK(info.params.at("rails_fanout") == "1");
  CHECK(info.params.count("sym_grid") == 0);
  // AllReduce on 16 hosts: two heaps of them, 4 steps (8 would pass kEveryRailsSends).
  PlanInfo ar = algorithm("synth").layout({Collective::AllReduce, std::uint64_t{1} << 30, 128, 0}, &t, {});
  CHECK((ar.params.at("rails_fanout") == "2" && ar.params.at("pipeline") == "4"));
  // 7.5 of 8 rails' rate: 3.125 GB/s a root of the healthy 3.333.
  CHECK(std::stod(info.params.at("packed_gbps")) == doctest::Approx(3.125).epsilon(0.001));
  // 4 x dgx-a100 (32 ranks) with one NIC at half rate: the general solver packs no trees over the
  // routes; synth lays every rank's trees by rails out instead, and auto weighs them.
  // The same on 4 x mi300x, whose LP's evenness stages the simplex did not all solve (the
  // optimum's shares stand then).
  int laid_out = 0;
  for (const char* node : {"dgx-a100", "mi300x"}) {
    topo::Topology four = testing::preset(node, 4);
    const std::string nic = std::string(node) == "mi300x" ? "node2/nic0" : "node1/nic5";
    four.mutable_link(testing::link_between(four, nic, "fabric/leaf" + nic.substr(nic.size() - 1) + ".0")).bw_gbps /= 2;
    for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
      CAPTURE(std::string(node));
      CAPTURE(to_string(c));
      Request req{c, std::uint64_t{1} << 30, 32, 0};
      CHECK(algorithm("synth").in_auto(req, &four, &why));
      PlanInfo laid = algorithm("synth").layout(req, &four, {});
      CHECK(laid.params.count("rails_fanout") == 1);
      CHECK(laid.params.count("tree_units") == 1);
      // A chain of the hosts for all three on 4 hosts; the reversed trees at twice their steps
      // (the sends are within kEveryRailsSends): AllGather 4, ReduceScatter 16, AllReduce 16.
      CHECK(laid.params.at("rails_fanout") == "1");
      CHECK(laid.params.at("pipeline") == (c == Collective::AllGather ? "4" : "16"));
      ++laid_out;
    }
  }
  CHECK(laid_out == 6);
  // Beyond 256 ranks it is not offered.
  topo::Topology big = testing::preset("dgx-h100", 40);
  big.mutable_link(testing::link_between(big, "node3/nic2", "fabric/leaf2.0")).bw_gbps /= 2;
  CHECK_FALSE(algorithm("synth").supports({Collective::AllGather, std::uint64_t{1} << 30, 320, 0}, &big, &why));
}

TEST_CASE(
    "synth every rank's trees by rails: malformed tree_units in a plan file, and --inter rails where it does not apply, are refused") {
  topo::Topology t = slow_nic();
  PlanInfo good = every_rails_plan(t, Collective::AllGather, 2, std::uint64_t{4} << 20);
  REQUIRE(good.params.count("tree_units") == 1);
  std::vector<int> units = algo::param_ints("tree_units", good.params.at("tree_units"), 1, 1 << 30, "");
  std::vector<int> shifted = units, moved = units, fewer(units.begin(), units.end() - 1);
  const int k = algo::param_int(good, "channels", 1);
  shifted[static_cast<std::size_t>(k)] += 1;  // root 1's slice one unit more than root 0's
  // One unit from root 0's largest tree to the next: its slice kept.
  const auto top = static_cast<std::size_t>(std::max_element(units.begin(), units.begin() + k) - units.begin());
  moved[top] -= 1;
  moved[(top + 1) % static_cast<std::size_t>(k)] += 1;
  std::vector<int> more = units;
  more[0] += 1;  // root 0's slice past the buffers'
  int checked = 0;
  for (const std::string& bad : {std::string(""), std::string("x"), std::string("0,") + good.params.at("tree_units"),
                                 algo::format_order(fewer), algo::format_order(shifted), algo::format_order(more)}) {
    CAPTURE(bad);
    std::string what = testing::refusal(good, "synth", "tree_units", bad);
    CHECK(what != "accepted");
    CHECK(what.find("tree_units") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
    ++checked;
  }
  // Units moved between a root's trees keep its slice: a valid plan, verified.
  PlanInfo info = good;
  info.params["tree_units"] = algo::format_order(moved);
  CHECK(verify(GeneratedPlan(info, algorithm("synth"))).ok);
  // Not with one root's trees, nor beside tree_chunks.
  AlgoOptions sym;
  sym.inter = "symmetric";
  sym.pipeline = 2;
  PlanInfo bcast = algorithm("synth").layout({Collective::Broadcast, std::uint64_t{1} << 20, 32, 0}, &t, sym);
  bcast.params["tree_units"] = "1";
  CHECK_THROWS_WITH_AS(
      GeneratedPlan(bcast, algorithm("synth")).program(0),
      "synth: plan parameter tree_units: units are for every rank's trees, without host chunks, host arcs, rings or tree_chunks",
      InputError);
  // --inter rails on one host.
  topo::Topology one = testing::preset("dgx-h100", 1);
  AlgoOptions rails;
  rails.inter = "rails";
  CHECK_THROWS_WITH_AS(
      algorithm("synth").layout({Collective::AllGather, std::uint64_t{1} << 20, 8, 0}, &one, rails),
      "synth: --inter rails: every rank's trees by rails are for up to 256 ranks on two hosts or more lined up by rail (of one "
      "size, or short of GPUs: synth::rail_hosts)",
      InputError);
  CHECK(checked == 6);
}
