// coll-run calibrate's fit, without MPI: line fits, the tests' figures written into a topology,
// and the factors fitted to timed plans recovering a known "true" model.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "collkit/core/error.h"
#include "collkit/exec/calibrate.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/io.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/io.h"

using namespace collkit::exec;
namespace topo = collkit::topo;
namespace plan = collkit::plan;

namespace {

// t = fixed + bytes / (gbps * 1e3) at the calibration's sizes.
std::vector<Sample> line(double fixed_us, double gbps) {
  std::vector<Sample> out;
  for (std::uint64_t b : {8ull, 1024ull, 65536ull, 1048576ull, 4194304ull})
    out.push_back({b, fixed_us + static_cast<double>(b) / (gbps * 1e3)});
  return out;
}

// Two hosts of two CPU ranks each, NICs on one Ethernet switch.
topo::Topology two_hosts() {
  return topo::from_json(R"({"schema": "collkit.topology/1", "name": "two-hosts",
    "vertices": [{"id": "a/cpu0", "kind": "cpu", "host": "a"}, {"id": "a/nic0", "kind": "nic", "host": "a", "port_gbps": 12.5},
                 {"id": "b/cpu0", "kind": "cpu", "host": "b"}, {"id": "b/nic0", "kind": "nic", "host": "b", "port_gbps": 12.5},
                 {"id": "sw", "kind": "net_switch"}],
    "links": [{"a": "a/cpu0", "b": "a/nic0", "type": "pcie", "bw_gbps": 31.5, "latency_us": 1},
              {"a": "b/cpu0", "b": "b/nic0", "type": "pcie", "bw_gbps": 31.5, "latency_us": 1},
              {"a": "a/nic0", "b": "sw", "type": "ethernet", "bw_gbps": 12.5, "latency_us": 0.5},
              {"a": "b/nic0", "b": "sw", "type": "ethernet", "bw_gbps": 12.5, "latency_us": 0.5}],
    "ranks": ["a/cpu0", "a/cpu0", "b/cpu0", "b/cpu0"]})",
                         "two-hosts.json");
}

Measurements tests_only(const topo::Topology& t) {
  Measurements m;
  PairClassMeasurement shared_a{"shared memory on a/cpu0", 0, 1, true, t.at("a/cpu0"), line(20, 10), line(20, 8), 2};
  PairClassMeasurement shared_b{"shared memory on b/cpu0", 2, 3, true, t.at("b/cpu0"), line(22, 10), line(22, 8), 2};
  PairClassMeasurement net{"ethernet route (4 hops, 12.5 GB/s nominal)", 0, 2, false, 0, line(70, 1), {}, 0};
  m.classes = {shared_a, shared_b, net};
  m.reduce_gbps = 25;
  m.source = "test";
  return m;
}

}  // namespace

TEST_CASE("calibrate: a line fit recovers fixed time and bandwidth, too few sizes are refused") {
  LineFit f = fit_line(line(12.5, 7));
  CHECK(f.fixed_us == doctest::Approx(12.5));
  CHECK(f.gbps == doctest::Approx(7));
  CHECK(f.residual_percent < 1e-6);
  // Noise shows as the largest relative error of a sample.
  auto noisy = line(12.5, 7);
  noisy[2].time_us *= 1.2;
  CHECK(fit_line(noisy).residual_percent > 5);
  // Times that do not grow with size: no bandwidth to speak of.
  CHECK(fit_line({{8, 5}, {4096, 5}}).gbps == 0);
  CHECK_THROWS_WITH_AS(fit_line({{8, 5}, {8, 6}}), "calibrate: a fit needs timings at two sizes or more", collkit::InputError);
}

TEST_CASE("calibrate: the tests' fits are written into vertices, links and the calibration block") {
  topo::Topology t = two_hosts();
  std::string report;
  topo::Topology c = apply_calibration(t, tests_only(t), &report);
  // Two pairs at once moved 8 GB/s each: 16 in all is what the simulator shares among them.
  CHECK(c.vertex(c.at("a/cpu0")).local_bw_gbps == doctest::Approx(16));
  CHECK(c.vertex(c.at("b/cpu0")).local_bw_gbps == doctest::Approx(16));
  REQUIRE(c.calibration);
  CHECK(c.calibration->per_message_us == doctest::Approx(21));  // the median of 20 and 22
  CHECK(c.calibration->reduce_gbps == 25);
  REQUIRE(c.calibration->classes.size() == 3);
  CHECK(c.calibration->classes[2].bw_gbps == doctest::Approx(1));
  CHECK(c.calibration->classes[2].latency_us == doctest::Approx(70));
  // Both Ethernet links: 1 GB/s, and the 70 us less the software's 21 and the PCIe links' 2 us, halved.
  int checked = 0;
  for (topo::LinkId l = 0; l < c.num_links(); ++l) {
    if (c.link(l).type != topo::LinkType::Ethernet) {
      CHECK(c.link(l).bw_gbps == 31.5);
      continue;
    }
    CHECK(c.link(l).bw_gbps == doctest::Approx(1));
    CHECK(c.link(l).latency_us == doctest::Approx((70 - 21 - 2) / 2.0));
    ++checked;
  }
  CHECK(checked == 2);
  CHECK(report.find("ethernet route (4 hops, 12.5 GB/s nominal): ranks 0-2 alone 70.00 us + bytes / 1.00 GB/s (fit within 0%); 2 ethernet "
                    "link(s) of 12.5 GB/s set to 1.00 GB/s, 23.50 us") != std::string::npos);
  // The simulator now takes the overhead and the reduction rate from the topology.
  auto p = plan::generate("ring", {plan::Collective::AllReduce, 1 << 20, 4, 0}, &c);
  plan::SimOptions explicit_opts;
  explicit_opts.per_message_us = 21;
  explicit_opts.reduce_gbps = 25;
  topo::Topology plain = c;
  plain.calibration.reset();
  CHECK(plan::simulate(*p, c).time_us == doctest::Approx(plan::simulate(*p, c, explicit_opts).time_us));
  CHECK(plan::simulate(*p, c).time_us > plan::simulate(*p, plain).time_us);
  explicit_opts.reduce_gbps = 1;  // the options' own figures win
  CHECK(plan::simulate(*p, c, explicit_opts).time_us > plan::simulate(*p, c).time_us);
}

TEST_CASE("calibrate: other work found on a host while measuring is a warning in the report and a note in the topology") {
  topo::Topology t = two_hosts();
  Measurements m = tests_only(t);
  std::string report;
  topo::Topology quiet = apply_calibration(t, m, &report);
  CHECK(report.find("warning") == std::string::npos);
  m.busy = "busy host: a had load average 9.0 on 2 cores beside this job's 2 ranks while measuring";
  topo::Topology busy = apply_calibration(t, m, &report);
  CHECK(report.find("\nwarning: busy host: a had load average 9.0 on 2 cores") != std::string::npos);
  CHECK(busy.notes.size() == quiet.notes.size() + 1);
  CHECK(busy.notes.back() == "calibration warning: " + m.busy);
}

TEST_CASE("calibrate: a class whose times did not grow with size is reported, not written as a zero rate") {
  topo::Topology t = two_hosts();
  Measurements m = tests_only(t);
  m.classes[2].alone = {{8, 90}, {65536, 85}, {1048576, 80}};  // noise: 1M took less than 8 bytes
  m.classes[2].attempts = 3;
  std::string report;
  topo::Topology c = apply_calibration(t, m, &report);
  REQUIRE(c.calibration);
  CHECK(c.calibration->classes.size() == 2);
  int ethernet = 0;
  for (topo::LinkId l = 0; l < c.num_links(); ++l)
    if (c.link(l).type == topo::LinkType::Ethernet) {
      CHECK(c.link(l).bw_gbps == 12.5);
      ++ethernet;
    }
  CHECK(ethernet == 2);
  CHECK(report.find("ethernet route (4 hops, 12.5 GB/s nominal): ranks 0-2 not fitted: the times did not grow with size in 3 "
                    "attempt(s) (a busy host?); its links keep their nominal rates") != std::string::npos);
  // What is written loads again.
  CHECK(topo::from_json(topo::to_json(c), "calibrated.json").calibration->classes.size() == 2);
}

TEST_CASE("calibrate: factors fitted to timed plans recover the model the plans ran on") {
  topo::Topology t = two_hosts();
  Measurements m = tests_only(t);
  topo::Topology from_tests = apply_calibration(t, m, nullptr);
  // The "machine": bandwidths half what the tests said, messages 1.5x as costly.
  topo::Topology truth = from_tests;
  for (const char* v : {"a/cpu0", "b/cpu0"}) truth.mutable_vertex(truth.at(v)).local_bw_gbps *= 0.5;
  for (topo::LinkId l = 0; l < truth.num_links(); ++l)
    if (truth.link(l).type == topo::LinkType::Ethernet) truth.mutable_link(l).bw_gbps *= 0.5;
  truth.calibration->per_message_us *= 1.5;
  int timed = 0;
  for (plan::Collective coll : {plan::Collective::AllGather, plan::Collective::AllReduce})
    for (const char* algo : {"ring", "rhd"})
      for (std::uint64_t bytes : {65536ull, 4194304ull}) {
        auto p = plan::generate(algo, {coll, bytes, 4, 0}, &t);
        m.plans.push_back({plan::to_json(*p), algo, plan::simulate(*p, truth).time_us});
        ++timed;
      }
  CHECK(timed == 8);
  std::string report;
  topo::Topology fitted = apply_calibration(t, m, &report);
  CAPTURE(report);
  for (const PlanTiming& pt : m.plans) {
    auto p = plan::from_json(pt.plan_json, "p.json");
    CHECK(plan::simulate(*p, fitted).time_us == doctest::Approx(pt.measured_us).epsilon(0.03));
  }
  CHECK(fitted.vertex(fitted.at("a/cpu0")).local_bw_gbps == doctest::Approx(8).epsilon(0.05));
  CHECK(fitted.calibration->per_message_us == doctest::Approx(31.5).epsilon(0.05));
  CHECK(report.find("plans: 8 timed; factors bandwidth x0.50") != std::string::npos);
}

TEST_CASE("calibrate: a reduction rate far below the tests' is fitted, not held at a limit") {
  topo::Topology t = two_hosts();
  Measurements m = tests_only(t);
  // The "machine": the plans' reductions 100x slower than the test's (beside their copies, out of
  // cache): once this pinned the fit at its old x1/20 limit.
  topo::Topology truth = apply_calibration(t, m, nullptr);
  truth.calibration->reduce_gbps /= 100;
  int timed = 0;
  // The collectives calibrate times: ReduceScatter beside AllGather tells reductions from copies.
  for (plan::Collective coll : {plan::Collective::AllGather, plan::Collective::ReduceScatter, plan::Collective::AllReduce})
    for (const char* algo : {"ring", "rhd"})
      for (std::uint64_t bytes : {65536ull, 4194304ull}) {
        auto p = plan::generate(algo, {coll, bytes, 4, 0}, &t);
        m.plans.push_back({plan::to_json(*p), algo, plan::simulate(*p, truth).time_us});
        ++timed;
      }
  CHECK(timed == 12);
  std::string report;
  topo::Topology fitted = apply_calibration(t, m, &report);
  CAPTURE(report);
  CHECK(fitted.calibration->reduce_gbps == doctest::Approx(0.25).epsilon(0.05));
  CHECK(report.find("reduction x0.01") != std::string::npos);
}

TEST_CASE("calibrate: the bandwidth beyond the last-level cache is fitted from plans timed past it") {
  topo::Topology t = two_hosts();
  Measurements m = tests_only(t);
  m.cache_bytes = 4 << 20;  // 4 MiB: two ranks of 1 MiB plans fit in it, of 16 MiB ones do not
  topo::Topology from_tests = apply_calibration(t, m, nullptr);
  REQUIRE(from_tests.calibration);
  CHECK(from_tests.calibration->cache_bytes == (4u << 20));
  CHECK(from_tests.calibration->beyond_cache_factor == 1);
  // The "machine": the tests' rates in the cache, a third of them past it.
  topo::Topology truth = from_tests;
  truth.calibration->beyond_cache_factor = 1.0 / 3;
  int timed = 0, past = 0;
  for (plan::Collective coll : {plan::Collective::AllGather, plan::Collective::AllReduce})
    for (const char* algo : {"ring", "rhd"})
      for (std::uint64_t bytes : {65536ull, 1048576ull, 16777216ull, 67108864ull}) {
        auto p = plan::generate(algo, {coll, bytes, 4, 0}, &t);
        past += plan::past_cache(*p, truth) ? 1 : 0;
        m.plans.push_back({plan::to_json(*p), algo, plan::simulate(*p, truth).time_us});
        ++timed;
      }
  CHECK(timed == 16);
  CHECK(past == 8);  // 16 and 64 MiB
  std::string report;
  topo::Topology fitted = apply_calibration(t, m, &report);
  CAPTURE(report);
  CHECK(fitted.calibration->beyond_cache_factor == doctest::Approx(1.0 / 3).epsilon(0.05));
  for (const PlanTiming& pt : m.plans) {
    auto p = plan::from_json(pt.plan_json, "p.json");
    CHECK(plan::simulate(*p, fitted).time_us == doctest::Approx(pt.measured_us).epsilon(0.03));
  }
  CHECK(report.find("beyond the 4 MiB cache x0.3") != std::string::npos);
  // Written and read back; a file without the fields means no cache model.
  topo::Topology again = topo::from_json(topo::to_json(fitted), "cal.json");
  CHECK(again.calibration->cache_bytes == (4u << 20));
  CHECK(again.calibration->beyond_cache_factor == doctest::Approx(fitted.calibration->beyond_cache_factor));
  CHECK(topo::from_json(topo::to_json(t), "plain.json").calibration == std::nullopt);
}

TEST_CASE("calibrate: without a cache size, or with no plan past it, the cache factor stays 1") {
  topo::Topology t = two_hosts();
  Measurements m = tests_only(t);
  auto p = plan::generate("ring", {plan::Collective::AllReduce, 65536, 4, 0}, &t);
  m.plans.push_back({plan::to_json(*p), "ring", 500});
  m.plans.push_back({plan::to_json(*plan::generate("ring", {plan::Collective::AllReduce, 1 << 20, 4, 0}, &t)), "ring", 4000});
  std::string report;
  topo::Topology none = apply_calibration(t, m, &report);
  CHECK(none.calibration->beyond_cache_factor == 1);
  CHECK(report.find(", cache size not known;") != std::string::npos);
  m.cache_bytes = 64 << 20;
  topo::Topology inside = apply_calibration(t, m, &report);
  CHECK(inside.calibration->beyond_cache_factor == 1);
  CHECK(report.find(", no plan past the cache;") != std::string::npos);
  // The simulator leaves a plan inside the cache alone whatever the factor says.
  topo::Topology slow = inside;
  slow.calibration->beyond_cache_factor = 0.1;
  CHECK(plan::simulate(*p, slow).time_us == plan::simulate(*p, inside).time_us);
  CHECK_FALSE(plan::past_cache(*p, slow));
}

TEST_CASE("calibrate: the reductions within a core's cache get a factor of their own, fitted from the plans") {
  topo::Topology t = two_hosts();
  Measurements m = tests_only(t);
  m.cores = 1;                   // two ranks a host on one core: they take turns
  m.core_cache_bytes = 1 << 20;  // 1 MiB: the 64 KiB plans' sums fit in it, the 16 MiB plans' do not
  topo::Topology from_tests = apply_calibration(t, m, nullptr);
  REQUIRE(from_tests.calibration);
  CHECK(from_tests.calibration->cores == 1);
  CHECK(from_tests.calibration->core_cache_bytes == (1u << 20));
  CHECK(from_tests.calibration->core_cache_factor == 1);
  // The "machine": sums of data in a core's cache 3x as fast as the test's, slower ones 10x slower.
  topo::Topology truth = from_tests;
  truth.calibration->core_cache_factor = 3;
  truth.calibration->reduce_gbps /= 10;
  int timed = 0;
  for (plan::Collective coll : {plan::Collective::AllGather, plan::Collective::ReduceScatter, plan::Collective::AllReduce})
    for (const char* algo : {"ring", "rhd"})
      for (std::uint64_t bytes : {65536ull, 16777216ull}) {
        auto p = plan::generate(algo, {coll, bytes, 4, 0}, &t);
        m.plans.push_back({plan::to_json(*p), algo, plan::simulate(*p, truth).time_us});
        ++timed;
      }
  CHECK(timed == 12);
  // Without the factor the small plans' sums are too slow: they differ from the truth.
  int differ = 0;
  topo::Topology plain = truth;
  plain.calibration->core_cache_factor = 1;
  for (const PlanTiming& pt : m.plans)
    differ += plan::simulate(*plan::from_json(pt.plan_json, "p.json"), plain).time_us > pt.measured_us * 1.05 ? 1 : 0;
  CHECK(differ >= 2);
  std::string report;
  topo::Topology fitted = apply_calibration(t, m, &report);
  CAPTURE(report);
  CHECK(fitted.calibration->core_cache_factor == doctest::Approx(3).epsilon(0.05));
  for (const PlanTiming& pt : m.plans) {
    auto p = plan::from_json(pt.plan_json, "p.json");
    CHECK(plan::simulate(*p, fitted).time_us == doctest::Approx(pt.measured_us).epsilon(0.03));
  }
  CHECK(report.find("reductions within the 1024 KiB core cache x") != std::string::npos);
  CHECK(report.find("; 1 core(s) per rank's CPU set") != std::string::npos);
}
