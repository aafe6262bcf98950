#include "collkit/overlap/cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "collkit/core/error.h"
#include "collkit/overlap/calibration.h"
#include "collkit/plan/planner.h"
#include "collkit/topo/subset.h"

namespace collkit::overlap {

ComputeModel::ComputeModel(topo::GpuPeak peak, Efficiency eff, int dtype_bytes) : peak_(std::move(peak)), eff_(eff), dtype_bytes_(dtype_bytes) {
  auto fraction = [](double v, const char* what) {
    if (!(v > 0 && v <= 1)) throw InputError(fmt::format("{} efficiency must be in (0, 1], got {}", what, v));
  };
  fraction(eff_.gemm, "GEMM");
  fraction(eff_.attention, "attention");
  fraction(eff_.memory, "memory");
  if (eff_.kernel_us < 0) throw InputError("kernel launch cost must be >= 0 us");
}

ComputeModel::Roofline ComputeModel::roofline(const ComputeOp& op, double fraction) const {
  double flops = op.flops * fraction;
  double bytes = op.bytes * fraction;
  if (op.kind == OpKind::Gemm && fraction < 1) {
    // A chunk of m/k rows still reads the whole weight.
    bytes = (op.m * fraction * op.k + op.k * op.n + op.m * fraction * op.n) * dtype_bytes_ * op.mult;
  }
  double eff = op.kind == OpKind::Gemm ? eff_.gemm : eff_.attention;
  return {flops / (peak_.tflops * 1e12 * eff) * 1e6, bytes / (peak_.mem_bw_gbps * 1e9 * eff_.memory) * 1e6};
}

double ComputeModel::time_us(const ComputeOp& op, double fraction) const {
  if (calibration_)
    if (auto t = calibration_->gemm_us(exec_shape(op, fraction))) return *t;
  Roofline r = roofline(op, fraction);
  return std::max(r.compute_us, r.memory_us) + eff_.kernel_us;
}

bool ComputeModel::memory_bound(const ComputeOp& op) const {
  Roofline r = roofline(op, 1.0);
  return r.memory_us > r.compute_us;
}

CommModel::CommModel(const topo::Topology& t, const Layout& l, double scale) : topo_(&t), layout_(l), scale_(scale) {
  if (scale < 0) throw InputError("communication scale must be >= 0");
  // estimate() runs for every communication task of every evaluation: the sizes are known once.
  for (Group g : {Group::Tp, Group::Ep, Group::Dp, Group::ExpertDp, Group::Pp})
    sizes_[static_cast<std::size_t>(g)] = static_cast<int>(group_ranks(layout_, g).size());
}

int CommModel::group_size(Group g) const { return sizes_[static_cast<std::size_t>(g)]; }

CommEstimate CommModel::estimate(Group g, plan::Collective c, std::uint64_t bytes) {
  int n = group_size(g);
  // Round up so that the bytes split over the group (plan::check), at least one byte per rank.
  auto un = static_cast<std::uint64_t>(n);
  bytes = std::max<std::uint64_t>(un, (bytes + un - 1) / un * un);
  auto key = std::make_tuple(g, c, bytes);
  if (auto it = index_.find(key); it != index_.end()) return cache_[it->second];
  CommEstimate e{g, c, bytes, n, "-", 0};
  std::optional<double> measured;
  if (calibration_ && n > 1) measured = calibration_->comm_us(c, g, n, bytes);
  if (measured) {
    e.algorithm = "measured";
    e.time_us = (*measured + calibration_->sync_us) * scale_;
    e.sync_us = calibration_->sync_us * scale_;
    e.chunk_sync_us = calibration_->chunk_sync_us * scale_;
  } else if (n > 1 && scale_ > 0) {
    auto sub = groups_.find(g);
    if (sub == groups_.end()) {
      auto ranks = group_ranks(layout_, g);
      sub = groups_.emplace(g, topo::with_ranks(*topo_, ranks)).first;
    }
    plan::Request req{c, bytes, n, 0};
    auto p = plan::plan_for("auto", req, &sub->second);
    e.algorithm = p->info().algorithm;
    e.time_us = p->info().predicted_us * scale_;
    ++simulated_;
  }
  index_.emplace(key, cache_.size());
  cache_.push_back(e);
  return e;
}

std::vector<CommEstimate> CommModel::estimates() const { return cache_; }

std::vector<OpCost> layer_costs(const Workload& w, const ComputeModel& cm, CommModel& comm, int layer) {
  std::vector<OpCost> out;
  for (const Segment& s : w.segments) {
    if (s.layer != layer || s.microbatch != 0) continue;
    auto add_comm = [&](const CommOp& c) {
      CommEstimate e = comm.estimate(c.group, c.coll, c.bytes);
      out.push_back({c.name, s.backward, true, std::string(plan::to_string(c.coll)), std::string(to_string(c.group)), 0,
                     static_cast<double>(e.bytes), e.time_us, false});
    };
    auto add_compute = [&](const ComputeOp& op) {
      out.push_back({op.name, s.backward, false, std::string(to_string(op.kind)), "", op.flops, op.bytes, cm.time_us(op),
                     cm.memory_bound(op)});
    };
    // Program order of the serial schedule: a gather before its GEMM, a scatter after it.
    bool comm_first = s.kind == SegmentKind::GatherGemm || s.kind == SegmentKind::ParamGather || s.kind == SegmentKind::Moe;
    if (comm_first && !s.comm.empty()) add_comm(s.comm[0]);
    for (const auto& op : s.compute) add_compute(op);
    for (std::size_t i = comm_first ? 1 : 0; i < s.comm.size(); ++i) add_comm(s.comm[i]);
  }
  return out;
}

}  // namespace collkit::overlap
