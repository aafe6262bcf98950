#include "rdma_transport.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collkit/core/error.h"

namespace collkit::exec::rdma {

namespace {

// Work requests per queue pair and direction: every slot of every channel in flight, each with
// its credit, and room to spare.
constexpr int kDepth = 2 * kMaxChannels * kSlots + 16;
constexpr std::uint32_t kCreditFlag = 0x80000000u;
constexpr std::uint64_t kCreditWr = 1ull << 63;

std::uint64_t wr_id(int peer, std::uint16_t channel, std::uint32_t slot, std::uint32_t handle) {
  return static_cast<std::uint64_t>(peer) << 48 | static_cast<std::uint64_t>(channel) << 40 | static_cast<std::uint64_t>(slot) << 32 |
         handle;
}

struct Published {  // what each rank sends every other in the exchange
  std::uint64_t addr;
  std::uint32_t rkey;
};

}  // namespace

Transport::Transport(Device& device, World& world, double timeout_s) : device_(device), me_(world.rank()), n_(world.size()) {
  auto peers = static_cast<std::size_t>(n_);
  region_bytes_ = peers * kMaxChannels * kSlots * kSlotBytes;
  send_mem_ = std::make_unique<std::byte[]>(region_bytes_);
  recv_mem_ = std::make_unique<std::byte[]>(region_bytes_);
  send_mr_ = ibv_reg_mr(device.pd(), send_mem_.get(), region_bytes_, IBV_ACCESS_LOCAL_WRITE);
  if (!send_mr_) check(errno ? errno : EINVAL, "ibv_reg_mr (send slots)");
  recv_mr_ = ibv_reg_mr(device.pd(), recv_mem_.get(), region_bytes_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!recv_mr_) check(errno ? errno : EINVAL, "ibv_reg_mr (landing slots)");
  cq_ = ibv_create_cq(device.context(), 2 * kDepth * std::max(n_, 2), nullptr, nullptr, 0);
  if (!cq_) check(errno ? errno : EINVAL, "ibv_create_cq");

  qps_.assign(peers, nullptr);
  std::string mine;
  for (int p = 0; p < n_; ++p) {
    Address a;
    if (p != me_) {
      ibv_qp_init_attr init{};
      init.send_cq = cq_;
      init.recv_cq = cq_;
      init.qp_type = IBV_QPT_RC;
      init.cap.max_send_wr = kDepth;
      init.cap.max_recv_wr = kDepth;
      init.cap.max_send_sge = 1;
      init.cap.max_recv_sge = 1;
      qps_[static_cast<std::size_t>(p)] = ibv_create_qp(device.pd(), &init);
      if (!qps_[static_cast<std::size_t>(p)]) check(errno ? errno : EINVAL, "ibv_create_qp");
      a = device.address(qps_[static_cast<std::size_t>(p)]->qp_num);
    }
    mine.append(reinterpret_cast<const char*>(&a), sizeof a);
  }
  Published pub{reinterpret_cast<std::uint64_t>(recv_mem_.get()), recv_mr_->rkey};
  mine.append(reinterpret_cast<const char*>(&pub), sizeof pub);
  std::vector<std::string> all = world.allgather(mine, timeout_s);
  remote_addr_.assign(peers, 0);
  remote_key_.assign(peers, 0);
  for (int p = 0; p < n_; ++p) {
    const std::string& theirs = all[static_cast<std::size_t>(p)];
    if (theirs.size() != peers * sizeof(Address) + sizeof(Published))
      throw SystemError("rdma: rank " + std::to_string(p) + "'s queue pair addresses arrived with " + std::to_string(theirs.size()) + " bytes");
    Published their_pub;
    std::memcpy(&their_pub, theirs.data() + peers * sizeof(Address), sizeof their_pub);
    remote_addr_[static_cast<std::size_t>(p)] = their_pub.addr;
    remote_key_[static_cast<std::size_t>(p)] = their_pub.rkey;
    if (p == me_) continue;
    Address remote;
    std::memcpy(&remote, theirs.data() + static_cast<std::size_t>(me_) * sizeof(Address), sizeof remote);
    device.connect(qps_[static_cast<std::size_t>(p)], remote);
    for (int k = 0; k < kDepth; ++k) post_receive(p);
  }
  lanes_.resize(peers * kMaxChannels);
  // Every queue pair must be ready to receive before any rank writes to it.
  world.barrier(timeout_s, "connecting RDMA queue pairs");
}

Transport::~Transport() {
  for (ibv_qp* qp : qps_)
    if (qp) ibv_destroy_qp(qp);
  if (cq_) ibv_destroy_cq(cq_);
  if (send_mr_) ibv_dereg_mr(send_mr_);
  if (recv_mr_) ibv_dereg_mr(recv_mr_);
}

std::uint32_t Transport::new_handle() {
  std::uint32_t h;
  if (free_handles_.empty()) {
    h = static_cast<std::uint32_t>(outstanding_.size());
    outstanding_.push_back(0);
    all_posted_.push_back(0);
  } else {
    h = free_handles_.back();
    free_handles_.pop_back();
  }
  outstanding_[h] = 0;
  all_posted_[h] = 0;
  return h;
}

Transport::Lane& Transport::lane(int peer, std::uint16_t channel) {
  if (channel >= kMaxChannels)
    throw UnsupportedError("rdma: channel " + std::to_string(channel) + ": this backend carries at most " + std::to_string(kMaxChannels) +
                           " channels");
  return lanes_[static_cast<std::size_t>(peer) * kMaxChannels + channel];
}

// Slots laid out [peer][channel][slot]: the sender's twins by destination, the landing slots by source.
std::byte* Transport::send_slot(int peer, std::uint16_t channel, std::uint32_t slot) const {
  return send_mem_.get() + ((static_cast<std::uint64_t>(peer) * kMaxChannels + channel) * kSlots + slot) * kSlotBytes;
}
std::byte* Transport::recv_slot(int peer, std::uint16_t channel, std::uint32_t slot) const {
  return recv_mem_.get() + ((static_cast<std::uint64_t>(peer) * kMaxChannels + channel) * kSlots + slot) * kSlotBytes;
}

std::uint32_t Transport::post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) {
  std::uint32_t h = new_handle();
  Message m{h, const_cast<std::byte*>(data), bytes, 0, 0};
  if (peer == me_) {
    lane(peer, channel);  // checks the channel
    self_sends_[channel].push_back(m);
    match_self(channel);
    return h;
  }
  lane(peer, channel).sends.push_back(m);
  pump(peer, channel);
  return h;
}

std::uint32_t Transport::post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) {
  std::uint32_t h = new_handle();
  Message m{h, data, bytes, 0, 0};
  if (peer == me_) {
    lane(peer, channel);
    self_recvs_[channel].push_back(m);
    match_self(channel);
    return h;
  }
  lane(peer, channel).recvs.push_back(m);
  deliver(peer, channel);
  return h;
}

void Transport::match_self(std::uint16_t channel) {
  auto& s = self_sends_[channel];
  auto& r = self_recvs_[channel];
  while (!s.empty() && !r.empty()) {
    if (s.front().bytes != r.front().bytes)
      throw SystemError("rdma: rank " + std::to_string(me_) + " sends itself " + std::to_string(s.front().bytes) +
                        " bytes on channel " + std::to_string(channel) + " into a receive of " + std::to_string(r.front().bytes));
    std::memcpy(r.front().data, s.front().data, s.front().bytes);
    ready_.push_back(s.front().handle);
    ready_.push_back(r.front().handle);
    s.pop_front();
    r.pop_front();
  }
}

void Transport::pump(int peer, std::uint16_t channel) {
  Lane& l = lane(peer, channel);
  while (!l.sends.empty() && l.credits > 0 && !l.busy[l.next]) {
    Message& m = l.sends.front();
    std::uint32_t slot = l.next;
    std::uint64_t piece = std::min(kSlotBytes, m.bytes - m.done);
    std::byte* twin = send_slot(peer, channel, slot);
    std::memcpy(twin, m.data + m.done, piece);
    ibv_sge sge{reinterpret_cast<std::uint64_t>(twin), static_cast<std::uint32_t>(piece), send_mr_->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = wr_id(peer, channel, slot, m.handle);
    wr.sg_list = piece ? &sge : nullptr;
    wr.num_sge = piece ? 1 : 0;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(static_cast<std::uint32_t>(channel) << 8 | slot);
    // The peer's landing slots are laid out by source: this rank's block there.
    wr.wr.rdma.remote_addr = remote_addr_[static_cast<std::size_t>(peer)] +
                             ((static_cast<std::uint64_t>(me_) * kMaxChannels + channel) * kSlots + slot) * kSlotBytes;
    wr.wr.rdma.rkey = remote_key_[static_cast<std::size_t>(peer)];
    check(ibv_post_send(qps_[static_cast<std::size_t>(peer)], &wr, &bad), "ibv_post_send (RDMA write)");
    l.busy[slot] = true;
    --l.credits;
    l.next = (l.next + 1) % kSlots;
    ++outstanding_[m.handle];
    m.done += piece;
    ++m.pieces;
    if (m.done == m.bytes) {  // every piece posted (a zero-byte message is one empty piece)
      all_posted_[m.handle] = 1;
      l.sends.pop_front();
    }
  }
}

void Transport::deliver(int peer, std::uint16_t channel) {
  Lane& l = lane(peer, channel);
  while (!l.arrived.empty() && !l.recvs.empty()) {
    auto [slot, bytes] = l.arrived.front();
    Message& m = l.recvs.front();
    if (m.done + bytes > m.bytes)
      throw SystemError("rdma: rank " + std::to_string(peer) + " sent more than the " + std::to_string(m.bytes) +
                        " bytes rank " + std::to_string(me_) + " receives on channel " + std::to_string(channel));
    std::memcpy(m.data + m.done, recv_slot(peer, channel, slot), bytes);
    l.arrived.pop_front();
    post_credit(peer, channel, slot);
    m.done += bytes;
    ++m.pieces;
    if (m.done == m.bytes) {
      ready_.push_back(m.handle);
      l.recvs.pop_front();
    }
  }
}

void Transport::post_credit(int peer, std::uint16_t channel, std::uint32_t slot) {
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kCreditWr | wr_id(peer, channel, slot, 0);
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(kCreditFlag | static_cast<std::uint32_t>(channel) << 8 | slot);
  check(ibv_post_send(qps_[static_cast<std::size_t>(peer)], &wr, &bad), "ibv_post_send (credit)");
}

void Transport::post_receive(int peer) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = static_cast<std::uint64_t>(peer);
  check(ibv_post_recv(qps_[static_cast<std::size_t>(peer)], &wr, &bad), "ibv_post_recv");
}

void Transport::poll(std::vector<std::uint32_t>& finished) {
  ibv_wc wcs[32];
  int got = ibv_poll_cq(cq_, 32, wcs);
  if (got < 0) throw SystemError("ibv_poll_cq failed");
  for (int k = 0; k < got; ++k) {
    const ibv_wc& wc = wcs[k];
    bool receive = (wc.opcode & IBV_WC_RECV) != 0;
    int peer = receive ? static_cast<int>(wc.wr_id) : static_cast<int>(wc.wr_id >> 48 & 0x7fff);
    if (wc.status != IBV_WC_SUCCESS)
      throw SystemError("rdma: rank " + std::to_string(me_) + ": " + (receive ? "receive from" : "write to") + " rank " +
                        std::to_string(peer) + " failed: " + ibv_wc_status_str(wc.status));
    if (wc.opcode == IBV_WC_RDMA_WRITE) {
      auto channel = static_cast<std::uint16_t>(wc.wr_id >> 40 & 0xff);
      auto slot = static_cast<std::uint32_t>(wc.wr_id >> 32 & 0xff);
      auto h = static_cast<std::uint32_t>(wc.wr_id);
      lane(peer, channel).busy[slot] = false;
      if (--outstanding_[h] == 0 && all_posted_[h]) ready_.push_back(h);
      pump(peer, channel);
    } else if (receive) {
      std::uint32_t imm = ntohl(wc.imm_data);
      auto channel = static_cast<std::uint16_t>(imm >> 8 & 0xff);
      std::uint32_t slot = imm & 0xff;
      post_receive(peer);
      if (imm & kCreditFlag) {
        ++lane(peer, channel).credits;
        pump(peer, channel);
      } else {
        lane(peer, channel).arrived.emplace_back(slot, wc.byte_len);
        deliver(peer, channel);
      }
    }
    // IBV_WC_SEND: a credit went out; nothing to do.
  }
  // A handle is reused only once the scheduler has been told it finished.
  finished.insert(finished.end(), ready_.begin(), ready_.end());
  free_handles_.insert(free_handles_.end(), ready_.begin(), ready_.end());
  ready_.clear();
}

}  // namespace collkit::exec::rdma
