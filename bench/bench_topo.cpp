// Topology layer speed: synthesis of 1024- and 16384-GPU clusters, JSON round trips, and path
// queries. The baseline for routes_from() is the same work done as one route() per destination,
// measured in the same run: the ratio is what the batched single-source search buys.
//
// Run: build/bin/bench_topo   (COLLKIT_CONFIGS must point at configs/ when run outside the tree)

#include <benchmark/benchmark.h>

#include "collkit/topo/io.h"
#include "collkit/topo/queries.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"

using namespace collkit::topo;

namespace {

// 8 GPUs per DGX H100 node: 128 nodes = 1024 GPUs, 2048 nodes = 16384 GPUs.
const Topology& cluster(int nodes) {
  static std::map<int, Topology> cache;
  auto it = cache.find(nodes);
  if (it == cache.end()) it = cache.emplace(nodes, synth({"dgx-h100", nodes, "fat-tree:rails=8,oversub=1"})).first;
  return it->second;
}

void BM_Synth(benchmark::State& state) {
  int nodes = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(synth({"dgx-h100", nodes, "fat-tree:rails=8,oversub=1"}));
  state.counters["gpus"] = nodes * 8.0;
}

void BM_JsonWrite(benchmark::State& state) {
  const Topology& t = cluster(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) bytes = to_json(t).size();
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

void BM_JsonRead(benchmark::State& state) {
  std::string text = to_json(cluster(static_cast<int>(state.range(0))));
  for (auto _ : state) benchmark::DoNotOptimize(from_json(text, "bench.json"));
}

// All destinations from one GPU in one pass (what a planner does per source) ...
void BM_RoutesFrom(benchmark::State& state) {
  const Topology& t = cluster(static_cast<int>(state.range(0)));
  Router r(t);
  for (auto _ : state) benchmark::DoNotOptimize(r.routes_from(t.rank_vertex(0)));
  state.counters["vertices"] = static_cast<double>(t.num_vertices());
}

// ... against the baseline: one route() per destination rank, for 64 destinations (scaled up
// to all ranks in the "per_all_ranks_s" counter so the two compare directly).
void BM_RoutePerPair(benchmark::State& state) {
  const Topology& t = cluster(static_cast<int>(state.range(0)));
  Router r(t);
  const Rank sample = 64;
  for (auto _ : state)
    for (Rank d = 1; d <= sample; ++d) benchmark::DoNotOptimize(r.route_ranks(0, d * static_cast<Rank>(t.num_ranks() / (sample + 1))));
  state.counters["pairs"] = sample;
}

void BM_EqualCostPaths(benchmark::State& state) {
  const Topology& t = cluster(static_cast<int>(state.range(0)));
  Router r(t);
  auto last = static_cast<Rank>(t.num_ranks() - 1);
  std::size_t n = 0;
  for (auto _ : state) n = r.equal_cost_paths(t.rank_vertex(0), t.rank_vertex(last)).size();
  state.counters["paths"] = static_cast<double>(n);
}

void BM_RanksBySwitch(benchmark::State& state) {
  const Topology& t = cluster(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ranks_by_switch(t, VertexKind::NetSwitch));
}

void BM_MaxFlowHostCut(benchmark::State& state) {
  const Topology& t = cluster(static_cast<int>(state.range(0)));
  auto half = static_cast<Rank>(t.num_ranks() / 2);
  std::vector<Rank> a, b;
  for (Rank r = 0; r < t.num_ranks(); ++r) (r < half ? a : b).push_back(r);
  auto ea = endpoints(t, a), eb = endpoints(t, b);
  double f = 0;
  for (auto _ : state) f = max_flow_gbps(t, ea, eb);
  state.counters["bisection_GBps"] = f;
}

}  // namespace

BENCHMARK(BM_Synth)->Arg(128)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_JsonWrite)->Arg(128)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_JsonRead)->Arg(128)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RoutesFrom)->Arg(128)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RoutePerPair)->Arg(128)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EqualCostPaths)->Arg(128)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RanksBySwitch)->Arg(128)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MaxFlowHostCut)->Arg(128)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
