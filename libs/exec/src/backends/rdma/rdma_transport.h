#pragma once
// program.h's Transport over ibverbs: one reliable-connected queue pair per peer, data moved by
// RDMA writes with immediate into the receiver's landing slots, receives copied out of them.
//
// Protocol. Each (peer, channel) has kSlots landing slots of kSlotBytes at the receiver, written
// in ring order, and as many credits at the sender. A message is cut into slot-sized pieces; each
// piece is copied into the sender's registered twin of the slot and written with the immediate
// (channel, slot). The receiver queues arrivals per (peer, channel) in order (RC delivers in order),
// copies each into the posted receive at its head, and hands the slot back with a zero-byte send
// carrying the immediate (credit, channel, slot). Slots per channel, not per peer: a channel whose
// receive is not posted yet can hold only its own slots, never another channel's, so the plan's
// channels cannot block each other. A send is done when all its pieces' writes completed (the data
// is at the peer); sends without credit wait in software, so posting never blocks.
// The queue pairs' timeout and retry count make a dead peer show as a failed work completion,
// which poll() turns into a SystemError naming the peer.

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "../../program.h"
#include "collkit/exec/world.h"
#include "verbs.h"

namespace collkit::exec::rdma {

inline constexpr std::uint64_t kSlotBytes = 128 << 10;
inline constexpr std::uint32_t kSlots = 4;
inline constexpr std::uint16_t kMaxChannels = 8;

class Transport final : public detail::Transport {
 public:
  /// Creates and connects a queue pair to every other rank (addresses exchanged over `world`).
  Transport(Device& device, World& world, double timeout_s);
  ~Transport() override;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  std::uint32_t post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) override;
  std::uint32_t post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) override;
  void poll(std::vector<std::uint32_t>& finished) override;

 private:
  struct Message {
    std::uint32_t handle = 0;
    std::byte* data = nullptr;
    std::uint64_t bytes = 0, done = 0;
    std::uint32_t pieces = 0;
  };
  struct Lane {  // one (peer, channel)
    std::deque<Message> sends;  // waiting to be cut into pieces
    std::uint32_t credits = kSlots, next = 0;
    std::array<bool, kSlots> busy{};  // the sender's twin of the slot still being written from
    std::deque<std::pair<std::uint32_t, std::uint32_t>> arrived;  // (slot, bytes) in order
    std::deque<Message> recvs;
  };

  std::uint32_t new_handle();
  Lane& lane(int peer, std::uint16_t channel);
  std::byte* send_slot(int peer, std::uint16_t channel, std::uint32_t slot) const;
  std::byte* recv_slot(int peer, std::uint16_t channel, std::uint32_t slot) const;
  void pump(int peer, std::uint16_t channel);
  void deliver(int peer, std::uint16_t channel);
  void post_credit(int peer, std::uint16_t channel, std::uint32_t slot);
  void post_receive(int peer);
  void match_self(std::uint16_t channel);

  Device& device_;
  int me_ = 0, n_ = 1;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;  // by peer; none for this rank
  std::unique_ptr<std::byte[]> send_mem_, recv_mem_;
  std::uint64_t region_bytes_ = 0;
  ibv_mr* send_mr_ = nullptr;
  ibv_mr* recv_mr_ = nullptr;
  std::vector<std::uint64_t> remote_addr_;
  std::vector<std::uint32_t> remote_key_;
  std::vector<Lane> lanes_;  // peer * kMaxChannels + channel
  std::vector<std::uint32_t> outstanding_;  // by handle: piece writes not yet completed
  std::vector<std::uint8_t> all_posted_;
  std::vector<std::uint32_t> free_handles_;
  std::vector<std::uint32_t> ready_;  // finished outside poll()
  std::array<std::deque<Message>, kMaxChannels> self_sends_, self_recvs_;
};

}  // namespace collkit::exec::rdma
