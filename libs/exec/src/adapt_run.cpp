// coll-run adapt: faults injected, found from the collective's own iterations (or a probe), the
// plan re-planned around them (a ring order, or the straggler plan around a slow rank), and the
// three measured side by side (adapt.h).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <ostream>
#include <sstream>

#include "collkit/core/error.h"
#include "collkit/core/size.h"
#include "collkit/exec/adapt.h"
#include "collkit/exec/backend.h"
#include "collkit/exec/pattern.h"
#include "collkit/exec/world.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/verify.h"

namespace collkit::exec {

namespace {

// The adapted plan of the request: a ring plan in the given order (identity when empty), or the
// straggler-aware AllReduce around one rank.
std::unique_ptr<plan::Plan> make_plan(const plan::Request& req, const Adaptation& a) {
  const char* name = a.straggler >= 0 ? "straggler" : "ring";
  auto generated = plan::generate(name, req, nullptr);
  if (a.straggler < 0 && a.order.empty()) return generated;
  plan::PlanInfo info = generated->info();
  if (a.straggler >= 0) info.params["straggler"] = std::to_string(a.straggler);
  else info.params["order"] = fmt::format("{}", fmt::join(a.order, ","));
  return std::make_unique<plan::GeneratedPlan>(std::move(info), plan::algorithm(name));
}

// The plan's time per collective on this job, the slowest rank's.
double time_plan(Backend& backend, World& world, const plan::Plan& p, const Job& job, const AdaptOptions& opt) {
  backend.setup(Setup{&p, job, InPlaceMode::Direct, opt.timeout_s});
  for (int i = 0; i < opt.warmup; ++i) backend.run(Subject::Plan, Placement::OutOfPlace);
  backend.synchronize();
  world.barrier(opt.timeout_s, "adapt: before timing");
  double start = World::now();
  for (int i = 0; i < opt.iters; ++i) backend.run(Subject::Plan, Placement::OutOfPlace);
  backend.synchronize();
  double mine = (World::now() - start) * 1e6 / opt.iters;
  return world.max(mine, opt.timeout_s);
}

// One run of the plan set up last on fresh inputs, every element checked: #wrong over all ranks.
std::uint64_t checked_run(Backend& backend, World& world, const Job& job, const AdaptOptions& opt) {
  int rank = world.rank();
  std::vector<std::byte> in(input_count(job) * size_of(job.type)), out(output_count(job) * size_of(job.type));
  fill_input(job, rank, in.data());
  backend.write_input(0, Placement::OutOfPlace, in);
  backend.run(Subject::Plan, Placement::OutOfPlace);
  backend.synchronize();
  backend.read_output(0, Placement::OutOfPlace, Subject::Plan, out);
  return world.sum(count_wrong(job, rank, out.data()), opt.timeout_s);
}

// Every rank's values gathered: all[rank] = that rank's `mine`.
std::vector<std::vector<double>> gather_rows(const World& world, const std::vector<double>& mine, double timeout_s) {
  std::ostringstream text;
  text.precision(17);
  for (double v : mine) text << v << ' ';
  std::vector<std::string> all = world.allgather(text.str(), timeout_s);
  std::vector<std::vector<double>> rows(all.size(), std::vector<double>(mine.size(), 0));
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::istringstream in(all[r]);
    for (double& v : rows[r]) in >> v;
  }
  return rows;
}

// Detection from iterations: the degraded ring runs iteration by iteration with its sends timed;
// after each, the ranks exchange their per-peer times (every rank then decides alike), and once
// the Detector names slow pairs the adapted plan is set up and runs from the next iteration on.
// What each iteration ran and what was named is written to `events` (rank 0 prints it).
void detect_in_iterations(Backend& backend, World& world, const plan::Request& req, const Job& job, const AdaptOptions& opt, AdaptRow& row,
                          std::vector<std::pair<int, int>>& found, std::vector<std::string>& events) {
  int n = world.size();
  Adaptation current;  // the plain ring
  auto p = make_plan(req, current);
  backend.setup(Setup{p.get(), job, InPlaceMode::Direct, opt.timeout_s});
  backend.time_sends(true);
  Detector detector(n, opt.threshold);
  for (int it = 1; it <= opt.online_iters; ++it) {
    double start = World::now();
    backend.run(Subject::Plan, Placement::OutOfPlace);
    backend.synchronize();
    std::vector<double> mine = backend.send_times();
    mine.push_back((World::now() - start) * 1e6);
    std::vector<std::vector<double>> rows = gather_rows(world, mine, opt.timeout_s);
    double slowest = 0;
    for (const auto& r : rows) slowest = std::max(slowest, r.back());
    row.iter_us.push_back(slowest);
    if (!detector.observe(rows)) continue;
    if (row.detected_at == 0) row.detected_at = it;
    std::string named;
    for (auto [a, b] : detector.found()) named += fmt::format(" {}-{}", a, b);
    Adaptation next = adapt_to(n, detector.found(), req.coll == plan::Collective::AllReduce);
    int slow = slow_rank(detector.found());
    auto in_slow = std::count_if(detector.found().begin(), detector.found().end(),
                                 [slow](const auto& pr) { return pr.first == slow || pr.second == slow; });
    events.push_back(fmt::format("after iteration {}: slow pairs{}{}; {}", it, named,
                                 slow >= 0 ? fmt::format(" (rank {} in {} of them)", slow, in_slow) : "",
                                 next == current ? "the plan stays" : "re-planned: " + next.describe()));
    if (next == current) continue;
    current = next;
    p = make_plan(req, current);
    backend.setup(Setup{p.get(), job, InPlaceMode::Direct, opt.timeout_s});
    row.recovered_at = it + 1;
  }
  backend.time_sends(false);
  for (int from = 0; from < n; ++from) {
    std::string line;
    for (int to = 0; to < n; ++to) {
      double t = detector.best()[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
      line += from == to || t <= 0 ? fmt::format(" {:>8}", "-") : fmt::format(" {:>8.0f}", t);
    }
    events.push_back(fmt::format("best send from rank {:<3} (us per MiB to each rank):{}", from, line));
  }
  found = detector.found();
  row.adapted = current;
}

}  // namespace

AdaptReport adapt_run(const AdaptOptions& opt, Backend& backend, World& world, std::ostream& out) {
  if (opt.coll != plan::Collective::AllReduce && opt.coll != plan::Collective::AllGather && opt.coll != plan::Collective::ReduceScatter)
    throw InputError("adapt: re-plans rings: --coll must be allreduce, allgather or reducescatter");
  if (opt.iters < 1) throw InputError("-n: at least 1 iteration");
  if (!opt.probe && opt.online_iters < 2) throw InputError("--detect-iters: at least 2 iterations (a pair is named when two agree)");
  int n = world.size();
  if (n < 3) throw InputError("adapt: a ring has another order only on 3 ranks or more (mpirun -np 3 or more)");
  bool root = world.rank() == 0;
  bool allreduce = opt.coll == plan::Collective::AllReduce;
  AdaptReport rep;
  Adaptation probed;

  backend.inject(opt.injection);
  if (root)
    out << fmt::format(
        "# adapt: {} ranks, faults {}; found {}\n", n,
        opt.injection.empty() ? "none injected (what is found is the network itself)" : "injected",
        opt.probe
            ? "by a probe before the sizes"
            : fmt::format("from the degraded ring's own iterations at every size ({} iterations, sends timed per peer)", opt.online_iters));
  if (opt.probe) {
    // Find: the probe, with the faults in place, until it names slow pairs (at most three runs).
    for (rep.probes = 1; rep.probes <= 3; ++rep.probes) {
      rep.probe = gather_receive_times(world, backend.probe(opt.probe_bytes, opt.timeout_s), opt.timeout_s);
      rep.found = slow_pairs(rep.probe, opt.threshold);
      if (!rep.found.empty()) break;
    }
    rep.probes = std::min(rep.probes, 3);
    probed = adapt_to(n, rep.found, allreduce);
    rep.order = ring_order_avoiding(n, rep.found);
    if (root) {
      out << fmt::format("# probe of {} per pair, {} run(s) of {} shifts\n", format_size_bytes(opt.probe_bytes), rep.probes, n - 1);
      for (int from = 0; from < n; ++from) {
        std::string line;
        for (int to = 0; to < n; ++to)
          line += from == to ? fmt::format(" {:>9}", "-")
                             : fmt::format(" {:>9.1f}", rep.probe[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)]);
        out << fmt::format("# probe from rank {:<3} (us to each rank):{}\n", from, line);
      }
      std::string found;
      for (auto [a, b] : rep.found) found += fmt::format(" {}-{}", a, b);
      out << "# slow pairs found:" << (found.empty() ? " none" : found) << "\n";
      int slow = slow_rank(rep.found);
      if (slow >= 0 && rep.found.size() == static_cast<std::size_t>(n - 1) &&
          std::all_of(rep.found.begin(), rep.found.end(), [slow](const auto& pr) { return pr.first == slow || pr.second == slow; }))
        out << fmt::format("# rank {} is in every slow pair: a slow rank, which no ring order routes around\n", slow);
      if (probed.straggler >= 0) out << "# adapted: " << probed.describe() << "\n";
      else out << "# adapted ring order: " << fmt::format("{}", fmt::join(probed.order, ",")) << "\n";
    }
  }
  if (root) {
    out << fmt::format("# {:>8}  {:>11}  {:>12}  {:>11}  {:>9}  {:>8}  {:>9}  {:>6}  {}\n", "size", "healthy(us)", "degraded(us)",
                       "adapted(us)", "recovered", "detected", "recovered", "#wrong", "adapted plan");
    out << fmt::format("# {:>8}  {:>11}  {:>12}  {:>11}  {:>9}  {:>8}  {:>9}  {:>6}\n", "", "", "", "", "", "at iter", "at iter", "")
        << std::flush;
  }

  for (std::uint64_t bytes : opt.sizes) {
    plan::Request req{opt.coll, bytes, n, 0, 4};
    plan::Rounded r = plan::round_to_elements(req);
    Job job{r.req, DataType::Float32, RedOp::Sum};
    auto plain = make_plan(r.req, {});
    AdaptRow row;
    row.bytes = r.req.bytes;
    backend.inject({});
    row.healthy_us = time_plan(backend, world, *plain, job, opt);
    backend.inject(opt.injection);
    std::vector<std::string> events;
    if (opt.probe) row.adapted = probed;
    else detect_in_iterations(backend, world, r.req, job, opt, row, rep.found, events);
    row.degraded_us = time_plan(backend, world, *plain, job, opt);
    auto adapted = make_plan(r.req, row.adapted);
    // A real collkit plan: the verifier's execution of it, then a checked run under the faults.
    plan::VerifyResult verified = plan::verify(*adapted);
    if (!verified.ok) throw Error("adapt: the adapted plan (" + row.adapted.describe() + ") fails verification: " + verified.error);
    row.adapted_us = time_plan(backend, world, *adapted, job, opt);
    row.wrong = checked_run(backend, world, job, opt);
    // A loss within a tenth of the healthy time is noise on a shared machine: nothing to recover.
    bool lost = row.degraded_us > 1.1 * row.healthy_us;
    if (root) {
      if (!opt.probe) {
        std::string iters;
        for (std::size_t i = 0; i < row.iter_us.size(); ++i) iters += fmt::format(" {:.0f}", row.iter_us[i]);
        out << fmt::format("# {}: detection run, us per iteration:{}\n", format_size_bytes(row.bytes), iters);
        for (const std::string& e : events) out << "#   " << e << "\n";
      }
      auto at = [](int i) { return i > 0 ? std::to_string(i) : std::string("-"); };
      out << fmt::format("  {:>8}  {:>11.1f}  {:>12.1f}  {:>11.1f}  {:>9}  {:>8}  {:>9}  {:>6}  {}\n", format_size_bytes(row.bytes),
                         row.healthy_us, row.degraded_us, row.adapted_us,
                         lost ? fmt::format("{:.0f}%", row.recovered() * 100) : "(no loss)", opt.probe ? "probe" : at(row.detected_at),
                         opt.probe ? "probe" : at(row.recovered_at), row.wrong, row.adapted.describe())
          << std::flush;
    }
    rep.rows.push_back(row);
  }
  backend.inject({});
  return rep;
}

}  // namespace collkit::exec
