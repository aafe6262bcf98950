#include "verbs_wire.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collkit/core/error.h"

namespace collkit::exec::rdma {

namespace {

struct Published {  // the landing region, for the peers' writes
  std::uint64_t addr;
  std::uint32_t rkey;
};

int errno_or(int fallback) { return errno ? errno : fallback; }

}  // namespace

VerbsWire::VerbsWire(Device& device, World& world, std::uint64_t region_bytes, int depth, double timeout_s)
    : me_(world.rank()), bytes_(region_bytes) {
  const int n = world.size();
  auto peers = static_cast<std::size_t>(n);
  outgoing_ = std::make_unique<std::byte[]>(bytes_);
  landing_ = std::make_unique<std::byte[]>(bytes_);
  // An int: the ibv_reg_mr macro ands the flags with another enum's IBV_ACCESS_OPTIONAL_RANGE,
  // which clang deprecates between two enumeration types in C++20.
  out_mr_ = ibv_reg_mr(device.pd(), outgoing_.get(), bytes_, static_cast<int>(IBV_ACCESS_LOCAL_WRITE));
  if (!out_mr_) check(errno_or(EINVAL), "ibv_reg_mr (outgoing slots)");
  land_mr_ = ibv_reg_mr(device.pd(), landing_.get(), bytes_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!land_mr_) check(errno_or(EINVAL), "ibv_reg_mr (landing slots)");
  cq_ = ibv_create_cq(device.context(), 2 * depth * std::max(n, 2), nullptr, nullptr, 0);
  if (!cq_) check(errno_or(EINVAL), "ibv_create_cq");

  qps_.assign(peers, nullptr);
  std::string mine;
  for (int p = 0; p < n; ++p) {
    Address a;
    if (p != me_) {
      ibv_qp_init_attr init{};
      init.send_cq = cq_;
      init.recv_cq = cq_;
      init.qp_type = IBV_QPT_RC;
      init.cap.max_send_wr = static_cast<std::uint32_t>(depth);
      init.cap.max_recv_wr = static_cast<std::uint32_t>(depth);
      init.cap.max_send_sge = 1;
      init.cap.max_recv_sge = 1;
      qps_[static_cast<std::size_t>(p)] = ibv_create_qp(device.pd(), &init);
      if (!qps_[static_cast<std::size_t>(p)]) check(errno_or(EINVAL), "ibv_create_qp");
      a = device.address(qps_[static_cast<std::size_t>(p)]->qp_num);
    }
    mine.append(reinterpret_cast<const char*>(&a), sizeof a);
  }
  Published pub{reinterpret_cast<std::uint64_t>(landing_.get()), land_mr_->rkey};
  mine.append(reinterpret_cast<const char*>(&pub), sizeof pub);
  std::vector<std::string> all = world.allgather(mine, timeout_s);
  remote_addr_.assign(peers, 0);
  remote_key_.assign(peers, 0);
  for (int p = 0; p < n; ++p) {
    const std::string& theirs = all[static_cast<std::size_t>(p)];
    if (theirs.size() != peers * sizeof(Address) + sizeof(Published))
      throw SystemError("rdma: rank " + std::to_string(p) + "'s queue pair addresses arrived with " + std::to_string(theirs.size()) +
                        " bytes");
    Published their;
    std::memcpy(&their, theirs.data() + peers * sizeof(Address), sizeof their);
    remote_addr_[static_cast<std::size_t>(p)] = their.addr;
    remote_key_[static_cast<std::size_t>(p)] = their.rkey;
    if (p == me_) continue;
    Address remote;
    std::memcpy(&remote, theirs.data() + static_cast<std::size_t>(me_) * sizeof(Address), sizeof remote);
    device.connect(qps_[static_cast<std::size_t>(p)], remote);
    for (int k = 0; k < depth; ++k) post_receive(p);
  }
  // Every queue pair must be ready to receive before any rank writes to it.
  world.barrier(timeout_s, "connecting RDMA queue pairs");
}

VerbsWire::~VerbsWire() {
  for (ibv_qp* qp : qps_)
    if (qp) ibv_destroy_qp(qp);
  if (cq_) ibv_destroy_cq(cq_);
  if (out_mr_) ibv_dereg_mr(out_mr_);
  if (land_mr_) ibv_dereg_mr(land_mr_);
}

// Send work requests carry (peer << 48 | the protocol's id), which keeps below 2^48.
void VerbsWire::write(int peer, std::uint64_t from, std::uint64_t to, std::uint64_t bytes, std::uint32_t imm, std::uint64_t id) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(outgoing_.get() + from), static_cast<std::uint32_t>(bytes), out_mr_->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = static_cast<std::uint64_t>(peer) << 48 | id;
  wr.sg_list = bytes ? &sge : nullptr;
  wr.num_sge = bytes ? 1 : 0;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = remote_addr_[static_cast<std::size_t>(peer)] + to;
  wr.wr.rdma.rkey = remote_key_[static_cast<std::size_t>(peer)];
  check(ibv_post_send(qps_[static_cast<std::size_t>(peer)], &wr, &bad), "ibv_post_send (RDMA write)");
}

void VerbsWire::message(int peer, std::uint32_t imm, std::uint64_t id) {
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = static_cast<std::uint64_t>(peer) << 48 | id;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  check(ibv_post_send(qps_[static_cast<std::size_t>(peer)], &wr, &bad), "ibv_post_send (message)");
}

void VerbsWire::post_receive(int peer) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = static_cast<std::uint64_t>(peer);
  check(ibv_post_recv(qps_[static_cast<std::size_t>(peer)], &wr, &bad), "ibv_post_recv");
}

void VerbsWire::poll(std::vector<Completion>& out) {
  ibv_wc wcs[32];
  int got = ibv_poll_cq(cq_, 32, wcs);
  if (got < 0) throw SystemError("ibv_poll_cq failed");
  for (int k = 0; k < got; ++k) {
    const ibv_wc& wc = wcs[k];
    bool receive = (wc.opcode & IBV_WC_RECV) != 0;
    int peer = receive ? static_cast<int>(wc.wr_id) : static_cast<int>(wc.wr_id >> 48);
    if (wc.status != IBV_WC_SUCCESS)
      throw SystemError("rdma: rank " + std::to_string(me_) + ": " + (receive ? "receive from" : "send to") + " rank " +
                        std::to_string(peer) + " failed: " + ibv_wc_status_str(wc.status));
    Completion c;
    c.peer = peer;
    if (receive) {
      post_receive(peer);
      c.kind = wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM ? Completion::Kind::DataArrived : Completion::Kind::MessageArrived;
      c.imm = ntohl(wc.imm_data);
      c.bytes = wc.byte_len;
    } else {
      c.kind = wc.opcode == IBV_WC_RDMA_WRITE ? Completion::Kind::WriteDone : Completion::Kind::MessageSent;
      c.id = wc.wr_id & ((1ull << 48) - 1);
    }
    out.push_back(c);
  }
}

}  // namespace collkit::exec::rdma
