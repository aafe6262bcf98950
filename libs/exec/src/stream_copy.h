#pragma once
// A copy that writes around the cache. A large copy into memory nothing will read soon (a
// rank's own block of an out-of-place AllGather is the common case) otherwise costs a read for
// ownership of every destination line and evicts data that the transport is about to move:
// with four ranks on two cores, direct AllGather at 16 MiB ran about 10% faster with it (median
// time ratio to Open MPI 1.04 -> 0.92; bench/coll_run_mpi.sh, docs/run.md).

#include <cstddef>

namespace collkit::exec::detail {

/// Copies `n` bytes with non-temporal stores where the CPU has them (SSE2 on x86-64), with
/// memcpy elsewhere. The ranges must not overlap. Ends with a store fence, so the bytes are
/// visible to a transport posted after the call.
void copy_streaming(std::byte* dst, const std::byte* src, std::size_t n);

}  // namespace collkit::exec::detail
