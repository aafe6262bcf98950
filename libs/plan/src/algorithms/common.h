#pragma once
// Small helpers shared by the algorithm files: building ops, reading params.

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collkit/plan/plan.h"

namespace collkit::plan::algo {

inline Op send(int peer, ChunkRef src, std::uint32_t count, std::uint16_t channel) {
  Op o;
  o.type = OpType::Send;
  o.peer = peer;
  o.src = src;
  o.count = count;
  o.channel = channel;
  return o;
}
inline Op recv(int peer, ChunkRef dst, std::uint32_t count, std::uint16_t channel) {
  Op o;
  o.type = OpType::Recv;
  o.peer = peer;
  o.dst = dst;
  o.count = count;
  o.channel = channel;
  return o;
}
/// dst = src (+) received.
inline Op recv_reduce(int peer, ChunkRef src, ChunkRef dst, std::uint32_t count, std::uint16_t channel) {
  Op o;
  o.type = OpType::RecvReduce;
  o.peer = peer;
  o.src = src;
  o.dst = dst;
  o.count = count;
  o.channel = channel;
  return o;
}
inline Op copy(ChunkRef src, ChunkRef dst, std::uint32_t count, std::uint16_t channel) {
  Op o;
  o.type = OpType::Copy;
  o.src = src;
  o.dst = dst;
  o.count = count;
  o.channel = channel;
  return o;
}
/// dst = dst (+) src.
inline Op reduce(ChunkRef src, ChunkRef dst, std::uint32_t count, std::uint16_t channel) {
  Op o;
  o.type = OpType::Reduce;
  o.src = src;
  o.dst = dst;
  o.count = count;
  o.channel = channel;
  return o;
}

inline ChunkRef in(std::uint32_t c) { return {Buf::Input, c}; }
inline ChunkRef out(std::uint32_t c) { return {Buf::Output, c}; }
inline ChunkRef scratch(std::uint32_t c) { return {Buf::Scratch, c}; }

/// An integer parameter of a PlanInfo, with a default; InputError naming the key when malformed.
int param_int(const PlanInfo& info, const std::string& key, int fallback);
/// A positive number parameter (a rate, a time), with a default; InputError naming the key when malformed.
double param_positive(const PlanInfo& info, const std::string& key, double fallback);
/// A list of integers in [lo, hi] stored as "3,1,2" (none empty); when malformed, InputError
/// "NAME=\"TEXT\": expected WHAT, comma-separated" (name: "ring: plan parameter weights").
std::vector<int> param_ints(const std::string& name, const std::string& text, int lo, int hi, const std::string& what);
/// A rank permutation stored as "3,1,0,2"; empty or absent = identity of `n`. Checks it is one.
std::vector<int> param_order(const PlanInfo& info, const std::string& key, int n);
std::string format_order(const std::vector<int>& order);

/// Whether every chunk of every buffer holds the same bytes: what a stated symmetry needs, so
/// that threads mapped onto each other move equal bytes (plan.h, SymmetryAxis).
inline bool even_chunks(const PlanInfo& info) {
  for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) {
    std::uint32_t n = buffer_chunks(info, b);
    if (n > 0 && chunk_bytes(info, b, 0, 1) * n != buffer_bytes(info, b)) return false;
  }
  return true;
}

/// Whether chunks are even enough for a stated symmetry: every chunk of a buffer holds the same
/// bytes, or, where the size does not divide, chunks differ by one element and each holds at least
/// kSymmetricChunkElems of them, so image threads move bytes within 0.1% of each other (a 64 MiB
/// ReduceScatter on 1152 ranks: 3640 or 3641 bytes a chunk, 45 s to simulate unfolded).
inline constexpr std::uint64_t kSymmetricChunkElems = 1000;
inline bool symmetric_chunks(const PlanInfo& info) {
  for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) {
    std::uint32_t n = buffer_chunks(info, b);
    if (n == 0 || chunk_bytes(info, b, 0, 1) * n == buffer_bytes(info, b)) continue;
    if (buffer_bytes(info, b) / info.req.elem_bytes / n < kSymmetricChunkElems) return false;
  }
  return true;
}

/// The shift of every rank one place on (r -> r + 1 mod p), channels fixed: a symmetry of plans
/// whose rank r talks to r + s and r - s at the place rank 0 talks to s and -s, on the same
/// channel, with chunks even enough (symmetric_chunks()); none for fewer than 2 ranks.
inline std::vector<SymmetryAxis> shift_axes(const PlanInfo& info) {
  int p = info.req.nranks;
  if (p < 2 || !symmetric_chunks(info)) return {};
  SymmetryAxis a;
  a.order = p;
  for (int r = 0; r < p; ++r) a.rank.push_back((r + 1) % p);
  for (int c = 0; c < std::max<int>(1, info.channels); ++c) a.channel.push_back(c);
  return {a};
}

/// A rank permutation decoded: at[i] is the rank at position i, pos[r] the position of rank r.
struct Order {
  std::vector<int> at, pos;
};
/// param_order() and its inverse, decoded once and shared: a plan expands every rank's program
/// from the same PlanInfo, and decoding a 16k-rank order (and searching it) for each of them made
/// expanding all programs quadratic in ranks. The last few orders are kept per thread, each found
/// again by its text (hash, then the text itself), so a changed parameter is never served stale.
std::shared_ptr<const Order> shared_order(const PlanInfo& info, const std::string& key, int n);

}  // namespace collkit::plan::algo
