#pragma once
// Facts about collectives, in one table that planner, simulator and runtime all read, so their
// byte counts and bus-bandwidth factors cannot disagree (STYLE.md rule 3).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace collkit::plan {

enum class Collective : std::uint8_t { AllReduce, ReduceScatter, AllGather, AlltoAll, Broadcast, Reduce };

std::string_view to_string(Collective c);
/// Accepts "allreduce", "all_reduce", "all-reduce", "AllReduce" and so on.
std::optional<Collective> parse_collective(std::string_view text);

/// What a collective needs. `bytes` follows nccl-tests' size column: the larger of a rank's input
/// and output buffers (AllReduce: the vector; AllGather: the gathered output; ReduceScatter: the
/// input before scattering; AlltoAll: one rank's whole send buffer).
struct Request {
  Collective coll = Collective::AllReduce;
  std::uint64_t bytes = 0;
  int nranks = 0;
  int root = 0;                  ///< Broadcast and Reduce only
  std::uint32_t elem_bytes = 1;  ///< one element (the datatype's size): buffers hold, and chunks split at, whole elements
};

/// Per-collective facts.
struct CollectiveFacts {
  Collective coll;
  std::string_view name;  ///< "allreduce"
  bool has_root;          ///< Broadcast, Reduce
  bool reduces;           ///< AllReduce, ReduceScatter, Reduce
  bool sliced;            ///< AllGather, ReduceScatter, AlltoAll: bytes split into a slice per rank
};
const CollectiveFacts& facts(Collective c);

/// A rank's input buffer in bytes (AllGather: bytes / nranks).
std::uint64_t input_bytes(const Request& r);
/// A rank's output buffer in bytes (ReduceScatter: bytes / nranks).
std::uint64_t output_bytes(const Request& r);
/// nccl-tests' bus bandwidth factor: busbw = algbw x factor. AllReduce 2(n-1)/n; ReduceScatter,
/// AllGather, AlltoAll (n-1)/n; Broadcast, Reduce 1.
double busbw_factor(Collective c, int nranks);
/// algbw in GB/s for `bytes` moved in `time_us` (nccl-tests: size / time).
double algbw_gbps(std::uint64_t bytes, double time_us);

/// What a plan file holds (docs/errors.md, "Limits"): the loader reads no more, and generate()
/// refuses a request or options past them, so that every plan made is a plan that loads.
inline constexpr int kMaxPlanRanks = 1 << 24;
inline constexpr std::uint64_t kMaxPlanBytes = 0x7fffffffffffffffull;  ///< a JSON integer (int64)
inline constexpr int kMaxPlanChannels = 0xffff;                        ///< Op::channel is 16 bits
inline constexpr int kMaxChannelNic = 126;                             ///< PlanInfo::channel_nics: NIC numbers 0 .. this (-1: the route's)
/// PlanInfo::channel_paths: a channel's sends take the topology's route ("route") or are staged
/// through host memory over PCIe ("host").
enum class ChannelPath : std::uint8_t { Route, Host };
std::string_view to_string(ChannelPath path);
std::optional<ChannelPath> parse_channel_path(std::string_view text);
inline constexpr std::uint64_t kMaxPlanChunks = 0xffffffffull;         ///< chunk indices are 32 bits

/// Checks a request (1 <= ranks <= kMaxPlanRanks, bytes <= kMaxPlanBytes, root in range, every
/// rank's buffers whole elements); throws InputError with the reason.
void check(const Request& r);

/// A request made valid the way nccl-tests and NCCL make it: bytes rounded down to whole
/// elements, and for AllGather, ReduceScatter and AlltoAll to whole elements per rank (a
/// multiple of nranks elements). AllReduce, Broadcast and Reduce take any element count; their
/// chunks split unevenly. `note` is one line saying what was rounded, empty when nothing was.
struct Rounded {
  Request req;
  std::string note;  ///< "size 1048576 rounded down to 1048536 bytes: whole elements per rank"
};
/// Throws InputError when not even one element (per rank) fits, or the request is otherwise bad.
Rounded round_to_elements(const Request& r);

}  // namespace collkit::plan
