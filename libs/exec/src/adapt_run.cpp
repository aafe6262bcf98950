// coll-run adapt: faults injected, found by the probe, a ring re-planned around them, and the three
// measured side by side (adapt.h).

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <ostream>

#include "collkit/core/error.h"
#include "collkit/core/size.h"
#include "collkit/exec/adapt.h"
#include "collkit/exec/backend.h"
#include "collkit/plan/algorithm.h"

namespace collkit::exec {

namespace {

// A ring plan of the request, in the given order (identity when empty).
std::unique_ptr<plan::Plan> ring(const plan::Request& req, const std::vector<int>& order) {
  auto generated = plan::generate("ring", req, nullptr);
  if (order.empty()) return generated;
  plan::PlanInfo info = generated->info();
  std::string text;
  for (std::size_t i = 0; i < order.size(); ++i) text += (i ? "," : "") + std::to_string(order[i]);
  info.params["order"] = text;
  return std::make_unique<plan::GeneratedPlan>(std::move(info), plan::algorithm("ring"));
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

}  // namespace

AdaptReport adapt_run(const AdaptOptions& opt, Backend& backend, World& world, std::ostream& out) {
  if (opt.coll != plan::Collective::AllReduce && opt.coll != plan::Collective::AllGather && opt.coll != plan::Collective::ReduceScatter)
    throw InputError("adapt: re-plans rings: --coll must be allreduce, allgather or reducescatter");
  if (opt.iters < 1) throw InputError("-n: at least 1 iteration");
  int n = world.size();
  if (n < 3) throw InputError("adapt: a ring has another order only on 3 ranks or more (mpirun -np 3 or more)");
  bool root = world.rank() == 0;
  AdaptReport rep;

  // Find: the probe, with the faults in place, until it names slow pairs (at most three runs).
  backend.inject(opt.injection);
  for (rep.probes = 1; rep.probes <= 3; ++rep.probes) {
    rep.probe = gather_receive_times(world, backend.probe(opt.probe_bytes, opt.timeout_s), opt.timeout_s);
    rep.found = slow_pairs(rep.probe, opt.threshold);
    if (!rep.found.empty()) break;
  }
  rep.probes = std::min(rep.probes, 3);
  rep.order = ring_order_avoiding(n, rep.found);
  if (root) {
    out << fmt::format("# adapt: {} ranks, faults {}; probe of {} per pair, {} run(s) of {} shifts\n", n,
                       opt.injection.empty() ? "none injected (what the probe finds is the network itself)" : "injected",
                       format_size_bytes(opt.probe_bytes), rep.probes, n - 1);
    for (int from = 0; from < n; ++from) {
      std::string row;
      for (int to = 0; to < n; ++to)
        row += from == to ? fmt::format(" {:>9}", "-")
                          : fmt::format(" {:>9.1f}", rep.probe[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)]);
      out << fmt::format("# probe from rank {:<3} (us to each rank):{}\n", from, row);
    }
    std::string found;
    for (auto [a, b] : rep.found) found += fmt::format(" {}-{}", a, b);
    out << "# slow pairs found:" << (found.empty() ? " none" : found) << "\n";
    // Every pair with one rank slow, and only those: that rank is slow, not a link.
    for (int r = 0; r < n && rep.found.size() == static_cast<std::size_t>(n - 1); ++r) {
      bool all = std::all_of(rep.found.begin(), rep.found.end(), [r](const auto& p) { return p.first == r || p.second == r; });
      if (all) out << fmt::format("# rank {} is in every slow pair: a slow rank, which no ring order routes around\n", r);
    }
    std::string order;
    for (int r : rep.order) order += (order.empty() ? "" : ",") + std::to_string(r);
    out << "# adapted ring order: " << order << "\n";
    out << fmt::format("# {:>10}  {:>12}  {:>12}  {:>12}  {:>10}\n", "size", "healthy(us)", "degraded(us)", "adapted(us)", "recovered");
    out << std::flush;
  }

  for (std::uint64_t bytes : opt.sizes) {
    plan::Request req{opt.coll, bytes, n, 0, 4};
    plan::Rounded r = plan::round_to_elements(req);
    Job job{r.req, DataType::Float32, RedOp::Sum};
    auto plain = ring(r.req, {});
    auto adapted = ring(r.req, rep.order);
    AdaptRow row;
    row.bytes = r.req.bytes;
    backend.inject({});
    row.healthy_us = time_plan(backend, world, *plain, job, opt);
    backend.inject(opt.injection);
    row.degraded_us = time_plan(backend, world, *plain, job, opt);
    row.adapted_us = time_plan(backend, world, *adapted, job, opt);
    // A loss within a tenth of the healthy time is noise on a shared machine: nothing to recover.
    bool lost = row.degraded_us > 1.1 * row.healthy_us;
    if (root)
      out << fmt::format("  {:>10}  {:>12.1f}  {:>12.1f}  {:>12.1f}  {:>10}\n", format_size_bytes(row.bytes), row.healthy_us,
                         row.degraded_us, row.adapted_us, lost ? fmt::format("{:.0f}%", row.recovered() * 100) : "(no loss)")
          << std::flush;
    rep.rows.push_back(row);
  }
  backend.inject({});
  return rep;
}

}  // namespace collkit::exec
