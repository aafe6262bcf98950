// Sizes that do not split evenly (issue #10, item 8): requests rounded as nccl-tests rounds them,
// chunks split at whole elements however unevenly, and every algorithm's plan still verified and
// computed exactly for every collective on rank counts whose sizes do not divide.

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms/common.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/io.h"
#include "collkit/plan/transform.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"
#include "plan_testing.h"

using namespace collkit;
using namespace collkit::plan;
using namespace collkit::plan::testing;

namespace {

constexpr Collective kAll[] = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                               Collective::AlltoAll,  Collective::Broadcast,     Collective::Reduce};

topo::Topology synth(const std::string& node, int nodes) {
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  return topo::synth({node, nodes, ""});
}

}  // namespace

TEST_CASE("uneven: requests round down to whole elements, per rank where the collective slices") {
  Rounded ag = round_to_elements({Collective::AllGather, 1 << 20, 72, 0});
  CHECK(ag.req.bytes == 1048536);
  CHECK(ag.note == "size 1048576 rounded down to 1048536 bytes: whole elements per rank");
  Rounded rs = round_to_elements({Collective::ReduceScatter, 1000, 3, 0, 4});
  CHECK(rs.req.bytes == 996);
  CHECK(rs.note == "size 1000 rounded down to 996 bytes: whole 4-byte elements per rank");
  Rounded ar = round_to_elements({Collective::AllReduce, 1002, 5, 0, 4});
  CHECK(ar.req.bytes == 1000);
  CHECK(ar.note == "size 1002 rounded down to 1000 bytes: whole 4-byte elements");
  // AllReduce, Broadcast and Reduce take any count of elements: nothing to round.
  for (Collective c : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce}) {
    Rounded r = round_to_elements({c, 1000, 72, 0, 8});
    CHECK(r.req.bytes == 1000);
    CHECK(r.note.empty());
  }
  CHECK_THROWS_WITH_AS(round_to_elements({Collective::AlltoAll, 50, 72, 0}),
                       "alltoall: size 50 is less than 72 bytes, the least that gives whole elements per rank", InputError);
  CHECK_THROWS_WITH_AS(round_to_elements({Collective::AllReduce, 2, 4, 0, 4}),
                       "allreduce: size 2 is less than 4 bytes, the least that gives whole 4-byte elements", InputError);
  CHECK_THROWS_WITH_AS(check({Collective::AllReduce, 1002, 4, 0, 4}), "allreduce: 1002 bytes are not a whole number of 4-byte elements",
                       InputError);
  CHECK_THROWS_WITH_AS(check({Collective::AllGather, 1000, 3, 0, 4}),
                       "allgather: 1000 bytes do not split into whole 4-byte elements over 3 ranks", InputError);
  CHECK_THROWS_WITH_AS(check({Collective::AllGather, 1000, 3, 0, 0}), "allgather: the element size must be >= 1 byte, got 0", InputError);
}

TEST_CASE("uneven: chunks split at whole elements, at most one element apart") {
  // 10 four-byte elements in 4 chunks: 2, 3, 2, 3 elements.
  std::vector<std::uint64_t> got;
  for (std::uint32_t c = 0; c <= 4; ++c) got.push_back(chunk_offset(40, 4, c, 4));
  CHECK(got == std::vector<std::uint64_t>{0, 8, 20, 28, 40});
  CHECK(chunk_bytes(40, 4, 1, 2, 4) == 20);
  // Bytes alone split mid-element: 40 bytes in 3 chunks are 13, 13, 14; in 4-byte elements 12, 12, 16.
  CHECK(chunk_bytes(40, 3, 0, 1) == 13);
  CHECK(chunk_bytes(40, 3, 0, 1, 4) == 12);
  CHECK(chunk_bytes(40, 3, 2, 1, 4) == 16);
  PlanInfo info;
  info.req = {Collective::AllGather, 3 * 40, 3, 0, 4};
  info.in_chunks = 3;
  info.out_chunks = 9;
  // Output chunk 3r + j lines up with rank r's input chunk j.
  for (std::uint32_t r = 0; r < 3; ++r)
    for (std::uint32_t j = 0; j < 3; ++j) {
      CHECK(chunk_offset(info, Buf::Output, 3 * r + j) == 40 * r + chunk_offset(info, Buf::Input, j));
      CHECK(chunk_bytes(info, Buf::Output, 3 * r + j, 1) == chunk_bytes(info, Buf::Input, j, 1));
    }
}

TEST_CASE("uneven: every algorithm and collective on sizes that do not divide, verified and computed") {
  // 8-byte elements, as the interpreter computes on; 1001 and 4099 elements divide by none of
  // these rank counts (nor by their channels x pipeline x ranks), and the sliced collectives are
  // rounded to whole elements per rank first.
  int checked = 0, rounded = 0, uneven = 0;
  for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 72}) {
    for (Collective c : kAll)
      for (std::uint64_t elements : {std::uint64_t{1001}, std::uint64_t{4099}})
        for (const Algorithm* algo : algorithms()) {
          if (algo->name() == "hier") continue;  // below, with a topology to group its hosts
          Request req{c, elements * 8, p, p / 2, 8};
          if (!algo->supports(req, nullptr, nullptr)) continue;
          Rounded r = round_to_elements(req);
          rounded += !r.note.empty();
          auto plan = generate(algo->name(), r.req, nullptr);
          Granularity g = granularity(plan->info());
          uneven += r.req.bytes / 8 % g.even != 0;
          check_plan(*plan);
          ++checked;
        }
  }
  // 11 rank counts x 2 sizes x the 27 (algorithm, collective) pairs that need no topology, and
  // straggler's AllReduce on the 10 counts of 2 ranks or more.
  CHECK(checked == 11 * 2 * 27 + 10 * 2);
  CHECK(rounded > 0);
  CHECK(uneven > checked / 3);
}

TEST_CASE("uneven: hier across hosts and the 72 GPUs of a gb200-nvl72 rack") {
  int checked = 0;
  auto hosts = two_hosts(3, 100, 0.5, 10, 2);
  auto nvl72 = synth("gb200-nvl72", 1);
  for (Collective c : kAll)
    for (const char* name : {"hier", "ring", "direct", "twoshot", "scatter_allgather", "reducescatter_gather"}) {
      for (const topo::Topology* t : {&hosts, &nvl72}) {
        int p = static_cast<int>(t->num_ranks());
        Request req{c, 8 * 1001, p, 1, 8};
        if (!algorithm(name).supports(req, t, nullptr)) continue;
        auto plan = generate(name, round_to_elements(req).req, t);
        check_plan(*plan);
        ++checked;
      }
    }
  // hier: 4 collectives on two hosts (one host of 72 is a single group: also 4); ring 5 x 2;
  // direct 6 x 2; the two-phase three 1 x 2 each.
  CHECK(checked == 8 + 10 + 12 + 6);
}

TEST_CASE("uneven: the verifier refuses a buffer of part elements") {
  Request req{Collective::AllReduce, 16, 2, 0, 4};
  ExplicitPlan plan =
      hand_plan(req, 1, 1, 1, {{algo::copy(algo::in(0), algo::out(0), 1, 0)}, {algo::copy(algo::in(0), algo::out(0), 1, 0)}});
  plan.mutable_info().scratch_chunks = 1;
  plan.mutable_info().scratch_bytes = 10;
  CHECK(verify_error(plan) == "plan: the scratch buffer's 10 bytes are not a whole number of 4-byte elements");
}

TEST_CASE("uneven: a plan file keeps its element size, old files without one load as bytes") {
  auto plan = generate("ring", Request{Collective::AllReduce, 4 * 1001, 3, 0, 4}, nullptr);
  std::string text = to_json(*plan);
  CHECK(text.find("\"elem_bytes\": 4") != std::string::npos);
  auto back = from_json(text, "p.json");
  CHECK(back->info().req.elem_bytes == 4);
  CHECK(verify(*back).ok);
  auto bytes = generate("ring", Request{Collective::AllReduce, 1001, 3, 0}, nullptr);
  CHECK(to_json(*bytes).find("elem_bytes") == std::string::npos);
  CHECK(from_json(to_json(*bytes), "p.json")->info().req.elem_bytes == 1);
  std::string bad = text;
  bad.replace(bad.find("\"elem_bytes\": 4"), 15, "\"elem_bytes\": 0");
  CHECK_THROWS_WITH_AS(from_json(bad, "p.json"), "p.json: /elem_bytes: must be between 1 and 65536, got 0", InputError);
  bad = text;
  bad.replace(bad.find("\"bytes\": 4004"), 13, "\"bytes\": 4003");
  CHECK_THROWS_WITH_AS(from_json(bad, "p.json"), "p.json: /: allreduce: 4003 bytes are not a whole number of 4-byte elements", InputError);
}
