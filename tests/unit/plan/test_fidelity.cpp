// The simulator's predictions on the shipped presets held against the physics:
// what the links allow, what the textbook formulas say a plan should take. Each
// case pins a flaw that once made predictions far from either (issue #10).

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "collkit/plan/algorithm.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/synth.h"

using namespace collkit::plan;
namespace topo = collkit::topo;

namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

SimResult run(const topo::Topology &t, std::string_view algo, Collective c, std::uint64_t bytes, const AlgoOptions &opt = {},
              SimOptions sim = {}) {
  Request req{c, bytes, static_cast<int>(t.num_ranks()), 0};
  auto plan = generate(algo, req, &t, opt);
  return simulate(*plan, t, sim);
}

}  // namespace

TEST_CASE(
    "fidelity: each GPU of a shared PCIe switch uses its own NIC (ring "
    "AllGather at the rail reference)") {
  // DGX A100: 2 GPUs + 2 HDR NICs (25 GB/s) per PCIe switch. A ring over h
  // hosts crosses each host boundary once per channel; with one NIC per GPU the
  // 8 channels use 8 NICs and the ring moves (p-1)/p n over 8 x 25 GB/s each
  // way: algbw = 200 p / (p-1) GB/s (213.3 for 2 hosts, 206.5 for 4). Two
  // channels sharing a NIC halved it (106.6 GB/s).
  for (int hosts : {2, 4}) {
    topo::Topology t = topo::synth({"dgx-a100", hosts, "fat-tree:rails=8"});
    double p = 8.0 * hosts;
    double reference = 200.0 * p / (p - 1);
    SimResult r = run(t, "ring", Collective::AllGather, kGiB);
    CAPTURE(hosts);
    CHECK(r.algbw_gbps >= 0.97 * reference);
    CHECK(r.algbw_gbps <= reference * (1 + 1e-9));
  }
}

TEST_CASE(
    "fidelity: AlltoAll spreads over the spines (leaf-spine links at "
    "their balanced load)") {
  // 16 DGX H100 on leaves of 8 ports: each rail has 4 leaves, so 3/4 of every
  // rank's AlltoAll traffic on its rail climbs to the 4 spines. Balanced, every
  // leaf->spine link carries the same bytes; one spine per source (a hashed
  // parent) loaded some links several times the mean.
  topo::Topology t = topo::synth({"dgx-h100", 16, "fat-tree:rails=8,leaf_radix=8"});
  SimOptions sim;
  sim.top_links = 100000;
  SimResult r = run(t, "pairwise", Collective::AlltoAll, 128 << 20, {}, sim);
  std::vector<double> up;
  for (const LinkLoad &l : r.busiest) {
    const topo::Link &link = t.link(l.link);
    const std::string &from = t.vertex(l.forward ? link.a : link.b).id;
    const std::string &to = t.vertex(l.forward ? link.b : link.a).id;
    if (from.find("leaf") != std::string::npos && to.find("spine") != std::string::npos) up.push_back(static_cast<double>(l.bytes));
  }
  // 32 leaves x 4 spines, every one used.
  REQUIRE(up.size() == 128);
  double mean = 0;
  for (double b : up) mean += b / static_cast<double>(up.size());
  CHECK(*std::max_element(up.begin(), up.end()) <= 1.05 * mean);
  CHECK(*std::min_element(up.begin(), up.end()) >= 0.95 * mean);
}
