// coll-run calibrate: the measurements and the fit (calibrate.h, docs/adapt.md).

#include "collkit/exec/calibrate.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/provenance.h"
#include "collkit/core/size.h"
#include "collkit/exec/backend.h"
#include "collkit/exec/datatype.h"
#include "collkit/exec/harness.h"
#include "collkit/plan/io.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/discover.h"
#include "collkit/topo/io.h"
#include "collkit/topo/routing.h"
#include "mpi_check.h"

namespace collkit::exec {

namespace {

constexpr double kBytesPerUsPerGbps = 1e3;  // 1 GB/s moves 1000 bytes per microsecond

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The classes of rank pairs, the same on every rank (they follow from the topology alone): one per
// vertex holding two ranks or more (its first two ranks measured), then one per kind of route out
// of rank 0 (bottleneck link type, its bandwidth and the hop count; the first rank reached that way).
std::vector<PairClassMeasurement> classify(const topo::Topology& t, int nranks) {
  std::vector<PairClassMeasurement> out;
  std::map<topo::VertexId, std::vector<int>> on_vertex;
  for (int r = 0; r < nranks; ++r) on_vertex[t.rank_vertex(static_cast<topo::Rank>(r))].push_back(r);
  for (const auto& [v, ranks] : on_vertex) {
    if (ranks.size() < 2) continue;
    PairClassMeasurement c;
    c.name = "shared memory on " + t.vertex(v).id;
    c.rank_a = ranks[0];
    c.rank_b = ranks[1];
    c.shared_vertex = true;
    c.vertex = v;
    out.push_back(std::move(c));
  }
  topo::Router router(t);
  std::set<std::string> seen;
  for (int r = 1; r < nranks; ++r) {
    if (t.rank_vertex(0) == t.rank_vertex(static_cast<topo::Rank>(r))) continue;
    topo::Path p = router.route_ranks(0, static_cast<topo::Rank>(r));
    if (!p.found || p.hops.empty()) continue;
    const topo::Link* slowest = nullptr;
    for (const topo::Hop& h : p.hops)
      if (!slowest || t.link(h.link).bw_gbps < slowest->bw_gbps) slowest = &t.link(h.link);
    std::string name =
        fmt::format("{} route ({} hops, {:g} GB/s nominal)", topo::to_string(slowest->type), p.hops.size(), slowest->bw_gbps);
    if (!seen.insert(name).second) continue;
    PairClassMeasurement c;
    c.name = name;
    c.rank_a = 0;
    c.rank_b = r;
    out.push_back(std::move(c));
  }
  return out;
}

struct TestPlan {
  std::vector<std::uint64_t> sizes;
  int reps;
  std::uint64_t reduce_bytes;
};

TestPlan test_plan(bool quick) {
  if (quick) return {{8, 64 << 10, 1 << 20}, 5, 1 << 20};
  return {{8, 1 << 10, 8 << 10, 64 << 10, 512 << 10, 4 << 20}, 15, 4 << 20};
}

// Sends `send` to `to` and receives from `from` (either may be -1: none), waiting at most
// `timeout_s` without progress.
void exchange(int to, const void* send, int from, void* recv, std::uint64_t bytes, double timeout_s, const std::string& what) {
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int n = 0;
  int count = static_cast<int>(bytes);
  if (from >= 0) mpi::check(MPI_Irecv(recv, count, MPI_BYTE, from, 7, MPI_COMM_WORLD, &reqs[n++]), "MPI_Irecv");
  if (to >= 0) mpi::check(MPI_Isend(send, count, MPI_BYTE, to, 7, MPI_COMM_WORLD, &reqs[n++]), "MPI_Isend");
  mpi::wait_all(reqs, n, timeout_s, what);
}

// Ping-pong between a and b: the median one-way time per size, on every rank (the others give 0
// to the maximum that carries rank a's figures).
std::vector<Sample> ping_pong(const World& world, int a, int b, const TestPlan& plan, std::vector<unsigned char>& buf, double timeout_s) {
  std::vector<Sample> out;
  int me = world.rank();
  for (std::uint64_t bytes : plan.sizes) {
    std::vector<double> times;
    std::string what = fmt::format("calibrate: ping-pong of {} bytes between ranks {} and {}", bytes, a, b);
    for (int i = -2; i < plan.reps; ++i) {  // two untimed rounds first
      double start = World::now();
      if (me == a) {
        exchange(b, buf.data(), -1, nullptr, bytes, timeout_s, what);
        exchange(-1, nullptr, b, buf.data() + bytes, bytes, timeout_s, what);
      } else if (me == b) {
        exchange(-1, nullptr, a, buf.data() + bytes, bytes, timeout_s, what);
        exchange(a, buf.data(), -1, nullptr, bytes, timeout_s, what);
      }
      if (i >= 0) times.push_back((World::now() - start) * 1e6 / 2);
    }
    double mine = me == a ? median(times) : 0;
    out.push_back({bytes, world.max(mine, timeout_s)});
  }
  return out;
}

// Every rank of `ranks` sends to the next of them and receives from the one before, all at once:
// the time of one message (the slowest rank's median), per size.
std::vector<Sample> ring_at_once(const World& world, const std::vector<int>& ranks, const TestPlan& plan, std::vector<unsigned char>& buf,
                                 double timeout_s) {
  std::vector<Sample> out;
  auto at = std::find(ranks.begin(), ranks.end(), world.rank());
  int k = static_cast<int>(ranks.size());
  int i = at == ranks.end() ? -1 : static_cast<int>(at - ranks.begin());
  for (std::uint64_t bytes : plan.sizes) {
    std::vector<double> times;
    std::string what = fmt::format("calibrate: {} ranks exchanging {} bytes at once", k, bytes);
    for (int rep = -2; rep < plan.reps; ++rep) {
      world.barrier(timeout_s, what);
      double start = World::now();
      if (i >= 0)
        exchange(ranks[static_cast<std::size_t>((i + 1) % k)], buf.data(), ranks[static_cast<std::size_t>((i + k - 1) % k)],
                 buf.data() + bytes, bytes, timeout_s, what);
      if (rep >= 0) times.push_back((World::now() - start) * 1e6);
    }
    out.push_back({bytes, world.max(i >= 0 ? median(times) : 0, timeout_s)});
  }
  return out;
}

// Every rank reduces two float32 buffers into a third at once: bytes of one input per second, of
// the slowest rank.
double reduce_rate(const World& world, std::uint64_t bytes, int reps, double timeout_s) {
  std::size_t n = bytes / sizeof(float);
  std::vector<float> a(n, 1.0f), b(n, 2.0f), dst(n, 0.0f);
  std::vector<double> times;
  world.barrier(timeout_s, "calibrate: reduction rate");
  for (int rep = -1; rep < reps; ++rep) {
    double start = World::now();
    reduce(DataType::Float32, RedOp::Sum, dst.data(), a.data(), b.data(), n);
    if (rep >= 0) times.push_back((World::now() - start) * 1e6);
  }
  if (dst[n / 2] != 3.0f) throw SystemError("calibrate: the reduction test computed a wrong sum");
  double slowest = world.max(median(times), timeout_s);
  return slowest > 0 ? static_cast<double>(n * sizeof(float)) / slowest / kBytesPerUsPerGbps : 0;
}

// Ring and recursive-halving-doubling AllGather, ReduceScatter and AllReduce run by coll-run's own
// harness on the mpi backend, planned on `topo` (written for rank 0's planner to read): their
// measured times. ReduceScatter is AllGather's bytes with the reductions: beside both, the fit
// tells the reduction rate from the bandwidth (with AllGather and AllReduce alone, every cost an
// AllReduce has past twice an AllGather's was read as reduction).
std::vector<PlanTiming> time_plans(World& world, const topo::Topology& topo, const CalibrateOptions& opt) {
  char path[] = "/tmp/collkit-calibrate-XXXXXX";
  std::string file;
  if (world.rank() == 0) {
    int fd = mkstemp(path);
    if (fd < 0) throw SystemError(std::string("calibrate: cannot create a temporary file in /tmp: ") + std::strerror(errno));
    close(fd);
    file = path;
    write_file_atomic(file, topo::to_json(topo));
  }
  RunOptions ro;
  ro.topo_file = world.rank() == 0 ? file : "(rank 0's)";
  ro.collectives = {plan::Collective::AllGather, plan::Collective::ReduceScatter, plan::Collective::AllReduce};
  ro.algorithms = {"ring", "rhd"};
  // Up to 64 MiB: past the last-level cache of the CPUs this runs on (tens of MiB), so the fit
  // sees the memory behind it (--quick: 64 KiB and 4 MiB only).
  ro.min_bytes = 64 << 10;
  ro.max_bytes = opt.quick ? 4 << 20 : 64 << 20;
  ro.factor = opt.quick ? 64 : 4;
  ro.sizes_given = true;
  ro.iters = opt.quick ? 5 : 10;
  ro.warmup = 2;
  ro.check = 0;
  ro.baseline = false;
  ro.timeout_s = opt.timeout_s;
  BackendOptions bo;
  bo.timeout_s = opt.timeout_s;
  std::vector<PlanTiming> out;
  try {
    auto backend = make_backend(bo, world);
    std::ostringstream quiet;
    Results r = run(ro, *backend, world, quiet);
    for (const Table& t : r.tables)
      for (const Row& row : t.rows)
        // The median of the timed blocks: a block other work on the host preempted does not move
        // it as it moves the mean, and the simulator predicts an undisturbed run.
        if (row.out_of_place.ran && row.out_of_place.time_us > 0)
          out.push_back({row.plan_json, fmt::format("{} {} {}", plan::to_string(t.coll), row.algorithm, format_size_bytes(row.bytes)),
                         row.out_of_place.block_median_us > 0 ? row.out_of_place.block_median_us : row.out_of_place.time_us});
  } catch (...) {
    if (!file.empty()) std::remove(file.c_str());
    throw;
  }
  if (!file.empty()) std::remove(file.c_str());
  return out;
}

// Other work on the job's hosts, read once the tests are done: each host's 1-minute load average
// (/proc/loadavg) less its ranks of this job (each was runnable throughout, polling; the average
// lags, so an idle host reads below that). One line naming the busiest host when more than half a
// core's worth is left; empty otherwise.
std::string other_work(const World& world, double timeout_s) {
  double load = -1;
  if (std::ifstream in("/proc/loadavg"); !(in >> load)) load = -1;
  const auto cores = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const std::vector<std::string>& hosts = world.hosts();
  const auto mine = static_cast<double>(std::count(hosts.begin(), hosts.end(), world.host()));
  std::string line = load < 0 ? std::string() : fmt::format("{} {} {} {} {}", load - mine, load, cores, mine, world.host());
  std::string worst;
  double most = 0.5;
  for (const std::string& one : world.allgather(line, timeout_s)) {
    std::istringstream in(one);
    double other = 0, avg = 0, n = 0, ranks = 0;
    std::string host;
    if (!(in >> other >> avg >> n >> ranks >> host) || other <= most) continue;
    most = other;
    worst = fmt::format("{} had load average {:.1f} on {:g} cores beside this job's {:g} ranks", host, avg, n, ranks);
  }
  if (worst.empty()) return {};
  return "busy host: " + worst +
         " while measuring: other work shared the cores, so the fits and factors read it as a slower machine; "
         "calibrate again on an idle host";
}

// The cores this process may run on (its CPU affinity; the online CPUs when that cannot be read).
int cores_allowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

// The artifact's date (SOURCE_DATE_EPOCH when set: reproducible files), to the day.
std::string today() { return provenance().date.substr(0, 10); }

// The second step of apply_calibration(): factors on the fitted bandwidths, the reduction rate and
// the per-message time that make the simulator's predictions of the timed plans match them.
void fit_to_plans(topo::Topology& t, const std::vector<topo::VertexId>& vertices, const std::vector<topo::LinkId>& links,
                  const std::vector<PlanTiming>& timings, std::vector<std::string>& lines) {
  std::vector<std::unique_ptr<plan::Plan>> plans;
  for (const PlanTiming& p : timings) plans.push_back(plan::from_json(p.plan_json, "calibrate: " + p.what));
  const topo::Topology base = t;
  // x: log-factors on (bandwidth, reduction rate, per-message time, bandwidth beyond the cache,
  // reduction rate within a core's cache).
  auto scaled = [&](const std::array<double, 5>& x) {
    topo::Topology s = base;
    for (topo::VertexId v : vertices) s.mutable_vertex(v).local_bw_gbps *= std::exp(x[0]);
    for (topo::LinkId l : links) s.mutable_link(l).bw_gbps *= std::exp(x[0]);
    s.calibration->reduce_gbps *= std::exp(x[1]);
    s.calibration->per_message_us *= std::exp(x[2]);
    s.calibration->beyond_cache_factor = std::exp(x[3]);
    s.calibration->core_cache_factor = std::exp(x[4]);
    return s;
  };
  auto errors = [&](const topo::Topology& s) {
    std::vector<double> e;
    for (std::size_t i = 0; i < plans.size(); ++i) e.push_back(plan::simulated_us(*plans[i], s) / timings[i].measured_us);
    return e;
  };
  auto cost = [&](const std::array<double, 5>& x) {
    double sum = 0;
    for (double r : errors(scaled(x))) sum += r > 0 ? std::log(r) * std::log(r) : 1e9;
    return sum;
  };
  auto median_abs = [](const std::vector<double>& ratios) {
    std::vector<double> e;
    for (double r : ratios) e.push_back(std::fabs(r - 1) * 100);
    return median(e);
  };
  // The cache factor is fitted only when some timed plan's working set passes the cache (else
  // nothing depends on it), and only downwards: memory behind a cache is not faster than it.
  bool past_cache = false;
  for (const auto& p : plans) past_cache = past_cache || plan::past_cache(*p, base);
  // The core-cache factor only upwards (a reduction from a core's own cache is not slower), and
  // only where the core's cache is known; with no timed reduction fitting in it nothing depends on
  // it and it stays x1 (the search keeps a factor only where the cost drops).
  std::array<double, 5> x{0, 0, 0, 0, 0};
  bool active[5] = {!vertices.empty() || !links.empty(), base.calibration->reduce_gbps > 0, base.calibration->per_message_us > 0,
                    past_cache, base.calibration->reduce_gbps > 0 && base.calibration->core_cache_bytes > 0};
  // Coordinate descent, a golden-section search per factor over x1/20..x20 (the cache's
  // x1/20..x1, the core cache's x1..x20; the reduction's x1/1000..x1000: the rate measured alone, in cache, can be far from
  // what a plan's reductions get beside its copies), eight rounds (the factors trade off: three
  // left the cache factor 20% off on a known model).
  const double golden = (std::sqrt(5.0) - 1) / 2;
  for (int round = 0; round < 8; ++round)
    for (int k = 0; k < 5; ++k) {
      if (!active[k]) continue;
      double lo = k == 1 ? -6.9 : k == 4 ? 0 : -3, hi = k == 3 ? 0 : k == 1 ? 6.9 : 3;
      auto at = [&](double v) {
        auto y = x;
        y[static_cast<std::size_t>(k)] = v;
        return cost(y);
      };
      double a = hi - golden * (hi - lo), b = lo + golden * (hi - lo), fa = at(a), fb = at(b);
      for (int it = 0; it < 30; ++it) {
        if (fa < fb) {
          hi = b, b = a, fb = fa, a = hi - golden * (hi - lo), fa = at(a);
        } else {
          lo = a, a = b, fa = fb, b = lo + golden * (hi - lo), fb = at(b);
        }
      }
      double best = (lo + hi) / 2;
      if (at(best) < at(x[static_cast<std::size_t>(k)])) x[static_cast<std::size_t>(k)] = best;
    }
  double before = median_abs(errors(base));
  t = scaled(x);
  std::vector<double> after = errors(t);
  lines.push_back(fmt::format(
      "plans: {} timed; factors bandwidth x{:.2f}, reduction x{:.2f}, per message x{:.2f}{}{}; median |error| {:.1f}% "
      "-> {:.1f}%",
      plans.size(), std::exp(x[0]), std::exp(x[1]), std::exp(x[2]),
      past_cache ? fmt::format(", beyond the {} MiB cache x{:.2f}", base.calibration->cache_bytes >> 20, std::exp(x[3]))
      : base.calibration->cache_bytes > 0 ? ", no plan past the cache"
                                          : ", cache size not known",
      active[4] ? fmt::format(", reductions within the {} KiB core cache x{:.2f}", base.calibration->core_cache_bytes >> 10, std::exp(x[4]))
                : "",
      before, median_abs(after)));
  for (std::size_t i = 0; i < plans.size(); ++i)
    lines.push_back(fmt::format("  {}: measured {:.1f} us, predicted {:.1f} us ({:+.1f}%)", timings[i].what, timings[i].measured_us,
                                after[i] * timings[i].measured_us, (after[i] - 1) * 100));
  t.notes.push_back(
      fmt::format("calibrated on {} timed plans: median |error| {:.1f}% -> {:.1f}%", plans.size(), before, median_abs(after)));
}

}  // namespace

namespace {

// cpu0's data or unified cache of `want` (0: the highest level sysfs lists) in bytes, 0 when none.
std::uint64_t cache_level_bytes(int want) {
  // /sys/devices/system/cpu/cpu0/cache/indexN/{level,type,size}: "3", "Unified", "32768K".
  std::uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; ++i) {
    std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
    int lv = 0;
    std::string ty, sz;
    if (!(level >> lv) || !(type >> ty) || !(size >> sz) || ty == "Instruction") continue;
    char* end = nullptr;
    unsigned long long n = std::strtoull(sz.c_str(), &end, 10);
    std::uint64_t unit = *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : *end == 'G' ? 1024ull * 1024 * 1024 : 1;
    if (n > 0 && (want == 0 ? lv > best_level : lv == want)) best_level = lv, best = n * unit;
  }
  return best;
}

}  // namespace

std::uint64_t last_level_cache_bytes() { return cache_level_bytes(0); }

std::uint64_t core_cache_bytes() { return cache_level_bytes(2); }

LineFit fit_line(const std::vector<Sample>& samples) {
  // Minimises sum(((fixed + slope * bytes) - t) / t)^2: weights 1/t^2 on the normal equations.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::set<std::uint64_t> sizes;
  for (const Sample& s : samples) {
    if (!(s.time_us > 0)) continue;
    double w = 1 / (s.time_us * s.time_us), x = static_cast<double>(s.bytes);
    sw += w, sx += w * x, sy += w * s.time_us, sxx += w * x * x, sxy += w * x * s.time_us;
    sizes.insert(s.bytes);
  }
  if (sizes.size() < 2) throw InputError("calibrate: a fit needs timings at two sizes or more");
  double det = sw * sxx - sx * sx;
  double slope = (sw * sxy - sx * sy) / det;
  double fixed = (sy - slope * sx) / sw;
  LineFit f;
  f.fixed_us = std::max(0.0, fixed);
  f.gbps = slope > 0 ? 1 / (slope * kBytesPerUsPerGbps) : 0;
  for (const Sample& s : samples) {
    if (!(s.time_us > 0)) continue;
    double model = f.fixed_us + (slope > 0 ? slope * static_cast<double>(s.bytes) : 0);
    f.residual_percent = std::max(f.residual_percent, std::fabs(model - s.time_us) / s.time_us * 100);
  }
  return f;
}

topo::Topology job_topology(const World& world, const std::string& topo_file, double timeout_s) {
  if (!topo_file.empty()) return topo::load(topo_file);  // every rank reads it: an error is everyone's
  bool is_root = false;
  topo::Topology found = topo::discover_cluster({}, &is_root);
  std::string text = world.broadcast(is_root ? topo::to_json(found) : std::string(), timeout_s);
  return topo::from_json(text, "the discovered cluster");
}

Measurements measure(World& world, const topo::Topology& topo, const CalibrateOptions& opt) {
  if (topo.num_ranks() < static_cast<std::size_t>(world.size()))
    throw InputError(fmt::format("calibrate: the topology has {} ranks, the job {}", topo.num_ranks(), world.size()));
  if (world.size() < 2) throw InputError("calibrate: needs two ranks or more (run it under mpirun -np N)");
  TestPlan plan = test_plan(opt.quick);
  std::vector<unsigned char> buf(2 * plan.sizes.back(), 1);
  Measurements m;
  m.classes = classify(topo, world.size());
  // Times that do not grow with size are noise (another process took the cores): such a test is
  // run again, up to kAttempts times in all. Every rank holds the same reduced samples, so every
  // rank decides alike.
  constexpr int kAttempts = 3;
  auto grows = [](const std::vector<Sample>& s) { return fit_line(s).gbps > 0; };
  for (PairClassMeasurement& c : m.classes) {
    for (c.attempts = 1;; ++c.attempts) {
      c.alone = ping_pong(world, c.rank_a, c.rank_b, plan, buf, opt.timeout_s);
      if (grows(c.alone) || c.attempts == kAttempts) break;
    }
    if (c.shared_vertex) {
      std::vector<int> ranks;
      for (int r = 0; r < world.size(); ++r)
        if (topo.rank_vertex(static_cast<topo::Rank>(r)) == c.vertex) ranks.push_back(r);
      c.concurrent_pairs = static_cast<int>(ranks.size());
      for (int attempt = 1;; ++attempt) {
        c.concurrent = ring_at_once(world, ranks, plan, buf, opt.timeout_s);
        if (grows(c.concurrent) || attempt == kAttempts) break;
        ++c.attempts;
      }
    }
  }
  m.reduce_gbps = reduce_rate(world, plan.reduce_bytes, plan.reps, opt.timeout_s);
  // The smallest cache any rank has (a rank that cannot tell gives 0, and so no cache model).
  m.cache_bytes = static_cast<std::uint64_t>(-world.max(-static_cast<double>(last_level_cache_bytes()), opt.timeout_s));
  // A core's own cache (core_cache_bytes()) is not measured: with it the fit on the recorded idle
  // run's plans sent its factor to its x20 limit and the run's worst row from 64.5% to 75.3% off
  // (bench/fidelity_replay.sh, docs/adapt.md); the simulator honours it when a topology states it.
  // The fewest cores any rank may run on: with more ranks than that on a host they take turns.
  m.cores = static_cast<int>(-world.max(-static_cast<double>(cores_allowed()), opt.timeout_s));
  m.plans = time_plans(world, topo, opt);
  m.busy = other_work(world, opt.timeout_s);
  auto hosts = world.hosts();
  std::set<std::string> distinct(hosts.begin(), hosts.end());
  m.source = fmt::format("coll-run calibrate{}, mpi backend ({}), {} ranks on {} host(s), {}", opt.quick ? " --quick" : "",
                         world.mpi_version(), world.size(), distinct.size(), today());
  return m;
}

topo::Topology apply_calibration(const topo::Topology& topo, const Measurements& m, std::string* report) {
  topo::Topology t = topo;
  topo::Calibration cal;
  cal.source = m.source;
  cal.reduce_gbps = m.reduce_gbps;
  cal.cache_bytes = m.cache_bytes;
  cal.cores = m.cores;
  cal.core_cache_bytes = m.core_cache_bytes;
  std::vector<std::string> lines;
  std::vector<double> software;  // shared-memory classes' fixed times: no wire, only software
  for (const PairClassMeasurement& c : m.classes)
    if (c.shared_vertex && !c.alone.empty()) software.push_back(fit_line(c.alone).fixed_us);
  cal.per_message_us = median(software);
  topo::Router router(topo);
  std::vector<topo::VertexId> fitted_vertices;
  std::vector<topo::LinkId> fitted_links;
  for (const PairClassMeasurement& c : m.classes) {
    LineFit alone = fit_line(c.alone);
    if (!(alone.gbps > 0)) {
      // Nothing to write: the loader takes only positive rates, and the nominal ones stay.
      lines.push_back(fmt::format("{}: ranks {}-{} not fitted: the times did not grow with size in {} attempt(s) (a busy host?); "
                                  "its links keep their nominal rates",
                                  c.name, c.rank_a, c.rank_b, c.attempts));
      continue;
    }
    topo::Calibration::PairClass k{c.name, alone.fixed_us, alone.gbps, 0, alone.residual_percent};
    std::string line = fmt::format("{}: ranks {}-{} alone {:.2f} us + bytes / {:.2f} GB/s (fit within {:.0f}%{})", c.name, c.rank_a,
                                   c.rank_b, alone.fixed_us, alone.gbps, alone.residual_percent,
                                   c.attempts > 1 ? fmt::format(", {} attempts: noise", c.attempts) : "");
    if (c.shared_vertex) {
      // The simulator shares a vertex's local_bw_gbps among its concurrent copies: what k pairs
      // moved at once, in all.
      double shared = alone.gbps;
      if (c.concurrent_pairs >= 2 && !c.concurrent.empty()) {
        LineFit at_once = fit_line(c.concurrent);
        if (at_once.gbps > 0) shared = at_once.gbps * c.concurrent_pairs;
        k.residual_percent = std::max(k.residual_percent, at_once.residual_percent);
        line += fmt::format("; {} at once {:.2f} GB/s in all (fit within {:.0f}%)", c.concurrent_pairs, shared, at_once.residual_percent);
      }
      k.shared_bw_gbps = shared;
      if (shared > 0) {
        t.mutable_vertex(c.vertex).local_bw_gbps = shared;
        fitted_vertices.push_back(c.vertex);
      }
    } else if (alone.gbps > 0) {
      // The route's bottleneck links (and every link like them: same type and nominal rate) get the
      // fitted bandwidth; their latency takes what the fixed time leaves after the software's
      // overhead and the route's other links.
      topo::Path p = router.route_ranks(static_cast<topo::Rank>(c.rank_a), static_cast<topo::Rank>(c.rank_b));
      const topo::Link* slowest = nullptr;
      for (const topo::Hop& h : p.hops)
        if (!slowest || topo.link(h.link).bw_gbps < slowest->bw_gbps) slowest = &topo.link(h.link);
      if (slowest) {
        topo::LinkType type = slowest->type;
        double nominal = slowest->bw_gbps;
        int like = 0;
        double other_latency = 0;
        for (const topo::Hop& h : p.hops) {
          const topo::Link& l = topo.link(h.link);
          if (l.type == type && l.bw_gbps == nominal) ++like;
          else other_latency += l.latency_us;
        }
        double latency = std::max(0.0, (alone.fixed_us - cal.per_message_us - other_latency) / std::max(1, like));
        int changed = 0;
        for (topo::LinkId id = 0; id < topo.num_links(); ++id) {
          const topo::Link& l = topo.link(id);
          if (l.type != type || l.bw_gbps != nominal) continue;
          t.mutable_link(id).bw_gbps = alone.gbps;
          t.mutable_link(id).latency_us = latency;
          fitted_links.push_back(id);
          ++changed;
        }
        line += fmt::format("; {} {} link(s) of {:g} GB/s set to {:.2f} GB/s, {:.2f} us", changed, topo::to_string(type), nominal,
                            alone.gbps, latency);
      }
    }
    cal.classes.push_back(std::move(k));
    lines.push_back(std::move(line));
  }
  lines.push_back(fmt::format("tests: software overhead per message {:.2f} us; float32 reduction {:.2f} GB/s (every rank at once){}",
                              cal.per_message_us, cal.reduce_gbps,
                              cal.cores > 0 ? fmt::format("; {} core(s) per rank's CPU set", cal.cores) : ""));
  t.notes.push_back("calibrated: " + m.source);
  if (!m.busy.empty()) {
    lines.push_back("warning: " + m.busy);
    t.notes.push_back("calibration warning: " + m.busy);
  }
  t.calibration = std::move(cal);
  if (!m.plans.empty()) fit_to_plans(t, fitted_vertices, fitted_links, m.plans, lines);
  if (report) {
    report->clear();
    for (const std::string& l : lines) *report += l + "\n";
  }
  return t;
}

}  // namespace collkit::exec
