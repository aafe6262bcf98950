#include "collkit/core/memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace collkit {

namespace {

std::uint64_t read_number(const char* path) {
  std::ifstream in(path);
  std::uint64_t v = 0;
  return in >> v ? v : 0;  // "max" (no limit) reads as 0
}

}  // namespace

std::uint64_t host_memory_available() {
  std::uint64_t avail = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    std::uint64_t kib = 0;
    while (in >> key >> kib >> unit)
      if (key == "MemAvailable:") {
        avail = kib * 1024;
        break;
      }
  }
  // A container's limit is below the host's: what the cgroup still allows this process.
  std::uint64_t max = read_number("/sys/fs/cgroup/memory.max"), used = read_number("/sys/fs/cgroup/memory.current");
  if (max > 0) {
    std::uint64_t left = max > used ? max - used : 0;
    avail = avail == 0 ? left : std::min(avail, left);
  }
  return avail;
}

std::optional<std::string> huge_page_tunables(const char* current, const char* opt_out, const char* preload, std::string_view thp_enabled) {
  constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
  std::string now = current ? current : "";
  if (opt_out && std::string_view(opt_out) == "0") return std::nullopt;
  if (preload && *preload) return std::nullopt;
  if (now.find(kTunable) != std::string::npos) return std::nullopt;
  if (thp_enabled.find("[madvise]") == std::string_view::npos) return std::nullopt;
  return (now.empty() ? "" : now + ":") + std::string(kTunable) + "=1";
}

// A sanitizer's allocator stands in for glibc's (GCC's macros; clang's __has_feature).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COLLKIT_OWN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define COLLKIT_OWN_ALLOCATOR 1
#endif
#endif

void restart_on_huge_pages(char** argv) {
#if defined(__GLIBC__) && !defined(COLLKIT_OWN_ALLOCATOR)
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::optional<std::string> tunables =
      huge_page_tunables(std::getenv("GLIBC_TUNABLES"), std::getenv("COLLKIT_HUGE_PAGES"), std::getenv("LD_PRELOAD"), mode);
  if (!tunables) return;
  // The program's own path, not /proc/self/exe, which would name the process "exe" in ps and top.
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || setenv("GLIBC_TUNABLES", tunables->c_str(), 1) != 0) return;
  execv(self.c_str(), argv);  // returns only where it failed: go on as started
#else
  (void)argv;
#endif
}

}  // namespace collkit
