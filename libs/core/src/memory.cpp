#include "collkit/core/memory.h"

#include <algorithm>
#include <fstream>
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

}  // namespace collkit
