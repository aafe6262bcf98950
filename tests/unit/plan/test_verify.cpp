// verify(): ring plans of every collective pass (and the interpreter agrees with the reference);
// mutated and hand-written plans fail with pinned messages.

#include <doctest/doctest.h>

#include <algorithm>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/common.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/topo/synth.h"
#include "plan_testing.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;

namespace {

struct Case {
  Collective coll;
  bool root_last;  // root p-1 instead of 0 (Broadcast, Reduce)
};
constexpr Case kRingCases[] = {
    {Collective::AllReduce, false}, {Collective::ReduceScatter, false}, {Collective::AllGather, false},
    {Collective::Broadcast, false}, {Collective::Broadcast, true},      {Collective::Reduce, false},
    {Collective::Reduce, true},
};

}  // namespace

TEST_CASE("verify and interpret: ring plans of every collective it supports") {
  for (int p : kRankCounts)
    for (Case c : kRingCases)
      for (int channels : {1, 2, 3})
        for (bool bidir : {false, true})
          for (int pipeline : {1, 3}) {
            // 16 bytes per smallest chunk: every chunk boundary falls on an 8-byte element.
            Request req{c.coll, 16ull * static_cast<std::uint64_t>(channels * p * pipeline), p, c.root_last ? p - 1 : 0};
            AlgoOptions opt{channels, pipeline, bidir, {}};
            auto plan = generate("ring", req, nullptr, opt);
            VerifyResult v = check_plan(*plan);
            if (!v.ok) return;  // one failure says enough
            if (p > 1) CHECK(v.transfers > 0);
          }
}

TEST_CASE("verify: ring plans whose chunks differ in size") {
  // 37 bytes per rank do not split evenly into chunks: byte counts of matched transfers must
  // still agree, and verify does not care about element boundaries.
  for (int p : {2, 3, 5, 8})
    for (Case c : kRingCases)
      for (int channels : {1, 2}) {
        Request req{c.coll, 37ull * static_cast<std::uint64_t>(p), p, c.root_last ? p - 1 : 0};
        auto plan = generate("ring", req, nullptr, AlgoOptions{channels, 3, channels == 2, {}});
        INFO(describe_plan(plan->info()));
        CHECK(verify_error(*plan) == "");
      }
}

// ---------------------------------------------------------------------------------------------
// Mutations of a correct plan. Ring AllReduce on 4 ranks, one channel: rank r's program is
//   0 send(in r-1)  1 recv_reduce(in r-2 -> out r-2)  2 send(out r-2)  3 recv_reduce(r-3)
//   4 send(out r-3) 5 recv_reduce(in r -> out r)      6..11 all-gather: send, recv alternating.

namespace {

using namespace collkit::plan::algo;

ExplicitPlan ring_allreduce(int p, int channels = 1, bool bidirectional = false) {
  auto plan = generate("ring", Request{Collective::AllReduce, 8ull * 64 * static_cast<std::uint64_t>(p), p, 0}, nullptr,
                       AlgoOptions{channels, 1, bidirectional, {}});
  return materialize(*plan);
}

Request req(Collective c, int p, std::uint64_t bytes) { return Request{c, bytes, p, 0}; }

}  // namespace

TEST_CASE("verify: the unmutated ring passes and counts its work") {
  ExplicitPlan plan = ring_allreduce(4);
  VerifyResult v = verify(plan);
  CHECK(v.ok);
  CHECK(v.error == "");
  CHECK(v.ops == 48);
  CHECK(v.transfers == 24);
}

TEST_CASE("verify: a dropped op leaves a send unreceived") {
  ExplicitPlan plan = ring_allreduce(4);
  auto& prog = plan.mutable_program(1);
  prog.erase(prog.begin() + 3);
  CHECK(verify_error(plan) ==
        "rank 0 op 10 (send to 1 ch 0): never received: rank 0 sends 6 messages to rank 1 on ch 0 and rank 1 receives 5");
}

TEST_CASE("verify: swapped peers of two sends are caught") {
  ExplicitPlan plan = ring_allreduce(4, 2, true);  // channel 0 sends to rank 1, channel 1 to rank 3
  auto& prog = plan.mutable_program(0);
  auto first_send = [&](std::uint16_t ch) {
    return std::find_if(prog.begin(), prog.end(), [&](const Op& o) { return o.type == OpType::Send && o.channel == ch; });
  };
  auto a = first_send(0), b = first_send(1);
  REQUIRE(a->peer == 1);
  REQUIRE(b->peer == 3);
  std::swap(a->peer, b->peer);
  std::string err = verify_error(plan);
  CHECK(err.rfind("rank 0 op ", 0) == 0);
  CHECK(err.find("never received") != std::string::npos);
}

TEST_CASE("verify: two swapped ops of one channel read a chunk before it is written") {
  ExplicitPlan plan = ring_allreduce(4);
  auto& prog = plan.mutable_program(0);
  std::swap(prog[1], prog[2]);
  CHECK(verify_error(plan) == "rank 0 op 1 (send to 1 ch 0): reads output chunk 2, which holds nothing yet");
}

TEST_CASE("verify: a changed chunk index mixes two input chunks") {
  ExplicitPlan plan = ring_allreduce(4);
  Op& op = plan.mutable_program(2)[1];
  REQUIRE(op.type == OpType::RecvReduce);
  REQUIRE(op.src.chunk == 0);
  op.src.chunk = 1;
  CHECK(verify_error(plan) ==
        "rank 2 op 1 (recv_reduce from 1 ch 0): adds {chunk 0 from rank 1} (received) to {chunk 1 from rank 2} (input chunk "
        "1): different input chunks");
}

TEST_CASE("verify: a duplicated recv_reduce is never matched") {
  ExplicitPlan plan = ring_allreduce(4);
  auto& prog = plan.mutable_program(1);
  prog.insert(prog.begin() + 2, prog[1]);
  CHECK(verify_error(plan) ==
        "rank 1 op 12 (recv from 0 ch 0): never matched: rank 0 sends 6 messages to rank 1 on ch 0 and rank 1 receives 7");
}

TEST_CASE("verify: a contribution counted twice") {
  // Two ranks; rank 0 adds its own input again after the exchange.
  std::vector<std::vector<Op>> progs{
      {send(1, in(0), 1, 0), recv_reduce(1, in(0), out(0), 1, 0), reduce(in(0), out(0), 1, 0)},
      {send(0, in(0), 1, 0), recv_reduce(0, in(0), out(0), 1, 0)},
  };
  ExplicitPlan plan = hand_plan(req(Collective::AllReduce, 2, 64), 1, 1, 1, progs);
  CHECK(verify_error(plan) ==
        "rank 0 op 2 (reduce ch 0): adds {chunk 0 from rank 0} (input chunk 0) to {chunk 0 from ranks 0-1} (output chunk 0): "
        "counts rank 0 twice");
  progs[0].pop_back();
  check_plan(hand_plan(req(Collective::AllReduce, 2, 64), 1, 1, 1, progs));
}

TEST_CASE("verify: a cross-channel dep that orders a read after a write") {
  // Broadcast from rank 0: channel 0 copies the input to the output, channel 1 sends the output.
  // Only the dep orders the send after the copy.
  std::vector<std::vector<Op>> progs{
      {copy(in(0), out(0), 1, 0), send(1, out(0), 1, 1)},
      {recv(0, out(0), 1, 1)},
  };
  progs[0][1].depend_on(0);
  Request bc = req(Collective::Broadcast, 2, 64);
  check_plan(hand_plan(bc, 1, 1, 2, progs));
  progs[0][1].deps[0] = kNoDep;
  CHECK(verify_error(hand_plan(bc, 1, 1, 2, progs)) ==
        "rank 0 op 1 (send to 1 ch 1): reads output chunk 0, written by op 0 (copy ch 0), and nothing orders the two (a dep "
        "is missing)");
}

TEST_CASE("verify: a write not ordered after a read on another channel") {
  // Rank 0 sends its output on channel 1 and receives it back on channel 0. The receive cannot
  // complete before the send's data has gone round, but only deps order ops of one rank: an
  // executor may run channels on engines that know nothing of each other.
  std::vector<std::vector<Op>> progs{
      {copy(in(0), out(0), 1, 0), send(1, out(0), 1, 1), recv(1, out(0), 1, 0)},
      {recv(0, out(0), 1, 1), send(0, out(0), 1, 0)},
  };
  progs[0][1].depend_on(0);
  progs[1][1].depend_on(0);
  Request bc = req(Collective::Broadcast, 2, 64);
  CHECK(verify_error(hand_plan(bc, 1, 1, 2, progs)) ==
        "rank 0 op 2 (recv from 1 ch 0): overwrites output chunk 0, read by op 1 (send to 1 ch 1), and nothing orders the two "
        "(a dep is missing)");
  progs[0][2].depend_on(1);
  check_plan(hand_plan(bc, 1, 1, 2, progs));
}

TEST_CASE("verify: two ranks that each receive before sending deadlock") {
  // AllGather of one chunk per rank.
  auto prog = [](int me, bool send_first) {
    int peer = 1 - me;
    std::vector<Op> ops{recv(peer, out(static_cast<std::uint32_t>(peer)), 1, 0), send(peer, in(0), 1, 0)};
    if (send_first) std::swap(ops[0], ops[1]);
    ops.push_back(copy(in(0), out(static_cast<std::uint32_t>(me)), 1, 0));
    return ops;
  };
  Request ag = req(Collective::AllGather, 2, 32);
  CHECK(verify_error(hand_plan(ag, 1, 2, 1, {prog(0, false), prog(1, false)})) ==
        "deadlock: 2 ops can never run: rank 0 op 0 (recv from 1 ch 0) waits for a message from rank 1; rank 1 op 0 (recv "
        "from 0 ch 0) waits for a message from rank 0");
  check_plan(hand_plan(ag, 1, 2, 1, {prog(0, true), prog(1, false)}));
}

TEST_CASE("verify: malformed ops") {
  Request bc = req(Collective::Broadcast, 2, 64);
  auto error = [&](std::vector<Op> rank0, std::vector<Op> rank1 = {}) {
    return verify_error(hand_plan(bc, 2, 2, 1, {std::move(rank0), std::move(rank1)}));
  };
  CHECK(error({send(1, in(1), 2, 0)}) == "rank 0 op 0 (send to 1 ch 0): input chunks 1-2 are out of range (input has 2 chunks)");
  CHECK(error({copy(in(0), out(2), 1, 0)}) == "rank 0 op 0 (copy ch 0): output chunk 2 is out of range (output has 2 chunks)");
  CHECK(error({send(2, in(0), 1, 0)}) == "rank 0 op 0 (send to 2 ch 0): peer 2 is not a rank of 2");
  CHECK(error({send(0, in(0), 1, 0)}) == "rank 0 op 0 (send to 0 ch 0): its peer is its own rank");
  CHECK(error({send(1, in(0), 1, 1)}) == "rank 0 op 0 (send to 1 ch 1): channel 1 is out of range (the plan has 1 channel)");
  CHECK(error({copy(in(0), out(0), 0, 0)}) == "rank 0 op 0 (copy ch 0): count is 0");
  Op forward = copy(in(0), out(0), 2, 0);
  forward.depend_on(0);
  CHECK(error({forward}) == "rank 0 op 0 (copy ch 0): dep on op 0 is not an earlier op");
  CHECK(error({}, {recv(0, out(0), 1, 0)}) ==
        "rank 1 op 0 (recv from 0 ch 0): never matched: rank 0 sends 0 messages to rank 1 on ch 0 and rank 1 receives 1");
  CHECK(error({send(1, in(0), 2, 0)}, {recv(0, out(0), 1, 0)}) ==
        "rank 1 op 0 (recv from 0 ch 0): receives 1 chunk but its matching send, rank 0 op 0 (send to 1 ch 0), sends 2");
}

TEST_CASE("verify: transfers and local ops must move equal bytes") {
  // Input: 2 chunks of 32 bytes; scratch: 2 chunks of 16 bytes.
  auto plan = [](std::vector<Op> rank0, std::vector<Op> rank1) {
    ExplicitPlan p = hand_plan(Request{Collective::Broadcast, 64, 2, 0}, 2, 2, 1, {std::move(rank0), std::move(rank1)});
    p.mutable_info().scratch_chunks = 2;
    p.mutable_info().scratch_bytes = 32;
    return p;
  };
  CHECK(verify_error(plan({send(1, in(0), 1, 0)}, {recv(0, scratch(0), 1, 0)})) ==
        "rank 1 op 0 (recv from 0 ch 0): receives 16 bytes into scratch chunk 0 but its matching send, rank 0 op 0 (send to 1 "
        "ch 0), sends 32 bytes from input chunk 0");
  CHECK(verify_error(plan({copy(in(0), scratch(0), 1, 0)}, {})) ==
        "rank 0 op 0 (copy ch 0): input chunk 0 (32 bytes) and scratch chunk 0 (16 bytes) differ in size");
}

TEST_CASE("verify: wrong or missing final results") {
  Request ar = req(Collective::AllReduce, 2, 64);
  // Rank 0 keeps its own input only.
  CHECK(verify_error(hand_plan(ar, 1, 1, 1,
                               {{send(1, in(0), 1, 0), copy(in(0), out(0), 1, 0)}, {recv_reduce(0, in(0), out(0), 1, 0)}})) ==
        "rank 0 output chunk 0: holds {chunk 0 from rank 0} but should hold {chunk 0 from ranks 0-1}");
  // Rank 1 never writes its output.
  Request bc = req(Collective::Broadcast, 2, 64);
  CHECK(verify_error(hand_plan(bc, 1, 1, 1, {{copy(in(0), out(0), 1, 0)}, {}})) ==
        "rank 1 output chunk 0: holds nothing but should hold {chunk 0 from rank 0}");
  // AllGather does not reduce.
  Request ag = req(Collective::AllGather, 2, 32);
  CHECK(verify_error(hand_plan(ag, 1, 2, 1, {{send(1, in(0), 1, 0)}, {recv_reduce(0, in(0), out(0), 1, 0)}})) ==
        "rank 1 op 0 (recv_reduce from 0 ch 0): adds {chunk 0 from rank 0} (received) to {chunk 0 from rank 1} (input chunk 0), "
        "but allgather does not reduce");
  // Chunk counts that do not fit the collective.
  CHECK(verify_error(hand_plan(ag, 1, 3, 1, {{}, {}})) == "plan: allgather needs out_chunks = 2 x in_chunks, got in_chunks 1, out_chunks 3");
}

namespace {

// A plan whose programs cannot be expanded.
class Broken final : public Plan {
 public:
  explicit Broken(PlanInfo info) : Plan(std::move(info)) {}
  std::vector<Op> program(int) const override { throw collkit::InputError("params: order: not a permutation"); }
  bool is_explicit() const override { return false; }
};

}  // namespace

TEST_CASE("verify: never throws for a wrong plan") {
  PlanInfo info;
  info.req = req(Collective::AllReduce, 2, 64);
  CHECK(verify_error(Broken(info)) == "rank 0: cannot expand its program: params: order: not a permutation");
}

TEST_CASE("verify: alltoall, a hand-written direct exchange") {
  // Rank s sends block d (m chunks) to rank d, which stores it as its block s.
  for (int p : {1, 2, 3, 5}) {
    auto up = static_cast<std::uint32_t>(p), m = 2u;
    std::vector<std::vector<Op>> progs(static_cast<std::size_t>(p));
    for (int s = 0; s < p; ++s) {
      auto us = static_cast<std::uint32_t>(s);
      auto& ops = progs[static_cast<std::size_t>(s)];
      ops.push_back(copy(in(us * m), out(us * m), m, 0));
      for (int d = 0; d < p; ++d)
        if (d != s) ops.push_back(send(d, in(static_cast<std::uint32_t>(d) * m), m, 0));
      for (int d = 0; d < p; ++d)
        if (d != s) ops.push_back(recv(d, out(static_cast<std::uint32_t>(d) * m), m, 0));
    }
    ExplicitPlan plan = hand_plan(req(Collective::AlltoAll, p, 8ull * 4 * up * m), up * m, up * m, 1, progs);
    check_plan(plan);
    if (p > 2) {
      std::swap(plan.mutable_program(0)[1].src, plan.mutable_program(0)[2].src);
      CHECK(verify_error(plan) == "rank 1 output chunk 0: holds {chunk 4 from rank 0} but should hold {chunk 2 from rank 0}");
    }
  }
}

TEST_CASE("verify reports its progress to whoever asks") {
  // 160 ranks on one ring: 101760 ops, reported after 65536 executed. On 8 rings only channel 0
  // runs (the others are its images), and progress counts for all 8.
  for (int channels : {1, 8}) {
    CAPTURE(channels);
    auto plan = collkit::plan::generate("ring", {collkit::plan::Collective::AllReduce, 160 * 8 * 1024, 160, 0}, nullptr, [&] {
      collkit::plan::AlgoOptions o;
      o.channels = channels;
      return o;
    }());
    std::vector<std::pair<std::size_t, std::size_t>> heard;
    auto r = collkit::plan::verify(*plan, collkit::plan::ChunkStore::Auto,
                                   [&](std::size_t done, std::size_t total) { heard.emplace_back(done, total); });
    CHECK(r.ok);
    CHECK(r.ops == 101760u * static_cast<unsigned>(channels));
    CHECK(r.congruent_channels == channels - 1);
    REQUIRE(heard.size() == 1);
    CHECK(heard[0].first >= 65536u * static_cast<unsigned>(channels));
    CHECK(heard[0].first % static_cast<unsigned>(channels) == 0);
    CHECK(heard[0].second == r.ops);
  }
}

TEST_CASE("verify refuses, up front, a plan whose execution would not fit in memory") {
  // 160 ranks on one ring run 101760 ops (about 4 MB); on 8 rings channel 0 alone runs that many.
  auto ring = [](int channels) {
    collkit::plan::AlgoOptions o;
    o.channels = channels;
    return collkit::plan::generate("ring", {collkit::plan::Collective::AllReduce, 160 * 8 * 1024, 160, 0}, nullptr, o);
  };
  auto refusal = [](const Plan& plan, std::uint64_t limit) {
    try {
      (void)verify(plan, ChunkStore::Auto, {}, limit);
    } catch (const collkit::InputError& e) {
      return std::string(e.what());
    }
    return std::string("(verified)");
  };
  auto one = ring(1), eight = ring(8);
  CHECK(refusal(*one, 2'000'000) ==
        "verify: this plan runs about 101760 ops, which would take about 4 MB, more than the limit of 2 MB; verify the same "
        "algorithm on fewer ranks");
  CHECK(refusal(*eight, 2'000'000) ==
        "verify: channel 0 of this plan runs about 101760 ops, which would take about 4 MB, more than the limit of 2 MB; verify "
        "the same algorithm on fewer ranks");
  // Channel 0 is all that runs: 8 rings fit where channel 0 does, though all of them would not.
  CHECK(refusal(*eight, 8'000'000) == "(verified)");
  CHECK(refusal(*one, 8'000'000) == "(verified)");
}

TEST_CASE("verify counts what a plan's channels cost, not only its ops") {
  // A synth plan has a channel per tree arc: on 2 x dgx-h100 hundreds a rank, whose per-channel
  // clocks (used x used a rank, the channels its program uses) outweigh its ops; at 1024 ranks
  // they came to terabytes and verify died of std::bad_alloc. The limit sits above the ops' share
  // and below the whole. verify counts the most channels of the ranks it samples (0, p/2, p - 1).
  collkit::topo::Topology t = collkit::topo::synth({"dgx-h100", 2, ""});
  auto p = collkit::plan::generate("synth", {collkit::plan::Collective::AllGather, 1 << 20, 16, 0}, &t);
  int channels = 0;
  for (int r : {0, 8, 15}) {
    std::set<int> used;
    for (const collkit::plan::Op& o : p->program(r)) used.insert(o.channel);
    channels = std::max(channels, static_cast<int>(used.size()));
  }
  REQUIRE(channels > 64);
  double ops = 0;
  for (int r = 0; r < 16; ++r) ops += static_cast<double>(p->program(r).size());
  const double pairs = 16.0 * channels * channels * 8;
  REQUIRE(pairs > ops * 40);
  const auto limit = static_cast<std::uint64_t>(ops * 40 + pairs / 2);
  std::string got;
  try {
    (void)verify(*p, ChunkStore::Auto, {}, limit);
  } catch (const collkit::InputError& e) {
    got = e.what();
  }
  CHECK(got.starts_with("verify: this plan runs about "));
  CHECK(got.find(" ops on " + std::to_string(channels) + " channels a rank, which would take about ") != std::string::npos);
  CHECK(verify(*p, ChunkStore::Auto, {}, static_cast<std::uint64_t>(ops * 40 + pairs * 2)).ok);
}

TEST_CASE("verify's clocks count the channels a rank uses, not all the plan's") {
  // Stars on a GB200 NVL72 rack: a channel per tree arc, 72 x 72 in all, of which a rank uses its
  // own star's 71 and one in each other star. Clocks over every channel would take 72 x 5185^2 x
  // 8 bytes, 15 GB, and were refused under a 2 GB limit; over the used ones they take megabytes.
  collkit::topo::Topology t = collkit::topo::synth({"gb200-nvl72", 1, ""});
  auto p = collkit::plan::generate("synth", {collkit::plan::Collective::AllGather, std::uint64_t{72} * 4 * 3641, 72, 0}, &t);
  const int channels = p->info().channels;
  REQUIRE(72.0 * channels * channels * 8 > 2e9);
  std::set<int> used;
  for (const collkit::plan::Op& o : p->program(5)) used.insert(o.channel);
  CHECK(used.size() < 200u);
  VerifyResult r = verify(*p, ChunkStore::Auto, {}, 2'000'000'000);
  CHECK(r.ok);
  CHECK(r.transfers == 72u * 71u * static_cast<std::uint64_t>(std::stoi(p->info().params.at("pipeline"))));
}

namespace {

// A compact plan whose programs outgrow the host, as a ring over 16777216 ranks does: its
// program() fails to allocate.
class Oversized final : public Plan {
 public:
  explicit Oversized(PlanInfo info) : Plan(std::move(info)) {}
  std::vector<Op> program(int) const override { throw std::bad_alloc(); }
  bool is_explicit() const override { return false; }
};

}  // namespace

TEST_CASE("verify says so when one rank's program alone does not fit in memory") {
  PlanInfo info;
  info.req = {Collective::AllReduce, 1024, 16, 0};
  info.in_chunks = info.out_chunks = 16;
  Oversized plan(info);
  // Once a bare "std::bad_alloc", from code that never said what it was allocating.
  CHECK_THROWS_WITH_AS((void)verify(plan, ChunkStore::Auto, {}, 0),
                       "verify: rank 0's program alone does not fit in the memory this host has; verify the same algorithm on fewer ranks "
                       "or channels",
                       collkit::InputError);
}
