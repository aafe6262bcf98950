#pragma once
// program.h's Transport over a Wire (wire.h; ibverbs in verbs_wire.h): data moves by writes with
// immediate into the receiver's landing slots, receives are copied out of them.
//
// Protocol. Each (peer, channel) has `slots` landing slots of `slot_bytes` at the receiver,
// written in ring order, and as many credits at the sender. A message is cut into slot-sized
// pieces; each piece is copied into the sender's outgoing twin of the slot and written with the
// immediate (channel, slot). The receiver queues arrivals per (peer, channel) in order (a reliable
// connection delivers in order), copies each into the posted receive at its head, and hands the
// slot back with a zero-byte message carrying (credit, channel, slot). Slots per channel, not per
// peer: a channel whose receive is not posted yet holds only its own slots, never another
// channel's, so the plan's channels cannot block each other. A send is done when all its pieces'
// writes completed (the data is at the peer); sends without credit wait in software, so posting
// never blocks.

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "../../program.h"
#include "wire.h"

namespace collkit::exec::rdma {

struct Shape {
  std::uint64_t slot_bytes = 128 << 10;
  std::uint32_t slots = 4;         ///< per (peer, channel); at most 256
  std::uint16_t max_channels = 8;  ///< at most 256
  /// Bytes of each of a rank's two regions for `nranks` ranks.
  std::uint64_t region_bytes(int nranks) const { return static_cast<std::uint64_t>(nranks) * max_channels * slots * slot_bytes; }
  /// Work requests a queue pair may have outstanding per direction: every slot of every channel
  /// in flight, each with its credit, and room to spare.
  int depth() const { return 2 * max_channels * static_cast<int>(slots) + 16; }
};

class Transport final : public detail::Transport {
 public:
  /// `wire`'s regions must be shape.region_bytes(nranks) long.
  Transport(Wire& wire, int rank, int nranks, const Shape& shape = {});

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
    std::uint32_t credits = 0, next = 0;
    std::vector<bool> busy;  // the outgoing twin of the slot still being written from
    std::deque<std::pair<std::uint32_t, std::uint32_t>> arrived;  // (slot, bytes) in order
    std::deque<Message> recvs;
  };

  std::uint32_t new_handle();
  Lane& lane(int peer, std::uint16_t channel);
  std::uint64_t slot_offset(int peer, std::uint16_t channel, std::uint32_t slot) const;
  void pump(int peer, std::uint16_t channel);
  void deliver(int peer, std::uint16_t channel);
  void match_self(std::uint16_t channel);

  Wire& wire_;
  int me_ = 0, n_ = 1;
  Shape shape_;
  std::vector<Lane> lanes_;                 // peer * max_channels + channel
  std::vector<std::uint32_t> outstanding_;  // by handle: piece writes not yet completed
  std::vector<std::uint8_t> all_posted_;
  std::vector<std::uint32_t> free_handles_;
  std::vector<std::uint32_t> ready_;  // finished, not yet reported by poll()
  std::vector<Completion> completions_;
  std::vector<std::deque<Message>> self_sends_, self_recvs_;  // by channel
};

}  // namespace collkit::exec::rdma
