#pragma once
// Host memory facts shared by the host-side backends.

#include <cstdint>

namespace collkit::exec::detail {

/// MemAvailable of /proc/meminfo, in bytes (0 when unreadable).
std::uint64_t host_memory_available();

}  // namespace collkit::exec::detail
