#include "collkit/plan/planner.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>

#include "collkit/core/error.h"
#include "collkit/plan/tuning.h"
#include "simulate_memo.h"
#include "simulate_symmetry.h"

namespace collkit::plan {

namespace {

void stamp(PlanInfo& info, const topo::Topology& topo) {
  info.topo_name = topo.name;
  info.topo_fingerprint = topo.fingerprint_hex();
}

// The same with the fingerprint already computed (it hashes the whole topology: 10 ms at 16384
// GPUs, once per candidate kept).
void stamp(PlanInfo& info, const topo::Topology& topo, const std::string& fingerprint_hex) {
  info.topo_name = topo.name;
  info.topo_fingerprint = fingerprint_hex;
}

}  // namespace

namespace {

constexpr double kMinGain = 1e-3;

// The knobs the user fixed on the command line are not searched.
bool fixed_by_user(const AlgoOptions& opt, const std::string& knob) {
  if (knob == "channels") return opt.channels > 0;
  if (knob == "pipeline") return opt.pipeline > 0;
  if (knob == "bidirectional") return opt.bidirectional;
  if (knob == "inter") return !opt.inter.empty();
  return false;
}

// Generates and simulates `a` with `opt` into `c` when it beats what c holds (or c holds nothing).
// False when the plan is beyond the op budget (c.why_not says so if c has nothing yet).
struct Trial {
  const Request& req;
  const topo::Topology& topo;
  const SimOptions& sim;
  const SearchOptions& search;
  const Bound& bound;
  int& tried;
  std::string fingerprint;  // topo's, hex
  sim::TimeMemo& memo;

  bool run(const Algorithm& a, const AlgoOptions& opt, Candidate& c) {
    std::unique_ptr<Plan> plan = generate(a.name(), req, &topo, opt);
    // Too many ops to simulate in seconds: left out with the reason; it can still be generated
    // and simulated by name.
    const auto per_rank = static_cast<double>(std::max<std::size_t>(1, plan->program(0).size()));
    double ops = per_rank * req.nranks;
    auto millions = [](double x) { return std::to_string(static_cast<long long>(x / 1e6)); };
    if (ops > sim.op_budget) {
      if (!c.plan)
        c.why_not = "about " + millions(ops) + " M ops, beyond auto's budget of " + millions(sim.op_budget) +
                    " M (generate it by name to simulate it)";
      return false;
    }
    // Past a few million ops only a plan that folds (docs/plan.md, Symmetry) simulates in
    // seconds: a 1152-rank ring whose chunks are too small to fold runs 45 s.
    std::optional<sim::Fold> fold;
    if (sim.fold_symmetry) fold = sim::fold(*plan, topo, *sim.routes, sim.folds.get());
    if (ops > sim.unfolded_op_budget && sim.fold_symmetry && !fold) {
      // Once, at the options the search starts from (its first trial): its knobs are not searched.
      // Not where its ops carry little (a ring of a thousand ranks at 1 MiB: 100-byte steps,
      // thousands deep, behind every latency-bound plan), which would take seconds for nothing.
      double per_op = static_cast<double>(req.bytes) / per_rank;
      if (c.plan || ops > sim.unfolded_once_op_budget || per_op < sim.unfolded_once_min_bytes) {
        if (!c.plan)
          c.why_not = "about " + millions(ops) + " M ops with no symmetry to fold them by, beyond auto's budget of " +
                      (ops > sim.unfolded_once_op_budget
                           ? millions(sim.unfolded_once_op_budget) + " M for such plans"
                           : millions(sim.unfolded_op_budget) + " M for such plans of ops under " +
                                 std::to_string(static_cast<long long>(sim.unfolded_once_min_bytes / 1024)) + " KiB") +
                      " (generate it by name to simulate it)";
        return false;
      }
      c.not_searched = "about " + millions(ops) + " M ops that do not fold, simulated once";
    }
    // Only the time is read here (the fold is found above, so simulated_us() is not used): a
    // plan simulated before in this search (by synth's own search, or at another knob value that
    // laid the same plan out) is not simulated again.
    SimResult r;
    std::string key = sim::TimeMemo::key(*plan, sim);
    if (std::optional<double> us = memo.find(key)) {
      r.time_us = *us;
      r.algbw_gbps = algbw_gbps(req.bytes, r.time_us);
      r.busbw_gbps = r.algbw_gbps * busbw_factor(req.coll, req.nranks);
    } else {
      r = sim::simulate_folded(*plan, topo, time_only(sim), fold);
      memo.keep(std::move(key), r.time_us);
    }
    ++tried;
    ++c.tried;
    if (search.on_plan) search.on_plan(tried);
    // A knob setting replaces the plan only when it gains more than 0.1%: near ties keep the
    // simpler plan (fewer channels and slices, fewer ops to run).
    if (c.plan && r.time_us >= c.time_us * (1 - kMinGain)) return true;
    c.time_us = r.time_us;
    c.busbw_gbps = r.busbw_gbps;
    PlanInfo& info = plan->mutable_info();
    stamp(info, topo, fingerprint);
    info.predicted_us = r.time_us;
    info.bound_us = bound.time_us();
    c.plan = std::move(plan);
    return true;
  }
};

std::string knob_text(const std::vector<std::pair<std::string, std::string>>& set) {
  std::string s;
  for (const auto& [k, v] : set) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

AlgoOptions with_knob(AlgoOptions opt, const std::string& name, const std::string& value) {
  auto integer = [&]() {
    int v = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || p != value.data() + value.size() || v < 0)
      throw InputError("knob " + name + "=" + value + ": expected an integer >= 0");
    return v;
  };
  if (name == "channels") opt.channels = integer();
  else if (name == "pipeline") opt.pipeline = integer();
  else if (name == "bidirectional") opt.bidirectional = integer() != 0;
  else if (name == "inter") opt.inter = value;
  else throw InputError("unknown knob \"" + name + "\" (known: channels, pipeline, bidirectional, inter)");
  return opt;
}

namespace {
// A plan for more ranks than the topology maps cannot be generated, simulated or bounded on it.
void check_fits(const Request& req, const topo::Topology& topo) {
  if (static_cast<std::size_t>(req.nranks) > topo.num_ranks())
    throw InputError(std::to_string(req.nranks) + " ranks asked, the topology " + topo.name + " has " + std::to_string(topo.num_ranks()));
}
}  // namespace

Evaluation evaluate(const Request& req, const topo::Topology& topo, const AlgoOptions& opt, const SimOptions& sim_options,
                    const SearchOptions& search) {
  check(req);
  // The candidates run between the same ranks: their routes are found once, for all.
  SimOptions sim = sim_options;
  check_fits(req, topo);
  sim.routes = sim::route_cache(topo, sim_options);
  sim.folds = sim::fold_cache(sim);  // and their symmetry checks shared
  Evaluation ev;
  ev.bound = lower_bound(req, topo);
  // The candidates' simulated times, kept for the search (simulate_memo.h); one already in force
  // for this topology (a search inside another) is shared.
  sim::TimeMemo memo(topo, sim);
  Trial trial{req, topo, sim, search, ev.bound, ev.tried, topo.fingerprint_hex(), *sim::TimeMemo::in_force(topo)};
  auto best_index = [&] {
    ev.best = -1;
    for (std::size_t i = 0; i < ev.candidates.size(); ++i)
      if (ev.candidates[i].applicable &&
          (ev.best < 0 || ev.candidates[i].time_us < ev.candidates[static_cast<std::size_t>(ev.best)].time_us))
        ev.best = static_cast<int>(i);
  };
  // Every algorithm at the options given.
  for (const Algorithm* a : algorithms()) {
    Candidate c;
    c.algorithm = std::string(a->name());
    c.applicable = a->in_auto(req, &topo, &c.why_not);
    if (c.applicable) c.applicable = trial.run(*a, opt, c);
    ev.candidates.push_back(std::move(c));
  }
  best_index();
  // The most promising over their knobs, one knob at a time: each value of a knob with the
  // others at their best so far, kept where it helps; done once the best is as good as the
  // bound allows (to within close_enough).
  auto close = [&] {
    double b = ev.bound.time_us();
    return ev.best >= 0 && b > 0 && ev.candidates[static_cast<std::size_t>(ev.best)].time_us <= b * (1 + search.close_enough);
  };
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < ev.candidates.size(); ++i)
    if (ev.candidates[i].applicable) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return ev.candidates[x].time_us < ev.candidates[y].time_us; });
  if (order.size() > static_cast<std::size_t>(std::max(0, search.search_top)))
    order.resize(static_cast<std::size_t>(std::max(0, search.search_top)));
  double first_best = order.empty() ? 0 : ev.candidates[order.front()].time_us;
  for (std::size_t i : order) {
    if (close()) break;
    Candidate& c = ev.candidates[i];
    if (!c.not_searched.empty()) continue;  // simulated once: too big to search (Trial::run)
    const Algorithm& a = algorithm(c.algorithm);
    const std::vector<Knob> knobs = a.knobs(req, &topo);
    if (first_best > 0 && c.time_us > first_best * search.search_within && !knobs.empty()) {
      c.not_searched = num(c.time_us / first_best) + " x the best";
      continue;
    }
    AlgoOptions cur = opt;
    std::vector<std::pair<std::string, std::string>> chosen;
    for (const Knob& k : knobs) {
      if (fixed_by_user(opt, k.name) || k.values.empty()) continue;
      std::string best_value = k.values.front();
      for (std::size_t v = 1; v < k.values.size(); ++v) {
        double before = c.time_us;
        if (trial.run(a, with_knob(cur, k.name, k.values[v]), c) && c.time_us < before) best_value = k.values[v];
      }
      cur = with_knob(cur, k.name, best_value);
      chosen.emplace_back(k.name, best_value);
    }
    // The searched knobs as the best plan states them (a default "0" reads as what it became).
    std::vector<std::pair<std::string, std::string>> stated;
    for (const auto& [k, v] : chosen) {
      auto it = c.plan->info().params.find(k);
      stated.emplace_back(k, it != c.plan->info().params.end() ? it->second
                             : k == "channels"                 ? std::to_string(c.plan->info().channels)
                                                               : v);
    }
    c.knobs = knob_text(stated);
    best_index();
  }
  return ev;
}

std::string Evaluation::why() const {
  if (best < 0) return "no algorithm applies";
  const Candidate& b = candidates[static_cast<std::size_t>(best)];
  std::string s = b.algorithm + (b.knobs.empty() ? "" : " (" + b.knobs + ")") + ": " + num(b.time_us) + " us";
  if (bound.time_us() > 0) s += ", " + num(gap_percent(b.time_us, bound)) + "% over the bound";
  int second = -1;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (static_cast<int>(i) != best && candidates[i].applicable &&
        (second < 0 || candidates[i].time_us < candidates[static_cast<std::size_t>(second)].time_us))
      second = static_cast<int>(i);
  if (second >= 0) {
    const Candidate& r = candidates[static_cast<std::size_t>(second)];
    s += "; runner-up " + r.algorithm + (r.knobs.empty() ? "" : " (" + r.knobs + ")") + " " + num(r.time_us) + " us (+" +
         num(100 * (r.time_us - b.time_us) / b.time_us) + "%)";
  }
  int applicable = 0, left_out = 0;
  for (const Candidate& c : candidates) {
    applicable += c.applicable ? 1 : 0;
    left_out += !c.applicable && c.why_not.find("budget") != std::string::npos ? 1 : 0;
  }
  s += "; " + std::to_string(tried) + " plans of " + std::to_string(applicable) + " algorithms simulated";
  if (left_out > 0) s += ", " + std::to_string(left_out) + " left out as too big to simulate";
  return s;
}

std::unique_ptr<Plan> plan_for(std::string_view name, const Request& req, const topo::Topology* topo, const AlgoOptions& opt,
                               const SimOptions& sim, const SearchOptions& search, std::string* why) {
  if (name == "auto") {
    if (!topo) throw InputError("--algo auto needs a topology to simulate the candidates (give --topo)");
    Evaluation ev = evaluate(req, *topo, opt, sim, search);
    if (ev.best < 0) throw InputError("no algorithm can do " + std::string(to_string(req.coll)) + " on " + std::to_string(req.nranks) + " ranks");
    if (why) *why = ev.why();
    return std::move(ev.candidates[static_cast<std::size_t>(ev.best)].plan);
  }
  if (topo) check_fits(req, *topo);  // before generating: a ring orders the topology's ranks
  // A layout that simulates plans of its own to choose among (synth) does so under `sim`.
  std::optional<sim::TimeMemo> memo;
  if (topo) memo.emplace(*topo, sim);
  auto plan = generate(name, req, topo, opt);
  if (topo) {
    PlanInfo& info = plan->mutable_info();
    stamp(info, *topo);
    info.predicted_us = simulated_us(*plan, *topo, sim);
    info.bound_us = lower_bound(req, *topo).time_us();
  }
  return plan;
}

std::vector<SweepRow> sweep(Collective coll, int nranks, int root, std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                            const topo::Topology& topo, const AlgoOptions& opt, const SimOptions& sim, const SearchOptions& search) {
  if (min_bytes == 0) throw InputError("sweep: the smallest size must be > 0");
  if (max_bytes < min_bytes) throw InputError("sweep: the largest size is below the smallest");
  if (factor < 2) throw InputError("sweep: the step factor must be >= 2");
  std::vector<SweepRow> rows;
  SimOptions shared = sim;
  shared.routes = sim::route_cache(topo, sim);
  shared.folds = sim::fold_cache(shared);
  bool sliced = coll == Collective::AllGather || coll == Collective::ReduceScatter || coll == Collective::AlltoAll;
  for (std::uint64_t b = min_bytes; b <= max_bytes; b *= factor) {
    std::uint64_t bytes = b;
    // Sizes that do not split over the ranks are rounded down to a multiple, as nccl-tests does.
    if (sliced) bytes -= bytes % static_cast<std::uint64_t>(nranks);
    if (bytes == 0) continue;
    rows.push_back({bytes, evaluate({coll, bytes, nranks, root}, topo, opt, shared, search)});
    if (b > max_bytes / factor) break;
  }
  return rows;
}

std::string tuning_table_json(const std::vector<SweepRow>& rows, Collective coll, int nranks, const topo::Topology& topo) {
  TuningTable table;
  table.collective = coll;
  table.nranks = nranks;
  table.topology_name = topo.name;
  table.topology_fingerprint = topo.fingerprint_hex();
  auto channels_of = [](const Candidate& c) { return c.plan ? static_cast<int>(c.plan->info().channels) : 1; };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Evaluation& ev = rows[i].eval;
    if (ev.best < 0) continue;
    const Candidate& c = ev.candidates[static_cast<std::size_t>(ev.best)];
    // NCCL's choice: the fastest candidate NCCL has a counterpart of, whoever won overall.
    std::optional<NcclChoice> nccl;
    for (const Candidate& k : ev.candidates) {
      auto algo = nccl_counterpart(k.algorithm);
      if (!k.applicable || !algo || (nccl && nccl->predicted_us_at_min <= k.time_us)) continue;
      nccl = NcclChoice{*algo, std::nullopt, channels_of(k), k.time_us};
    }
    // A range covers sizes from this row up to just below the next row's size.
    std::uint64_t lo = i == 0 ? 0 : rows[i].bytes;
    std::optional<std::uint64_t> hi;
    if (i + 1 < rows.size()) hi = rows[i + 1].bytes - 1;
    int channels = channels_of(c);
    if (!table.ranges.empty()) {
      TuningRange& last = table.ranges.back();
      bool same_nccl = last.nccl.has_value() == nccl.has_value() &&
                       (!nccl || (last.nccl->algorithm == nccl->algorithm && last.nccl->channels == nccl->channels));
      if (last.algorithm == c.algorithm && last.channels == channels && same_nccl) {
        last.max_bytes = hi;
        continue;
      }
    }
    table.ranges.push_back({lo, hi, c.algorithm, channels, c.time_us, 0, nccl});
  }
  return write_tuning_table(table);
}

}  // namespace collkit::plan
