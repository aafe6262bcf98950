// The two-phase algorithms: twoshot (AllReduce = direct ReduceScatter + direct AllGather),
// scatter_allgather (Broadcast) and reducescatter_gather (Reduce). Every variant, rank count and
// root verified and interpreted; the choices layout() makes; exact simulated times on a full mesh,
// where every pair of ranks has its own link and every time follows by hand.

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"
#include "plan_testing.h"

using namespace collkit;
using namespace collkit::plan;
using namespace collkit::plan::testing;

namespace {

// Slices of bytes / (channels x p) bytes, whole 8-byte elements for channels 1 to 3.
std::uint64_t bytes_for(int p) { return 8u * 64u * 3u * static_cast<std::uint64_t>(p); }

// Roots to try: all for small p, else both ends and the middle.
std::vector<int> roots(int p) {
  std::vector<int> r;
  if (p <= 9) {
    for (int x = 0; x < p; ++x) r.push_back(x);
  } else {
    r = {0, p / 2, p - 1};
  }
  return r;
}

// Generates `name` and forces `key` = `value` (a variant layout() would not pick here), with
// the chunks that variant needs.
std::unique_ptr<Plan> with_param(const char* name, Request req, const AlgoOptions& opt, const std::string& key, const std::string& value,
                                 std::uint32_t chunks) {
  auto plan = generate(name, req, nullptr, opt);
  plan->mutable_info().params[key] = value;
  plan->mutable_info().in_chunks = plan->mutable_info().out_chunks = chunks;
  return plan;
}

// p GPUs, every pair joined by its own link (an xGMI full mesh): no two transfers of these
// algorithms share a link direction, so their times follow by hand.
topo::Topology mesh(int p, double bw_gbps, double latency_us) {
  topo::Topology t;
  t.name = "mesh";
  std::vector<topo::VertexId> g;
  for (int i = 0; i < p; ++i) {
    g.push_back(t.add_vertex(make_vertex("g" + std::to_string(i), topo::VertexKind::Gpu)));
    t.add_rank(g.back());
  }
  for (int i = 0; i < p; ++i)
    for (int j = i + 1; j < p; ++j)
      t.add_link(make_link(g[static_cast<std::size_t>(i)], g[static_cast<std::size_t>(j)], bw_gbps, latency_us));
  return t;
}

SimOptions sim_options(double per_message_us, double reduce_gbps) {
  SimOptions o;
  o.per_message_us = per_message_us;
  o.reduce_gbps = reduce_gbps;
  return o;
}

int chunks_received(const std::vector<Op>& ops) {
  int n = 0;
  for (const Op& o : ops)
    if (o.type == OpType::Recv || o.type == OpType::RecvReduce) n += static_cast<int>(o.count);
  return n;
}

topo::Topology synth(const std::string& node, int nodes, const std::string& fabric = "") {
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  return topo::synth({node, nodes, fabric});
}

}  // namespace

TEST_CASE("two-phase: every variant, rank count and root verifies and computes its collective") {
  int checked = 0;
  for (int p : kRankCounts) {
    auto up = static_cast<std::uint32_t>(p);
    for (int c : {1, 2, 3}) {
      AlgoOptions opt;
      opt.channels = c;
      auto uc = static_cast<std::uint32_t>(c);
      check_plan(*generate("twoshot", Request{Collective::AllReduce, bytes_for(p), p, 0}, nullptr, opt));
      ++checked;
      for (int root : roots(p)) {
        Request bcast{Collective::Broadcast, bytes_for(p), p, root};
        check_plan(*with_param("scatter_allgather", bcast, opt, "allgather", "ring", uc * up));
        ++checked;
        check_plan(*with_param("scatter_allgather", bcast, opt, "allgather", "direct", up));
        ++checked;
        if ((p & (p - 1)) == 0) {
          check_plan(*with_param("scatter_allgather", bcast, opt, "allgather", "rd", uc * up));
          ++checked;
        }
        Request reduce{Collective::Reduce, bytes_for(p), p, root};
        check_plan(*with_param("reducescatter_gather", reduce, opt, "reduce_scatter", "ring", uc * up));
        check_plan(*with_param("reducescatter_gather", reduce, opt, "reduce_scatter", "direct", up));
        checked += 2;
      }
    }
  }
  // 13 rank counts x 3 channel counts x (twoshot + per root 4, or 5 for the 7 powers of two).
  int roots_total = 0, pow2_roots = 0;
  for (int p : kRankCounts) {
    roots_total += static_cast<int>(roots(p).size());
    if ((p & (p - 1)) == 0) pow2_roots += static_cast<int>(roots(p).size());
  }
  CHECK(checked == 3 * (13 + 4 * roots_total + pow2_roots));
}

TEST_CASE("two-phase: layout picks the variant from p and the topology") {
  auto info = [](const char* name, Collective c, int p, const topo::Topology* t, int root = 0) {
    return generate(name, Request{c, bytes_for(p), p, root}, t)->info();
  };
  // Direct on one host, the ring across hosts; without a topology, recursive doubling for a
  // power of two, else the ring.
  auto star = uniform(8, 100, 0.5);
  PlanInfo bcast = info("scatter_allgather", Collective::Broadcast, 8, &star);
  CHECK(bcast.params.at("allgather") == "direct");
  CHECK(bcast.channels == 7);
  CHECK(bcast.in_chunks == 8);
  auto hosts = two_hosts(4, 100, 0.5, 10, 2);
  CHECK(info("scatter_allgather", Collective::Broadcast, 8, &hosts).params.at("allgather") == "ring");
  CHECK(info("scatter_allgather", Collective::Broadcast, 8, nullptr).params.at("allgather") == "rd");
  CHECK(info("scatter_allgather", Collective::Broadcast, 6, nullptr).params.at("allgather") == "ring");
  // Direct reduce-scatter on one host, the ring without a topology or across hosts.
  PlanInfo one = info("reducescatter_gather", Collective::Reduce, 8, &star);
  CHECK(one.params.at("reduce_scatter") == "direct");
  CHECK(one.channels == 7);
  CHECK(one.in_chunks == 8);
  PlanInfo ring = info("reducescatter_gather", Collective::Reduce, 8, nullptr);
  CHECK(ring.params.at("reduce_scatter") == "ring");
  CHECK(ring.channels == 1);
  CHECK(info("reducescatter_gather", Collective::Reduce, 8, &hosts).params.at("reduce_scatter") == "ring");
  // The root comes first in the order: without a topology, the identity rotated.
  CHECK(info("scatter_allgather", Collective::Broadcast, 5, nullptr, 3).params.at("order") == "3,4,0,1,2");
  CHECK(info("reducescatter_gather", Collective::Reduce, 5, nullptr, 0).params.count("order") == 0);
  // twoshot: p chunks, one lane per peer up to 8.
  PlanInfo two = info("twoshot", Collective::AllReduce, 13, nullptr);
  CHECK(two.in_chunks == 13);
  CHECK(two.channels == 8);
}

TEST_CASE("two-phase: a rank receives each slice it lacks once, and the root receives nothing") {
  int checked = 0;
  for (int p : kRankCounts)
    for (const char* ag : {"ring", "rd", "direct"}) {
      if (std::string(ag) == "rd" && (p & (p - 1)) != 0) continue;
      int root = p / 2;
      auto plan = with_param("scatter_allgather", Request{Collective::Broadcast, bytes_for(p), p, root}, {}, "allgather", ag,
                             static_cast<std::uint32_t>(p));
      for (int r = 0; r < p; ++r) {
        CAPTURE(p);
        CAPTURE(r);
        CHECK(chunks_received(plan->program(r)) == (r == root ? 0 : p));
        ++checked;
      }
    }
  int want = 0;
  for (int p : kRankCounts) want += (p & (p - 1)) == 0 ? 3 * p : 2 * p;
  CHECK(checked == want);
  // twoshot: p-1 slices in, p-1 out, each way.
  auto two = generate("twoshot", Request{Collective::AllReduce, bytes_for(9), 9, 0}, nullptr);
  for (int r = 0; r < 9; ++r) CHECK(chunks_received(two->program(r)) == 16);
  // reducescatter_gather: the root takes p-1 slices in the reduce-scatter and p-1 in the gather.
  auto rsg = generate("reducescatter_gather", Request{Collective::Reduce, bytes_for(9), 9, 4}, nullptr);
  CHECK(chunks_received(rsg->program(4)) == 16);
  CHECK(chunks_received(rsg->program(0)) == 8);
}

TEST_CASE("two-phase: simulated times on a full mesh match the hand-computed ones") {
  const double bw = 100, lat = 0.5, per_message = 2, reduce = 50;
  const double a = lat + per_message;  // one link per route
  const double beta = 1.0 / (bw * 1e3), gamma = 1.0 / (reduce * 1e3);
  const double n = 3.0 * 1024 * 1024;
  for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
    CAPTURE(static_cast<int>(model));
    SimOptions opt = sim_options(per_message, reduce);
    opt.model = model;
    SUBCASE("twoshot: two steps of one slice each, the p-1 sums chained; one-shot sends the whole vector") {
      const int p = 8;
      auto t = mesh(p, bw, lat);
      double x = n / p * beta, y = n / p * gamma;
      auto two = generate("twoshot", Request{Collective::AllReduce, 3u << 20, p, 0}, nullptr);
      CHECK(simulate(*two, t, opt).time_us == doctest::Approx(2 * a + 2 * x + (p - 1) * y).epsilon(1e-9));
      auto one = generate("direct", Request{Collective::AllReduce, 3u << 20, p, 0}, nullptr);
      CHECK(simulate(*one, t, opt).time_us == doctest::Approx(a + n * beta + (p - 1) * n * gamma).epsilon(1e-9));
    }
    // The root's copy of its input into its output comes last and costs n g: free here, as the
    // formulas have no g.
    SimOptions no_copy = opt;
    no_copy.reduce_gbps = 0;
    // The chains of the root's sends below are priced as the textbook does, each send done when
    // its data has arrived: one message in flight. With NCCL's window (the default) a send is
    // done once its bytes have left, so only latencies on the critical path's receives remain.
    SimOptions arrival = no_copy;
    arrival.max_in_flight = 1;
    SUBCASE("scatter_allgather, rd on 4 ranks: the root's four sends in a row end last") {
      // Root: [2,4) to 2, [1] to 1, then the doubling's [0] to 1 and [0,2) to 2: 4a + 6 slices.
      auto t = mesh(4, bw, lat);
      auto plan = generate("scatter_allgather", Request{Collective::Broadcast, 3u << 20, 4, 0}, nullptr);
      REQUIRE(plan->info().params.at("allgather") == "rd");
      CHECK(simulate(*plan, t, arrival).time_us == doctest::Approx(4 * a + 6 * (n / 4) * beta).epsilon(1e-9));
      CHECK(simulate(*plan, t, no_copy).time_us < 4 * a + 6 * (n / 4) * beta);
    }
    SUBCASE("scatter_allgather, ring on 3 ranks: (ceil(log p) + p-1) a + 2((p-1)/p) n b") {
      auto t = mesh(3, bw, lat);
      auto plan = generate("scatter_allgather", Request{Collective::Broadcast, 3u << 20, 3, 0}, nullptr);
      REQUIRE(plan->info().params.at("allgather") == "ring");
      CHECK(simulate(*plan, t, arrival).time_us == doctest::Approx(4 * a + 4 * (n / 3) * beta).epsilon(1e-9));
      CHECK(simulate(*plan, t, no_copy).time_us < 4 * a + 4 * (n / 3) * beta);
    }
    SUBCASE("scatter_allgather, direct on 8 ranks: the root's two slices to each rank in a row, 2a + 2(n/p)b") {
      auto t = mesh(8, bw, lat);
      auto plan = generate("scatter_allgather", Request{Collective::Broadcast, 3u << 20, 8, 5}, &t);
      REQUIRE(plan->info().params.at("allgather") == "direct");
      CHECK(simulate(*plan, t, no_copy).time_us == doctest::Approx(2 * a + 2 * (n / 8) * beta).epsilon(1e-9));
    }
    SUBCASE("reducescatter_gather: p-1 ring steps or one direct step, then the gather") {
      const int p = 4;
      auto t = mesh(p, bw, lat);
      double x = n / p * beta, y = n / p * gamma;
      Request req{Collective::Reduce, 3u << 20, p, 2};
      auto ring = generate("reducescatter_gather", req, nullptr);
      CHECK(simulate(*ring, t, opt).time_us == doctest::Approx((p - 1) * (a + x + y) + a + x).epsilon(1e-9));
      auto direct = generate("reducescatter_gather", req, &t);
      REQUIRE(direct->info().params.at("reduce_scatter") == "direct");
      CHECK(simulate(*direct, t, opt).time_us == doctest::Approx(2 * a + 2 * x + (p - 1) * y).epsilon(1e-9));
    }
  }
}

TEST_CASE("two-phase: refusals and bad parameters say why") {
  std::string why;
  CHECK_FALSE(algorithm("twoshot").supports(Request{Collective::ReduceScatter, 1024, 4, 0}, nullptr, &why));
  CHECK(why == "two-shot does AllReduce only (direct does the one-shot ReduceScatter and AllGather it is made of)");
  CHECK_FALSE(algorithm("scatter_allgather").supports(Request{Collective::Reduce, 1024, 4, 0}, nullptr, &why));
  CHECK(why == "scatter + allgather does Broadcast only (reducescatter_gather is its mirror for Reduce)");
  CHECK_FALSE(algorithm("reducescatter_gather").supports(Request{Collective::Broadcast, 1024, 4, 0}, nullptr, &why));
  CHECK(why == "reduce-scatter + gather does Reduce only (scatter_allgather is its mirror for Broadcast)");
  auto three = synth("dgx-h100", 3, "fat-tree");
  CHECK_FALSE(algorithm("twoshot").supports(Request{Collective::AllReduce, 24 * 64, 24, 0}, &three, &why));
  CHECK(why == "two-shot allreduce is for ranks on one switch-connected host or at most 16 ranks; these 24 span hosts");
  auto nvl72 = synth("gb200-nvl72", 1);
  CHECK(algorithm("twoshot").supports(Request{Collective::AllReduce, 72 * 64, 72, 0}, &nvl72, &why));

  auto bcast = generate("scatter_allgather", Request{Collective::Broadcast, bytes_for(6), 6, 0}, nullptr);
  bcast->mutable_info().params["allgather"] = "rd";
  CHECK_THROWS_WITH_AS(bcast->program(0), "scatter_allgather: plan parameter allgather=rd needs a power-of-two rank count, got 6",
                       InputError);
  bcast->mutable_info().params["allgather"] = "tree";
  CHECK_THROWS_WITH_AS(bcast->program(0), "scatter_allgather: plan parameter allgather=\"tree\": expected ring, rd or direct", InputError);
  bcast->mutable_info().params["allgather"] = "ring";
  bcast->mutable_info().params["channels"] = "2";
  CHECK_THROWS_WITH_AS(bcast->program(0), "scatter_allgather: plan parameter channels=2 does not match 6 chunks for 6 ranks", InputError);
  auto reduce = generate("reducescatter_gather", Request{Collective::Reduce, bytes_for(6), 6, 0}, nullptr);
  reduce->mutable_info().params["reduce_scatter"] = "halving";
  CHECK_THROWS_WITH_AS(reduce->program(0), "reducescatter_gather: plan parameter reduce_scatter=\"halving\": expected ring or direct",
                       InputError);
  reduce->mutable_info().params["reduce_scatter"] = "ring";
  reduce->mutable_info().in_chunks = reduce->mutable_info().out_chunks = 12;
  CHECK_THROWS_WITH_AS(reduce->program(0), "reducescatter_gather: plan parameter channels=1 does not match 12 chunks for 6 ranks",
                       InputError);
  auto two = generate("twoshot", Request{Collective::AllReduce, bytes_for(6), 6, 0}, nullptr);
  two->mutable_info().params["channels"] = "0";
  CHECK_THROWS_WITH_AS(two->program(0), "twoshot: plan parameter channels must be >= 1, got 0", InputError);
}
