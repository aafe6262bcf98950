#include <doctest/doctest.h>

#include <cstdlib>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"
#include "plan_testing.h"

using namespace collkit;
using namespace collkit::plan;
using namespace collkit::plan::testing;

namespace {

}  // namespace

TEST_CASE("hier: supports needs a topology, equal hosts and AR/RS/AG") {
  const Algorithm& a = algorithm("hier");
  std::string why;
  CHECK_FALSE(a.supports(Request{Collective::AllReduce, 1024, 8, 0}, nullptr, &why));
  CHECK(why == "hier needs a topology to group ranks by host");
  auto t = testing::preset("pcie-8gpu:gpus=4", 3, "single-switch");
  CHECK_FALSE(a.supports(Request{Collective::AllReduce, 1024, 10, 0}, &t, &why));
  CHECK(why == "hosts hold unequal numbers of ranks (host 0: 4, host 2: 2); hier needs the same number on each");
  CHECK_FALSE(a.supports(Request{Collective::Broadcast, 1024, 12, 0}, &t, &why));
  CHECK(why == "hier does AllReduce, ReduceScatter, AllGather and AlltoAll only");
  CHECK(a.supports(Request{Collective::AllReduce, 1024, 12, 0}, &t, &why));
  CHECK(a.formula(Collective::AllReduce) == std::string("2(g-1)a_i + 2((g-1)/g)nb_i + 2(N-1)a_o + 2((N-1)/N)(n/g)b_o"));
  CHECK_THROWS_WITH_AS(generate("hier", Request{Collective::AllReduce, 1024, 8, 0}, nullptr),
                       "algorithm hier cannot do allreduce on 8 ranks: hier needs a topology to group ranks by host",
                       InputError);
}

TEST_CASE("hier: params hold the grouping") {
  auto t = testing::preset("dgx-h100", 2);
  auto plan = generate("hier", Request{Collective::AllReduce, 8 * 1024, 16, 0}, &t);
  CHECK(plan->info().params.at("hosts") == "2");
  CHECK(plan->info().params.at("local") == "8");
  CHECK(plan->info().in_chunks == 16);
  // Rank 0 (host 0, local 0): 7 intra RS steps, 1+1 inter steps, 7 intra AG steps, two ops each.
  CHECK(plan->program(0).size() == 2 * (7 + 2 + 7));
  check_plan(*plan);
}

TEST_CASE("hier: every N x g plan is correct") {
  for (int g = 1; g <= 8; ++g) {
    auto t = testing::preset("pcie-8gpu:gpus=" + std::to_string(g), 4, "single-switch");
    for (int n = 1; n <= 4; ++n) {
      int p = n * g;
      for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::AlltoAll}) {
        std::uint64_t bytes = 8ull * static_cast<std::uint64_t>(p * p) * 4;
        auto plan = generate("hier", Request{c, bytes, p, 0}, &t);
        INFO(describe_plan(plan->info()));
        check_plan(*plan);
      }
      AlgoOptions two;
      two.channels = 2;
      auto plan = generate("hier", Request{Collective::AllReduce, 8ull * 2 * static_cast<std::uint64_t>(p) * 4, p, 0}, &t, two);
      INFO(describe_plan(plan->info()));
      check_plan(*plan);
    }
  }
}

TEST_CASE("hier: dgx1-v100 x 2 and dgx-h100 x 2 verify") {
  for (const char* node : {"dgx1-v100", "dgx-h100"}) {
    auto t = testing::preset(node, 2);
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::AlltoAll}) {
      auto plan = generate("hier", Request{c, 8 * 16 * 16, 16, 0}, &t);
      INFO(describe_plan(plan->info()));
      check_plan(*plan);
    }
  }
}

TEST_CASE("hier: the inter-host AllReduce is embedded: ring for few hosts, rhd beyond, any on request") {
  // 20 hosts > 16: rhd by default, with its fold for a host count that is not a power of two.
  auto many = testing::preset("pcie-8gpu:gpus=2", 20, "single-switch");
  Request req{Collective::AllReduce, 8ull * 2 * 32 * 40, 40, 0};
  auto plan = generate("hier", req, &many);
  CHECK(plan->info().params.at("inter") == "rhd");
  check_plan(*plan);
  // Per rank: 1 intra RS step + 2 log2(16) rhd steps + 2 fold steps + 1 intra AG step, 2 ops each.
  CHECK(plan->program(1).size() < 40);

  auto few = testing::preset("pcie-8gpu:gpus=2", 5, "single-switch");
  for (const char* inter : {"ring", "rhd", "rd", "tree"}) {
    CAPTURE(inter);
    AlgoOptions opt;
    opt.inter = inter;
    auto p = generate("hier", Request{Collective::AllReduce, 8ull * 2 * 64 * 10, 10, 0}, &few, opt);
    CHECK(p->info().params.at("inter") == inter);
    check_plan(*p);
  }
  AlgoOptions bad;
  bad.inter = "bruck";
  CHECK_THROWS_WITH_AS(generate("hier", Request{Collective::AllReduce, 8ull * 2 * 64 * 10, 10, 0}, &few, bad),
                       "hier: the inter-host algorithm bruck cannot do allreduce without a topology: Bruck's algorithm does "
                       "AllGather and AlltoAll only (use ring, rd or rhd for the reductions, tree or direct for Broadcast)",
                       collkit::InputError);
}
