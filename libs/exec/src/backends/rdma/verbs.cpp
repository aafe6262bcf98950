#include "verbs.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "collkit/core/error.h"

namespace collkit::exec::rdma {

void check(int rc, const char* call) {
  if (rc == 0) return;
  int err = rc > 0 ? rc : errno;
  throw SystemError(std::string(call) + " failed: " + std::strerror(err));
}

namespace {

// The first RoCE v2 GID of the port (what NCCL picks by default), or -1.
int roce_v2_gid(ibv_context* ctx, std::uint8_t port, int table_len) {
  std::vector<ibv_gid_entry> entries(static_cast<std::size_t>(std::max(table_len, 1)));
  ssize_t n = ibv_query_gid_table(ctx, entries.data(), entries.size(), 0);
  for (ssize_t i = 0; i < n; ++i) {
    const ibv_gid_entry& e = entries[static_cast<std::size_t>(i)];
    if (e.port_num == port && e.gid_type == IBV_GID_TYPE_ROCE_V2) return static_cast<int>(e.gid_index);
  }
  return -1;
}

}  // namespace

Device::Device() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    if (list) ibv_free_device_list(list);
    throw UnsupportedError("rdma: no RDMA device found (ibv_get_device_list returned none)");
  }
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> hold(list, ibv_free_device_list);
  const char* want = std::getenv("COLLKIT_RDMA_DEVICE");
  std::string tried;
  for (int i = 0; i < n && !ctx_; ++i) {
    std::string dev = ibv_get_device_name(list[i]);
    if (want && *want && dev != want) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (!ctx) {
      tried += (tried.empty() ? "" : ", ") + dev + " (cannot open: " + std::strerror(errno) + ")";
      continue;
    }
    ibv_device_attr da{};
    if (ibv_query_device(ctx, &da) == 0)
      for (std::uint8_t p = 1; p <= da.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
          ctx_ = ctx;
          name_ = dev;
          port_ = p;
          attr_ = pa;
          break;
        }
      }
    if (!ctx_) {
      tried += (tried.empty() ? "" : ", ") + dev + " (no active port)";
      ibv_close_device(ctx);
    }
  }
  if (!ctx_) {
    if (want && *want && tried.empty())
      throw UnsupportedError(std::string("rdma: COLLKIT_RDMA_DEVICE=") + want + ": no such RDMA device");
    throw UnsupportedError("rdma: no usable RDMA device: " + tried);
  }
  if (const char* g = std::getenv("COLLKIT_RDMA_GID_INDEX"); g && *g) {
    gid_index_ = std::atoi(g);
  } else if (attr_.link_layer == IBV_LINK_LAYER_ETHERNET) {
    gid_index_ = roce_v2_gid(ctx_, port_, attr_.gid_tbl_len);
    if (gid_index_ < 0) gid_index_ = 0;  // RoCE needs a GRH: the default GID then
  }
  if (gid_index_ >= 0) check(ibv_query_gid(ctx_, port_, gid_index_, &gid_), "ibv_query_gid");
  pd_ = ibv_alloc_pd(ctx_);
  if (!pd_) {
    int err = errno;
    ibv_close_device(ctx_);
    throw SystemError(std::string("ibv_alloc_pd failed: ") + std::strerror(err));
  }
}

Device::~Device() {
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

Address Device::address(std::uint32_t qpn) const {
  Address a;
  a.lid = attr_.lid;
  a.global = gid_index_ >= 0 ? 1 : 0;
  std::memcpy(a.gid, gid_.raw, sizeof a.gid);
  a.qpn = qpn;
  return a;
}

void Device::connect(ibv_qp* qp, const Address& remote) const {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port_;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), "ibv_modify_qp (INIT)");

  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = attr_.active_mtu;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.port_num = port_;
  if (remote.global && gid_index_ >= 0) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid, sizeof remote.gid);
    a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index_);
    a.ah_attr.grh.hop_limit = 64;
  }
  check(ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                          IBV_QP_MIN_RNR_TIMER),
        "ibv_modify_qp (RTR)");

  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;  // 4.096 us * 2^14 = 67 ms per try; with retry_cnt 7 a dead peer shows in about half a second
  a.retry_cnt = 7;
  a.rnr_retry = 7;  // infinite: a receiver short of posted receives is waited for, not failed
  a.sq_psn = 0;
  a.max_rd_atomic = 1;
  check(ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
        "ibv_modify_qp (RTS)");
}

}  // namespace collkit::exec::rdma
