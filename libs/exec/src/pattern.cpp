#include "collkit/exec/pattern.h"

#include <cmath>
#include <vector>

namespace collkit::exec {

namespace {

using plan::Collective;

// Values of the non-reducing collectives: distinct enough to show any misplaced chunk, and exact
// in every type (int8 and bfloat16 hold the integers up to 127 and 256).
double plain_value(const Job& job, int rank, std::uint64_t i) {
  auto m = static_cast<std::uint64_t>(std::min(exact_integer_limit(job.type), 4096.0));
  return static_cast<double>((static_cast<std::uint64_t>(rank) * 31 + i * 7) % m);
}

// Whether the dense sum pattern (every rank contributes up to 3, rank 0 up to 5 more) stays exact.
bool dense_sum_exact(const Job& job) {
  return !is_float(job.type) || 3.0 * job.req.nranks + 2 <= exact_integer_limit(job.type);
}

double reduce_value(const Job& job, int rank, std::uint64_t i) {
  auto n = static_cast<std::uint64_t>(job.req.nranks);
  auto r = static_cast<std::uint64_t>(rank);
  bool owner = r == i % n;  // one rank per element carries the distinctive value
  switch (job.op) {
    case RedOp::Sum:
      if (dense_sum_exact(job)) return static_cast<double>((r + 2 * i) % 4 + (r == 0 ? i % 3 : 0));
      return owner ? static_cast<double>(1 + i % 3) : 0.0;
    case RedOp::Avg: {
      // The sum is a multiple of n, so the mean is an exact integer in every type.
      double big = static_cast<double>(n * (1 + i % 3));
      if (big <= exact_integer_limit(job.type)) return owner ? big : 0.0;
      return owner && static_cast<double>(n) <= exact_integer_limit(job.type) ? static_cast<double>(n) : 0.0;
    }
    case RedOp::Prod: return owner ? static_cast<double>(2 + (i / n) % 2) : 1.0;
    case RedOp::Min:
    case RedOp::Max: return static_cast<double>((r * 5 + i * 3) % 16);
  }
  return 0;
}

// The reduction of element i over every rank, as the type stores it.
double reduced(const Job& job, std::uint64_t i, std::vector<unsigned char>& tmp) {
  double acc = input_value(job, 0, i);
  for (int q = 1; q < job.req.nranks; ++q) {
    double v = input_value(job, q, i);
    switch (job.op) {
      case RedOp::Sum:
      case RedOp::Avg: acc += v; break;
      case RedOp::Prod: acc *= v; break;
      case RedOp::Min: acc = std::min(acc, v); break;
      case RedOp::Max: acc = std::max(acc, v); break;
    }
  }
  if (job.op == RedOp::Avg) acc = std::trunc(acc / job.req.nranks);
  // Integers wrap as the type does: round-trip through it.
  store(job.type, tmp.data(), 0, acc);
  return load(job.type, tmp.data(), 0);
}

}  // namespace

std::uint64_t input_count(const Job& job) { return plan::input_bytes(job.req) / size_of(job.type); }
std::uint64_t output_count(const Job& job) { return plan::output_bytes(job.req) / size_of(job.type); }

double input_value(const Job& job, int rank, std::uint64_t i) {
  return plan::facts(job.req.coll).reduces ? reduce_value(job, rank, i) : plain_value(job, rank, i);
}

void fill_input(const Job& job, int rank, void* buffer) {
  std::uint64_t n = input_count(job);
  for (std::uint64_t i = 0; i < n; ++i) store(job.type, buffer, i, input_value(job, rank, i));
}

std::uint64_t count_wrong(const Job& job, int rank, const void* output) {
  const plan::Request& req = job.req;
  if (req.coll == Collective::Reduce && rank != req.root) return 0;
  std::uint64_t n = output_count(job), wrong = 0;
  std::uint64_t in = input_count(job);
  auto p = static_cast<std::uint64_t>(req.nranks);
  std::vector<unsigned char> tmp(8);
  for (std::uint64_t j = 0; j < n; ++j) {
    double want = 0;
    switch (req.coll) {
      case Collective::AllReduce:
      case Collective::Reduce: want = reduced(job, j, tmp); break;
      case Collective::ReduceScatter: want = reduced(job, static_cast<std::uint64_t>(rank) * n + j, tmp); break;
      case Collective::AllGather: want = input_value(job, static_cast<int>(j / in), j % in); break;
      case Collective::AlltoAll: {
        std::uint64_t m = in / p;
        want = input_value(job, static_cast<int>(j / m), static_cast<std::uint64_t>(rank) * m + j % m);
        break;
      }
      case Collective::Broadcast: want = input_value(job, req.root, j); break;
    }
    if (load(job.type, output, j) != want) ++wrong;
  }
  return wrong;
}

}  // namespace collkit::exec
