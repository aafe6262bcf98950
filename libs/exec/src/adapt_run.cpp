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
#include "collkit/plan/simulate.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/topology.h"

namespace collkit::exec {

std::unique_ptr<plan::Plan> adapted_plan(const plan::Request& req, const Adaptation& a) {
  const char* name = a.straggler >= 0 ? "straggler" : "ring";
  auto generated = plan::generate(name, req, nullptr);
  if (a.straggler < 0 && a.order.empty()) return generated;
  plan::PlanInfo info = generated->info();
  if (a.straggler >= 0) info.params["straggler"] = std::to_string(a.straggler);
  else info.params["order"] = fmt::format("{}", fmt::join(a.order, ","));
  return std::make_unique<plan::GeneratedPlan>(std::move(info), plan::algorithm(name));
}

double predict_us(const plan::Plan& p, const plan::Request& req, const std::vector<std::vector<double>>& extra, double healthy_us) {
  int n = req.nranks;
  auto mesh = [n](auto bw_of) {
    topo::Topology t;
    for (int r = 0; r < n; ++r) {
      topo::Vertex v;
      v.id = fmt::format("rank{}", r);
      v.kind = topo::VertexKind::Gpu;
      v.host = "adapt";
      t.add_rank(t.add_vertex(v));
    }
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) {
        topo::Link l;
        l.a = static_cast<topo::VertexId>(a);
        l.b = static_cast<topo::VertexId>(b);
        l.type = topo::LinkType::Pcie;
        l.bw_gbps = bw_of(static_cast<std::size_t>(a), static_cast<std::size_t>(b));
        t.add_link(l);
      }
    return t;
  };
  if (!(healthy_us > 0)) return 0;
  auto ring = adapted_plan(req, {});
  double at_1gbps = plan::simulate(*ring, mesh([](std::size_t, std::size_t) { return 1.0; })).time_us;
  if (!(at_1gbps > 0)) return 0;
  double base_s_per_byte = healthy_us / at_1gbps * 1e-9;  // a ring at healthy_us: the rate of its links
  return plan::simulate(p, mesh([&extra, base_s_per_byte](std::size_t a, std::size_t b) {
                          double added = a < extra.size() && b < extra[a].size() ? extra[a][b] : 0;
                          return 1e-9 / (base_s_per_byte + added * 1e-6 / 1048576.0);
                        }))
      .time_us;
}

namespace {

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
// after each, the ranks exchange their per-peer times (every rank then decides alike). Once the
// Detector names slow pairs, the candidates (candidates()) are predicted with the slowdown put into
// the topology (predict_us()); those predicted faster than the plan running are tried in that
// order, each for opt.trial_iters iterations, and kept only when its iterations beat the ones of
// the plan it would replace by more than the noise (judge_trial()), else rolled back. Every rank
// decides from the same gathered times, so all switch alike. What each iteration ran and what was
// decided is written to `events` (rank 0 prints it).
void detect_in_iterations(Backend& backend, World& world, const plan::Request& req, const Job& job, const AdaptOptions& opt, AdaptRow& row,
                          std::vector<std::pair<int, int>>& found, std::vector<std::string>& events) {
  int n = world.size();
  bool allreduce = req.coll == plan::Collective::AllReduce;
  Adaptation current;  // the plain ring
  std::vector<double> current_us;  // its iterations since it was set up or kept
  Adaptation trying;
  bool in_trial = false;
  std::vector<double> trial_us;
  int trial_from = 0;
  std::vector<Adaptation> queue, rejected;
  auto set_up = [&](const Adaptation& a) {
    auto p = adapted_plan(req, a);
    backend.setup(Setup{p.get(), job, InPlaceMode::Direct, opt.timeout_s});
    return p;
  };
  auto p = set_up(current);
  backend.time_sends(true);
  Detector detector(n, opt.min_gap), before_trial(n, opt.min_gap);
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
    (in_trial ? trial_us : current_us).push_back(slowest);
    // A trial done: kept, or back to the plan it was measured against.
    bool rolled_back = false;
    if (in_trial && static_cast<int>(trial_us.size()) >= opt.trial_iters) {
      TrialVerdict v = judge_trial(current_us, trial_us);
      events.push_back(fmt::format("after iteration {}: {} {} against {}", it, trying.describe(), v.describe(), current.describe()));
      in_trial = false;
      if (v.keep) {
        current = trying;
        current_us = trial_us;
        row.recovered_at = trial_from;
      } else {
        rejected.push_back(trying);
        ++row.rolled_back;
        p = set_up(current);
        // What the rolled-back plan's sends showed goes with it: a send's time includes its wait
        // for the peer, and a plan with other dependencies (the straggler plan's fast ring waits
        // on the sums) shows waits as slow pairs that the plan kept would not have.
        detector = before_trial;
        rolled_back = true;
      }
    }
    if (!rolled_back && detector.observe(rows)) {
      if (row.detected_at == 0) row.detected_at = it;
      std::string named;
      for (auto [a, b] : detector.found()) named += fmt::format(" {}-{}", a, b);
      int slow = slow_rank(detector.found());
      auto in_slow = std::count_if(detector.found().begin(), detector.found().end(),
                                   [slow](const auto& pr) { return pr.first == slow || pr.second == slow; });
      // The candidates, predicted with what was found put into the topology; those predicted
      // faster than the plan running (by 5%, the model's own error aside) are queued fastest first.
      std::vector<std::vector<double>> extra = extra_us_per_mib(detector.best(), detector.found());
      auto current_plan = adapted_plan(req, current);
      double now_us = predict_us(*current_plan, req, extra, row.healthy_us);
      std::vector<std::pair<double, Adaptation>> ranked;
      std::string predicted;
      for (const Adaptation& c : candidates(n, detector.found(), allreduce)) {
        if (c == current || std::find(rejected.begin(), rejected.end(), c) != rejected.end()) continue;
        auto cp = adapted_plan(req, c);
        double us = predict_us(*cp, req, extra, row.healthy_us);
        predicted += fmt::format("; {} {:.0f} us", c.describe(), us);
        // No prediction (no healthy time to scale the model to): every candidate is tried, in order.
        if (!(now_us > 0)) ranked.push_back({static_cast<double>(ranked.size()), c});
        else if (us > 0 && us < 0.95 * now_us) ranked.push_back({us, c});
      }
      std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      queue.clear();
      for (const auto& r : ranked)
        if (!(in_trial && r.second == trying)) queue.push_back(r.second);
      events.push_back(
          fmt::format("after iteration {}: slow pairs{}{}; predicted: {} {:.0f} us (running){}; {}", it, named,
                      slow >= 0 ? fmt::format(" (rank {} in {} of them)", slow, in_slow) : "", current.describe(), now_us, predicted,
                      queue.empty() ? (in_trial ? "the trial goes on" : "the plan stays") : "to try: " + queue.front().describe()));
    }
    // The next candidate, once the plan it is measured against has as many iterations of its own as
    // a trial runs (both sides then weigh alike in judge_trial()).
    if (!in_trial && !queue.empty() && static_cast<int>(current_us.size()) >= opt.trial_iters && it < opt.online_iters) {
      before_trial = detector;
      trying = queue.front();
      queue.erase(queue.begin());
      in_trial = true;
      trial_us.clear();
      trial_from = it + 1;
      ++row.tried;
      p = set_up(trying);
      events.push_back(fmt::format("iteration {}: trying {}", it + 1, trying.describe()));
    }
  }
  if (in_trial) {
    // Cut short by the end of the run: kept only when what it ran already says so.
    TrialVerdict v = judge_trial(current_us, trial_us);
    events.push_back(fmt::format("end of the run: {} {} against {} ({} of {} trial iterations)", trying.describe(), v.describe(),
                                 current.describe(), trial_us.size(), opt.trial_iters));
    if (v.keep) {
      current = trying;
      row.recovered_at = trial_from;
    } else {
      ++row.rolled_back;
      detector = before_trial;
    }
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
      rep.found = slow_pairs(rep.probe, opt.min_gap);
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
    auto plain = adapted_plan(r.req, {});
    AdaptRow row;
    row.bytes = r.req.bytes;
    backend.inject({});
    row.healthy_us = time_plan(backend, world, *plain, job, opt);
    backend.inject(opt.injection);
    std::vector<std::string> events;
    if (opt.probe) row.adapted = probed;
    else detect_in_iterations(backend, world, r.req, job, opt, row, rep.found, events);
    row.degraded_us = time_plan(backend, world, *plain, job, opt);
    auto adapted = adapted_plan(r.req, row.adapted);
    // A real collkit plan: the verifier's execution of it, then a checked run under the faults.
    plan::VerifyResult verified = plan::verify(*adapted);
    if (!verified.ok) throw Error("adapt: the adapted plan (" + row.adapted.describe() + ") fails verification: " + verified.error);
    // Every candidate rolled back (or none tried): the plan kept is the degraded ring itself, whose
    // time it has; timing it twice would only show the noise as a recovery.
    row.adapted_us = row.adapted == Adaptation{} ? row.degraded_us : time_plan(backend, world, *adapted, job, opt);
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
                         opt.probe ? "probe" : at(row.recovered_at), row.wrong,
                         row.adapted.describe() +
                             (row.rolled_back > 0 ? fmt::format(" ({} tried, {} rolled back)", row.tried, row.rolled_back) : ""))
          << std::flush;
    }
    rep.rows.push_back(row);
  }
  backend.inject({});
  return rep;
}

}  // namespace collkit::exec
