#include <doctest/doctest.h>

#include <random>
#include <thread>
#include <vector>

#include "synth/flow.h"

using collkit::plan::synth::ArcNetwork;

namespace {

// The flow on a graph built afresh: a new thread starts with no kept graph.
std::int64_t fresh_flow(const ArcNetwork& net) {
  std::int64_t f = -1;
  std::thread([&] { f = net.max_flow(); }).join();
  return f;
}

}  // namespace

TEST_CASE("synth flow: a query does not see the arcs of the one before") {
  // source -> 0 (3), 0 -> 1 (2), 0 -> 2 (2), 1 -> sink (2), 2 -> sink (1): flow 3.
  ArcNetwork net(3);
  net.arc(net.source(), 0, 3);
  net.arc(0, 1, 2);
  std::size_t without = net.size();
  net.arc(0, 2, 2);
  net.arc(1, net.sink(), 2);
  net.arc(2, net.sink(), 1);
  CHECK(net.max_flow() == 3);
  // The same vertices without 0 -> 2 (the kept graph still has that edge): 2.
  net.truncate(without);
  net.arc(1, net.sink(), 2);
  net.arc(2, net.sink(), 1);
  CHECK(net.max_flow() == 2);
  // Arcs between the same two vertices add up: 0 -> 1 and 1 -> sink twice each, 3.
  net.arc(0, 1, 5);
  net.arc(1, net.sink(), 4);
  CHECK(net.max_flow() == 3);
  // A network of another size starts afresh.
  ArcNetwork other(1);
  other.arc(other.source(), 0, 7);
  other.arc(0, other.sink(), 4);
  CHECK(other.max_flow() == 4);
}

TEST_CASE("synth flow: queries in a row give the flows of graphs built afresh") {
  std::mt19937 rng(11);
  for (int round = 0; round < 60; ++round) {
    std::size_t n = 4 + rng() % 3;  // sizes repeat and change, as splitting's and packing's do
    ArcNetwork net(n);
    for (std::size_t u = 0; u < n; ++u)
      for (std::size_t v = 0; v < n; ++v)
        if (rng() % 3 == 0) net.arc(u, v, static_cast<std::int64_t>(rng() % 9));
    net.arc(net.source(), rng() % n, 1 + static_cast<std::int64_t>(rng() % 20));
    net.arc(net.source(), rng() % n, 1 + static_cast<std::int64_t>(rng() % 20));
    std::size_t base = net.size();
    for (std::size_t v = 0; v < n; ++v) {
      net.truncate(base);
      net.arc(v, net.sink(), ArcNetwork::kInfinite);
      CHECK(net.max_flow() == fresh_flow(net));
    }
  }
}
