#pragma once
// Shared set-up for the overlap tests: a synthetic cluster of dgx-h100 hosts (small, so that plans
// simulate in milliseconds) and a run of the whole pipeline on it.

#include <memory>
#include <string>

#include "collkit/overlap/overlap.h"
#include "collkit/overlap/report.h"
#include "collkit/topo/gpu.h"
#include "collkit/topo/synth.h"

namespace collkit::overlap::testing {

struct Run {
  topo::Topology topo;
  Model model;
  Layout layout;
  Workload workload;
  std::unique_ptr<ComputeModel> compute;
  std::unique_ptr<CommModel> comm;
  Report report;

  const StrategyResult& row(const std::string& name) const {
    for (const auto& r : report.rows)
      if (r.name == name) return r;
    throw std::runtime_error("no row " + name);
  }
};

inline std::unique_ptr<Run> run(const std::string& model, Layout l, int hosts, Request req = {}, double comm_scale = 1.0,
                                 const std::string& node = "dgx-h100") {
  auto r = std::make_unique<Run>();
  r->topo = topo::synth({node, hosts, ""});
  r->model = load_model(model);
  r->layout = l;
  check_layout(l, r->model, r->topo);
  r->workload = build_workload(r->model, l);
  r->compute = std::make_unique<ComputeModel>(topo::gpu_peak(r->topo, 0, l.dtype), Efficiency{}, dtype_bytes(l.dtype));
  r->comm = std::make_unique<CommModel>(r->topo, l, comm_scale);
  r->report = overlap::run(r->workload, *r->compute, *r->comm, req);
  return r;
}

}  // namespace collkit::overlap::testing
