#pragma once
// A map from 64-bit keys to 32-bit values by open addressing (linear probing, Fibonacci hashing
// on the product's top bits), for the hot lookups of rank and vertex pairs (a << 32 | b) where a
// node-based map pays an allocation and a cache miss per entry. Key ~0 is reserved (no pair of
// 32-bit ids below 2^32 - 1 makes it). Entries are never removed.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace collkit {

class FlatIndex {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  static std::uint64_t pair(std::uint32_t a, std::uint32_t b) { return (std::uint64_t{a} << 32) | b; }

  /// Adds key -> value unless key is there; true when it was added.
  bool emplace(std::uint64_t key, std::uint32_t value) {
    if (2 * (used_ + 1) > keys_.size()) grow(std::max<std::size_t>(64, 2 * keys_.size()));
    std::size_t i = slot(key);
    if (keys_[i] == key) return false;
    keys_[i] = key;
    values_[i] = value;
    ++used_;
    return true;
  }
  /// Room for n keys in all without growing (one table of the final size, where growing by
  /// doubling would fill and rehash every smaller one first).
  void reserve(std::size_t n) {
    if (2 * n > keys_.size()) grow(std::bit_ceil(2 * n));
  }
  /// The value of key, or kNone.
  std::uint32_t find(std::uint64_t key) const {
    if (keys_.empty()) return kNone;
    std::size_t i = slot(key);
    return keys_[i] == key ? values_[i] : kNone;
  }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  // The top bits of the product: its middle bits hardly depend on the pair's first id, and
  // linear probing then runs long clusters.
  std::size_t slot(std::uint64_t key) const {
    std::size_t mask = keys_.size() - 1, i = static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ull) >> shift_);
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask;
    return i;
  }
  void grow(std::size_t slots) {
    std::vector<std::uint64_t> keys = std::move(keys_);
    std::vector<std::uint32_t> values = std::move(values_);
    keys_.assign(slots, kEmpty);
    values_.assign(keys_.size(), 0);
    shift_ = 64 - std::countr_zero(keys_.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) {
        std::size_t j = slot(keys[i]);
        keys_[j] = keys[i];
        values_[j] = values[i];
      }
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> values_;
  std::size_t used_ = 0;
  int shift_ = 64;
};

}  // namespace collkit
