#pragma once
// The one wrapper that turns NCCL statuses into collkit's error policy. The communicator is
// non-blocking (ncclConfig_t.blocking = 0), so that no NCCL call can hang on a dead peer: a call
// may answer ncclInProgress, and the caller polls ncclCommGetAsyncError until it settles, giving
// up after the timeout with ncclCommAbort.

#include <nccl.h>

#include <string>

namespace collkit::exec::nccl {

/// Throws SystemError "<call> failed: <ncclGetErrorString> (<ncclGetLastError>)" unless rc is
/// ncclSuccess or ncclInProgress; returns true for ncclInProgress.
bool check(ncclResult_t rc, const char* call, ncclComm_t comm);

/// "NCCL 2.28.9" (of the library linked, ncclGetVersion).
std::string version();

}  // namespace collkit::exec::nccl
