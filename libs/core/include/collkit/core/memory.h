#pragma once
// What this host has to spare: tools check what a request will take against it before they
// allocate, so that a plan too big for the machine is refused with the reason rather than
// driving the host into swap or the OOM killer.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace collkit {

/// MemAvailable of /proc/meminfo, lowered to what the process's cgroup (v2 memory.max) still
/// allows; in bytes, 0 when neither is readable.
std::uint64_t host_memory_available();

/// The GLIBC_TUNABLES value that puts malloc's heap and large blocks on transparent huge pages
/// (glibc.malloc.hugetlb=1, appended to `current`), or nothing where that would change nothing or
/// should not restart the program: the tunable is set already (by the user, or by an earlier
/// start), `opt_out` (COLLKIT_HUGE_PAGES) is "0", something is preloaded (`preload`, LD_PRELOAD: an
/// allocator of its own, or valgrind, which does not follow an exec by default), or the kernel's THP
/// mode (`thp_enabled`, the text of /sys/kernel/mm/transparent_hugepage/enabled) is not "[madvise]"
/// (with "[always]" every large mapping is on huge pages already; "[never]" none can be).
std::optional<std::string> huge_page_tunables(const char* current, const char* opt_out, const char* preload, std::string_view thp_enabled);

/// Starts the program again (execv of the file /proc/self/exe names, the same arguments) with huge_page_tunables()
/// in GLIBC_TUNABLES, which glibc reads only at start, where it gives any (opt-out:
/// COLLKIT_HUGE_PAGES=0); returns where it does not restart, or the restart fails. For tools that
/// build and walk hundreds of MB of plans and routes: first touches of 4 KiB pages were a fifth of
/// a 1024-GPU `compare` on this VM (docs/shell.md, "Speed"). A no-op outside glibc and under a
/// sanitizer's allocator.
void restart_on_huge_pages(char** argv);

}  // namespace collkit
