#pragma once
// The data coll-run sends and the answer it expects: a deterministic value per rank and element,
// chosen per datatype and operator so that every reduction order gives the same, exact result
// (small integers, well inside each type's exact range), and so that a chunk in the wrong place
// or a contribution missing or counted twice changes the value. #wrong counts the elements of a
// rank's output that differ from the collective's definition.

#include <cstdint>

#include "collkit/exec/datatype.h"
#include "collkit/plan/collective.h"

namespace collkit::exec {

/// One run's shape: what every pattern function needs.
struct Job {
  plan::Request req;  ///< req.bytes = count x size_of(type)
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;
  std::uint64_t count() const { return req.bytes / size_of(type); }
};

/// Elements of a rank's input and output buffers (nccl-tests' count is the size column's).
std::uint64_t input_count(const Job& job);
std::uint64_t output_count(const Job& job);

/// The value rank `rank` holds at input element `i`.
double input_value(const Job& job, int rank, std::uint64_t i);
/// Fills a rank's input buffer (input_count elements of job.type).
void fill_input(const Job& job, int rank, void* buffer);
/// How many of the rank's output elements differ from the definition (Reduce: only the root's
/// output is defined; other ranks count 0).
std::uint64_t count_wrong(const Job& job, int rank, const void* output);

}  // namespace collkit::exec
