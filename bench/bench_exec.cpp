// coll-run's host side: the global schedule the GPU backends (cuda, nccl) build from a plan before
// they run it (schedule.h: expand every rank's program, match each send to its receive, order
// the transfers into rounds). A 1-channel ring AllReduce on 128 x DGX H100 (1024 GPUs), as in
// bench_plan's ring_1024_1ch.
//
// Run: build/bin/bench_exec   (COLLKIT_CONFIGS must point at configs/ when run outside the tree)

#include <benchmark/benchmark.h>

#include "collkit/plan/algorithm.h"
#include "collkit/topo/synth.h"
#include "schedule.h"

using namespace collkit;

namespace {

void BM_Schedule(benchmark::State& state, const char* algo, int nodes, int channels) {
  const topo::Topology t = topo::synth({"dgx-h100", nodes, "fat-tree:rails=8,oversub=1"});
  plan::Request req{plan::Collective::AllReduce, std::uint64_t{1} << 30, static_cast<int>(t.num_ranks()), 0};
  auto p = plan::generate(algo, req, &t, {channels, 0, false, {}});
  exec::detail::GlobalSchedule g;
  for (auto _ : state) g = exec::detail::make_schedule(*p);
  state.counters["steps"] = static_cast<double>(g.steps.size());
  state.counters["rounds"] = static_cast<double>(g.rounds);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Schedule, ring_1024_1ch, "ring", 128, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_MAIN();
