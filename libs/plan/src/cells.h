#pragma once
// What one rank's chunks hold, for the engine (race detection) and the symbolic verifier: a
// value per chunk cell (input, output, scratch, laid out as in Layout).
//
// Two stores behind one interface, chosen per plan (ChunkStore in verify.h):
//  - PerChunk: one entry per cell. Fastest per op when ops move a chunk or two (a ring's), and
//    small while ranks x cells is small.
//  - Runs: maximal runs of cells whose values continue each other (V::shift), in an ordered map
//    keyed by the run's first cell. A hierarchical plan on 16k ranks has tens of thousands of
//    cells per rank (p^2 in all) but moves them in a few dozen ranges per rank, so runs keep
//    memory and work proportional to the ops, not to ranks x chunks.
// Readers see maximal pieces either way: consecutive cells whose values continue each other
// come as one piece, so a caller costs per piece, and its first failing cell is a piece's first.
//
// V: a small trivially copyable value with `V shift(std::uint32_t n) const` (the value n cells
// later in a run: the verifier's chunk index advances, a race record stays) and operator==.

#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

namespace collkit::plan::detail {

template <class V>
class Cells {
 public:
  /// `size` cells, all holding `v`, `v.shift(1)`, ... (one run).
  void init(std::uint32_t size, V v, bool per_chunk) {
    per_chunk_ = per_chunk;
    size_ = size;
    flat_.clear();
    runs_.clear();
    if (per_chunk_) {
      flat_.reserve(size);
      for (std::uint32_t i = 0; i < size; ++i) flat_.push_back(v.shift(i));
    } else if (size > 0) {
      runs_.emplace(0, v);
    }
  }

  /// Calls f(lo, hi, v) for the maximal pieces [lo, hi) covering [lo, hi) in order; v is the
  /// value of cell lo (cell lo + k holds v.shift(k)). f may throw; it must not write.
  template <class F>
  void read(std::uint32_t lo, std::uint32_t hi, F&& f) const {
    if (lo >= hi) return;
    if (per_chunk_) {
      std::uint32_t start = lo;
      V v = flat_[lo];
      for (std::uint32_t i = lo + 1; i < hi; ++i) {
        if (flat_[i] == v.shift(i - start)) continue;
        f(start, i, v);
        start = i;
        v = flat_[i];
      }
      f(start, hi, v);
      return;
    }
    auto it = std::prev(runs_.upper_bound(lo));
    std::uint32_t at = lo;
    while (at < hi) {
      auto next = std::next(it);
      std::uint32_t end = next == runs_.end() ? size_ : next->first;
      if (end > hi) end = hi;
      f(at, end, it->second.shift(at - it->first));
      at = end;
      it = next;
    }
  }

  /// Cells [lo, hi) hold v, v.shift(1), ...
  void write(std::uint32_t lo, std::uint32_t hi, V v) {
    if (lo >= hi) return;
    if (per_chunk_) {
      for (std::uint32_t i = lo; i < hi; ++i) flat_[i] = v.shift(i - lo);
      return;
    }
    // Keep what follows hi: a run starting exactly at hi, split off if needed.
    if (hi < size_) {
      auto at = std::prev(runs_.upper_bound(hi));
      if (at->first != hi) runs_.emplace_hint(std::next(at), hi, at->second.shift(hi - at->first));
    }
    auto first = runs_.lower_bound(lo);
    auto last = runs_.lower_bound(hi);
    first = runs_.erase(first, last);  // now at the run starting at hi, or end
    auto mine = runs_.emplace_hint(first, lo, v);
    // Merge with neighbours that continue each other, so runs stay maximal.
    if (first != runs_.end() && first->second == v.shift(hi - lo)) runs_.erase(first);
    if (mine != runs_.begin()) {
      auto before = std::prev(mine);
      if (before->second.shift(lo - before->first) == v) runs_.erase(mine);
    }
  }

 private:
  bool per_chunk_ = true;
  std::uint32_t size_ = 0;
  std::vector<V> flat_;
  std::map<std::uint32_t, V> runs_;  // first cell of each run -> its value; covers [0, size_)
};

}  // namespace collkit::plan::detail
