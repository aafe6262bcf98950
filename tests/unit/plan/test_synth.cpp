#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "bounds_internal.h"
#include "collkit/plan/bounds.h"
#include "plan/sim_topologies.h"
#include "synth/rate.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using collkit::topo::Topology;
using collkit::topo::VertexKind;

TEST_CASE("synth rate: a ring of 4, a star, two hosts on a thin link") {
  // Ring: three ranks leave over the two links of the fourth, 200 / 3 GB/s each; trees of 100/3
  // fill each 100 GB/s link with 3, so k = 2.
  synth::Rate ring = synth::optimal_rate(ring_of(4, 100), 4);
  CHECK(ring.per_root_gbps == doctest::Approx(200.0 / 3).epsilon(1e-12));
  CHECK(ring.cut_ranks == 3);
  CHECK(ring.trees == 2);
  // Star: three ranks share the fourth's 100 GB/s link.
  synth::Rate star = synth::optimal_rate(uniform(4, 100, 1), 4);
  CHECK(star.per_root_gbps == doctest::Approx(100.0 / 3).epsilon(1e-12));
  CHECK(star.trees == 1);
  // Two hosts of 2 GPUs on 10 GB/s: the host's 2 ranks leave over 10 GB/s.
  synth::Rate thin = synth::optimal_rate(two_hosts(2, 100, 1, 10, 5), 4);
  CHECK(thin.per_root_gbps == doctest::Approx(5).epsilon(1e-12));
  CHECK(thin.cut_ranks == 2);
  CHECK(thin.cut_gbps == doctest::Approx(10));
  // One rank, or all ranks on one vertex: nothing to cut.
  CHECK(std::isinf(synth::optimal_rate(uniform(4, 100, 1), 1).per_root_gbps));
}

TEST_CASE("synth rate: equals the inverse of ForestColl's ratio cut on random graphs") {
  std::mt19937 rng(11);
  auto bw = [&](unsigned span) { return 10.0 * static_cast<double>(1 + rng() % span); };
  for (int trial = 0; trial < 20; ++trial) {
    Topology t;
    t.name = "random" + std::to_string(trial);
    int switches = 1 + static_cast<int>(rng() % 3), gpus = 3 + static_cast<int>(rng() % 5);
    for (int s = 0; s < switches; ++s) t.add_vertex(make_vertex("s" + std::to_string(s), VertexKind::NetSwitch));
    for (int s = 1; s < switches; ++s)
      t.add_link(make_link(static_cast<collkit::topo::VertexId>(rng() % s), static_cast<collkit::topo::VertexId>(s), bw(10), 1));
    for (int g = 0; g < gpus; ++g) {
      auto v = t.add_vertex(make_vertex("g" + std::to_string(g), VertexKind::Gpu));
      t.add_link(make_link(v, static_cast<collkit::topo::VertexId>(rng() % switches), bw(10), 1));
      if (g > 0 && rng() % 2) t.add_link(make_link(v, v - 1, bw(5), 1));
      t.add_rank(v);
    }
    CAPTURE(trial);
    synth::Rate r = synth::optimal_rate(t, gpus);
    bounds::RankCut cut = bounds::max_ratio_cut(t, gpus, t.fingerprint());
    CHECK(r.per_root_gbps == doctest::Approx(1 / cut.ratio()).epsilon(1e-9));
    CHECK(r.per_root_gbps == doctest::Approx(r.cut_gbps / r.cut_ranks).epsilon(1e-12));
    // k trees of x*/k each: every link a whole number of them.
    REQUIRE(r.trees > 0);
    double unit = r.per_root_gbps / static_cast<double>(r.trees);
    for (const auto& l : t.links()) CHECK(std::abs(l.bw_gbps / unit - std::round(l.bw_gbps / unit)) < 1e-6);
  }
}

TEST_CASE("synth rate: a bounded number of trees per root") {
  Topology ring = ring_of(4, 100);
  // One tree per root: every ring link must carry 2 of the 3 trees crossing a 3-rank cut, so a
  // tree's unit is 50 GB/s; two trees reach x* = 200/3.
  CHECK(synth::rate_for_trees(ring, 4, 1) == doctest::Approx(50).epsilon(1e-9));
  CHECK(synth::rate_for_trees(ring, 4, 2) == doctest::Approx(200.0 / 3).epsilon(1e-9));
  CHECK(synth::rate_for_trees(uniform(4, 100, 1), 4, 1) == doctest::Approx(100.0 / 3).epsilon(1e-9));
  for (int k = 1; k <= 4; ++k) CHECK(synth::rate_for_trees(ring, 4, k) <= 200.0 / 3 * (1 + 1e-9));
}

TEST_CASE("synth rate: Broadcast from one root is the least max flow from it, as the bound says") {
  // Ring of 4 at 100 GB/s: two ways round to every rank, 200; k = 1 is one chain one way.
  Topology ring = ring_of(4, 100);
  synth::Rate r = synth::broadcast_rate(ring, 4, 1);
  CHECK(r.per_root_gbps == doctest::Approx(200));
  CHECK(r.trees == 2);
  CHECK(synth::rate_for_trees(ring, 4, 1, 1) == doctest::Approx(100));
  CHECK(synth::rate_for_trees(ring, 4, 2, 1) == doctest::Approx(200));
  // Star: the root's one link; two hosts on a thin link: the thin link.
  CHECK(synth::broadcast_rate(uniform(4, 100, 1), 4, 0).per_root_gbps == doctest::Approx(100));
  CHECK(synth::rate_for_trees(uniform(4, 100, 1), 4, 1, 0) == doctest::Approx(100));
  CHECK(synth::broadcast_rate(two_hosts(2, 100, 1, 10, 5), 4, 3).per_root_gbps == doctest::Approx(10));
  CHECK(std::isinf(synth::broadcast_rate(uniform(4, 100, 1), 1, 0).per_root_gbps));
  // Random graphs: n bytes over the rate is lower_bound's Broadcast bandwidth term.
  std::mt19937 rng(5);
  auto bw = [&](unsigned span) { return 10.0 * static_cast<double>(1 + rng() % span); };
  for (int trial = 0; trial < 10; ++trial) {
    Topology t;
    int gpus = 3 + static_cast<int>(rng() % 4);
    t.add_vertex(make_vertex("s0", VertexKind::NetSwitch));
    t.add_vertex(make_vertex("s1", VertexKind::NetSwitch));
    t.add_link(make_link(0, 1, bw(10), 1));
    for (int g = 0; g < gpus; ++g) {
      auto v = t.add_vertex(make_vertex("g" + std::to_string(g), VertexKind::Gpu));
      t.add_link(make_link(v, static_cast<collkit::topo::VertexId>(rng() % 2), bw(10), 1));
      if (g > 0 && rng() % 2) t.add_link(make_link(v, v - 1, bw(5), 1));
      t.add_rank(v);
    }
    int root = static_cast<int>(rng() % static_cast<unsigned>(gpus));
    CAPTURE(trial);
    std::uint64_t bytes = std::uint64_t{1} << 30;
    double x = synth::broadcast_rate(t, gpus, root).per_root_gbps;
    double bound = lower_bound({Collective::Broadcast, bytes, gpus, root}, t).bandwidth_us;
    CHECK(static_cast<double>(bytes) / x * bounds::kUsPerByteGbps == doctest::Approx(bound).epsilon(1e-9));
    for (std::int64_t k : {1, 2, 3}) CHECK(synth::rate_for_trees(t, gpus, k, root) <= x * (1 + 1e-9));
  }
}
