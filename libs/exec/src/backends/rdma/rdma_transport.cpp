#include "rdma_transport.h"

#include <algorithm>
#include <cstring>

#include "collkit/core/error.h"

namespace collkit::exec::rdma {

namespace {

constexpr std::uint32_t kCredit = 0x80000000u;

std::uint32_t imm_of(std::uint16_t channel, std::uint32_t slot) { return static_cast<std::uint32_t>(channel) << 8 | slot; }
// Write ids: channel, slot and the message's handle (48 bits, as the wire allows).
std::uint64_t write_id(std::uint16_t channel, std::uint32_t slot, std::uint32_t handle) {
  return static_cast<std::uint64_t>(channel) << 40 | static_cast<std::uint64_t>(slot) << 32 | handle;
}

}  // namespace

Transport::Transport(Wire& wire, int rank, int nranks, const Shape& shape) : wire_(wire), me_(rank), n_(nranks), shape_(shape) {
  if (shape.slots == 0 || shape.slots > 256 || shape.max_channels == 0 || shape.max_channels > 256 || shape.slot_bytes == 0)
    throw Error("rdma: slots and channels must be 1 to 256, slots non-empty");
  if (wire.region_bytes() < shape.region_bytes(nranks)) throw Error("rdma: the wire's regions are smaller than the slots need");
  lanes_.resize(static_cast<std::size_t>(n_) * shape.max_channels);
  for (Lane& l : lanes_) {
    l.credits = shape.slots;
    l.busy.assign(shape.slots, false);
  }
  self_sends_.resize(shape.max_channels);
  self_recvs_.resize(shape.max_channels);
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
  if (channel >= shape_.max_channels)
    throw UnsupportedError("rdma: channel " + std::to_string(channel) + ": this backend carries at most " +
                           std::to_string(shape_.max_channels) + " channels");
  return lanes_[static_cast<std::size_t>(peer) * shape_.max_channels + channel];
}

// Both regions are laid out [peer][channel][slot]: the outgoing twins by destination, the landing
// slots by source.
std::uint64_t Transport::slot_offset(int peer, std::uint16_t channel, std::uint32_t slot) const {
  return ((static_cast<std::uint64_t>(peer) * shape_.max_channels + channel) * shape_.slots + slot) * shape_.slot_bytes;
}

std::uint32_t Transport::post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) {
  Lane& l = lane(peer, channel);
  std::uint32_t h = new_handle();
  Message m{h, const_cast<std::byte*>(data), bytes, 0, 0};
  if (peer == me_) {
    self_sends_[channel].push_back(m);
    match_self(channel);
    return h;
  }
  l.sends.push_back(m);
  pump(peer, channel);
  return h;
}

std::uint32_t Transport::post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) {
  Lane& l = lane(peer, channel);
  std::uint32_t h = new_handle();
  Message m{h, data, bytes, 0, 0};
  if (peer == me_) {
    self_recvs_[channel].push_back(m);
    match_self(channel);
    return h;
  }
  l.recvs.push_back(m);
  deliver(peer, channel);
  return h;
}

void Transport::match_self(std::uint16_t channel) {
  auto& s = self_sends_[channel];
  auto& r = self_recvs_[channel];
  while (!s.empty() && !r.empty()) {
    if (s.front().bytes != r.front().bytes)
      throw SystemError("rdma: rank " + std::to_string(me_) + " sends itself " + std::to_string(s.front().bytes) + " bytes on channel " +
                        std::to_string(channel) + " into a receive of " + std::to_string(r.front().bytes));
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
    std::uint64_t piece = std::min(shape_.slot_bytes, m.bytes - m.done);
    std::uint64_t twin = slot_offset(peer, channel, slot);
    std::memcpy(wire_.outgoing() + twin, m.data + m.done, piece);
    // The peer's landing slots are laid out by source: this rank's block there.
    wire_.write(peer, twin, slot_offset(me_, channel, slot), piece, imm_of(channel, slot), write_id(channel, slot, m.handle));
    l.busy[slot] = true;
    --l.credits;
    l.next = (l.next + 1) % shape_.slots;
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
      throw SystemError("rdma: rank " + std::to_string(peer) + " sent more than the " + std::to_string(m.bytes) + " bytes rank " +
                        std::to_string(me_) + " receives on channel " + std::to_string(channel));
    std::memcpy(m.data + m.done, wire_.landing() + slot_offset(peer, channel, slot), bytes);
    l.arrived.pop_front();
    wire_.message(peer, kCredit | imm_of(channel, slot), 0);
    m.done += bytes;
    ++m.pieces;
    if (m.done == m.bytes) {
      ready_.push_back(m.handle);
      l.recvs.pop_front();
    }
  }
}

void Transport::poll(std::vector<std::uint32_t>& finished) {
  completions_.clear();
  wire_.poll(completions_);
  for (const Completion& c : completions_) {
    switch (c.kind) {
      case Completion::Kind::WriteDone: {
        auto channel = static_cast<std::uint16_t>(c.id >> 40 & 0xff);
        auto slot = static_cast<std::uint32_t>(c.id >> 32 & 0xff);
        auto h = static_cast<std::uint32_t>(c.id);
        lane(c.peer, channel).busy[slot] = false;
        if (--outstanding_[h] == 0 && all_posted_[h]) ready_.push_back(h);
        pump(c.peer, channel);
        break;
      }
      case Completion::Kind::MessageSent: break;
      case Completion::Kind::DataArrived: {
        auto channel = static_cast<std::uint16_t>(c.imm >> 8 & 0xff);
        lane(c.peer, channel).arrived.emplace_back(c.imm & 0xff, c.bytes);
        deliver(c.peer, channel);
        break;
      }
      case Completion::Kind::MessageArrived: {
        auto channel = static_cast<std::uint16_t>(c.imm >> 8 & 0xff);
        ++lane(c.peer, channel).credits;
        pump(c.peer, channel);
        break;
      }
    }
  }
  // A handle is reused only once the scheduler has been told it finished.
  finished.insert(finished.end(), ready_.begin(), ready_.end());
  free_handles_.insert(free_handles_.end(), ready_.begin(), ready_.end());
  ready_.clear();
}

}  // namespace collkit::exec::rdma
