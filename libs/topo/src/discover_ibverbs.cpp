// RDMA ports through ibverbs: rate, link layer, state, and the PCI function each device is.

#include "collkit/config.h"
#include "discover_internal.h"

#if COLLKIT_HAVE_IBVERBS
#include <endian.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#endif

namespace collkit::topo::detail {

// The encodings of ibv_port_attr (rdma-core verbs.h; ibv_devinfo's width_str / speed_str).
int ib_width_lanes(int active_width) {
  switch (active_width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 0;
  }
}

double ib_lane_gbit(std::uint32_t speed) {
  // Nominal data rate per lane; FDR10 and FDR signal at 10.3125 / 14.0625 Gb/s with 64b/66b
  // coding, which leaves the nominal figure.
  switch (speed) {
    case 1: return 2.5;     // SDR
    case 2: return 5.0;     // DDR
    case 4: return 10.0;    // QDR
    case 8: return 10.0;    // FDR10
    case 16: return 14.0;   // FDR
    case 32: return 25.0;   // EDR
    case 64: return 50.0;   // HDR
    case 128: return 100.0; // NDR
    case 256: return 200.0; // XDR (active_speed_ex only)
    default: return 0;
  }
}

double ib_port_gbps(int active_width, int active_speed, std::uint32_t active_speed_ex) {
  const std::uint32_t speed = active_speed_ex != 0 ? active_speed_ex : static_cast<std::uint32_t>(active_speed);
  return ib_width_lanes(active_width) * ib_lane_gbit(speed) / 8.0;
}

#if COLLKIT_HAVE_IBVERBS

namespace {

// active_speed_ex arrived in rdma-core 48; older headers lack the field.
template <class PortAttr>
std::uint32_t speed_ex(const PortAttr& a) {
  if constexpr (requires { a.active_speed_ex; }) return a.active_speed_ex;
  else return 0;
}

std::string state_name(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN: return "down";
    case IBV_PORT_INIT: return "init";
    case IBV_PORT_ARMED: return "armed";
    case IBV_PORT_ACTIVE: return "active";
    case IBV_PORT_ACTIVE_DEFER: return "active_defer";
    default: return "nop";
  }
}

std::string guid_text(__be64 guid) {
  const auto g = static_cast<unsigned long long>(be64toh(guid));
  char buf[24];
  std::snprintf(buf, sizeof buf, "%04llx:%04llx:%04llx:%04llx", (g >> 48) & 0xffff, (g >> 32) & 0xffff,
                (g >> 16) & 0xffff, g & 0xffff);
  return buf;
}

// /sys/class/infiniband/<dev>/device resolves to /sys/devices/pci0000:00/0000:00:01.0/.../0000:3b:00.0:
// the bus ids along that path are the device and its upstream bridges.
void pci_location(const std::string& device, FoundNic& nic) {
  std::error_code ec;
  auto real = std::filesystem::canonical("/sys/class/infiniband/" + device + "/device", ec);
  if (ec) return;
  std::vector<std::string> chain;
  for (const auto& part : real)
    if (auto b = normalize_busid(part.string())) chain.push_back(*b);
  if (chain.empty() || !normalize_busid(real.filename().string())) return;
  nic.busid = chain.back();
  chain.pop_back();
  nic.pci_path = std::move(chain);
  nic.pcie = sysfs_pcie_link(nic.busid);
}

struct DeviceListDeleter {
  void operator()(ibv_device** l) const { ibv_free_device_list(l); }
};
struct ContextDeleter {
  void operator()(ibv_context* c) const { ibv_close_device(c); }
};

}  // namespace

NicScan scan_rdma() {
  NicScan out;
  int num = 0;
  std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&num));
  if (!list) {
    out.notes.push_back(std::string("no RDMA devices (ibv_get_device_list: ") + std::strerror(errno) + ")");
    return out;
  }
  if (num == 0) {
    out.notes.push_back("no RDMA devices");
    return out;
  }
  for (int i = 0; i < num; ++i) {
    ibv_device* dev = list.get()[i];
    const std::string name = ibv_get_device_name(dev);
    std::unique_ptr<ibv_context, ContextDeleter> ctx(ibv_open_device(dev));
    if (!ctx) {
      out.notes.push_back("RDMA device " + name + ": cannot be opened (" + std::strerror(errno) + "), left out");
      continue;
    }
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(ctx.get(), &attr); rc != 0) {
      out.notes.push_back("RDMA device " + name + ": ibv_query_device failed (" + std::strerror(rc) + "), left out");
      continue;
    }
    FoundNic base;
    base.device = name;
    base.index = i;
    base.guid = guid_text(ibv_get_device_guid(dev));
    pci_location(name, base);
    for (int port = 1; port <= attr.phys_port_cnt; ++port) {
      ibv_port_attr pa{};
      if (int rc = ibv_query_port(ctx.get(), static_cast<std::uint8_t>(port), &pa); rc != 0) {
        out.notes.push_back("RDMA device " + name + " port " + std::to_string(port) + ": ibv_query_port failed (" +
                            std::strerror(rc) + "), left out");
        continue;
      }
      FoundNic nic = base;
      nic.port = port;
      nic.state = state_name(pa.state);
      nic.link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "ethernet" : "infiniband";
      const std::string where = name + " port " + std::to_string(port);
      if (pa.state == IBV_PORT_ACTIVE) {
        nic.port_gbps = ib_port_gbps(pa.active_width, pa.active_speed, speed_ex(pa));
        if (nic.port_gbps == 0)
          out.notes.push_back(where + ": unknown rate code (width " + std::to_string(pa.active_width) + ", speed " +
                              std::to_string(pa.active_speed) + "): port bandwidth unknown");
      } else {
        out.notes.push_back(where + " is " + nic.state + ": port bandwidth unknown");
      }
      out.nics.push_back(std::move(nic));
    }
  }
  return out;
}

#else  // !COLLKIT_HAVE_IBVERBS

NicScan scan_rdma() {
  NicScan out;
  out.notes.push_back("no RDMA devices seen (this build has no ibverbs)");
  return out;
}

#endif

}  // namespace collkit::topo::detail
