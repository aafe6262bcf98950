// The collective algorithms of libs/plan/src/algorithms: every algorithm x collective it
// supports x rank count verified symbolically and run on numbers, plus the facts that pin each
// algorithm down (op counts, channels, refusals).

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/topo/synth.h"
#include "plan_testing.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;

namespace {

const char* const kMine[] = {"tree",   "rd",        "rhd", "bruck", "pairwise", "direct",
                             "twoshot", "scatter_allgather", "reducescatter_gather"};
constexpr Collective kAll[] = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                               Collective::AlltoAll,  Collective::Broadcast,     Collective::Reduce};

// Every chunk boundary of these algorithms falls on an 8-byte element: the vector splits into
// at most 32 chunks (rhd: p2 <= 32; tree: 2 x 8, or 2 x 3 with pipeline 3), or into slices of
// bytes / p.
std::uint64_t bytes_for(int p) { return 8u * 64u * 3u * static_cast<std::uint64_t>(p); }

struct Counts {
  int sends = 0, recvs = 0, local = 0;
};
Counts count_ops(const std::vector<Op>& ops) {
  Counts c;
  for (const Op& o : ops) {
    if (o.type == OpType::Send) ++c.sends;
    else if (o.type == OpType::Recv || o.type == OpType::RecvReduce) ++c.recvs;
    else ++c.local;
  }
  return c;
}

void check_all_ranks(const char* name, Collective coll, const AlgoOptions& opt = {}) {
  const Algorithm& algo = algorithm(name);
  for (int p : kRankCounts) {
    std::vector<int> roots{0};
    if (facts(coll).has_root && p > 1) roots.push_back(p - 1);
    for (int root : roots) {
      Request req{coll, bytes_for(p), p, root};
      if (!algo.supports(req, nullptr, nullptr)) continue;
      auto plan = generate(name, req, nullptr, opt);
      check_plan(*plan);
    }
  }
}

}  // namespace

TEST_CASE("algorithms: every algorithm, collective and rank count verifies") {
  for (const char* name : kMine)
    for (Collective coll : kAll) {
      INFO(name, " ", to_string(coll));
      check_all_ranks(name, coll);
    }
}

TEST_CASE("algorithms: uneven and tiny chunks still match byte for byte") {
  // Symbolic only: the interpreter needs whole 8-byte elements.
  for (const char* name : kMine)
    for (Collective coll : kAll)
      for (int p : kRankCounts)
        for (std::uint64_t per_rank : {std::uint64_t{1}, std::uint64_t{37}}) {
          Request req{coll, per_rank * static_cast<std::uint64_t>(p), p, p - 1};
          if (!algorithm(name).supports(req, nullptr, nullptr)) continue;
          auto plan = generate(name, req, nullptr);
          VerifyResult v = verify_both(*plan);
          INFO(describe_plan(plan->info()));
          CHECK_MESSAGE(v.ok, v.error);
        }
}

TEST_CASE("algorithms: options (channels, pipeline) keep plans correct") {
  AlgoOptions two_channels;
  two_channels.channels = 2;
  check_all_ranks("rd", Collective::AllReduce, two_channels);
  for (Collective c : kAll) check_all_ranks("direct", c, two_channels);
  AlgoOptions k3;
  k3.pipeline = 3;
  check_all_ranks("tree", Collective::AllReduce, k3);
  check_all_ranks("tree", Collective::Broadcast, k3);
  check_all_ranks("tree", Collective::Reduce, k3);
  AlgoOptions k1;
  k1.pipeline = 1;
  check_all_ranks("tree", Collective::AllReduce, k1);
}

TEST_CASE("algorithms: formulas are stated for every supported collective") {
  for (const char* name : kMine) {
    const Algorithm& algo = algorithm(name);
    for (Collective c : kAll) {
      INFO(name, " ", to_string(c));
      if (algo.supports(Request{c, 1024, 4, 0}, nullptr, nullptr)) {
        CHECK(!algo.formula(c).empty());
        CHECK(algo.formula(c) != "not applicable");
      }
    }
  }
}

TEST_CASE("algorithms: refusals say why") {
  auto refuse = [](const char* name, Collective c) {
    std::string why;
    CHECK_FALSE(algorithm(name).supports(Request{c, 1024, 4, 0}, nullptr, &why));
    return why;
  };
  CHECK(refuse("tree", Collective::AlltoAll) ==
        "trees do AllReduce, Broadcast and Reduce only (use ring, rhd, bruck, pairwise or direct for alltoall)");
  CHECK(refuse("rd", Collective::ReduceScatter) ==
        "recursive doubling does AllReduce and AllGather only (use rhd for ReduceScatter, bruck or pairwise for "
        "AlltoAll, tree or direct for Broadcast and Reduce)");
  CHECK(refuse("rhd", Collective::AlltoAll) ==
        "recursive halving/doubling does AllReduce, ReduceScatter and AllGather only (use bruck or pairwise for "
        "AlltoAll, tree or direct for Broadcast and Reduce)");
  CHECK(refuse("bruck", Collective::AllReduce) ==
        "Bruck's algorithm does AllGather and AlltoAll only (use ring, rd or rhd for the reductions, tree or direct "
        "for Broadcast)");
  CHECK(refuse("pairwise", Collective::Broadcast) ==
        "pairwise exchange does AlltoAll, AllGather and ReduceScatter only (an AllReduce or a rooted collective has "
        "no pairwise exchange pattern: use ring, rhd, tree or direct)");
  for (Collective c : kAll) CHECK(algorithm("direct").supports(Request{c, 1024, 4, 0}, nullptr, nullptr));
  CHECK_THROWS_WITH_AS(generate("bruck", Request{Collective::Reduce, 1024, 4, 0}, nullptr),
                       "algorithm bruck cannot do reduce on 4 ranks: Bruck's algorithm does AllGather and AlltoAll "
                       "only (use ring, rd or rhd for the reductions, tree or direct for Broadcast)",
                       collkit::InputError);
}

TEST_CASE("algorithms: op counts pin the algorithms") {
  auto counts = [](const char* name, Collective c, int p, int rank, AlgoOptions opt = {}) {
    auto plan = generate(name, Request{c, bytes_for(p), p, 0}, nullptr, opt);
    return count_ops(plan->program(rank));
  };
  SUBCASE("rd: log p whole-vector exchanges; the fold adds one step in and one out") {
    for (int r = 0; r < 8; ++r) {
      Counts c = counts("rd", Collective::AllReduce, 8, r);
      CHECK(c.sends == 3);
      CHECK(c.recvs == 3);
      CHECK(c.local == 0);
    }
    Counts extra = counts("rd", Collective::AllReduce, 6, 0);  // sits out: hands over, gets back
    CHECK(extra.sends == 1);
    CHECK(extra.recvs == 1);
    Counts absorbs = counts("rd", Collective::AllReduce, 6, 1);
    CHECK(absorbs.sends == 3);
    CHECK(absorbs.recvs == 3);
    Counts ag = counts("rd", Collective::AllGather, 16, 5);
    CHECK(ag.sends == 4);
    CHECK(ag.recvs == 4);
  }
  SUBCASE("rhd: log p halving steps + log p doubling steps") {
    Counts c = counts("rhd", Collective::AllReduce, 16, 3);
    CHECK(c.sends == 8);
    CHECK(c.recvs == 8);
    Counts rs = counts("rhd", Collective::ReduceScatter, 32, 7);
    CHECK(rs.sends == 5);
    CHECK(rs.recvs == 5);
    auto plan = generate("rhd", Request{Collective::AllReduce, bytes_for(8), 8, 0}, nullptr);
    // Halving: half, quarter, eighth of the vector; doubling back up.
    std::vector<std::uint32_t> sizes;
    for (const Op& o : plan->program(0))
      if (o.type == OpType::Send) sizes.push_back(o.count);
    CHECK(sizes == std::vector<std::uint32_t>{4, 2, 1, 1, 2, 4});
  }
  SUBCASE("bruck: ceil(log p) steps for any p") {
    for (int p : {5, 7, 9, 13, 24}) {
      int steps = 0;
      while ((1 << steps) < p) ++steps;
      Counts ag = counts("bruck", Collective::AllGather, p, 1);
      CHECK(ag.sends == steps);
      CHECK(ag.recvs == steps);
      Counts a2a = counts("bruck", Collective::AlltoAll, p, 2);
      CHECK(a2a.sends == steps);
      CHECK(a2a.recvs == steps);
    }
  }
  SUBCASE("pairwise and direct: p-1 sends and receives") {
    for (Collective c : {Collective::AlltoAll, Collective::AllGather, Collective::ReduceScatter}) {
      Counts pw = counts("pairwise", c, 9, 4);
      CHECK(pw.sends == 8);
      CHECK(pw.recvs == 8);
    }
    for (Collective c : {Collective::AllReduce, Collective::AlltoAll, Collective::AllGather, Collective::ReduceScatter}) {
      Counts d = counts("direct", c, 9, 4);
      CHECK(d.sends == 8);
      CHECK(d.recvs == 8);
    }
    auto plan = generate("direct", Request{Collective::AllReduce, bytes_for(13), 13, 0}, nullptr);
    CHECK(plan->info().channels == 8);
    auto bcast = generate("direct", Request{Collective::Broadcast, bytes_for(5), 5, 2}, nullptr);
    CHECK(count_ops(bcast->program(2)).sends == 4);
    CHECK(count_ops(bcast->program(0)).recvs == 1);
  }
  SUBCASE("tree: every rank is interior in at most one of the two trees (p even)") {
    for (int p : {2, 4, 6, 8, 16, 24, 32}) {
      auto plan = generate("tree", Request{Collective::AllReduce, bytes_for(p), p, 0}, nullptr);
      CHECK(plan->info().channels == 4);
      int k = 8;
      for (int r = 0; r < p; ++r) {
        // Per tree and chunk: one receive per child on the up channel; one send per child down.
        int interior = 0;
        for (std::uint16_t up : {std::uint16_t{0}, std::uint16_t{2}}) {
          int recvs = 0;
          for (const Op& o : plan->program(r))
            if (o.channel == up && o.type == OpType::RecvReduce) ++recvs;
          if (recvs > 0) ++interior;
        }
        CAPTURE(p);
        CAPTURE(r);
        CHECK(interior <= 1);
        Counts c = count_ops(plan->program(r));
        CHECK(c.sends >= 2 * k);  // at least one send per chunk per tree (leaf up / root down)
      }
    }
  }
}

TEST_CASE("algorithms: direct is for one switch-connected host or small groups, AlltoAll aside") {
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  auto three = collkit::topo::synth({"dgx-h100", 3, "fat-tree"});
  std::string why;
  const Algorithm& direct = algorithm("direct");
  CHECK_FALSE(direct.supports(Request{Collective::AllReduce, 24 * 64, 24, 0}, &three, &why));
  CHECK(why == "one-shot allreduce is for ranks on one switch-connected host or at most 16 ranks; these 24 span hosts");
  CHECK(direct.supports(Request{Collective::AlltoAll, 24 * 64, 24, 0}, &three, &why));
  CHECK(direct.supports(Request{Collective::AllReduce, 16 * 64, 16, 0}, &three, &why));
  auto one = collkit::topo::synth({"gb200-nvl72", 1, ""});
  CHECK(direct.supports(Request{Collective::AllReduce, 72 * 64, 72, 0}, &one, &why));
}
