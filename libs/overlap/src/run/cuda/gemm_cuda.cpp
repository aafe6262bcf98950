// coll-overlap run's GPU GEMMs (gemm.h): cuBLAS, bfloat16 operands with float accumulation (the
// training GEMMs' types), on the rank's GPU and a non-blocking stream of their own. Built only
// where CUDA is found (libs/overlap/CMakeLists.txt).

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "../gemm.h"
#include "collkit/core/error.h"

namespace collkit::overlap::detail {

namespace {

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw SystemError(std::string("--device gpu: ") + what + ": " + cudaGetErrorString(rc));
}
void check(cublasStatus_t rc, const char* what) {
  if (rc != CUBLAS_STATUS_SUCCESS) throw SystemError(std::string("--device gpu: ") + what + ": " + cublasGetStatusString(rc));
}

struct DeviceArray {
  void* p = nullptr;
  std::size_t elems = 0;
  ~DeviceArray() {
    if (p) (void)cudaFree(p);
  }
  // Grows to n bfloat16 elements holding `value` (a host copy once: GEMM operands are set once).
  void fit(std::size_t n, float value) {
    if (n <= elems) return;
    if (p) check(cudaFree(p), "cudaFree");
    p = nullptr;
    check(cudaMalloc(&p, n * sizeof(__nv_bfloat16)), "cudaMalloc");
    elems = n;
    std::vector<__nv_bfloat16> host(n, __float2bfloat16(value));
    check(cudaMemcpy(p, host.data(), n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
};

class GpuGemm final : public GemmEngine {
 public:
  explicit GpuGemm(int local_rank) {
    int devices = 0;
    cudaError_t rc = cudaGetDeviceCount(&devices);
    if (rc != cudaSuccess || devices == 0)
      throw UnsupportedError(std::string("--device gpu: no GPU found (cudaGetDeviceCount: ") +
                             (rc != cudaSuccess ? cudaGetErrorString(rc) : "no device") + ")");
    device_ = local_rank % devices;
    check(cudaSetDevice(device_), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cublasCreate(&handle_), "cublasCreate");
    check(cublasSetStream(handle_, stream_), "cublasSetStream");
  }
  ~GpuGemm() override {
    if (handle_) (void)cublasDestroy(handle_);
    if (stream_) (void)cudaStreamDestroy(stream_);
  }
  void reserve(std::size_t am, std::size_t bm, std::size_t cm) override {
    check(cudaSetDevice(device_), "cudaSetDevice");
    a_.fit(am, 1e-3f);
    b_.fit(bm, 1e-3f);
    c_.fit(cm, 0.0f);
  }
  void run(const GemmShape& s) override {
    // The calling thread may not be the one that made the engine: the device is per thread.
    check(cudaSetDevice(device_), "cudaSetDevice");
    const float one = 1, zero = 0;
    const auto m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS is given B first.
    for (int r = 0; r < s.reps; ++r)
      check(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b_.p, CUDA_R_16BF, n, a_.p, CUDA_R_16BF, k, &zero, c_.p,
                         CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  std::string describe() const override {
    return "cuBLAS bf16 GEMM (float accumulation) on GPU " + std::to_string(device_) + " (" + name_ + ")";
  }

 private:
  int device_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  DeviceArray a_, b_, c_;
};

}  // namespace

std::unique_ptr<GemmEngine> make_gpu_gemm(int local_rank) { return std::make_unique<GpuGemm>(local_rank); }

}  // namespace collkit::overlap::detail
