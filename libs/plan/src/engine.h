#pragma once
// The execution engine behind verify() and the interpreter: it runs every rank's program in one
// process, in one valid order of the semantics plan.h states, and checks everything that does
// not depend on the data:
//  - through match_plan() (matched.h), the pass it shares with the simulator and the GPU
//    schedule: ops well formed (channel, peer, count, chunk ranges, deps pointing to earlier ops,
//    equal bytes on both sides of a local op) and sends and receives paired per (sender,
//    receiver, channel), with equal counts and bytes;
//  - no deadlock: when nothing can run and ops remain, it names the stuck ops;
//  - no data race: an op that reads a chunk happens-after the op that wrote it, and a write
//    happens-after earlier reads and writes of the chunk. Happens-before on a rank is channel
//    program order plus explicit deps, transitively, tracked with one vector clock per channel.
//    Order through other ranks' messages does not count: an executor may run channels on
//    independent engines, and only deps are a promise it keeps.
// What the data is (symbols or numbers) is the Machine's business; the engine calls it once per
// op, in execution order.

#include <cstdint>
#include <functional>
#include <string>

#include "collkit/core/error.h"
#include "collkit/plan/matched.h"
#include "collkit/plan/plan.h"
#include "collkit/plan/verify.h"

namespace collkit::plan::detail {

/// An op as the engine stores it: 20 bytes, since a 1024-rank ring holds millions. Its peer is
/// its partner's rank; its deps live in a side table of its rank.
struct EngineOp {
  std::uint32_t src_chunk = 0;
  std::uint32_t dst_chunk = 0;  ///< a send has no destination: once sent, its payload's handle
  std::uint32_t count = 0;
  std::uint32_t partner = 0;  ///< send / receive: the other side's id (match_plan())
  std::uint16_t channel = 0;
  OpType type = OpType::Send;
  std::uint8_t bits = 0;  ///< src buf (bits 0-1), dst buf (bits 2-3), flags of the engine above

  Buf src_buf() const { return static_cast<Buf>(bits & 3u); }
  Buf dst_buf() const { return static_cast<Buf>((bits >> 2) & 3u); }
  bool reads_src() const { return type != OpType::Recv; }
  bool writes_dst() const { return type != OpType::Send; }
  bool transfer() const { return type == OpType::Send || type == OpType::Recv || type == OpType::RecvReduce; }
  std::uint32_t payload() const { return dst_chunk; }
  void set_payload(std::uint32_t handle) { dst_chunk = handle; }
};

/// Where a rank's chunks live in one flat array: input, then output, then scratch.
struct Layout {
  std::uint32_t in = 0, out = 0, scratch = 0;
  explicit Layout(const PlanInfo& info)
      : in(info.in_chunks), out(info.out_chunks), scratch(info.scratch_chunks) {}
  std::uint32_t base(Buf b) const { return b == Buf::Input ? 0 : b == Buf::Output ? in : in + out; }
  std::uint32_t cells() const { return in + out + scratch; }
};

/// Something wrong with one op, found by a Machine; the engine prefixes the op
/// ("rank 3 op 12 (recv_reduce from 2 ch 0): ") and rethrows it as a PlanFault.
struct OpFault {
  std::string what;
};

/// A wrong plan: one line naming the rank, op and problem.
using plan::PlanFault;

/// The data a plan runs on: symbols (verify) or numbers (interpret). Calls arrive in a valid
/// execution order; each may throw OpFault.
class Machine {
 public:
  virtual ~Machine() = default;
  /// A send reads its source now (sends are eager); returns a handle on the payload.
  virtual std::uint32_t send(int rank, const EngineOp& op) = 0;
  /// A recv or recv_reduce consumes the payload of its matching send.
  virtual void receive(int rank, const EngineOp& op, std::uint32_t payload) = 0;
  /// A copy or reduce.
  virtual void local(int rank, const EngineOp& op) = 0;
};

struct EngineStats {
  std::size_t ops = 0;
  std::size_t transfers = 0;
};

/// Runs the plan to its end; throws PlanFault at the first problem. `per_chunk`: how the
/// per-chunk race records are stored (cells.h); the outcome is the same either way.
/// `progress`, when set, hears (ops executed, ops in all) now and then.
EngineStats execute(const Plan& plan, Machine& machine, bool per_chunk, const std::function<void(std::size_t, std::size_t)>& progress = {});

/// Up to this many cells over all ranks (20 bytes each, engine and verify() together: 640 MiB at
/// most), ChunkStore::Auto stores one entry per chunk; beyond, runs, whose number grows with the
/// ops. A 1024-rank ring with one ring per rail (8192 chunks) stays per chunk, where its one-chunk
/// ops are cheapest; hier on 16k ranks (p x 3 x 8 x 2048 cells) goes to runs.
inline constexpr std::uint64_t kPerChunkCellsMax = std::uint64_t{1} << 25;
/// Whether `store` means one entry per chunk for this plan.
bool per_chunk_store(const PlanInfo& info, ChunkStore store);

using plan::chunks_name;
using plan::describe_op;

}  // namespace collkit::plan::detail
