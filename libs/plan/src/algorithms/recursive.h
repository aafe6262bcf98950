#pragma once
// The power-of-two fold shared by the recursive algorithms (rd, rhd), as MPICH and Open MPI do
// it for a rank count p that is not a power of two: with p2 the largest power of two <= p and
// rem = p - p2, the first 2*rem ranks pair up; the even rank of each pair hands its data to the
// odd one and sits out the recursive steps, and the odd one answers for both. The p2 ranks left
// are renumbered 0..p2-1 ("virtual ranks"); at the end the odd ranks hand the result back. The
// fold costs two extra steps (2a + n b) and nothing when p is a power of two.

#include <cstdint>
#include <functional>
#include <vector>

#include "collkit/plan/plan.h"

namespace collkit::plan::algo {

struct Fold {
  int p = 1;    // ranks
  int p2 = 1;   // largest power of two <= p
  int rem = 0;  // p - p2

  explicit Fold(int nranks);
  /// An even rank of the first 2*rem: gives its data to r+1 and skips the recursive steps.
  bool sits_out(int r) const { return r < 2 * rem && r % 2 == 0; }
  /// An odd rank of the first 2*rem: answers for itself and r-1.
  bool absorbs(int r) const { return r < 2 * rem && r % 2 == 1; }
  /// Virtual rank of a rank that takes part.
  int virt(int r) const { return r < 2 * rem ? r / 2 : r - rem; }
  /// The rank playing virtual rank v.
  int real(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
  /// The first of the ranks whose data virtual rank v holds (v = p2 gives p): virtual ranks
  /// [a, b) hold the data of ranks [first(a), first(b)), a contiguous range.
  int first(int v) const { return v < rem ? 2 * v : v + rem; }
  /// Number of recursive steps, log2(p2).
  int steps() const;
};

/// Recursive-doubling AllGather among the p2 virtual ranks on `ch`: at step s (mask = 2^s) a
/// virtual rank swaps the output range of its aligned group of `mask` virtual ranks with its
/// partner v ^ mask. Virtual rank v's own block is output chunks [start(v), start(v+1)), which it
/// must already hold. log2(p2) sends and receives.
void doubling_allgather(std::vector<Op>& ops, const Fold& f, int v, const std::function<std::uint32_t(int)>& start,
                        std::uint16_t ch);

/// The whole recursive-doubling AllGather of rank r, one input chunk per rank (output chunk c =
/// rank c's input), fold and unfold included, on channel 0.
void folded_allgather(std::vector<Op>& ops, const Fold& f, int r);

/// Recursive-halving ReduceScatter among the p2 virtual ranks on `ch`: at step s (mask =
/// p2/2^(s+1)) virtual rank v sends the half of its current range of virtual blocks that its
/// partner v ^ mask keeps and reduces the half it keeps, so it ends with virtual block v (chunks
/// [start(v), start(v+1))) summed over all virtual ranks. Partial sums accumulate in `acc`
/// (same chunk numbering as the input); the first step reads the input unless `acc_ready` (the
/// rank already folded a partner's data into `acc`). log2(p2) sends and receives.
void halving_reduce_scatter(std::vector<Op>& ops, const Fold& f, int v, const std::function<std::uint32_t(int)>& start,
                            Buf acc, bool acc_ready, std::uint16_t ch);

/// The symmetries of the recursive algorithms (plan.h, SymmetryAxis) when p is a power of two and
/// every chunk of every buffer is the same size: r -> r xor 2^j for each j, since step s pairs v
/// with v xor 2^s and what a rank keeps depends only on which of the two it is. None otherwise
/// (the fold singles out the first 2*rem ranks).
std::vector<SymmetryAxis> xor_axes(const PlanInfo& info);

}  // namespace collkit::plan::algo
