// Overlap layer speed: a whole coll-overlap run (plans for every group simulated and cached, every
// strategy's knobs searched, auto's descent) on 16 and 128 DGX H100 hosts, and the stream
// timeline alone. Counters: tasks per schedule, plans simulated, timeline tasks per second.
//
// Run: build/bin/bench_overlap   (COLLKIT_CONFIGS must point at configs/ when run outside the tree)

#include <benchmark/benchmark.h>

#include <map>

#include "collkit/overlap/overlap.h"
#include "collkit/topo/gpu.h"
#include "collkit/topo/synth.h"

using namespace collkit;

namespace {

const topo::Topology& cluster(int nodes) {
  static std::map<int, topo::Topology> cache;
  auto it = cache.find(nodes);
  if (it == cache.end()) it = cache.emplace(nodes, topo::synth({"dgx-h100", nodes, ""})).first;
  return it->second;
}

overlap::Layout llama70b_tp8_dp16() {
  overlap::Layout l;
  l.tp = 8, l.sp = true, l.dp = 16, l.seq_len = 8192, l.microbatches = 4;
  return l;
}

overlap::Layout deepseek_ep64_pp16() {
  overlap::Layout l;
  l.dp = 64, l.ep = 64, l.pp = 16, l.seq_len = 4096, l.microbatches = 16, l.dtype = "fp8";
  return l;
}

void BM_Run(benchmark::State& state, const char* model_name, overlap::Layout l, int nodes) {
  const auto& t = cluster(nodes);
  overlap::Model m = overlap::load_model(model_name);
  overlap::check_layout(l, m, t);
  overlap::Workload w = overlap::build_workload(m, l);
  std::size_t tasks = 0, plans = 0;
  for (auto _ : state) {
    overlap::ComputeModel cm(topo::gpu_peak(t, 0, l.dtype), {}, overlap::dtype_bytes(l.dtype));
    overlap::CommModel comm(t, l);  // a fresh cache each time: the plans' simulation is timed too
    overlap::Report r = overlap::run(w, cm, comm, {});
    tasks = r.rows.back().tasks.size();
    plans = comm.plans_simulated();
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["plans"] = static_cast<double>(plans);
}

void BM_Timeline(benchmark::State& state) {
  const auto& t = cluster(16);
  overlap::Layout l = llama70b_tp8_dp16();
  overlap::Model m = overlap::load_model("llama3-70b");
  overlap::Workload w = overlap::build_workload(m, l);
  overlap::ComputeModel cm(topo::gpu_peak(t, 0, l.dtype), {}, 2);
  overlap::CommModel comm(t, l);
  overlap::StrategyResult r = overlap::evaluate(w, cm, comm, {{"dp-bucket", 25}, {"tp-decompose", 8}}, overlap::kDefaultContention);
  for (auto _ : state) benchmark::DoNotOptimize(overlap::simulate(r.tasks, overlap::kDefaultContention));
  state.counters["tasks/s"] = benchmark::Counter(static_cast<double>(r.tasks.size()), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Run, llama3_70b_tp8_dp16_16hosts, "llama3-70b", llama70b_tp8_dp16(), 16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Run, deepseek_v3_ep64_pp16_128hosts, "deepseek-v3", deepseek_ep64_pp16(), 128)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Timeline)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
