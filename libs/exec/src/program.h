#pragma once
// A rank's program made ready to run: chunk references turned into byte ranges of the rank's
// three regions, and the scheduler that issues ops as soon as plan.h's rules allow, over any
// transport that can post a send and a receive and say when they finish (MPI point-to-point,
// RDMA writes). Semantics kept (docs/plan.md):
//  - ops of a channel start in program order, each after the previous one of its channel is done;
//    a send counts as done once posted (sends are eager), so a channel never waits on its peer
//    to receive. A transport may still be reading the source after that (MPI's rendezvous does),
//    so an op that overwrites a send's bytes must not start before the send has finished. Waiting
//    for it is safe only when the peer has surely received the data by then: when the writer
//    happens after a receive from that peer whose send, on the peer, happens after the peer's
//    receive of ours (the send's "fences", found by compile()). Otherwise waiting could deadlock
//    two ranks that each overwrite what they are sending to the other (in-place recursive
//    doubling does), and the send goes from a copy instead;
//  - an op also waits for its deps; channels run concurrently;
//  - receive-and-reduce lands in a staging buffer of its channel, then reduces into place;
//  - a large copy into bytes that nothing else in the program reads streams past the cache.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collkit/exec/datatype.h"
#include "collkit/plan/plan.h"

namespace collkit::exec::detail {

struct ExecOp {
  plan::OpType type = plan::OpType::Send;
  std::int32_t peer = -1;
  std::uint16_t channel = 0;
  plan::Buf src_buf = plan::Buf::Input, dst_buf = plan::Buf::Input;
  std::uint64_t src_off = 0, dst_off = 0, bytes = 0;
  std::array<std::uint32_t, plan::kMaxDeps> deps{plan::kNoDep, plan::kNoDep, plan::kNoDep, plan::kNoDep};
};

struct RankProgram {
  int rank = 0;
  std::vector<ExecOp> ops;
  std::array<std::uint64_t, 3> region_bytes{};  ///< input, output, scratch
  std::uint16_t channels = 1;
  std::uint64_t max_recv_reduce_bytes = 0;
  /// Per op, the op index on the same channel that precedes it (kNoDep for the first).
  std::vector<std::uint32_t> channel_prev;
  /// Per send: receives of this program from the same peer, each the first on its channel, whose
  /// matching send on the peer happens after the peer's receive of this send (see above).
  std::vector<std::vector<std::uint32_t>> fences;
};

/// Does op `a` happen before op `b` in `p` (channel order and deps, transitively)? Gives up
/// (false) after `budget` steps, which it decrements.
bool happens_before(const RankProgram& p, std::uint32_t a, std::uint32_t b, std::int64_t& budget);

/// Rank `rank`'s program of `plan` with chunks as byte ranges, split at whole elements of the
/// plan's element size (chunks may differ by one element). `with_fences`: also the sends' fences,
/// which only the Runner reads (the GPU backends' global schedule has no use for them).
RankProgram compile(const plan::Plan& plan, int rank, bool with_fences = true);
/// The same from rank `rank`'s program `ops`, already expanded.
RankProgram compile(const plan::Plan& plan, int rank, const std::vector<plan::Op>& ops, bool with_fences = true);

/// Copies of at least this size may stream past the cache (stream_copy.h). A smaller destination
/// would likely still be cached when the caller reads the result, which streaming would forfeit.
constexpr std::uint64_t kStreamingCopyBytes = 1ull << 20;

/// Per op of `p`, its regions placed at `regions` (in place, input and output overlap): is it a
/// copy of at least kStreamingCopyBytes, apart from its own source, into bytes that no op of `p`
/// reads (a send's or a copy's source, a reduction's operands)? Those copies stream.
std::vector<bool> streaming_copies(const RankProgram& p, const std::array<std::byte*, 3>& regions);

/// "op 12 (recv from rank 1, channel 0, 4096 bytes)".
std::string describe(const ExecOp& op, std::uint32_t index);

/// What the scheduler needs from a network.
class Transport {
 public:
  virtual ~Transport() = default;
  /// Starts moving `bytes` to/from `peer` on `channel`; returns a handle.
  virtual std::uint32_t post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) = 0;
  virtual std::uint32_t post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) = 0;
  /// Appends the handles that have finished since the last call (without blocking).
  virtual void poll(std::vector<std::uint32_t>& finished) = 0;
};

/// Runs one program to completion, again and again (one call per collective).
class Runner {
 public:
  Runner(const RankProgram& program, DataType type, RedOp op, double timeout_s);
  /// Executes the program once on `regions` (input, output, scratch base pointers).
  void run(Transport& transport, const std::array<std::byte*, 3>& regions);

 private:
  bool ready(std::uint32_t i) const;
  /// How each send protects its bytes, for one placement of the regions.
  enum class Guard : std::uint8_t { None, Wait, Copy };
  /// What depends on where the regions are: send guards and streaming copies (cached per placement).
  struct Layout {
    std::array<std::byte*, 3> regions;
    std::vector<Guard> guards;
    std::vector<bool> streaming;
  };
  const Layout& layout(const std::array<std::byte*, 3>& regions);
  std::vector<Guard> send_guards(const std::array<std::byte*, 3>& regions) const;
  /// Would `op` write bytes that a send in flight under Guard::Wait still reads?
  bool overwrites_waiting_send(const ExecOp& op) const;
  /// A free bounce buffer of at least `bytes`: its index in bounces_.
  std::size_t bounce(std::uint64_t bytes);
  [[noreturn]] void stalled() const;

  const RankProgram& prog_;
  DataType type_;
  RedOp op_;
  double timeout_s_;
  std::vector<std::vector<std::uint32_t>> by_channel_;  // op indices per channel
  std::vector<std::vector<std::byte>> staging_;         // per channel, for recv_reduce
  std::vector<Layout> layouts_;
  std::vector<std::uint32_t> waiting_;  // sends in flight under Guard::Wait
  std::vector<std::vector<std::byte>> bounces_;          // copies of sent data, reused
  std::vector<std::size_t> free_bounces_;
  // Per run:
  std::vector<std::uint8_t> state_;  // 0 waiting, 1 posted, 2 done
  std::vector<std::uint32_t> cursor_;
  struct InFlight {
    std::uint32_t op;
    bool send;
    std::size_t bounce;  // bounce buffer to free, or npos
  };
  std::vector<InFlight> handles_;  // by transport handle
  std::vector<std::uint32_t> sends_;  // ops whose send is still reading its source
  std::array<std::byte*, 3> regions_{};
};

}  // namespace collkit::exec::detail
