#pragma once
// Limits on what input may ask for (docs/errors.md, "Limits"). Each is checked where the input is
// read, before anything sized by it is allocated, and the error names the limit, so a hostile or
// mistyped file or flag ends in one line rather than a crash, a hang or bad_alloc.

#include <cstdint>

namespace collkit::limits {

/// Bytes of one input file: far above the largest artifact collkit writes (a plan of a few
/// hundred MB), and it stops a device such as /dev/zero from being read forever.
inline constexpr std::uint64_t kInputFileBytes = std::uint64_t{1} << 30;

/// Nesting depth of elements in NCCL's topology XML: NCCL writes a few PCI switches under a CPU;
/// the importer walks the tree recursively.
inline constexpr int kXmlDepth = 64;

/// Nesting depth of a preset template expression (parentheses and unary operators).
inline constexpr int kTemplateDepth = 64;

/// Bindings that one preset entry's `for` loops make (all loops together).
inline constexpr std::int64_t kTemplateBindings = 65536;

/// Vertices of one topology, whether read, imported or synthesised.
inline constexpr std::int64_t kTopologyVertices = std::int64_t{1} << 20;

/// Ranks on one host (discover --ranks-per-host): far above the cores of any host.
inline constexpr int kRanksPerHost = 65536;

/// Layers of a model (collkit.model/1): published models have up to a few hundred; coll-overlap
/// walks every layer of every micro-batch.
inline constexpr int kModelLayers = 4096;

/// Parameters a model's shapes make (collkit.model/1): 10^15, far above any model published (a
/// few 10^12), and every count collkit derives from it (bytes, FLOPs) fits 64 bits.
inline constexpr std::int64_t kModelParams = 1'000'000'000'000'000;

}  // namespace collkit::limits
