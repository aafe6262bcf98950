#pragma once
// What a compute op and a collective cost: roofline time with an efficiency per op kind for
// compute, and for collectives the best libs/plan plan for the group's ranks, simulated on the
// topology (never a formula of this library's own), cached by (collective, group, bytes).

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "collkit/overlap/layout.h"
#include "collkit/overlap/workload.h"
#include "collkit/plan/collective.h"
#include "collkit/topo/gpu.h"
#include "collkit/topo/topology.h"

namespace collkit::overlap {

struct Calibration;

/// Fraction of datasheet peak a kernel reaches; defaults and their grounds in docs/overlap.md.
struct Efficiency {
  double gemm = 0.70;       ///< large BF16 GEMMs reach 65-80% of dense peak on H100 (cuBLAS)
  double attention = 0.55;  ///< FlashAttention-2/3: ~70% forward, ~45-60% backward of peak
  double memory = 0.80;     ///< achievable fraction of HBM bandwidth
  double kernel_us = 2.0;   ///< fixed cost per kernel launch (what makes tiny chunks expensive)
};

class ComputeModel {
 public:
  ComputeModel(topo::GpuPeak peak, Efficiency eff, int dtype_bytes);
  /// Roofline: max(FLOPs / (peak·eff), bytes / (bw·eff_mem)) + kernel_us, for `fraction` of the op.
  double time_us(const ComputeOp& op, double fraction = 1.0) const;
  /// Whether the whole op's memory time exceeds its compute time.
  bool memory_bound(const ComputeOp& op) const;
  const topo::GpuPeak& peak() const { return peak_; }
  const Efficiency& efficiency() const { return eff_; }
  /// From now on a GEMM (and attention, as the GEMM it runs as) costs what `c` measured for its
  /// shape (Calibration::gemm_us) instead of the roofline; null: the roofline again. Not owned.
  void set_calibration(const Calibration* c) { calibration_ = c; }
  const Calibration* calibration() const { return calibration_; }

 private:
  struct Roofline {
    double compute_us, memory_us;
  };
  Roofline roofline(const ComputeOp& op, double fraction) const;
  topo::GpuPeak peak_;
  Efficiency eff_;
  int dtype_bytes_;
  const Calibration* calibration_ = nullptr;
};

/// One planned collective: what libs/plan chose and predicted.
struct CommEstimate {
  Group group = Group::Tp;
  plan::Collective coll = plan::Collective::AllReduce;
  std::uint64_t bytes = 0;
  int nranks = 0;
  std::string algorithm;  ///< the plan libs/plan found fastest; "-" when the group has one rank
  double time_us = 0;
  /// The part of time_us that is the calibrated wait for the slowest rank (Calibration::sync_us,
  /// scaled): 0 unless measured. A collective cut into chunks pays it once, not once a chunk
  /// (Emitter::comm_async).
  double sync_us = 0;
  /// What each further chunk of this collective pays for another meeting of the ranks
  /// (Calibration::chunk_sync_us, scaled): 0 unless measured.
  double chunk_sync_us = 0;
};

class CommModel {
 public:
  /// `scale` multiplies every time (0 = free communication, for what-if runs and tests).
  CommModel(const topo::Topology& t, const Layout& l, double scale = 1.0);
  /// The best plan's simulated time for `bytes` (rounded up so that it splits over the group).
  CommEstimate estimate(Group g, plan::Collective c, std::uint64_t bytes);
  int group_size(Group g) const;
  /// Every distinct collective estimated so far, in first-asked order.
  std::vector<CommEstimate> estimates() const;
  std::size_t plans_simulated() const { return simulated_; }
  /// From now on a collective costs what `c` measured (Calibration::comm_us; algorithm "measured")
  /// where it has a sample of that collective and group size. Not owned; call before any estimate.
  void set_calibration(const Calibration* c) { calibration_ = c; }

 private:
  const topo::Topology* topo_;
  Layout layout_;
  double scale_;
  std::array<int, 5> sizes_{};  // by Group
  std::map<Group, topo::Topology> groups_;
  std::map<std::tuple<Group, plan::Collective, std::uint64_t>, std::size_t> index_;
  std::vector<CommEstimate> cache_;
  std::size_t simulated_ = 0;
  const Calibration* calibration_ = nullptr;
};

/// One op of a layer as the model costs it, for reports.
struct OpCost {
  std::string name;        ///< "qkv", "attn.bwd", "tp.allgather"
  bool backward = false;
  bool comm = false;
  std::string kind;        ///< compute: "gemm" | "attention"; comm: the collective
  std::string group;       ///< comm only
  double flops = 0;        ///< compute only
  double bytes = 0;        ///< compute: memory traffic; comm: nccl-tests size
  double time_us = 0;      ///< compute: roofline alone; comm: the planned collective alone
  bool memory_bound = false;
};
/// The ops of `layer` in the first micro-batch, forward then backward, in program order.
std::vector<OpCost> layer_costs(const Workload& w, const ComputeModel& cm, CommModel& comm, int layer);

}  // namespace collkit::overlap
