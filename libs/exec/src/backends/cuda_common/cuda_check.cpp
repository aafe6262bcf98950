#include "cuda_check.h"

#include <utility>

#include "collkit/core/error.h"

namespace collkit::exec::cuda {

void check(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so the next call reports its own
  throw SystemError(std::string(call) + " failed: " + cudaGetErrorString(rc) + " (" + cudaGetErrorName(rc) + ")");
}

int device_count(std::string* why) {
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount returned 0";
  return n;
}

std::uint64_t free_memory(int device) {
  use_device(device);
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

std::string runtime_version() {
  int rt = 0, drv = 0;
  check(cudaRuntimeGetVersion(&rt), "cudaRuntimeGetVersion");
  check(cudaDriverGetVersion(&drv), "cudaDriverGetVersion");
  auto text = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  return "CUDA runtime " + text(rt) + ", driver " + text(drv);
}

void use_device(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : bytes_(bytes), device_(device) {
  if (bytes == 0) return;
  use_device(device);
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), ("cudaMalloc of " + std::to_string(bytes) + " bytes on GPU " + std::to_string(device)).c_str());
  data_ = static_cast<std::byte*>(p);
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), device_(o.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    device_ = o.device_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (!data_) return;
  // cudaFree synchronises the device; errors here have nowhere to go but away (a destructor).
  if (cudaSetDevice(device_) == cudaSuccess) (void)cudaFree(data_);
  (void)cudaGetLastError();
  data_ = nullptr;
  bytes_ = 0;
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  void* p = nullptr;
  check(cudaMallocHost(&p, bytes), ("cudaMallocHost of " + std::to_string(bytes) + " bytes").c_str());
  data_ = static_cast<std::byte*>(p);
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  if (!data_) return;
  // cudaFreeHost synchronises; errors here have nowhere to go but away (a destructor).
  (void)cudaFreeHost(data_);
  (void)cudaGetLastError();
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace collkit::exec::cuda
