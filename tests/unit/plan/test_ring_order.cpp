#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "algorithms/host_rings.h"
#include "algorithms/ring_order.h"
#include "collkit/topo/affinity.h"
#include "collkit/topo/queries.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"

using namespace collkit;
using namespace collkit::plan;

namespace {

bool is_permutation_of_n(const std::vector<int>& v) {
  std::vector<int> s = v;
  std::sort(s.begin(), s.end());
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] != static_cast<int>(i)) return false;
  return true;
}

bool nvlink_between(const topo::Topology& t, int a, int b) {
  topo::VertexId va = t.rank_vertex(static_cast<topo::Rank>(a)), vb = t.rank_vertex(static_cast<topo::Rank>(b));
  for (const topo::Adjacent& adj : t.adjacent(va))
    if (adj.peer == vb && t.link(adj.link).type == topo::LinkType::NvLink) return true;
  return false;
}

int rail(const topo::Topology& t, int r) {
  auto sw = topo::nearest_switch(t, static_cast<topo::Rank>(r), topo::VertexKind::NetSwitch);
  return sw ? static_cast<int>(*sw) : -1;
}

}  // namespace

TEST_CASE("ring order: identity without a topology or without hosts") {
  Request req{Collective::AllReduce, 1024, 6, 0};
  std::vector<int> id(6);
  std::iota(id.begin(), id.end(), 0);
  CHECK(ring_order(req, nullptr, 0) == id);
  auto t = testing::preset("dgx-h100", 1);
  Request big{Collective::AllReduce, 1024, 9, 0};  // more ranks than the topology has
  std::vector<int> id9(9);
  std::iota(id9.begin(), id9.end(), 0);
  CHECK(ring_order(big, &t, 0) == id9);
}

TEST_CASE("ring order: 4 x dgx-h100 crosses each host boundary once, rail-aligned") {
  auto t = testing::preset("dgx-h100", 4);
  Request req{Collective::AllReduce, 1 << 20, 32, 0};
  for (int ch = 0; ch < 4; ++ch) {
    auto order = ring_order(req, &t, ch);
    REQUIRE(order.size() == 32);
    CHECK(is_permutation_of_n(order));
    int inter = 0, misaligned = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      int a = order[i], b = order[(i + 1) % order.size()];
      if (t.host_of(static_cast<topo::Rank>(a)) == t.host_of(static_cast<topo::Rank>(b))) continue;
      ++inter;
      if (rail(t, a) != rail(t, b) || rail(t, a) < 0) ++misaligned;
    }
    CHECK(inter == 4);
    CHECK(misaligned <= 1);
  }
  CHECK(ring_order(req, &t, 0)[0] != ring_order(req, &t, 1)[0]);
}

TEST_CASE("ring order: odd host count leaves at most the wrap misaligned") {
  auto t = testing::preset("dgx-h100", 3);
  Request req{Collective::AllReduce, 1 << 20, 24, 0};
  auto order = ring_order(req, &t, 2);
  CHECK(is_permutation_of_n(order));
  int inter = 0, misaligned = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    int a = order[i], b = order[(i + 1) % order.size()];
    if (t.host_of(static_cast<topo::Rank>(a)) == t.host_of(static_cast<topo::Rank>(b))) continue;
    ++inter;
    if (rail(t, a) != rail(t, b)) ++misaligned;
  }
  CHECK(inter == 3);
  CHECK(misaligned <= 1);
}

TEST_CASE("ring order: dgx1-v100 keeps every intra-host neighbour on NVLink") {
  auto t = testing::preset("dgx1-v100", 1);
  Request req{Collective::AllReduce, 1 << 20, 8, 0};
  for (int ch = 0; ch < 2; ++ch) {
    auto order = ring_order(req, &t, ch);
    CHECK(is_permutation_of_n(order));
    for (std::size_t i = 0; i < order.size(); ++i)
      CHECK_MESSAGE(nvlink_between(t, order[i], order[(i + 1) % 8]), order[i], " - ", order[(i + 1) % 8]);
  }
  CHECK(ring_order(req, &t, 0)[0] != ring_order(req, &t, 1)[0]);

  auto t2 = testing::preset("dgx1-v100", 2);
  Request req2{Collective::AllReduce, 1 << 20, 16, 0};
  auto order = ring_order(req2, &t2, 0);
  CHECK(is_permutation_of_n(order));
  int inter = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    int a = order[i], b = order[(i + 1) % order.size()];
    if (t2.host_of(static_cast<topo::Rank>(a)) != t2.host_of(static_cast<topo::Rank>(b)))
      ++inter;
    else
      CHECK(nvlink_between(t2, a, b));
  }
  CHECK(inter == 2);
}

TEST_CASE("ring order: host cycles and rails") {
  auto t = testing::preset("pcie-8gpu:gpus=4", 3, "single-switch");
  auto hosts = algo::host_cycles(12, t);
  REQUIRE(hosts.size() == 3);
  for (const auto& h : hosts) CHECK(h.size() == 4);
  CHECK(hosts[1][0] == 4);
  // A partial last host still groups.
  auto partial = algo::host_cycles(10, t);
  REQUIRE(partial.size() == 3);
  CHECK(partial[2].size() == 2);
  // PCIe neighbours under one switch stay together: {0,1} and {2,3} are adjacent pairs.
  auto c = hosts[0];
  auto pos = [&](int r) { return std::find(c.begin(), c.end(), r) - c.begin(); };
  CHECK(std::abs(pos(0) - pos(1)) % 2 == 1);
  auto h100 = testing::preset("dgx-h100", 2);
  auto aff = collkit::topo::nic_affinity(h100);
  CHECK(algo::rail_of(h100, aff, 3) == 3);
  CHECK(algo::rail_of(h100, aff, 11) == 3);
  // Two GPUs and two NICs under one PCIe switch: each GPU its own rail, as NCCL assigns them.
  auto a100 = testing::preset("dgx-a100", 2);
  auto aff2 = collkit::topo::nic_affinity(a100);
  for (int r = 0; r < 16; ++r) CHECK(algo::rail_of(a100, aff2, r) == r % 8);
}
