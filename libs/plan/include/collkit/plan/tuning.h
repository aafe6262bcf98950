#pragma once
// The tuning table (collkit.tuning/1, docs/tuning.md): which algorithm and channel count to use per
// collective and size range, as `coll-plan sweep --json` found them by simulation. It is read back
// by the NCCL tuner plugin (libnccl-tuner-collkit.so), which turns each range's NCCL choice into
// NCCL's cost table, so this header and its source depend on nothing but collkit/core.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collkit/plan/collective.h"

namespace collkit::plan {

/// Sizes in a tuning table stay below 2^53, so that every JSON reader (JavaScript's, Python's
/// float path) reads them exactly; an open-ended range has no max_bytes instead of UINT64_MAX.
inline constexpr std::uint64_t kTuningMaxBytes = (std::uint64_t{1} << 53) - 1;

/// The algorithms NCCL has that a collkit plan can stand for, as NCCL's tuner ABI numbers them
/// (docs/tuning.md): collkit's `ring` is NCCL's Ring, its `tree` (double binary trees) NCCL's Tree.
enum class NcclAlgo : int { Tree = 0, Ring = 1, CollNetDirect = 2, CollNetChain = 3, Nvls = 4, NvlsTree = 5, Pat = 6 };
enum class NcclProto : int { LL = 0, LL128 = 1, Simple = 2 };

std::string_view to_string(NcclAlgo a);
std::string_view to_string(NcclProto p);
std::optional<NcclAlgo> parse_nccl_algo(std::string_view text);    ///< "ring", "tree", "nvls_tree", ...
std::optional<NcclProto> parse_nccl_proto(std::string_view text);  ///< "ll", "ll128", "simple"
/// NCCL's counterpart of a collkit algorithm: ring and tree; none for the others.
std::optional<NcclAlgo> nccl_counterpart(std::string_view collkit_algorithm);

/// What NCCL should run in a range: an algorithm, optionally a protocol (none: NCCL's cheapest for
/// that algorithm) and a channel count (0: NCCL's).
struct NcclChoice {
  NcclAlgo algorithm = NcclAlgo::Ring;
  std::optional<NcclProto> protocol;
  int channels = 0;
  double predicted_us_at_min = 0;  ///< collkit's prediction of that algorithm at the range's first size; 0 = none
};

struct TuningRange {
  std::uint64_t min_bytes = 0;
  std::optional<std::uint64_t> max_bytes;  ///< inclusive; none: no upper end
  std::string algorithm;                   ///< collkit's winner
  int channels = 1;
  double predicted_us_at_min = 0;
  double measured_us_at_min = 0;   ///< coll-run autotune: the winner's measured time there; 0 = not measured
  std::optional<NcclChoice> nccl;  ///< the fastest of NCCL's algorithms; none when none applies
  bool covers(std::uint64_t bytes) const { return bytes >= min_bytes && (!max_bytes || bytes <= *max_bytes); }
};

struct TuningTable {
  Collective collective = Collective::AllReduce;
  int nranks = 0;
  std::string topology_name;
  std::string topology_fingerprint;
  std::vector<TuningRange> ranges;  ///< ascending, disjoint
  int iters = 0;                    ///< coll-run autotune: timed iterations per candidate; 0 = not measured
  int warmup_iters = 0;             ///< and untimed ones before them
  /// The range holding `bytes`; null when none does.
  const TuningRange* find(std::uint64_t bytes) const;
};

/// Reads a table; InputError naming `file` and the JSON pointer for anything malformed (unknown
/// fields, sizes of 2^53 or more, overlapping or unordered ranges, unknown NCCL names).
TuningTable read_tuning_table(const std::string& file, const std::string& text);
/// The table as JSON text (schema collkit.tuning/1).
std::string write_tuning_table(const TuningTable& table);

}  // namespace collkit::plan
