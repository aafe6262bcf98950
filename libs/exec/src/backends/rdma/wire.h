#pragma once
// What the landing-slot protocol (rdma_transport.h) needs from a network: two memory regions per
// rank, a write-with-immediate into a peer's landing region, a zero-byte message with an
// immediate, and completions. verbs_wire.h is the ibverbs one; a test connects ranks in one
// process with an in-memory one. No ibverbs type appears here.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace collkit::exec::rdma {

struct Completion {
  enum class Kind : std::uint8_t {
    WriteDone,      ///< a write() this rank posted completed (the data is at the peer)
    MessageSent,    ///< a message() this rank posted completed
    DataArrived,    ///< a peer's write landed in this rank's landing region
    MessageArrived  ///< a peer's message arrived
  };
  Kind kind = Kind::WriteDone;
  int peer = -1;
  std::uint64_t id = 0;    ///< the poster's id (WriteDone, MessageSent)
  std::uint32_t imm = 0;   ///< the immediate (DataArrived, MessageArrived)
  std::uint32_t bytes = 0; ///< bytes written (DataArrived)
};

class Wire {
 public:
  virtual ~Wire() = default;
  /// This rank's outgoing region (written locally, read by write()) and landing region (written
  /// by peers); each `region_bytes()` long.
  virtual std::byte* outgoing() = 0;
  virtual std::byte* landing() = 0;
  virtual std::uint64_t region_bytes() const = 0;
  /// Writes `bytes` from outgoing()+`from` to `peer`'s landing()+`to`, then delivers `imm` there.
  virtual void write(int peer, std::uint64_t from, std::uint64_t to, std::uint64_t bytes, std::uint32_t imm, std::uint64_t id) = 0;
  /// Sends `peer` a zero-byte message carrying `imm`.
  virtual void message(int peer, std::uint32_t imm, std::uint64_t id) = 0;
  /// Appends what completed since the last call (without blocking); throws SystemError naming the
  /// peer on a failed one.
  virtual void poll(std::vector<Completion>& out) = 0;
};

}  // namespace collkit::exec::rdma
