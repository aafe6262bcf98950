// One root's trees by rails with unequal shares (param tree_chunks; docs/synth.md, "Trees by rails
// on a degraded cluster"): where a NIC is slower than its rail's others, the trees through it get
// fewer chunks, so that every tree ends together, as the LP over the trees' arcs gives. Read back
// from generated plans, checked against the link the trees cross, verified, computed by the
// interpreter and simulated against the same plan with equal shares.

#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/synth_read.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/show.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/synth_info.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/routing.h"
#include "plan/sim_topologies.h"
#include "plan_testing.h"

using namespace collkit;
using namespace collkit::plan;

namespace {

// Trees by rails alone (--inter symmetric), m chunks a tree.
PlanInfo rails_plan(const topo::Topology& t, Collective c, int root, int m, std::uint64_t bytes = std::uint64_t{1} << 30) {
  AlgoOptions o;
  o.inter = "symmetric";
  o.pipeline = m;
  PlanInfo info = algorithm("synth").layout({c, bytes, static_cast<int>(t.num_ranks()), root}, &t, o);
  info.algorithm = "synth";
  return info;
}

}  // namespace

TEST_CASE(
    "synth tree weights: a NIC at half rate, the trees through it take fewer chunks, verified, computed and faster than equal shares") {
  // 2 x dgx-h100 (16 ranks), host 1's NIC 2 at 25 GB/s of 50: the trees of rail 2 enter host 1
  // through it. With equal shares they set the pace of all (half the rate); by the LP the other
  // rails' trees carry more, at the rate of host 1's NICs, 375 of 400 GB/s.
  topo::Topology t = testing::preset("dgx-h100", 2);
  topo::LinkId slow = testing::link_between(t, "node1/nic2", "fabric/leaf2.0");
  t.mutable_link(slow).bw_gbps /= 2;
  int checked = 0;
  for (Collective c : {Collective::Broadcast, Collective::Reduce})
    for (int root : {0, 11}) {
      CAPTURE(to_string(c));
      CAPTURE(root);
      const int m = 16;
      PlanInfo w = rails_plan(t, c, root, m);
      REQUIRE(w.params.count("tree_chunks") == 1);
      GeneratedPlan weighted(w, algorithm("synth"));
      SynthTrees st = read_synth_trees(w);
      REQUIRE(st.chunks.size() == st.trees.size());
      CHECK(std::accumulate(st.chunks.begin(), st.chunks.end(), 0) == st.k * m);
      CHECK(weights_note(w) == ", tree shares " + w.params.at("tree_chunks") + " chunks");  // coll-plan's summary lines
      // The trees through the slow link carry less on average than those off it, and at the
      // packed rate (the LP's: host 1's NICs, 7.5 of 8 at 50 GB/s) their share fits its 25 GB/s
      // (each tree crosses it once, one way), to the rounding of whole chunks.
      int through = 0, through_chunks = 0, off_chunks = 0;
      for (std::size_t j = 0; j < st.trees.size(); ++j) {
        bool on = testing::tree_crosses(t, st.trees[j], slow);
        through += on;
        (on ? through_chunks : off_chunks) += st.chunks[j];
      }
      const int trees = static_cast<int>(st.trees.size());
      REQUIRE(through >= 1);
      REQUIRE(through < trees);
      CHECK(static_cast<double>(through_chunks) / through < static_cast<double>(off_chunks) / (trees - through));
      const double packed = std::stod(w.params.at("packed_gbps"));
      CHECK(packed == doctest::Approx(375.0).epsilon(0.01));
      CHECK(packed * through_chunks / (st.k * m) <= 25.0 * 1.05);
      SynthInfo si = synth_info(weighted, &t, {});
      CHECK(si.tree_chunks == st.chunks);
      CHECK(describe_synth_info(si).find("chunks per tree on average, shares " + w.params.at("tree_chunks")) != std::string::npos);
      // Equal shares: the same trees and chunks, tree_chunks dropped.
      PlanInfo e = w;
      e.params.erase("tree_chunks");
      GeneratedPlan equal(e, algorithm("synth"));
      CHECK(verify(weighted).ok);
      double weighted_over_equal_predicted = simulated_us(weighted, t) / simulated_us(equal, t);  // no clock is read
      CHECK(weighted_over_equal_predicted < 0.7);
      ++checked;
    }
  // At 2 chunks a tree, verified and computed by the interpreter at a few elements a chunk.
  PlanInfo small = rails_plan(t, Collective::Broadcast, 3, 2, std::uint64_t{1} << 20);
  REQUIRE(small.params.count("tree_chunks") == 1);
  small.req.bytes = std::uint64_t{8} * small.in_chunks;
  small.req.elem_bytes = 8;
  testing::check_plan(GeneratedPlan(small, algorithm("synth")));
  PlanInfo reduce = rails_plan(t, Collective::Reduce, 0, 2, std::uint64_t{1} << 20);
  REQUIRE(reduce.params.count("tree_chunks") == 1);
  reduce.req.bytes = std::uint64_t{8} * reduce.in_chunks;
  reduce.req.elem_bytes = 8;
  testing::check_plan(GeneratedPlan(reduce, algorithm("synth")));
  CHECK(checked == 4);
}

TEST_CASE("synth tree weights: trees by rails on NVLink and xGMI hosts keep equal shares, and where PCIe hosts' differ they are faster") {
  // NVLink and xGMI hosts load every rail's trees alike. On PCIe hosts the trees whose root's
  // piece is relayed by each rank in turn do not (Reduce on 2 x pcie-8gpu at 16 chunks a tree:
  // 43724 us with equal shares, 40419 with the LP's).
  int equal = 0, faster = 0;
  for (const char* node : {"dgx-a100", "dgx-h100", "mi300x", "dgx1-v100", "pcie-8gpu"})
    for (Collective c : {Collective::Broadcast, Collective::Reduce}) {
      CAPTURE(std::string(node));
      CAPTURE(to_string(c));
      topo::Topology t = testing::preset(node, 2);
      PlanInfo info = rails_plan(t, c, 0, 16);
      if (std::string(node) != "pcie-8gpu" || info.params.count("tree_chunks") == 0) {
        CHECK(info.params.count("tree_chunks") == 0);
        CHECK(weights_note(info).empty());
        ++equal;
        continue;
      }
      PlanInfo e = info;
      e.params.erase("tree_chunks");
      double weighted_over_equal_predicted = simulated_us(GeneratedPlan(info, algorithm("synth")), t) /
                                             simulated_us(GeneratedPlan(e, algorithm("synth")), t);  // no clock is read
      CHECK(weighted_over_equal_predicted < 1.0);
      ++faster;
    }
  CHECK(equal + faster == 10);
  CHECK(equal >= 8);
}

TEST_CASE("synth tree weights: malformed tree_chunks in a plan file are refused in one line") {
  topo::Topology t = testing::preset("dgx-h100", 2);
  t.mutable_link(testing::link_between(t, "node1/nic2", "fabric/leaf2.0")).bw_gbps /= 2;
  PlanInfo good = rails_plan(t, Collective::Broadcast, 0, 2, std::uint64_t{1} << 20);
  REQUIRE(good.params.count("tree_chunks") == 1);
  const std::size_t trees = read_synth_trees(good).trees.size();
  std::vector<int> shifted = algo::param_ints("tree_chunks", good.params.at("tree_chunks"), 1, 1 << 30, "");
  shifted[0] += 1;  // the sum one past channels x pipeline
  std::string ones;
  for (std::size_t j = 0; j < trees; ++j) ones += (j ? "," : "") + std::string("1");
  int checked = 0;
  for (const std::string& bad : {std::string(""), std::string("2,2"), std::string("0,") + good.params.at("tree_chunks"), ones,
                                 algo::format_order(shifted), std::string("x")}) {
    CAPTURE(bad);
    std::string what = testing::refusal(good, "synth", "tree_chunks", bad);
    CHECK(what != "accepted");
    CHECK(what.find("tree_chunks") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
    ++checked;
  }
  // On every rank's trees (AllGather), where shares are not laid out.
  PlanInfo ag = algorithm("synth").layout({Collective::AllGather, std::uint64_t{1} << 20, 16, 0}, &t, {});
  ag.params["tree_chunks"] = "1";
  CHECK_THROWS_WITH_AS(GeneratedPlan(ag, algorithm("synth")).program(0),
                       "synth: plan parameter tree_chunks: shares are for one root's trees, without host chunks, host arcs or rings",
                       InputError);
  CHECK(checked == 6);
}
