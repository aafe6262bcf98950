#pragma once
// ibverbs at the boundary: the one status wrapper, the device this process uses, and reliable-
// connected queue pairs brought up from a peer's address (exchanged over MPI by the backend).
// Environment (docs/backends.md): COLLKIT_RDMA_DEVICE (a device name; default the first one with an
// active port), COLLKIT_RDMA_GID_INDEX (default: none on InfiniBand, the first RoCE v2 GID on
// Ethernet).

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace collkit::exec::rdma {

/// Throws SystemError "<call> failed: <strerror(rc)>" unless rc is 0 (verbs return an errno).
void check(int rc, const char* call);

/// What a peer needs to connect a queue pair to this one.
struct Address {
  std::uint16_t lid = 0;
  std::uint8_t global = 0;  ///< 1: route with the GID (RoCE, or a GID index given)
  std::uint8_t gid[16] = {};
  std::uint32_t qpn = 0;
};

/// The opened device, its port and protection domain; closed on destruction.
class Device {
 public:
  /// Opens the device; throws UnsupportedError "rdma: no RDMA device found (ibv_get_device_list
  /// returned none)" where there is none, and UnsupportedError naming the device when it has no
  /// active port.
  Device();
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  /// This port's address with `qpn` filled in.
  Address address(std::uint32_t qpn) const;
  /// Moves `qp` through INIT, RTR and RTS towards `remote`.
  void connect(ibv_qp* qp, const Address& remote) const;

 private:
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::string name_;
  std::uint8_t port_ = 1;
  ibv_port_attr attr_{};
  int gid_index_ = -1;
  ibv_gid gid_{};
};

}  // namespace collkit::exec::rdma
