#pragma once
// What this host has to spare: tools check what a request will take against it before they
// allocate, so that a plan too big for the machine is refused with the reason rather than
// driving the host into swap or the OOM killer.

#include <cstdint>

namespace collkit {

/// MemAvailable of /proc/meminfo, lowered to what the process's cgroup (v2 memory.max) still
/// allows; in bytes, 0 when neither is readable.
std::uint64_t host_memory_available();

}  // namespace collkit
