// GPUs through the CUDA runtime, NVLinks through NVML loaded at run time. A machine without a GPU
// driver, or a build without CUDA, has no GPUs: that is reported, never thrown.

#include "collkit/config.h"
#include "discover_internal.h"

#if COLLKIT_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <utility>
#endif

namespace collkit::topo::detail {

#if COLLKIT_HAVE_CUDA

namespace {

// ---- the few NVML declarations used, written from NVML's documented C ABI (nvml.h is not
// installed on build machines, and linking libnvidia-ml would make the driver a build dependency).
using nvmlReturn_t = int;  // enum; 0 = NVML_SUCCESS
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
constexpr unsigned kNvmlNvlinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr int kNvmlFeatureEnabled = 1;        // nvmlEnableState_t NVML_FEATURE_ENABLED

struct nvmlPciInfo_t {
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];        // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:1A:00.0"
};

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using CountFn = nvmlReturn_t (*)(unsigned*);
using HandleByIndexFn = nvmlReturn_t (*)(unsigned, nvmlDevice_t*);
using HandleByBusIdFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using PciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using LinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*);
using RemotePciFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlPciInfo_t*);

// dlsym returns an object pointer; copying its bits is the portable way to a function pointer.
template <class Fn>
Fn symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  Fn fn = nullptr;
  static_assert(sizeof fn == sizeof p);
  std::memcpy(&fn, &p, sizeof fn);
  return fn;
}

// libnvidia-ml loaded for the duration of one scan.
class Nvml {
 public:
  Nvml() = default;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml() {
    if (initialised_ && shutdown) shutdown();
    if (lib_) dlclose(lib_);
  }

  /// Loads and initialises NVML; on failure returns why.
  std::string open() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return "NVML (libnvidia-ml.so.1) not found: NVLinks not seen";
    auto init = symbol<InitFn>(lib_, "nvmlInit_v2");
    shutdown = symbol<ShutdownFn>(lib_, "nvmlShutdown");
    count = symbol<CountFn>(lib_, "nvmlDeviceGetCount_v2");
    by_index = symbol<HandleByIndexFn>(lib_, "nvmlDeviceGetHandleByIndex_v2");
    by_busid = symbol<HandleByBusIdFn>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
    pci_info = symbol<PciInfoFn>(lib_, "nvmlDeviceGetPciInfo_v3");
    link_state = symbol<LinkStateFn>(lib_, "nvmlDeviceGetNvLinkState");
    remote_pci = symbol<RemotePciFn>(lib_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    if (!init || !shutdown || !by_busid || !link_state || !remote_pci)
      return "NVML (libnvidia-ml.so.1) lacks the NVLink queries: NVLinks not seen";
    nvmlReturn_t rc = init();
    if (rc != kNvmlSuccess) return "nvmlInit_v2 failed (NVML error " + std::to_string(rc) + "): NVLinks not seen";
    initialised_ = true;
    return {};
  }

  ShutdownFn shutdown = nullptr;
  CountFn count = nullptr;
  HandleByIndexFn by_index = nullptr;
  HandleByBusIdFn by_busid = nullptr;
  PciInfoFn pci_info = nullptr;
  LinkStateFn link_state = nullptr;
  RemotePciFn remote_pci = nullptr;

 private:
  void* lib_ = nullptr;
  bool initialised_ = false;
};

std::string busid_from(const nvmlPciInfo_t& pci) {
  char text[sizeof pci.busId + 1] = {};
  std::memcpy(text, pci.busId, sizeof pci.busId);
  if (auto b = normalize_busid(text)) return *b;
  return pci_busid(pci.domain, pci.bus, pci.device, 0);
}

// Every NVIDIA GPU NVML sees, which may be more than CUDA shows (CUDA_VISIBLE_DEVICES): an NVLink
// to a hidden GPU is still a GPU link. Without nvmlDeviceGetPciInfo_v3 (old drivers), the GPUs
// CUDA shows, looked up by bus id.
std::vector<std::pair<std::string, nvmlDevice_t>> nvml_devices(const Nvml& nvml, const std::vector<FoundGpu>& cuda) {
  std::vector<std::pair<std::string, nvmlDevice_t>> out;
  unsigned n = 0;
  if (nvml.count && nvml.by_index && nvml.pci_info && nvml.count(&n) == kNvmlSuccess) {
    for (unsigned i = 0; i < n; ++i) {
      nvmlDevice_t dev = nullptr;
      nvmlPciInfo_t pci{};
      if (nvml.by_index(i, &dev) != kNvmlSuccess || nvml.pci_info(dev, &pci) != kNvmlSuccess) continue;
      out.emplace_back(busid_from(pci), dev);
    }
    return out;
  }
  for (const FoundGpu& g : cuda) {
    nvmlDevice_t dev = nullptr;
    if (nvml.by_busid(g.busid.c_str(), &dev) == kNvmlSuccess) out.emplace_back(g.busid, dev);
  }
  return out;
}

void scan_nvlinks(GpuScan& out) {
  Nvml nvml;
  if (std::string why = nvml.open(); !why.empty()) {
    out.notes.push_back(why);
    return;
  }
  for (auto& [busid, dev] : nvml_devices(nvml, out.gpus)) {
    std::map<std::string, int> per_remote;
    for (unsigned link = 0; link < kNvmlNvlinkMaxLinks; ++link) {
      int active = 0;
      // Links a GPU does not have answer NVML_ERROR_NOT_SUPPORTED / INVALID_ARGUMENT: skipped.
      if (nvml.link_state(dev, link, &active) != kNvmlSuccess || active != kNvmlFeatureEnabled) continue;
      nvmlPciInfo_t remote{};
      if (nvml.remote_pci(dev, link, &remote) != kNvmlSuccess) continue;
      ++per_remote[busid_from(remote)];
    }
    for (auto& [remote, links] : per_remote) out.nvlinks.push_back({busid, remote, links});
  }
}

template <class T>
bool attribute(T* value, cudaDeviceAttr attr, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, attr, device) != cudaSuccess) return false;
  *value = static_cast<T>(v);
  return true;
}

}  // namespace

GpuScan scan_gpus() {
  GpuScan out;
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    // No driver, a driver older than the runtime, or no device node: no GPUs on this host.
    out.absent_reason = std::string("no GPU driver (cudaGetDeviceCount: ") + cudaGetErrorString(rc) + ")";
    (void)cudaGetLastError();  // leave no pending error for later CUDA users
    return out;
  }
  if (count == 0) {
    out.absent_reason = "no GPU visible to CUDA";
    return out;
  }
  for (int d = 0; d < count; ++d) {
    FoundGpu g;
    g.cuda_index = d;
    unsigned domain = 0, bus = 0, device = 0;
    int major = 0, minor = 0;
    if (!attribute(&domain, cudaDevAttrPciDomainId, d) || !attribute(&bus, cudaDevAttrPciBusId, d) ||
        !attribute(&device, cudaDevAttrPciDeviceId, d) || !attribute(&major, cudaDevAttrComputeCapabilityMajor, d) ||
        !attribute(&minor, cudaDevAttrComputeCapabilityMinor, d)) {
      out.notes.push_back("CUDA device " + std::to_string(d) + ": attributes unreadable, left out");
      continue;
    }
    g.busid = pci_busid(domain, bus, device, 0);  // CUDA devices are function 0
    g.sm = major * 10 + minor;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) g.name = prop.name;
    if (g.name.empty()) g.name = "CUDA device " + std::to_string(d);
    out.gpus.push_back(std::move(g));
  }
  if (out.gpus.empty()) out.absent_reason = "no usable CUDA device";
  else scan_nvlinks(out);
  return out;
}

#else  // !COLLKIT_HAVE_CUDA

GpuScan scan_gpus() {
  GpuScan out;
  out.absent_reason = "no GPU driver used (this build has no CUDA)";
  return out;
}

#endif

}  // namespace collkit::topo::detail
