#include "rank_set.h"

#include <algorithm>

namespace collkit::plan::detail {

RankSets::RankSets(std::uint32_t nranks) : nranks_(nranks) {
  begin_.push_back(0);
  data_.push_back({0, nranks});
  begin_.push_back(1);
  all_ = 0;
}

RankSets::View RankSets::view(std::uint32_t id, Interval& scratch) const {
  if (id & kSingle) {
    std::uint32_t r = id & ~kSingle;
    scratch = {r, r + 1};
    return {&scratch, 1};
  }
  return {data_.data() + begin_[id], begin_[id + 1] - begin_[id]};
}

bool RankSets::unite(std::uint32_t a, std::uint32_t b, std::uint32_t* out, std::uint32_t* dup) {
  if (a > b) std::swap(a, b);  // a union is symmetric, and so is the smallest shared rank
  Interval sa, sb;
  View va = view(a, sa), vb = view(b, sb);
  // Small sets (a ring's arcs) are cheaper to merge and store again than to look up.
  bool shared = va.size + vb.size > kSharedIntervals;
  std::uint64_t key = std::uint64_t{a} << 32 | b;
  if (shared)
    if (auto it = unions_.find(key); it != unions_.end()) {
      *out = it->second;
      return true;
    }
  tmp_.clear();
  std::size_t i = 0, j = 0;
  // Merge by lower end. Each input is disjoint and non-adjacent, so a new interval that starts
  // inside the last one taken must come from the other input: that rank is in both.
  while (i < va.size || j < vb.size) {
    Interval next = (j == vb.size || (i < va.size && va.data[i].lo < vb.data[j].lo)) ? va.data[i++] : vb.data[j++];
    if (!tmp_.empty() && next.lo < tmp_.back().hi) {
      *dup = next.lo;
      return false;
    }
    if (!tmp_.empty() && next.lo == tmp_.back().hi)
      tmp_.back().hi = next.hi;
    else
      tmp_.push_back(next);
  }
  if (tmp_.size() == 1 && tmp_[0].lo == 0 && tmp_[0].hi == nranks_) {
    *out = all_;
  } else if (tmp_.size() == 1 && tmp_[0].hi == tmp_[0].lo + 1) {
    *out = singleton(tmp_[0].lo);
  } else if (shared) {
    *out = intern();
  } else {
    *out = static_cast<std::uint32_t>(begin_.size() - 1);
    data_.insert(data_.end(), tmp_.begin(), tmp_.end());
    begin_.push_back(static_cast<std::uint32_t>(data_.size()));
  }
  if (shared) unions_.emplace(key, *out);
  return true;
}

std::uint32_t RankSets::intern() {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the interval ends
  for (const Interval& i : tmp_)
    for (std::uint32_t x : {i.lo, i.hi}) h = (h ^ x) * 0x100000001b3ull;
  auto [lo, hi] = by_hash_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    std::uint32_t id = it->second;
    std::size_t n = begin_[id + 1] - begin_[id];
    if (n == tmp_.size() && std::equal(tmp_.begin(), tmp_.end(), data_.begin() + begin_[id],
                                       [](const Interval& x, const Interval& y) { return x.lo == y.lo && x.hi == y.hi; }))
      return id;
  }
  auto id = static_cast<std::uint32_t>(begin_.size() - 1);
  data_.insert(data_.end(), tmp_.begin(), tmp_.end());
  begin_.push_back(static_cast<std::uint32_t>(data_.size()));
  by_hash_.emplace(h, id);
  return id;
}

bool RankSets::equal(std::uint32_t a, std::uint32_t b) const {
  if (a == b) return true;
  Interval sa, sb;
  View va = view(a, sa), vb = view(b, sb);
  if (va.size != vb.size) return false;
  for (std::size_t i = 0; i < va.size; ++i)
    if (va.data[i].lo != vb.data[i].lo || va.data[i].hi != vb.data[i].hi) return false;
  return true;
}

std::string RankSets::format(std::uint32_t id) const {
  Interval s;
  View v = view(id, s);
  constexpr std::size_t kShown = 8;
  bool one = v.size == 1 && v.data[0].hi == v.data[0].lo + 1;
  std::string text = one ? "rank " : "ranks ";
  for (std::size_t i = 0; i < std::min(v.size, kShown); ++i) {
    if (i) text += ',';
    text += std::to_string(v.data[i].lo);
    if (v.data[i].hi > v.data[i].lo + 1) text += '-' + std::to_string(v.data[i].hi - 1);
  }
  if (v.size > kShown) text += ",...";
  return text;
}

}  // namespace collkit::plan::detail
