// rank_set.h: unions of many-interval sets (hash-consed, memoised) give the same answers as
// small ones: the right members, the smallest rank counted twice, one id per distinct set.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "rank_set.h"

namespace collkit::plan::detail {

namespace {

// The union of singletons {first, first + step, ...} (count of them), built pairwise.
std::uint32_t strided(RankSets& s, std::uint32_t first, std::uint32_t step, std::uint32_t count) {
  std::uint32_t id = RankSets::singleton(first), dup = 0;
  for (std::uint32_t k = 1; k < count; ++k) REQUIRE(s.unite(id, RankSets::singleton(first + k * step), &id, &dup));
  return id;
}

}  // namespace

TEST_CASE("rank sets: large unions are shared, and still exact") {
  RankSets s(64);
  std::uint32_t even = strided(s, 0, 2, 32), odd = strided(s, 1, 2, 32);
  CHECK(s.format(even) == "ranks 0,2,4,6,8,10,12,14,...");
  // Built again, in another order: the same id.
  std::uint32_t again = RankSets::singleton(62), dup = 0;
  for (std::uint32_t r = 0; r < 62; r += 2) REQUIRE(s.unite(RankSets::singleton(r), again, &again, &dup));
  CHECK(again == even);
  std::uint32_t all = 0, all2 = 0;
  REQUIRE(s.unite(even, odd, &all, &dup));
  CHECK(all == s.all());
  REQUIRE(s.unite(odd, even, &all2, &dup));  // memoised either way round
  CHECK(all2 == all);
  // A shared rank is found, and named the smallest, in either order and after a memoised union.
  std::uint32_t low = strided(s, 4, 4, 10), out = 0;  // 4, 8, ..., 40
  CHECK_FALSE(s.unite(even, low, &out, &dup));
  CHECK(dup == 4);
  CHECK_FALSE(s.unite(low, even, &out, &dup));
  CHECK(dup == 4);
  std::uint32_t odd_low = 0;
  REQUIRE(s.unite(odd, low, &odd_low, &dup));
  CHECK(s.format(odd_low) == "ranks 1,3-5,7-9,11-13,15-17,19-21,23-25,27-29,...");
  CHECK(s.equal(odd_low, odd_low));
  CHECK_FALSE(s.equal(odd_low, odd));
}

}  // namespace collkit::plan::detail
