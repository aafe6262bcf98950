#pragma once
// One plan rank on host memory, shared by the host-side backends (mpi, rdma): its buffers in
// both placements, its compiled program and scheduler, and one execution of the plan over a
// transport, with the staged copy of in-place input and Avg's final division.

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "collkit/exec/backend.h"
#include "program.h"

namespace collkit::exec::detail {

class HostRank {
 public:
  /// Host bytes a setup takes: both placements' buffers, scratch, staging.
  static std::uint64_t bytes_needed(const Setup& s, int rank);

  void setup(const Setup& s, int rank);
  void write_input(Placement p, std::span<const std::byte> data);
  /// The output of the last plan run in placement `p`.
  const std::byte* output(Placement p) const;
  /// Runs the plan once over `transport`.
  void run(Transport& transport, Placement p);

  const Setup& current() const { return setup_; }
  // Buffers for a backend's native collective.
  std::byte* send() { return send_.data(); }
  std::byte* recv() { return recv_.data(); }
  std::byte* in_place() { return inplace_.data(); }
  /// Avg's last step on `out`, where this rank's output is defined.
  void finish_mean(std::byte* out) const;

 private:
  Setup setup_;
  int rank_ = 0;
  RankProgram program_;
  std::unique_ptr<Runner> runner_;
  InPlaceOffsets ip_;
  std::vector<std::byte> send_, recv_, inplace_, scratch_, stage_;
};

}  // namespace collkit::exec::detail
