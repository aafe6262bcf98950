#pragma once
// The one wrapper that turns CUDA runtime statuses into collkit's error policy, and the device
// memory every GPU backend allocates (RAII, so a failed setup leaks nothing). Included by the
// backends' sources only: no CUDA type reaches a public header.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace collkit::exec::cuda {

/// Throws SystemError "<call> failed: <cudaGetErrorString> (<cudaGetErrorName>)" unless rc is cudaSuccess.
void check(cudaError_t rc, const char* call);

/// How many GPUs this process sees; 0 with `why` set when there are none or no driver.
int device_count(std::string* why);

/// Free bytes on `device` (cudaMemGetInfo).
std::uint64_t free_memory(int device);

/// The runtime's and driver's versions: "CUDA runtime 13.0, driver 13.0".
std::string runtime_version();

/// Device memory on one GPU, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  int device() const { return device_; }

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
};

/// Page-locked host memory (cudaMallocHost), freed on destruction: the bounce buffer of sends a
/// plan stages through host memory (PlanInfo::channel_paths).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Sets the calling thread's device (cudaSetDevice), checked.
void use_device(int device);

}  // namespace collkit::exec::cuda
