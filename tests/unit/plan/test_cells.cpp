// cells.h: the per-chunk and run stores hold the same values after any writes, and reads come
// in maximal pieces either way.

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "cells.h"

namespace collkit::plan::detail {

namespace {

// Like the verifier's value: a chunk that advances along a run, and a tag that stays.
struct Val {
  std::uint32_t chunk = 0, tag = 0;
  Val shift(std::uint32_t n) const { return {chunk + n, tag}; }
  bool operator==(const Val&) const = default;
};

struct Piece {
  std::uint32_t lo, hi;
  Val v;
  bool operator==(const Piece&) const = default;
};

std::vector<Piece> pieces(const Cells<Val>& c, std::uint32_t lo, std::uint32_t hi) {
  std::vector<Piece> out;
  c.read(lo, hi, [&](std::uint32_t a, std::uint32_t b, Val v) { out.push_back({a, b, v}); });
  return out;
}

}  // namespace

TEST_CASE("cells: both stores agree under random writes, in maximal pieces") {
  std::mt19937 gen(7);
  auto below = [&](std::uint32_t n) { return static_cast<std::uint32_t>(gen() % n); };
  for (std::uint32_t size : {1u, 2u, 7u, 64u}) {
    Cells<Val> flat, runs;
    flat.init(size, Val{100, 1}, true);
    runs.init(size, Val{100, 1}, false);
    std::vector<Val> model(size);
    for (std::uint32_t i = 0; i < size; ++i) model[i] = Val{100 + i, 1};
    for (int step = 0; step < 2000; ++step) {
      std::uint32_t lo = below(size), hi = lo + 1 + below(size - lo);
      // Few distinct values, so that writes often continue their neighbours and runs merge.
      Val v{below(4) == 0 ? lo + 100 : below(8), below(2)};
      flat.write(lo, hi, v);
      runs.write(lo, hi, v);
      for (std::uint32_t i = lo; i < hi; ++i) model[i] = v.shift(i - lo);
      std::uint32_t a = below(size), b = a + 1 + below(size - a);
      auto got = pieces(runs, a, b);
      REQUIRE(got == pieces(flat, a, b));
      // Pieces tile [a, b), each continues itself and differs from the next.
      std::uint32_t at = a;
      for (std::size_t k = 0; k < got.size(); ++k) {
        REQUIRE(got[k].lo == at);
        for (std::uint32_t i = got[k].lo; i < got[k].hi; ++i) REQUIRE(model[i] == got[k].v.shift(i - got[k].lo));
        if (k + 1 < got.size()) REQUIRE(!(got[k + 1].v == got[k].v.shift(got[k].hi - got[k].lo)));
        at = got[k].hi;
      }
      REQUIRE(at == b);
    }
  }
}

}  // namespace collkit::plan::detail
