// Weighted ring channels (algorithms/ring_weights.h): where one channel's ring crosses a slower
// link than the others', its share shrinks so that every ring finishes together. Read back from
// generated plans (param weights), checked against the links the rings cross, verified and computed
// by the interpreter, and simulated against the same plan with equal shares.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/ring_weights.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/show.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"
#include "plan_testing.h"

using namespace collkit;
using namespace collkit::plan;

namespace {

using testing::link_between;

auto at(int x) { return static_cast<std::size_t>(x); }

std::vector<int> parse(const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = std::min(text.find(',', at), text.size());
    out.push_back(std::stoi(text.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

// The same plan with equal shares: no weights, every buffer cut into C units a slice, not U.
PlanInfo equal_shares(const PlanInfo& weighted) {
  std::vector<int> w = parse(weighted.params.at("weights"));
  auto units = static_cast<std::uint32_t>(std::accumulate(w.begin(), w.end(), 0)), channels = static_cast<std::uint32_t>(w.size());
  PlanInfo out = weighted;
  out.params.erase("weights");
  for (std::uint32_t* chunks : {&out.in_chunks, &out.out_chunks, &out.scratch_chunks}) *chunks = *chunks / units * channels;
  return out;
}

// The plan's programs at a few elements a chunk compute every rank's output in the interpreter.
void check_at_few_elements(const PlanInfo& info) {
  PlanInfo small = info;
  small.req.bytes = std::uint64_t{8} * std::max(small.in_chunks, small.out_chunks);
  small.req.elem_bytes = 8;
  if (small.scratch_bytes > 0) small.scratch_bytes = input_bytes(small.req);
  testing::check_plan(GeneratedPlan(small, algorithm("ring")));
}

// Whether channel c's ring (its order in the plan) crosses link l either way.
bool crosses(const topo::Topology& t, const PlanInfo& info, int c, topo::LinkId l, bool chain) {
  std::string key = "order" + std::to_string(c);
  std::vector<int> order = algo::param_order(info, info.params.count(key) ? key : "order", info.req.nranks);
  topo::Router router(t);
  std::size_t hops = chain ? order.size() - 1 : order.size();
  for (std::size_t q = 0; q < hops; ++q)
    for (const topo::Hop& h :
         router.route_ranks(static_cast<topo::Rank>(order[q]), static_cast<topo::Rank>(order[(q + 1) % order.size()])).hops)
      if (h.link == l) return true;
  return false;
}

}  // namespace

TEST_CASE("ring weights: a NIC at half rate takes a smaller share, verified, computed and faster than equal shares") {
  // 2 x dgx-h100 on a rail-optimised fat-tree: eight rings, each leaving one host through one NIC
  // and coming back through another. Host 1's NIC 2 at 25 GB/s of 50 slows the rings through it
  // to half; equal shares leave the whole collective at that pace (about 2 x), shares by the LP let
  // the other rings carry more (64 units a channel, or fewer at the chunk floor).
  topo::Topology t = testing::preset("dgx-h100", 2);
  topo::LinkId slow = link_between(t, "node1/nic2", "fabric/leaf2.0");
  t.mutable_link(slow).bw_gbps /= 2;
  const int p = 16;
  int checked = 0;
  for (Collective c :
       {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce, Collective::Broadcast, Collective::Reduce}) {
    CAPTURE(to_string(c));
    Request req{c, std::uint64_t{1} << 30, p, 0};
    const bool chain = c == Collective::Broadcast || c == Collective::Reduce;
    PlanInfo w = algorithm("ring").layout(req, &t, {});
    REQUIRE(w.params.count("weights") == 1);
    std::vector<int> shares = parse(w.params.at("weights"));
    CHECK(weights_note(w) == ", shares " + w.params.at("weights") + " of a slice");  // coll-plan's summary lines
    int channels = std::stoi(w.params.at("channels"));
    REQUIRE(static_cast<int>(shares.size()) == channels);
    // The rings through the slow link get less than every ring that keeps off it.
    int through = 0;
    int most_through = 0, least_off = 1 << 30;
    for (int ch = 0; ch < channels; ++ch) {
      if (crosses(t, w, ch, slow, chain)) {
        ++through;
        most_through = std::max(most_through, shares[static_cast<std::size_t>(ch)]);
      } else {
        least_off = std::min(least_off, shares[static_cast<std::size_t>(ch)]);
      }
    }
    CHECK(through >= 1);
    CHECK(through < channels);
    CHECK(most_through < least_off);
    GeneratedPlan weighted(w, algorithm("ring")), equal(equal_shares(w), algorithm("ring"));
    CHECK(verify(weighted).ok);
    CHECK(verify(equal).ok);
    double weighted_over_equal_predicted = simulated_us(weighted, t) / simulated_us(equal, t);  // no clock is read
    CHECK(weighted_over_equal_predicted < 0.7);
    check_at_few_elements(w);
    ++checked;
  }
  CHECK(checked == 5);
}

TEST_CASE("ring weights: rings that cross links alike keep equal shares on every preset") {
  int checked = 0;
  for (const char* node : {"dgx-a100", "dgx-h100", "mi300x", "dgx1-v100", "pcie-8gpu", "gb200-nvl72"})
    for (int nodes : {1, 2, 4}) {
      topo::Topology t = testing::preset(node, nodes);
      for (Collective c : {Collective::AllGather, Collective::AllReduce, Collective::Broadcast}) {
        CAPTURE(node);
        CAPTURE(nodes);
        CAPTURE(to_string(c));
        PlanInfo info = algorithm("ring").layout({c, std::uint64_t{1} << 30, static_cast<int>(t.num_ranks()), 0}, &t, {});
        CHECK(info.params.count("weights") == 0);
        CHECK(weights_note(info).empty());
        ++checked;
      }
    }
  CHECK(checked == 6 * 3 * 3);
}

TEST_CASE("ring weights: small messages, bidirectional rings and one channel keep equal shares") {
  topo::Topology t = testing::preset("dgx-h100", 4);
  t.mutable_link(link_between(t, "node1/nic2", "fabric/leaf2.0")).bw_gbps /= 2;
  const int p = 32;
  // At 1 MiB a unit of an AllGather's output would hold under kMinWeightedChunk bytes.
  CHECK(algorithm("ring").layout({Collective::AllGather, std::uint64_t{1} << 20, p, 0}, &t, {}).params.count("weights") == 0);
  CHECK(algorithm("ring").layout({Collective::AllGather, std::uint64_t{1} << 30, p, 0}, &t, {0, 0, true, {}}).params.count("weights") == 0);
  CHECK(algorithm("ring").layout({Collective::AllGather, std::uint64_t{1} << 30, p, 0}, &t, {1, 0, false, {}}).params.count("weights") ==
        0);
  // The units: 64 a channel at most, bounded by the chunks over all ranks and the chunk floor.
  CHECK(algo::weight_units(8, 32, 32, std::uint64_t{1} << 30) == 512);
  CHECK(algo::weight_units(8, 1024, 1024, std::uint64_t{1} << 30) == 16);
  CHECK(algo::weight_units(8, 32, 32, std::uint64_t{1} << 20) == 0);
  CHECK(algo::weight_units(1, 32, 32, std::uint64_t{1} << 30) == 0);
}

TEST_CASE("ring weights: few units on a host short of a GPU are judged by the load they put on links, not a starved channel's rate") {
  // 3 x dgx-h100 with node1's GPU 3 left out: the ring through node1's rail 3 doubles a NIC, and the
  // LP all but starves it (1 unit of 512). At 16 units for 8 channels (a 1024-rank ring's) that
  // channel still gets a unit; judged by its own near-zero rate every sum read alike and 3,2,2,2,1,
  // 2,2,2 of 16 loaded the busiest NIC with 3 / 16 of a slice (1.51 x the bound at 1023 ranks).
  topo::Topology t = testing::without_rank(testing::preset("dgx-h100", 3), "node1/gpu3");
  const int p = 23;
  PlanInfo info = algorithm("ring").layout({Collective::AllGather, std::uint64_t{p} << 22, p, 0}, &t, {});
  REQUIRE(info.params.count("weights") == 1);
  std::vector<std::vector<int>> orders;
  for (int c = 0; c < 8; ++c) orders.push_back(algo::param_order(info, "order" + std::to_string(c), p));
  std::vector<int> w = algo::channel_weights(t, orders, false, 16);
  REQUIRE(w.size() == 8);
  const int units = std::accumulate(w.begin(), w.end(), 0);
  CHECK((units >= 8 && units <= 16));
  // Every link direction's load: each ring's units over each link its hops cross, over the link's
  // bandwidth, in NIC slices (a NIC's 50 GB/s a unit of rate).
  std::vector<double> load(2 * t.num_links(), 0);
  topo::Router router(t);
  for (int c = 0; c < 8; ++c)
    for (int q = 0; q < p; ++q)
      for (const topo::Hop& h :
           router.route_ranks(static_cast<topo::Rank>(orders[at(c)][at(q)]), static_cast<topo::Rank>(orders[at(c)][at((q + 1) % p)])).hops)
        load[h.channel()] += w[at(c)];
  double busiest = 0;
  for (std::size_t d = 0; d < load.size(); ++d)
    busiest = std::max(busiest, load[d] * 50 / t.link(static_cast<topo::LinkId>(d / 2)).bw_gbps);
  CHECK(busiest / units <= 2.0 / 13 + 1e-9);  // 2,2,1,2,1,1,2,2 of 13, where 3 / 16 was
}

TEST_CASE("ring weights: malformed weights in a plan file are refused in one line") {
  topo::Topology t = testing::preset("dgx-h100", 4);
  t.mutable_link(link_between(t, "node1/nic2", "fabric/leaf2.0")).bw_gbps /= 2;
  PlanInfo good = algorithm("ring").layout({Collective::AllReduce, std::uint64_t{1} << 30, 32, 0}, &t, {});
  REQUIRE(good.params.count("weights") == 1);
  int checked = 0;
  for (const char* bad : {"", "1,2", "0,1,1,1,1,1,1,1", "a,1,1,1,1,1,1,1", "1,1,1,1,1,1,1,1", "-3,1,1,1,1,1,1,1", "1,,1,1,1,1,1,1",
                          "65536,65536,65536,65536,65536,65536,65536,65536"}) {
    CAPTURE(bad);
    std::string what = testing::refusal(good, "ring", "weights", bad);
    CHECK(what != "accepted");
    CHECK(what.find("weights") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
    ++checked;
  }
  CHECK(checked == 8);
}
