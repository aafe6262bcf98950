// PCI bus ids in one canonical form, and PCIe link facts from sysfs: shared by the hwloc, GPU and
// ibverbs scans so that their findings can be matched by bus id.

#include <cctype>
#include <charconv>
#include <cstdio>
#include <fstream>

#include "discover_internal.h"
#include "hw_rates.h"

namespace collkit::topo::detail {

std::string pci_busid(unsigned domain, unsigned bus, unsigned device, unsigned function) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, device, function);
  return buf;
}

std::optional<std::string> normalize_busid(std::string_view text) {
  // domain ':' bus ':' device [ '.' function ], all hex; NVML pads the domain to 8 digits.
  unsigned parts[4] = {0, 0, 0, 0};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  const char separators[3] = {':', ':', '.'};
  int n = 0;
  for (; n < 4; ++n) {
    auto [next, ec] = std::from_chars(p, end, parts[n], 16);
    if (ec != std::errc() || next == p) return std::nullopt;
    p = next;
    if (p == end || n == 3) break;
    if (*p != separators[n]) return std::nullopt;
    ++p;
  }
  if (p != end || n < 2) return std::nullopt;
  if (parts[1] > 0xff || parts[2] > 0x1f || parts[3] > 7) return std::nullopt;
  return pci_busid(parts[0], parts[1], parts[2], parts[3]);
}

namespace {

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

}  // namespace

PcieLinkInfo sysfs_pcie_link(const std::string& busid) {
  PcieLinkInfo out;
  if (busid.empty()) return out;
  const std::string dir = "/sys/bus/pci/devices/" + busid + "/";
  // current_link_speed reads "16.0 GT/s PCIe" (older kernels: "16 GT/s"), or "Unknown".
  double gts = 0;
  if (auto speed = read_line(dir + "current_link_speed")) {
    auto [next, ec] = std::from_chars(speed->data(), speed->data() + speed->size(), gts);
    if (ec != std::errc()) gts = 0;
  }
  if (auto width = read_line(dir + "current_link_width")) {
    int lanes = 0;
    auto [next, ec] = std::from_chars(width->data(), width->data() + width->size(), lanes);
    if (ec == std::errc() && lanes > 0 && lanes <= 32) out.lanes = lanes;
  }
  if (gts > 0 && out.lanes > 0) out.gbps = hw::pcie_gbps(gts, out.lanes);
  return out;
}

}  // namespace collkit::topo::detail
