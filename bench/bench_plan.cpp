// Planning layer speed, against the targets: generate + verify + simulate a ring
// AllReduce on 128 x DGX H100 (1024 GPUs) in under 2 s on one core, hierarchical AllReduce on
// 2048 x DGX H100 (16384 GPUs) in under 10 s. Counters report ops and simulator events per second.
//
// Run: build/bin/bench_plan   (COLLKIT_CONFIGS must point at configs/ when run outside the tree)

#include <benchmark/benchmark.h>

#include <map>

#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/synth.h"

using namespace collkit;

namespace {

const topo::Topology& cluster(int nodes) {
  static std::map<int, topo::Topology> cache;
  auto it = cache.find(nodes);
  if (it == cache.end()) it = cache.emplace(nodes, topo::synth({"dgx-h100", nodes, "fat-tree:rails=8,oversub=1"})).first;
  return it->second;
}

plan::Request request(const topo::Topology& t) {
  return {plan::Collective::AllReduce, std::uint64_t{1} << 30, static_cast<int>(t.num_ranks()), 0};
}

void BM_Generate(benchmark::State& state, const char* algo, int nodes, int channels) {
  const auto& t = cluster(nodes);
  std::size_t ops = 0;
  for (auto _ : state) {
    auto p = plan::generate(algo, request(t), &t, {channels, 0, false, {}});
    ops = 0;
    for (int r = 0; r < p->nranks(); ++r) ops += p->program(r).size();
  }
  state.counters["ops"] = static_cast<double>(ops);
}

void BM_Verify(benchmark::State& state, const char* algo, int nodes, int channels) {
  const auto& t = cluster(nodes);
  auto p = plan::generate(algo, request(t), &t, {channels, 0, false, {}});
  plan::VerifyResult r;
  for (auto _ : state) r = plan::verify(*p);
  if (!r.ok) state.SkipWithError(r.error.c_str());
  state.counters["ops"] = static_cast<double>(r.ops);
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(r.ops), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Simulate(benchmark::State& state, const char* algo, int nodes, int channels) {
  const auto& t = cluster(nodes);
  auto p = plan::generate(algo, request(t), &t, {channels, 0, false, {}});
  plan::SimResult r;
  for (auto _ : state) r = plan::simulate(*p, t);
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(r.events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["predicted_us"] = r.time_us;
}

// The same without the symmetry fold: the discrete-event simulator's own load (expand, check,
// match every send to its receive) and run over every op, as a plan that does not fold gets it.
void BM_SimulateUnfolded(benchmark::State& state, const char* algo, int nodes, int channels) {
  const auto& t = cluster(nodes);
  auto p = plan::generate(algo, request(t), &t, {channels, 0, false, {}});
  plan::SimOptions opt;
  opt.fold_symmetry = false;
  plan::SimResult r;
  for (auto _ : state) r = plan::simulate(*p, t, opt);
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(r.events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["predicted_us"] = r.time_us;
}

// The lower bound `coll-plan simulate` prints next to the prediction (the ForestColl cut's max
// flows). Memoised per (topology, ranks) inside the library: one iteration measures the real work.
void BM_Bound(benchmark::State& state, int nodes) {
  const auto& t = cluster(nodes);
  plan::Bound b;
  for (auto _ : state) b = plan::lower_bound(request(t), t);
  state.counters["bound_us"] = b.time_us();
}

// The target as one measured number: all three steps end to end (not the bound: see
// BM_Bound).
void BM_EndToEnd(benchmark::State& state, const char* algo, int nodes, int channels) {
  const auto& t = cluster(nodes);
  for (auto _ : state) {
    auto p = plan::generate(algo, request(t), &t, {channels, 0, false, {}});
    auto v = plan::verify(*p);
    if (!v.ok) state.SkipWithError(v.error.c_str());
    benchmark::DoNotOptimize(plan::simulate(*p, t));
  }
}

}  // namespace

// One ring (the case), then the default for this cluster: one ring per NIC rail (8).
BENCHMARK_CAPTURE(BM_Generate, ring_1024_1ch, "ring", 128, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Verify, ring_1024_1ch, "ring", 128, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Simulate, ring_1024_1ch, "ring", 128, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_SimulateUnfolded, ring_1024_1ch, "ring", 128, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_EndToEnd, ring_1024_1ch, "ring", 128, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_EndToEnd, ring_1024_8ch, "ring", 128, 0)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Bound, ring_1024, 128)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Generate, hier_16384, "hier", 2048, 0)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Verify, hier_16384, "hier", 2048, 0)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Simulate, hier_16384, "hier", 2048, 0)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Bound, hier_16384, 2048)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_EndToEnd, hier_16384, "hier", 2048, 0)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_MAIN();
