#include "nccl_check.h"

#include "collkit/core/error.h"

namespace collkit::exec::nccl {

bool check(ncclResult_t rc, const char* call, ncclComm_t comm) {
  if (rc == ncclSuccess) return false;
  if (rc == ncclInProgress) return true;
  std::string detail = ncclGetLastError(comm);
  throw SystemError(std::string(call) + " failed: " + ncclGetErrorString(rc) + (detail.empty() ? "" : " (" + detail + ")"));
}

std::string version() {
  int v = 0;
  check(ncclGetVersion(&v), "ncclGetVersion", nullptr);
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before).
  int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10, patch = v % 100;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace collkit::exec::nccl
