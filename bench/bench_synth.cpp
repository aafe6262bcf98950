// Synthesis speed (issue #11, docs/synth.md "Synthesis time"): the rate for k trees, switch
// splitting and tree packing per preset, and what a synthesised AllGather's simulated time is
// beside ring's on the same topology (counter ring_over_synth, the baseline of the same run).
// The targets (512-rank torus in 0.5 s, 1024 GPUs in 10 s) are far off: synth is offered
// up to 16 ranks.
//
// Run: build/bin/bench_synth   (COLLKIT_CONFIGS must point at configs/ when run outside the tree)

#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <string>

#include "collkit/plan/algorithm.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/synth.h"
#include "synth/rate.h"
#include "synth/split.h"
#include "synth/trees.h"

using namespace collkit;

namespace {

const topo::Topology& preset(const std::string& node, int hosts) {
  static std::map<std::pair<std::string, int>, topo::Topology> cache;
  auto key = std::make_pair(node, hosts);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, topo::synth({node, hosts, ""})).first;
  return it->second;
}

void BM_Split(benchmark::State& state, const char* node, int hosts, int k) {
  const auto& t = preset(node, hosts);
  int p = static_cast<int>(t.num_ranks());
  double unit = plan::synth::rate_for_trees(t, p, k) / k;
  plan::synth::SplitGraph g;
  for (auto _ : state) g = plan::synth::split_switches(t, p, k, unit);
  state.counters["flows"] = g.flows;
  state.counters["arcs"] = static_cast<double>(g.arcs.size());
}

void BM_Pack(benchmark::State& state, const char* node, int hosts, int k) {
  const auto& t = preset(node, hosts);
  int p = static_cast<int>(t.num_ranks());
  plan::synth::SplitGraph g = plan::synth::split_switches(t, p, k, plan::synth::rate_for_trees(t, p, k) / k);
  plan::synth::Packing pk;
  for (auto _ : state) pk = plan::synth::pack_trees(g);
  int depth = 0;
  for (const auto& tr : pk.trees) depth = std::max(depth, tr.depth);
  state.counters["flows"] = pk.flows;
  state.counters["depth"] = depth;
}

// One synthesised AllGather of 1 GiB simulated, with ring's simulated time over it.
void BM_SimulateAllGather(benchmark::State& state, const char* node, int hosts) {
  const auto& t = preset(node, hosts);
  plan::Request req{plan::Collective::AllGather, std::uint64_t{1} << 30, static_cast<int>(t.num_ranks()), 0};
  auto synth = plan::generate("synth", req, &t);
  double us = 0;
  for (auto _ : state) us = plan::simulate(*synth, t).time_us;
  state.counters["synth_us"] = us;
  state.counters["ring_over_synth"] = plan::simulate(*plan::generate("ring", req, &t), t).time_us / us;
}

}  // namespace

BENCHMARK_CAPTURE(BM_Split, dgx_a100_x1_k2, "dgx-a100", 1, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Split, dgx_a100_x2_k2, "dgx-a100", 2, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Split, mi300x_x2_k2, "mi300x", 2, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Split, dgx_a100_x4_k1, "dgx-a100", 4, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Pack, dgx_a100_x1_k2, "dgx-a100", 1, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pack, dgx_a100_x2_k2, "dgx-a100", 2, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pack, mi300x_x2_k2, "mi300x", 2, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pack, dgx_a100_x4_k1, "dgx-a100", 4, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_SimulateAllGather, dgx_a100_x2, "dgx-a100", 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateAllGather, mi300x_x1, "mi300x", 1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateAllGather, dgx1_v100_x2, "dgx1-v100", 2)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
