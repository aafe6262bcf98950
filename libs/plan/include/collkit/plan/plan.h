#pragma once
// The plan IR (collkit.plan/1): every rank's program of chunk operations. Enough for an executor
// to run a collective with no other knowledge of the algorithm. docs/plan.md states the semantics;
// in short:
//  - Each rank's buffers (input, output, scratch) are split into C chunks as equal as whole
//    elements allow: with E = B / elem_bytes elements, chunk i covers elements
//    [floor(i*E/C), floor((i+1)*E/C)), so chunks differ by at most one element.
//  - Ops of one (rank, channel) run in program order; an op also waits for its explicit `deps`
//    (earlier ops of the same rank, usually on other channels). Channels run concurrently.
//  - The k-th Send from a to b on channel c matches the k-th Recv/RecvReduce on b from a on c,
//    with equal byte counts. Sends are eager: a send completes when its data has arrived at the
//    peer, whether or not the peer has reached the matching receive yet (the transport buffers
//    it); a receive completes when its data has arrived and it has been reached.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collkit/plan/collective.h"

namespace collkit::plan {

enum class OpType : std::uint8_t {
  Send,        ///< send src[count] to peer
  Recv,        ///< receive count chunks from peer into dst
  RecvReduce,  ///< receive from peer; dst = src (+) received
  Copy,        ///< dst = src, locally
  Reduce,      ///< dst = dst (+) src, locally
};
enum class Buf : std::uint8_t { Input, Output, Scratch };

std::string_view to_string(OpType t);
std::string_view to_string(Buf b);

struct ChunkRef {
  Buf buf = Buf::Input;
  std::uint32_t chunk = 0;
  bool operator==(const ChunkRef&) const = default;
};

inline constexpr std::uint32_t kNoDep = 0xffffffffu;
inline constexpr std::size_t kMaxDeps = 4;

struct Op {
  OpType type = OpType::Send;
  std::int32_t peer = -1;     ///< Send / Recv / RecvReduce
  ChunkRef src;               ///< Send, RecvReduce, Copy, Reduce: what is read
  ChunkRef dst;               ///< Recv, RecvReduce, Copy, Reduce: what is written
  std::uint32_t count = 1;    ///< consecutive chunks from src.chunk / dst.chunk
  std::uint16_t channel = 0;
  std::array<std::uint32_t, kMaxDeps> deps{kNoDep, kNoDep, kNoDep, kNoDep};  ///< op indices on this rank

  /// Adds a dependency on op `index` (an earlier op of the same rank); throws past kMaxDeps.
  void depend_on(std::uint32_t index);
  std::size_t num_deps() const;
};

/// The ops of `prog` on `channel`, deps renumbered as Plan::channel_program() says.
std::vector<Op> only_channel(const std::vector<Op>& prog, int channel);

/// A symmetry a plan states about itself: a permutation of ranks and one of channels such that
/// the thread (rank[r], channel[c]) (the ops of rank rank[r] on channel channel[c], in program
/// order) runs the ops of thread (r, c) with every peer p read as rank[p], every op on the same
/// number of bytes (to within one element where a size does not divide into chunks of at least
/// 1000 elements), and deps to the op at the same place of the image thread. It generates a
/// cyclic group of `order` elements. The simulator folds such symmetric threads into one
/// (simulate.cpp), which is how it runs the 33 M ops of a 1024-rank, 8-channel ring in a second.
struct SymmetryAxis {
  std::vector<int> rank;
  std::vector<int> channel;
  int order = 1;
};

/// Everything about a plan except the programs.
struct PlanInfo {
  Request req;
  std::string algorithm;                      ///< registry name: "ring", "rhd", ... or "explicit"
  std::map<std::string, std::string> params;  ///< what program() needs to regenerate a rank: ring order, ...
  std::uint32_t in_chunks = 1;
  std::uint32_t out_chunks = 1;
  std::uint32_t scratch_chunks = 0;
  std::uint64_t scratch_bytes = 0;             ///< per rank; 0 when no scratch is used
  std::uint16_t channels = 1;
  std::string topo_name;         ///< the topology the plan was made for
  std::string topo_fingerprint;  ///< its fingerprint_hex()
  double predicted_us = 0;       ///< simulator's prediction when planned with a topology (0 = none)
  double bound_us = 0;           ///< lower bound on that topology (0 = none)
  /// Which NIC each channel's sends between hosts take (docs/plan.md, "channel_nics"): channel
  /// c's send from a rank of host A to a rank of host B leaves A through A's NIC number
  /// channel_nics[c % size] and enters B through B's NIC of that number (a host's NICs with a
  /// link out of it, in vertex order), the route to the NIC, between the NICs and from the NIC
  /// joined; -1: the route's own choice (topo/routing.h), as for every send when empty. A hint
  /// about paths, not data: the simulator follows it, verify and coll-run ignore it (MPI and
  /// NCCL choose their own NICs), exports drop it.
  std::vector<std::int16_t> channel_nics;
  /// Which path each channel's sends take (docs/plan.md, "channel_paths"): channel c takes entry
  /// channel_paths[c % size]; Route (as for every channel when empty) is the topology's route
  /// (topo/routing.h, channel_nics), Host stages the send through host memory: from the sender
  /// over PCIe to its nearest CPU (then over the socket link to another), and from there over
  /// PCIe to the receiver, never over NVLink or xGMI (Blink's PCIe path beside NVLink). A hint
  /// about paths, not data: the simulator follows it, verify and coll-run's MPI backend ignore it,
  /// exports drop it.
  std::vector<ChannelPath> channel_paths;
};

/// The path channel c's sends take (PlanInfo::channel_paths).
inline ChannelPath channel_path(const PlanInfo& info, int channel) {
  return info.channel_paths.empty() ? ChannelPath::Route
                                    : info.channel_paths[static_cast<std::size_t>(channel) % info.channel_paths.size()];
}

/// The NIC channel c's sends between hosts take (PlanInfo::channel_nics), -1 for the route's.
inline int channel_nic(const PlanInfo& info, int channel) {
  return info.channel_nics.empty() ? -1 : info.channel_nics[static_cast<std::size_t>(channel) % info.channel_nics.size()];
}

/// A plan: an explicit one holds every program; a generated one expands a rank's program on
/// demand from its algorithm and parameters, so a 16k-rank plan is a small file.
class Plan {
 public:
  virtual ~Plan() = default;
  const PlanInfo& info() const { return info_; }
  PlanInfo& mutable_info() { return info_; }
  int nranks() const { return info_.req.nranks; }
  /// Rank r's program.
  virtual std::vector<Op> program(int rank) const = 0;
  /// The ops of rank r's channel c, in program order, each dep renumbered to its place in that
  /// list (deps on other channels dropped). By default program(rank) filtered; a generated plan
  /// makes only that channel. verify() reads channel 0 so and checks it against program().
  virtual std::vector<Op> channel_program(int rank, int channel) const { return only_channel(program(rank), channel); }
  /// True when every program is stored (hand-made or synthesised plans).
  virtual bool is_explicit() const = 0;
  /// Symmetries the plan holds by construction (SymmetryAxis); none unless its algorithm says.
  virtual std::vector<SymmetryAxis> symmetries() const { return {}; }
  /// Per channel c, a rank map g such that channel c of rank g[r] does what channel 0 of rank r
  /// does, on other chunks (a ring's channels: the same ring through other rank orders); empty
  /// when the plan does not say. verify() checks it op for op before relying on it.
  virtual std::vector<std::vector<int>> channel_images() const { return {}; }

 protected:
  explicit Plan(PlanInfo info) : info_(std::move(info)) {}
  PlanInfo info_;
};

/// Every op written out.
class ExplicitPlan final : public Plan {
 public:
  ExplicitPlan(PlanInfo info, std::vector<std::vector<Op>> programs);
  std::vector<Op> program(int rank) const override { return programs_.at(static_cast<std::size_t>(rank)); }
  const std::vector<Op>& program_ref(int rank) const { return programs_.at(static_cast<std::size_t>(rank)); }
  std::vector<Op>& mutable_program(int rank) { return programs_.at(static_cast<std::size_t>(rank)); }
  bool is_explicit() const override { return true; }

 private:
  std::vector<std::vector<Op>> programs_;
};

/// Expands every program of `plan` into an explicit plan (for tests, mutation, export).
ExplicitPlan materialize(const Plan& plan);

/// Byte offset of chunk `chunk` of a buffer of `buffer_bytes` split in `chunks` at whole
/// `elem_bytes` elements (the IR's rule above; chunk == chunks gives the buffer's end).
std::uint64_t chunk_offset(std::uint64_t buffer_bytes, std::uint32_t chunks, std::uint64_t chunk, std::uint32_t elem_bytes = 1);
/// Bytes of chunk range [chunk, chunk+count) of such a buffer.
std::uint64_t chunk_bytes(std::uint64_t buffer_bytes, std::uint32_t chunks, std::uint32_t chunk, std::uint32_t count,
                          std::uint32_t elem_bytes = 1);
/// The same for buffer `b` of a plan, at its request's element size.
std::uint64_t chunk_offset(const PlanInfo& info, Buf b, std::uint32_t chunk);
std::uint64_t chunk_bytes(const PlanInfo& info, Buf b, std::uint32_t chunk, std::uint32_t count);
/// Size of each buffer of a rank under this plan.
std::uint64_t buffer_bytes(const PlanInfo& info, Buf b);
std::uint32_t buffer_chunks(const PlanInfo& info, Buf b);

}  // namespace collkit::plan
