// The stream simulator: exact times on hand-made task lists.

#include <doctest/doctest.h>

#include "collkit/core/error.h"
#include "collkit/overlap/timeline.h"

using namespace collkit::overlap;

namespace {
Task task(const char* name, Stream s, double us, std::vector<int> deps = {}) {
  Task t;
  t.name = name;
  t.stream = s;
  t.work_us = us;
  t.deps = std::move(deps);
  return t;
}
}  // namespace

TEST_CASE("timeline: a dependent chain runs back to back, and exposed communication is its length") {
  std::vector<Task> t = {task("ag", Stream::Tp, 30), task("gemm", Stream::Compute, 100, {0}), task("rs", Stream::Tp, 20, {1})};
  TimelineStats s = simulate(t, 0.5);
  CHECK(t[1].start_us == doctest::Approx(30));
  CHECK(s.makespan_us == doctest::Approx(150));
  CHECK(s.comm_us == doctest::Approx(50));
  CHECK(s.exposed_comm_us == doctest::Approx(50));
  CHECK(s.compute_actual_us == doctest::Approx(100));
}

TEST_CASE("timeline: compute beside communication slows by the contention factor while they overlap") {
  // 50 us of communication beside 100 us of compute at contention 0.25: the first 50 us do 40 us
  // of compute work, the remaining 60 run at full speed: compute ends at 110.
  std::vector<Task> t = {task("gemm", Stream::Compute, 100), task("allreduce", Stream::Dp, 50)};
  TimelineStats s = simulate(t, 0.25);
  CHECK(t[0].end_us == doctest::Approx(110));
  CHECK(t[1].end_us == doctest::Approx(50));
  CHECK(s.makespan_us == doctest::Approx(110));
  CHECK(s.exposed_comm_us == doctest::Approx(0));
  CHECK(s.compute_actual_us / s.compute_alone_us == doctest::Approx(1.1));
}

TEST_CASE("timeline: a stream runs its tasks in issue order, even when a later one is ready first") {
  // The second collective waits behind the first, which waits for the compute.
  std::vector<Task> t = {task("gemm", Stream::Compute, 100), task("c0", Stream::Dp, 10, {0}), task("c1", Stream::Dp, 10)};
  simulate(t, 0);
  CHECK(t[1].start_us == doctest::Approx(100));
  CHECK(t[2].start_us == doctest::Approx(110));
}

TEST_CASE("timeline: collectives sharing links split them while both run") {
  // 10 us and 30 us of work on two streams, same links: both at half speed until the first ends
  // at 20 us, then the second alone finishes its last 20 us at 40 us.
  std::vector<Task> t = {task("ag", Stream::Dp, 10), task("rs", Stream::DpReduce, 30), task("tp", Stream::Tp, 30)};
  t[0].share = t[1].share = 0;
  simulate(t, 0);
  CHECK(t[0].end_us == doctest::Approx(20));
  CHECK(t[1].end_us == doctest::Approx(40));
  CHECK(t[2].end_us == doctest::Approx(30));  // other links: full speed
}

TEST_CASE("timeline: a dependency on a later task is refused") {
  std::vector<Task> t = {task("a", Stream::Compute, 1, {1}), task("b", Stream::Compute, 1)};
  CHECK_THROWS_AS(simulate(t, 0), collkit::Error);
}
