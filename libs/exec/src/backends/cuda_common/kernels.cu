// Element-wise, memory-bound kernels: a grid-stride loop is enough to reach bandwidth; one
// instantiation per (type, op) so the body has no branch.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels.h"

namespace collkit::exec::cuda {

namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;

// Each combine is written as reduce.cpp writes it, so that ties (+0 and -0) pick the same operand.
// Integers combine through their unsigned type (wrapping, as on the host).
template <class T, class U, RedOp Op>
__device__ T combine(T a, T b) {
  if constexpr (Op == RedOp::Sum || Op == RedOp::Avg) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  if constexpr (Op == RedOp::Prod) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  if constexpr (Op == RedOp::Min) return a < b ? a : b;
  return a > b ? a : b;
}

// Half and bfloat16 combine in float as std::min / std::max do on the host.
template <RedOp Op>
__device__ float combine16(float a, float b) {
  if constexpr (Op == RedOp::Sum || Op == RedOp::Avg) return a + b;
  if constexpr (Op == RedOp::Prod) return a * b;
  if constexpr (Op == RedOp::Min) return b < a ? b : a;
  return a < b ? b : a;
}

template <class T, class U, RedOp Op>
__global__ void reduce_kernel(T* dst, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = combine<T, U, Op>(a[i], b[i]);
}

struct Half {
  static __device__ float load(std::uint16_t v) { return __half2float(__ushort_as_half(v)); }
  static __device__ std::uint16_t store(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
struct BFloat {
  static __device__ float load(std::uint16_t v) { return __bfloat162float(__ushort_as_bfloat16(v)); }
  static __device__ std::uint16_t store(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};

template <class Conv, RedOp Op>
__global__ void reduce16_kernel(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = Conv::store(combine16<Op>(Conv::load(a[i]), Conv::load(b[i])));
}

template <class T>
__global__ void divide_kernel(T* x, std::size_t n, int nranks) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    x[i] = static_cast<T>(x[i] / static_cast<std::common_type_t<T, int>>(nranks));  // int8: 128 is not -128
}

template <class Conv>
__global__ void divide16_kernel(std::uint16_t* x, std::size_t n, int nranks) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    x[i] = Conv::store(Conv::load(x[i]) / static_cast<float>(nranks));
}

unsigned blocks_for(std::size_t n) {
  std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? (b == 0 ? 1 : b) : kMaxBlocks);
}

template <class T, class U>
cudaError_t reduce_typed(RedOp op, void* dst, const void* a, const void* b, std::size_t n, cudaStream_t s) {
  auto* d = static_cast<T*>(dst);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  unsigned g = blocks_for(n);
  switch (op) {
    case RedOp::Sum:
    case RedOp::Avg: reduce_kernel<T, U, RedOp::Sum><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case RedOp::Prod: reduce_kernel<T, U, RedOp::Prod><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case RedOp::Min: reduce_kernel<T, U, RedOp::Min><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case RedOp::Max: reduce_kernel<T, U, RedOp::Max><<<g, kThreads, 0, s>>>(d, x, y, n); break;
  }
  return cudaGetLastError();
}

template <class Conv>
cudaError_t reduce_16(RedOp op, void* dst, const void* a, const void* b, std::size_t n, cudaStream_t s) {
  auto* d = static_cast<std::uint16_t*>(dst);
  auto* x = static_cast<const std::uint16_t*>(a);
  auto* y = static_cast<const std::uint16_t*>(b);
  unsigned g = blocks_for(n);
  switch (op) {
    case RedOp::Sum:
    case RedOp::Avg: reduce16_kernel<Conv, RedOp::Sum><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case RedOp::Prod: reduce16_kernel<Conv, RedOp::Prod><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case RedOp::Min: reduce16_kernel<Conv, RedOp::Min><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case RedOp::Max: reduce16_kernel<Conv, RedOp::Max><<<g, kThreads, 0, s>>>(d, x, y, n); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_reduce(DataType t, RedOp op, void* dst, const void* a, const void* b, std::size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case DataType::Float32: return reduce_typed<float, float>(op, dst, a, b, n, stream);
    case DataType::Float64: return reduce_typed<double, double>(op, dst, a, b, n, stream);
    case DataType::Int32: return reduce_typed<std::int32_t, std::uint32_t>(op, dst, a, b, n, stream);
    case DataType::Int8: return reduce_typed<std::int8_t, std::uint8_t>(op, dst, a, b, n, stream);
    case DataType::UInt8: return reduce_typed<std::uint8_t, std::uint32_t>(op, dst, a, b, n, stream);
    case DataType::Float16: return reduce_16<Half>(op, dst, a, b, n, stream);
    case DataType::BFloat16: return reduce_16<BFloat>(op, dst, a, b, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_scale_mean(DataType t, void* x, std::size_t n, int nranks, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  unsigned g = blocks_for(n);
  switch (t) {
    case DataType::Float32: divide_kernel<float><<<g, kThreads, 0, stream>>>(static_cast<float*>(x), n, nranks); break;
    case DataType::Float64: divide_kernel<double><<<g, kThreads, 0, stream>>>(static_cast<double*>(x), n, nranks); break;
    case DataType::Int32: divide_kernel<std::int32_t><<<g, kThreads, 0, stream>>>(static_cast<std::int32_t*>(x), n, nranks); break;
    case DataType::Int8: divide_kernel<std::int8_t><<<g, kThreads, 0, stream>>>(static_cast<std::int8_t*>(x), n, nranks); break;
    case DataType::UInt8: divide_kernel<std::uint8_t><<<g, kThreads, 0, stream>>>(static_cast<std::uint8_t*>(x), n, nranks); break;
    case DataType::Float16: divide16_kernel<Half><<<g, kThreads, 0, stream>>>(static_cast<std::uint16_t*>(x), n, nranks); break;
    case DataType::BFloat16: divide16_kernel<BFloat><<<g, kThreads, 0, stream>>>(static_cast<std::uint16_t*>(x), n, nranks); break;
  }
  return cudaGetLastError();
}

}  // namespace collkit::exec::cuda
