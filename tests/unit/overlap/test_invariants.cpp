// The invariants of the overlap model, over several layouts: overlap is never slower than none,
// exposed communication is never negative, with communication free the speedup is 1, groups
// across hosts pay the network and groups inside a host NVLink, contention costs.
// Every *_us compared here is the model's predicted time (deterministic output of the step model
// and the plan simulator), not a measured one: these are properties of the model, as issue 5 asks.

#include <doctest/doctest.h>

#include <algorithm>

#include "collkit/core/error.h"
#include "collkit/plan/collective.h"
#include "overlap_testing.h"
#include "sanitizer_pass.h"

using namespace collkit::overlap;
using collkit::plan::Collective;
namespace ot = collkit::overlap::testing;

namespace {

struct Case {
  const char* name;
  const char* model;
  Layout layout;
  int hosts;
};

std::vector<Case> cases() {
  Layout tp_sp;  // Megatron-style TP + SP inside a host, DDP across two hosts
  tp_sp.tp = 8, tp_sp.sp = true, tp_sp.dp = 2, tp_sp.seq_len = 4096;
  Layout fsdp;  // FSDP over 16 GPUs with TP 2, two micro-batches
  fsdp.tp = 2, fsdp.sp = true, fsdp.dp = 8, fsdp.zero = 3, fsdp.seq_len = 2048, fsdp.microbatches = 2;
  Layout zero1;
  zero1.tp = 4, zero1.dp = 4, zero1.zero = 1, zero1.seq_len = 2048;
  Layout moe;  // Mixtral with EP 8 across two hosts
  moe.tp = 1, moe.dp = 16, moe.ep = 8, moe.seq_len = 4096;
  Layout pp;
  pp.tp = 4, pp.sp = true, pp.pp = 2, pp.dp = 2, pp.microbatches = 4, pp.seq_len = 2048;
  Layout prefill;
  prefill.tp = 8, prefill.mode = Mode::Prefill, prefill.seq_len = 8192;
  Layout decode;
  decode.tp = 8, decode.mode = Mode::Decode, decode.micro_batch = 64, decode.seq_len = 4096;
  return {{"llama3-8b tp8 sp dp2", "llama3-8b", tp_sp, 2},   {"llama3-8b fsdp", "llama3-8b", fsdp, 2},
          {"llama3-8b zero1", "llama3-8b", zero1, 2},        {"mixtral ep8", "mixtral-8x7b", moe, 2},
          {"llama3-8b pp2", "llama3-8b", pp, 2},             {"llama3-70b prefill tp8", "llama3-70b", prefill, 1},
          {"llama3-70b decode tp8", "llama3-70b", decode, 1}};
}

}  // namespace

// One test for the invariants of the default run of each case: each run plans and simulates
// every collective of the step (13 s for the cases at -O2, over two minutes under the
// sanitizers), and ctest runs each test case in a process of its own.
TEST_CASE(
    "overlap invariants: auto is never slower than none, exposed communication is never negative, and the bucketed and "
    "prefetching strategies alone are never slower than none") {
  // Under the sanitizers every other layout (sanitizer_pass.h): each is the same model code.
  int ran = 0, index = 0;
  for (const auto& c : cases()) {
    if (collkit::testing::sanitizer_pass() && index++ % 2 == 1) continue;
    ++ran;
    CAPTURE(c.name);
    auto r = ot::run(c.model, c.layout, c.hosts);
    // step_us is the model's predicted step (no clock is read): an invariant of the model, that
    // overlapping a strategy's collectives never lengthens the predicted step.
    for (const auto& row : r->report.rows)
      if (row.name == "dp-bucket" || row.name == "fsdp-prefetch") CHECK(row.step_us <= r->row("none").step_us * (1 + 1e-12));
    const auto& none = r->row("none");
    CHECK(none.stats.exposed_comm_us == doctest::Approx(none.stats.comm_us));  // serial: everything exposed
    CHECK(none.overlap_ratio == doctest::Approx(0));
    const auto& best = r->row("auto");
    CHECK(best.step_us <= none.step_us * (1 + 1e-12));
    CHECK(best.speedup >= 1.0 - 1e-12);
    for (const auto& row : r->report.rows) {
      CAPTURE(row.name);
      CHECK(row.stats.exposed_comm_us >= -1e-9 * row.stats.makespan_us);
      CHECK(row.stats.exposed_comm_us <= row.stats.comm_us * (1 + 1e-9) + 1e-6);
      CHECK(row.overlap_ratio >= -1e-9);
      CHECK(row.overlap_ratio <= 1 + 1e-9);
      CHECK(row.slowdown >= 1 - 1e-12);
      CHECK(row.slowdown <= 1 + kDefaultContention + 1e-9);
    }
  }
  CHECK(ran == (collkit::testing::sanitizer_pass() ? 4 : 7));
}

TEST_CASE("overlap invariants: with communication free, every strategy that adds no kernels has speedup 1") {
  for (const auto& c : cases()) {
    CAPTURE(c.name);
    auto r = ot::run(c.model, c.layout, c.hosts, Request{}, 0.0);
    CHECK(r->row("none").stats.comm_us == 0);
    CHECK(r->row("auto").speedup == doctest::Approx(1.0).epsilon(1e-12));
    for (const auto& row : r->report.rows)
      if (row.name == "dp-bucket" || row.name == "fsdp-prefetch") CHECK(row.speedup == doctest::Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("overlap invariants: a group across hosts pays the network, a group inside a host NVLink") {
  Layout l;
  l.tp = 8, l.dp = 2;
  auto t = collkit::topo::synth({"dgx-h100", 2, ""});
  CommModel comm(t, l);
  const std::uint64_t bytes = 256ull << 20;
  CommEstimate tp = comm.estimate(Group::Tp, Collective::AllReduce, bytes);
  CommEstimate dp = comm.estimate(Group::Dp, Collective::AllReduce, bytes);
  CHECK(tp.nranks == 8);
  CHECK(dp.nranks == 2);
  // DP group {0, 8}: one rank per host, every byte of the AllReduce (2(n-1)/n = 1 for n = 2) leaves
  // through the rank's 400 Gb/s NIC (50 GB/s) at best.
  const double nic_us = static_cast<double>(bytes) / 50e9 * 1e6;
  CHECK(dp.time_us >= nic_us);
  // TP group inside the host: 2(n-1)/n of the bytes into each GPU over its 450 GB/s NVLink and its
  // 63 GB/s PCIe link (synth stages a share through host memory: docs/synth.md "The PCIe path
  // beside NVLink"), far under the network.
  const double nvlink_us = 2.0 * 7 / 8 * static_cast<double>(bytes) / (450e9 + 63e9) * 1e6;
  CHECK(tp.time_us >= nvlink_us * 0.999);
  CHECK(tp.time_us < nic_us / 4);
  // The same two ranks' traffic inside one host (a 2-rank TP group) is NVLink-fast.
  Layout l2;
  l2.tp = 2, l2.dp = 8;
  CommModel comm2(t, l2);
  CHECK(comm2.estimate(Group::Tp, Collective::AllReduce, bytes).time_us < dp.time_us / 4);
  // The estimates are cached: asking again simulates nothing new.
  auto before = comm.plans_simulated();
  comm.estimate(Group::Dp, Collective::AllReduce, bytes);
  CHECK(comm.plans_simulated() == before);
}

TEST_CASE("overlap invariants: placing DP innermost spreads the TP group over hosts, and it pays the network") {
  Layout inside;
  inside.tp = 8, inside.dp = 2;
  Layout across = inside;
  across.order = "dp,tp,pp";
  CHECK(group_ranks(across, Group::Tp) == std::vector<collkit::topo::Rank>{0, 2, 4, 6, 8, 10, 12, 14});
  CHECK(group_ranks(across, Group::Dp) == std::vector<collkit::topo::Rank>{0, 1});
  auto t = collkit::topo::synth({"dgx-h100", 2, ""});
  CommModel a(t, inside), b(t, across);
  const std::uint64_t bytes = 64ull << 20;
  const double nvlink_us = a.estimate(Group::Tp, Collective::AllGather, bytes).time_us;
  const double spread_us = b.estimate(Group::Tp, Collective::AllGather, bytes).time_us;
  // Each host must receive the other host's 4 x 8 MiB through its NICs: 8 of them at 50 GB/s at best.
  CHECK(spread_us >= static_cast<double>(32ull << 20) / (8 * 50e9) * 1e6);
  // synth's trees bring each byte into a host through the NICs once, not once per rank: 1.3x
  // (ring and direct, before synth: over 1.5x).
  CHECK(spread_us > 1.2 * nvlink_us);
  Layout bad = inside;
  bad.order = "tp,pp";
  CHECK_THROWS_WITH_AS(check_layout(bad, load_model("llama3-8b"), t),
                       "--order \"tp,pp\" must name tp, dp and pp once each, innermost first (e.g. tp,dp,pp)", collkit::InputError);
}

TEST_CASE("overlap invariants: contention takes part of the gain, and none does not feel it") {
  Layout l;
  l.tp = 8, l.sp = true, l.dp = 2, l.seq_len = 4096;
  Request with;
  Request without;
  without.contention = 0;
  auto a = ot::run("llama3-8b", l, 2, with);
  auto b = ot::run("llama3-8b", l, 2, without);
  CHECK(a->row("none").step_us == doctest::Approx(b->row("none").step_us));
  CHECK(a->row("auto").speedup < b->row("auto").speedup);
  CHECK(a->row("auto").speedup_no_contention >= a->row("auto").speedup);
  CHECK(a->row("auto").slowdown > 1);
  CHECK(b->row("auto").slowdown == doctest::Approx(1));
}

// coll-overlap run splits the job along every rank's groups (issue 16): they must partition the
// ranks, each rank in its own, rank 0's the same as group_ranks' without a rank.
TEST_CASE("overlap layout: every rank's groups of one kind partition the ranks") {
  using collkit::topo::Rank;
  struct Mixed {
    const char* name;
    int tp, dp, ep, pp;
    const char* order;
  };
  const Mixed cases[] = {{"tp2 dp2", 2, 2, 1, 1, "tp,dp,pp"},
                         {"tp2 dp2 dp inner", 2, 2, 1, 1, "dp,tp,pp"},
                         {"dp4 ep2", 1, 4, 2, 1, "tp,dp,pp"},
                         {"tp2 dp4 ep2 pp2", 2, 4, 2, 2, "tp,dp,pp"},
                         {"tp3 dp2 pp2", 3, 2, 1, 2, "pp,dp,tp"}};
  int checked = 0;
  for (const Mixed& c : cases) {
    Layout l;
    l.tp = c.tp, l.dp = c.dp, l.ep = c.ep, l.pp = c.pp, l.order = c.order;
    for (Group g : {Group::Tp, Group::Ep, Group::Dp, Group::ExpertDp}) {
      CAPTURE(c.name);
      CAPTURE(to_string(g));
      CHECK(group_ranks(l, g, 0) == group_ranks(l, g));
      std::vector<int> seen(static_cast<std::size_t>(l.gpus()), 0);
      for (int r = 0; r < l.gpus(); ++r) {
        std::vector<Rank> mine = group_ranks(l, g, static_cast<Rank>(r));
        CHECK(std::count(mine.begin(), mine.end(), static_cast<Rank>(r)) == 1);
        // Every member names the same group: the groups are a partition.
        for (Rank m : mine) CHECK(group_ranks(l, g, m) == mine);
        if (mine.front() == static_cast<Rank>(r))
          for (Rank m : mine) ++seen[m];
        ++checked;
      }
      CHECK(std::count(seen.begin(), seen.end(), 1) == l.gpus());
    }
  }
  CHECK(checked == 4 * (4 + 4 + 4 + 16 + 12));
  Layout l;
  l.tp = 2, l.dp = 2;
  CHECK(group_ranks(l, Group::Tp, 3) == std::vector<Rank>{2, 3});
  CHECK(group_ranks(l, Group::Dp, 3) == std::vector<Rank>{1, 3});
  l.tp = 1, l.dp = 4, l.ep = 2;
  CHECK(group_ranks(l, Group::Ep, 3) == std::vector<Rank>{2, 3});
  CHECK(group_ranks(l, Group::ExpertDp, 3) == std::vector<Rank>{1, 3});
  CHECK(group_ranks(l, Group::Dp, 3) == std::vector<Rank>{0, 1, 2, 3});
}
