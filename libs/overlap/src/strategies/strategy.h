#pragma once
// Internal: the one interface every overlap strategy implements (one per file in this folder),
// and the registry. A strategy owns some kinds of segments and emits them its way with its knob;
// segments no active strategy owns are emitted serially. Owned kinds do not overlap between
// strategies, so any set of strategies combines.

#include <string>
#include <string_view>
#include <vector>

#include "../emitter.h"
#include "collkit/overlap/workload.h"

namespace collkit::overlap {

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  /// The knob's name with its unit: "chunks", "bucket_mb", "depth".
  virtual std::string_view knob() const = 0;
  virtual std::string_view summary() const = 0;
  /// Does the workload hold segments this strategy transforms? When not, `why` says so.
  virtual bool applies(const Workload& w, std::string* why) const = 0;
  /// The knob values `auto` tries, the recommended one first.
  virtual std::vector<int> candidates(const Workload& w) const = 0;
  /// Emits `s` its way and returns true, or returns false to leave it to the serial rule.
  virtual bool emit(const Segment& s, int knob, Emitter& e) const = 0;
};

/// Every strategy, in a fixed order: dp-bucket, fsdp-prefetch, tp-decompose, moe-pipeline.
const std::vector<const Strategy*>& strategy_registry();
/// By name; throws InputError listing the known names.
const Strategy& strategy(std::string_view name);

// One factory per file.
const Strategy& dp_bucket_strategy();
const Strategy& fsdp_prefetch_strategy();
const Strategy& tp_decompose_strategy();
const Strategy& moe_pipeline_strategy();

}  // namespace collkit::overlap
