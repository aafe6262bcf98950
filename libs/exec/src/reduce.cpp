// The host reduction kernels. Plain loops over restrict-free spans that GCC vectorises at -O3
// (this file is built with it, see CMakeLists.txt): bench/coll_run_mpi.sh measures them inside
// the mpi backend against Open MPI's own reductions.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "collkit/exec/datatype.h"
#include "half.h"

namespace collkit::exec {

namespace {

template <class T>
T combine(RedOp op, T a, T b) {
  switch (op) {
    case RedOp::Sum:
    case RedOp::Avg: return static_cast<T>(a + b);
    case RedOp::Prod: return static_cast<T>(a * b);
    case RedOp::Min: return std::min(a, b);
    case RedOp::Max: return std::max(a, b);
  }
  return a;
}

// One loop per op, so that the compiler sees a branch-free body it can vectorise. Integers go
// through their unsigned type: sums and products wrap, as on the GPU, with no undefined behaviour.
template <class T, class U = T>
void reduce_native(RedOp op, void* dst, const void* a, const void* b, std::size_t n) {
  auto* d = static_cast<T*>(dst);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  switch (op) {
    case RedOp::Sum:
    case RedOp::Avg:
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<T>(static_cast<U>(x[i]) + static_cast<U>(y[i]));
      return;
    case RedOp::Prod:
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<T>(static_cast<U>(x[i]) * static_cast<U>(y[i]));
      return;
    case RedOp::Min:
      for (std::size_t i = 0; i < n; ++i) d[i] = x[i] < y[i] ? x[i] : y[i];
      return;
    case RedOp::Max:
      for (std::size_t i = 0; i < n; ++i) d[i] = x[i] > y[i] ? x[i] : y[i];
      return;
  }
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void reduce_16(RedOp op, void* dst, const void* a, const void* b, std::size_t n) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  for (std::size_t i = 0; i < n; ++i) d[i] = FromFloat(combine(op, ToFloat(x[i]), ToFloat(y[i])));
}

template <class T>
void divide(void* x, std::size_t n, int nranks) {
  auto* v = static_cast<T*>(x);
  // Integers divide as int: cast to the element type first, 128 ranks would be -128 in int8 and
  // 256 would be a division by zero.
  using Wide = std::common_type_t<T, int>;
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(v[i] / static_cast<Wide>(nranks));
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void divide_16(void* x, std::size_t n, int nranks) {
  auto* v = static_cast<std::uint16_t*>(x);
  for (std::size_t i = 0; i < n; ++i) v[i] = FromFloat(ToFloat(v[i]) / static_cast<float>(nranks));
}

}  // namespace

void reduce(DataType t, RedOp op, void* dst, const void* a, const void* b, std::size_t n) {
  switch (t) {
    case DataType::Float32: return reduce_native<float>(op, dst, a, b, n);
    case DataType::Float64: return reduce_native<double>(op, dst, a, b, n);
    case DataType::Int32: return reduce_native<std::int32_t, std::uint32_t>(op, dst, a, b, n);
    case DataType::Int8: return reduce_native<std::int8_t, std::uint8_t>(op, dst, a, b, n);
    case DataType::UInt8: return reduce_native<std::uint8_t, std::uint32_t>(op, dst, a, b, n);
    case DataType::Float16: return reduce_16<half::to_float, half::from_float>(op, dst, a, b, n);
    case DataType::BFloat16: return reduce_16<half::bf16_to_float, half::bf16_from_float>(op, dst, a, b, n);
  }
}

void scale_mean(DataType t, void* x, std::size_t n, int nranks) {
  switch (t) {
    case DataType::Float32: return divide<float>(x, n, nranks);
    case DataType::Float64: return divide<double>(x, n, nranks);
    case DataType::Int32: return divide<std::int32_t>(x, n, nranks);
    case DataType::Int8: return divide<std::int8_t>(x, n, nranks);
    case DataType::UInt8: return divide<std::uint8_t>(x, n, nranks);
    case DataType::Float16: return divide_16<half::to_float, half::from_float>(x, n, nranks);
    case DataType::BFloat16: return divide_16<half::bf16_to_float, half::bf16_from_float>(x, n, nranks);
  }
}

}  // namespace collkit::exec
