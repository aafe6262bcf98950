// The simulator's event queue (simulate_internal.h, sim::EventQueue): a radix heap that replaced
// a 4-ary heap, which replaced std::push_heap / pop_heap. The simulation is the same event for
// event only if it pops exactly the order the old queue did, which with unique (time, sequence)
// keys is the sorted order: checked here against std::priority_queue on random pushes and pops,
// with many tied times, and with events pushed after a look at the least one that come before it.

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "simulate_internal.h"

namespace {

struct Ev {
  double t;
  std::uint64_t seq;
  std::uint32_t op;
  bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  bool operator<(const Ev& o) const { return o > *this; }
};

using Queue = collkit::plan::sim::EventQueue<Ev>;
using Reference = std::priority_queue<Ev, std::vector<Ev>, std::greater<>>;

/// Pops the least event of both queues, which must agree on it (its sequence and time) and on
/// their sizes before.
Ev pop_both(Queue& q, Reference& ref) {
  REQUIRE(!q.empty());
  REQUIRE(q.size() == ref.size());
  REQUIRE(q.top().seq == ref.top().seq);
  Ev a = q.pop(), r = ref.top();
  ref.pop();
  REQUIRE(a.seq == r.seq);
  CHECK(a.t == r.t);
  return a;
}

/// Pops both queues empty, event for event; how many.
std::size_t drain(Queue& q, Reference& ref) {
  std::size_t n = 0;
  for (; !ref.empty(); ++n) pop_both(q, ref);
  CHECK(q.empty());
  return n;
}

}  // namespace

TEST_CASE("simulate: the event queue pops in (time, sequence) order as the binary heap did") {
  std::mt19937_64 rng(14);
  std::size_t popped = 0, runs = 0;
  for (int run = 0; run < 200; ++run) {
    // Few distinct times (ties broken by the sequence number) in some runs, all distinct in others.
    std::uniform_int_distribution<int> times(0, run % 3 == 0 ? 4 : run % 3 == 1 ? 100 : 1000000);
    std::uniform_int_distribution<int> burst(0, 12);
    Queue q;
    Reference ref;
    std::uint64_t seq = 0;
    double now = 0;
    int rounds = 50 + run * 10;
    for (int k = 0; k < rounds; ++k) {
      // As in the simulator: events are pushed at the clock or later, then the least is popped.
      for (int b = burst(rng); b > 0; --b) {
        Ev e{now + times(rng) * 0.5, seq++, static_cast<std::uint32_t>(k)};
        q.push(e);
        ref.push(e);
      }
      for (int b = burst(rng); b > 0 && !ref.empty(); --b) {
        now = pop_both(q, ref).t;
        ++popped;
      }
    }
    popped += drain(q, ref);
    ++runs;
  }
  CHECK(runs == 200);
  CHECK(popped > 100000);
}

// The simulator looks at the next event (top) before the ops of the current instant push theirs,
// which may come before it: the radix heap has settled its buckets on that next event by then.
TEST_CASE("simulate: the event queue keeps the order when events are pushed below the one looked at") {
  std::mt19937_64 rng(1414);
  std::size_t popped = 0, below = 0;
  for (int run = 0; run < 100; ++run) {
    std::uniform_int_distribution<int> times(0, run % 2 == 0 ? 3 : 100000);
    std::uniform_int_distribution<int> burst(0, 8);
    Queue q;
    Reference ref;
    std::uint64_t seq = 0;
    double now = 0;
    for (int k = 0; k < 300; ++k) {
      double peeked = -1;
      if (!q.empty()) {
        REQUIRE(q.top().seq == ref.top().seq);
        peeked = q.top().t;
      }
      for (int b = burst(rng); b > 0; --b) {
        Ev e{now + times(rng) * 0.25, seq++, static_cast<std::uint32_t>(k)};
        below += e.t < peeked ? 1 : 0;
        q.push(e);
        ref.push(e);
      }
      for (int b = burst(rng); b > 0 && !ref.empty(); --b) {
        now = pop_both(q, ref).t;
        ++popped;
      }
    }
    popped += drain(q, ref);
  }
  CHECK(popped > 50000);
  CHECK(below > 1000);  // the case this test is for did occur
}

TEST_CASE("simulate: the event queue reused after clear pops as a fresh one") {
  collkit::plan::sim::EventQueue<Ev> q;
  for (std::uint64_t s = 0; s < 100; ++s) q.push({static_cast<double>(100 - s), s, 0});
  CHECK(q.pop().seq == 99);
  q.clear();
  CHECK(q.empty());
  // Earlier times than any before the clear: a fresh queue takes them.
  for (std::uint64_t s = 0; s < 50; ++s) q.push({static_cast<double>(s % 7), s, 0});
  std::vector<std::uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().seq);
  REQUIRE(order.size() == 50);
  int checked = 0;
  for (std::size_t i = 1; i < order.size(); ++i, ++checked) {
    std::uint64_t a = order[i - 1], b = order[i];
    CHECK((a % 7 < b % 7 || (a % 7 == b % 7 && a < b)));
  }
  CHECK(checked == 49);
}
