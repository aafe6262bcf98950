#pragma once
// A monotonic clock for timeouts, independent of MPI (the cuda backend runs without peers).

#include <chrono>

namespace collkit::exec::detail {

inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace collkit::exec::detail
