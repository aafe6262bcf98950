#pragma once
// Sets of ranks for symbolic verification, stored as sorted, disjoint, non-adjacent half-open
// intervals over rank ids. The sets a collective builds stay a few intervals: a ring arc is one
// or two, a tree's subtree one per level at most, so a set costs bytes, not a p-bit bitmap, and
// a 1024-rank ring AllReduce (a million partial sums) fits in a few tens of megabytes.
//
// Sets are immutable and named by a 32-bit id: singletons are encoded in the id itself (the
// inputs, p x chunks of them, cost nothing), everything else lives in one append-only arena.
// Sets are hash-consed (one id per distinct set) and unions memoised per pair of ids: the ranks
// of one group of a recursive-halving step all build the same partial sum, which on 16k ranks
// is a set of up to a thousand intervals; stored once and merged once, not once per rank (that
// was p^2: half a gigabyte of intervals for hier's embedded halving-doubling). Only unions of
// more than kSharedIntervals intervals in all go through the tables: smaller ones (a ring's
// arcs, a million of them at 1024 ranks, hardly ever repeated) cost less to merge again.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace collkit::plan::detail {

struct Interval {
  std::uint32_t lo = 0, hi = 0;  ///< ranks [lo, hi)
};

class RankSets {
 public:
  explicit RankSets(std::uint32_t nranks);

  static constexpr std::uint32_t kSingle = 0x80000000u;
  static constexpr std::size_t kSharedIntervals = 8;
  static constexpr std::uint32_t singleton(std::uint32_t rank) { return kSingle | rank; }
  /// Every rank, [0, nranks).
  std::uint32_t all() const { return all_; }

  /// A set's intervals; valid until the next unite().
  struct View {
    const Interval* data;
    std::size_t size;
  };
  View view(std::uint32_t id, Interval& scratch) const;

  /// The union of two sets into *out. When they share a rank, returns false and sets *dup to the
  /// smallest rank found in both.
  bool unite(std::uint32_t a, std::uint32_t b, std::uint32_t* out, std::uint32_t* dup);
  bool equal(std::uint32_t a, std::uint32_t b) const;
  /// "rank 2", "ranks 0-3,5" (long lists end in ",...").
  std::string format(std::uint32_t id) const;

 private:
  std::uint32_t nranks_;
  std::uint32_t all_ = 0;
  std::uint32_t intern();  // the id of the set in tmp_, stored if new

  std::vector<Interval> data_;
  std::vector<std::uint32_t> begin_;  // set i is data_[begin_[i], begin_[i+1])
  std::vector<Interval> tmp_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> by_hash_;  // hash of a stored set -> its id
  std::unordered_map<std::uint64_t, std::uint32_t> unions_;        // (a, b), a <= b -> a u b
};

}  // namespace collkit::plan::detail
