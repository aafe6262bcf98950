#pragma once
// The GPU reduction kernels of the cuda and nccl backends: the device twin of reduce() and
// scale_mean() in datatype.h, computing half and bfloat16 in float and rounding to nearest even
// so that host and device give the same bits. Each returns the launch's status for the caller to
// check (cuda::check), since this file is built by nvcc without collkit's error headers.

#include <cuda_runtime_api.h>

#include <cstddef>

#include "collkit/exec/datatype.h"

namespace collkit::exec::cuda {

/// dst[i] = a[i] (op) b[i] for n elements on `stream` (the current device's); dst may alias a or
/// b. Avg reduces as Sum.
cudaError_t launch_reduce(DataType t, RedOp op, void* dst, const void* a, const void* b, std::size_t n, cudaStream_t stream);
/// x[i] /= nranks, the last step of Avg (integers divide as integers).
cudaError_t launch_scale_mean(DataType t, void* x, std::size_t n, int nranks, cudaStream_t stream);

}  // namespace collkit::exec::cuda
