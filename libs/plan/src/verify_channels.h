#pragma once
// Verifying a plan by one of its channels (docs/plan.md, "Verifying by channels"). A ring of 1024
// ranks on 8 rails runs 8 channels that do the same thing on different chunks and different rank
// orders: 33.5 M ops, of which channel 0 holds 4.2 M. When every channel is, op for op, the image
// of channel 0 under a rank map and a shift of the chunks, and the channels touch disjoint chunks
// and wait on nothing of each other, the plan is right exactly when channel 0 alone, run as a plan
// of its own, is right; verify() then executes only that.
//
// Nothing is taken on trust: the plan's stated symmetries (plan.h) only propose the rank maps;
// every op of every channel is compared with its counterpart in channel 0, and the chunks each
// channel touches are checked to be disjoint and to cover every buffer. Where anything does not
// hold, or the reduced plan fails, verify() runs the whole plan (and reports its first error).

#include <cstdint>
#include <memory>
#include <optional>

#include "collkit/plan/plan.h"

namespace collkit::plan::detail {

struct ChannelReduction {
  std::unique_ptr<Plan> channel0;  ///< channel 0 as a one-channel plan, its chunks renumbered
  int channels = 1;                ///< channels of the plan it stands for
};

/// The reduction of `plan` to its channel 0 when it holds (above); nullopt otherwise.
std::optional<ChannelReduction> reduce_by_channels(const Plan& plan);

}  // namespace collkit::plan::detail
