#include "host_memory.h"

#include <fstream>
#include <string>

namespace collkit::exec::detail {

std::uint64_t host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

}  // namespace collkit::exec::detail
