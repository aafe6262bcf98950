#include "collkit/plan/planner.h"

#include <nlohmann/json.hpp>

#include "collkit/core/error.h"

namespace collkit::plan {

namespace {

void stamp(PlanInfo& info, const topo::Topology& topo) {
  info.topo_name = topo.name;
  info.topo_fingerprint = topo.fingerprint_hex();
}

}  // namespace

Evaluation evaluate(const Request& req, const topo::Topology& topo, const AlgoOptions& opt, const SimOptions& sim) {
  check(req);
  if (static_cast<std::size_t>(req.nranks) > topo.num_ranks())
    throw InputError(std::to_string(req.nranks) + " ranks asked, the topology " + topo.name + " has " +
                     std::to_string(topo.num_ranks()));
  Evaluation ev;
  ev.bound = lower_bound(req, topo);
  for (const Algorithm* a : algorithms()) {
    Candidate c;
    c.algorithm = std::string(a->name());
    c.applicable = a->supports(req, &topo, &c.why_not);
    if (c.applicable) {
      c.plan = generate(a->name(), req, &topo, opt);
      // Too many ops to simulate in seconds: left out with the reason; it can still be generated
      // and simulated by name.
      double ops = static_cast<double>(c.plan->program(0).size()) * req.nranks;
      if (ops > sim.op_budget) {
        c.applicable = false;
        c.why_not = "about " + std::to_string(static_cast<long long>(ops / 1e6)) + " M ops, beyond auto's budget of " +
                    std::to_string(static_cast<long long>(sim.op_budget / 1e6)) + " M (generate it by name to simulate it)";
        c.plan.reset();
      } else {
        SimResult r = simulate(*c.plan, topo, sim);
        c.time_us = r.time_us;
        c.busbw_gbps = r.busbw_gbps;
        PlanInfo& info = c.plan->mutable_info();
        stamp(info, topo);
        info.predicted_us = r.time_us;
        info.bound_us = ev.bound.time_us();
        if (ev.best < 0 || c.time_us < ev.candidates[static_cast<std::size_t>(ev.best)].time_us)
          ev.best = static_cast<int>(ev.candidates.size());
      }
    }
    ev.candidates.push_back(std::move(c));
  }
  return ev;
}

std::unique_ptr<Plan> plan_for(std::string_view name, const Request& req, const topo::Topology* topo, const AlgoOptions& opt,
                               const SimOptions& sim) {
  if (name == "auto") {
    if (!topo) throw InputError("--algo auto needs a topology to simulate the candidates (give --topo)");
    Evaluation ev = evaluate(req, *topo, opt, sim);
    if (ev.best < 0) throw InputError("no algorithm can do " + std::string(to_string(req.coll)) + " on " + std::to_string(req.nranks) + " ranks");
    return std::move(ev.candidates[static_cast<std::size_t>(ev.best)].plan);
  }
  auto plan = generate(name, req, topo, opt);
  if (topo) {
    if (static_cast<std::size_t>(req.nranks) > topo->num_ranks())
      throw InputError(std::to_string(req.nranks) + " ranks asked, the topology " + topo->name + " has " +
                       std::to_string(topo->num_ranks()));
    PlanInfo& info = plan->mutable_info();
    stamp(info, *topo);
    info.predicted_us = simulate(*plan, *topo, sim).time_us;
    info.bound_us = lower_bound(req, *topo).time_us();
  }
  return plan;
}

std::vector<SweepRow> sweep(Collective coll, int nranks, int root, std::uint64_t min_bytes, std::uint64_t max_bytes,
                            std::uint64_t factor, const topo::Topology& topo, const AlgoOptions& opt, const SimOptions& sim) {
  if (min_bytes == 0) throw InputError("sweep: the smallest size must be > 0");
  if (max_bytes < min_bytes) throw InputError("sweep: the largest size is below the smallest");
  if (factor < 2) throw InputError("sweep: the step factor must be >= 2");
  std::vector<SweepRow> rows;
  bool sliced = coll == Collective::AllGather || coll == Collective::ReduceScatter || coll == Collective::AlltoAll;
  for (std::uint64_t b = min_bytes; b <= max_bytes; b *= factor) {
    std::uint64_t bytes = b;
    // Sizes that do not split over the ranks are rounded down to a multiple, as nccl-tests does.
    if (sliced) bytes -= bytes % static_cast<std::uint64_t>(nranks);
    if (bytes == 0) continue;
    rows.push_back({bytes, evaluate({coll, bytes, nranks, root}, topo, opt, sim)});
    if (b > max_bytes / factor) break;
  }
  return rows;
}

std::string tuning_table_json(const std::vector<SweepRow>& rows, Collective coll, int nranks, const topo::Topology& topo) {
  nlohmann::json ranges = nlohmann::json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Evaluation& ev = rows[i].eval;
    if (ev.best < 0) continue;
    const Candidate& c = ev.candidates[static_cast<std::size_t>(ev.best)];
    // A range covers sizes from this row up to just below the next row's size.
    std::uint64_t lo = i == 0 ? 0 : rows[i].bytes;
    std::uint64_t hi = i + 1 < rows.size() ? rows[i + 1].bytes - 1 : UINT64_MAX;
    int channels = c.plan ? c.plan->info().channels : 1;
    if (!ranges.empty() && ranges.back()["algorithm"] == c.algorithm && ranges.back()["channels"] == channels) {
      ranges.back()["max_bytes"] = hi;
      continue;
    }
    ranges.push_back({{"min_bytes", lo}, {"max_bytes", hi}, {"algorithm", c.algorithm}, {"channels", channels},
                      {"predicted_us_at_min", c.time_us}});
  }
  nlohmann::json j{{"schema", "collkit.tuning/1"},
                   {"collective", to_string(coll)},
                   {"nranks", nranks},
                   {"topology", {{"name", topo.name}, {"fingerprint", topo.fingerprint_hex()}}},
                   {"ranges", ranges}};
  return j.dump(2) + "\n";
}

}  // namespace collkit::plan
