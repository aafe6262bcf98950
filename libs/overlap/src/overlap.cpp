#include "collkit/overlap/overlap.h"

#include <algorithm>
#include <map>

#include "collkit/core/error.h"
#include "emitter.h"
#include "strategies/strategy.h"

namespace collkit::overlap {

const std::vector<const Strategy*>& strategy_registry() {
  static const std::vector<const Strategy*> all = {&dp_bucket_strategy(), &fsdp_prefetch_strategy(), &tp_decompose_strategy(),
                                                   &moe_pipeline_strategy()};
  return all;
}

const Strategy& strategy(std::string_view name) {
  for (const Strategy* s : strategy_registry())
    if (s->name() == name) return *s;
  std::string known = "none";
  for (const Strategy* s : strategy_registry()) known += ", " + std::string(s->name());
  throw InputError("unknown strategy \"" + std::string(name) + "\" (known: " + known + ", auto)");
}

std::vector<StrategyInfo> strategies() {
  std::vector<StrategyInfo> out;
  for (const Strategy* s : strategy_registry()) out.push_back({std::string(s->name()), std::string(s->knob()), std::string(s->summary())});
  return out;
}

StrategyResult evaluate(const Workload& w, ComputeModel& cm, CommModel& comm, const std::vector<Choice>& choices, double contention) {
  return evaluate(w, cm, comm, choices, Contention{contention, 0, false});
}

StrategyResult evaluate(const Workload& w, ComputeModel& cm, CommModel& comm, const std::vector<Choice>& choices,
                        const Contention& contention) {
  std::vector<std::pair<const Strategy*, int>> active;
  for (const Choice& c : choices) {
    if (c.knob < 1) throw InputError(c.strategy + ": the knob must be >= 1, got " + std::to_string(c.knob));
    // --tp-chunks 1000000 once emitted tasks until bad_alloc.
    if (c.knob > kMaxKnob)
      throw InputError(c.strategy + ": the knob must be at most " + std::to_string(kMaxKnob) + " (the limit on a strategy's knob), got " +
                       std::to_string(c.knob));
    active.emplace_back(&strategy(c.strategy), c.knob);
  }
  StrategyResult r;
  r.choices = choices;
  for (const Choice& c : choices) r.name += (r.name.empty() ? "" : "+") + c.strategy;
  if (r.name.empty()) r.name = "none";
  Emitter e(r.tasks, cm, comm);
  e.count_gradients(w.segments);
  for (const Segment& s : w.segments) {
    bool done = false;  // no strategy takes the step end: emit_serial() does
    for (const auto& [strategy, knob] : active)
      if ((done = strategy->emit(s, knob, e))) break;
    if (!done) e.emit_serial(s);
  }
  r.stats = simulate(r.tasks, contention);
  // Pipeline fill and drain: (pp - 1) micro-batches of this stage's compute (1F1B, PipeDream-Flush).
  r.bubble_us = (w.layout.pp - 1) * r.stats.compute_alone_us / w.layout.microbatches;
  r.step_us = r.stats.makespan_us + r.bubble_us;
  // Against the communication the step holds (its waits for the slowest rank too), as run measures
  // it: collective durations in the overlapped step.
  const double comm_in_step = r.stats.comm_us + r.stats.comm_wait_us;
  r.overlap_ratio = comm_in_step > 0 ? (comm_in_step - r.stats.exposed_comm_us) / comm_in_step : 0;
  r.slowdown = r.stats.compute_alone_us > 0 ? r.stats.compute_actual_us / r.stats.compute_alone_us : 1;
  return r;
}

namespace {

struct Search {
  const Workload& w;
  ComputeModel& cm;
  CommModel& comm;
  const Request& req;

  std::optional<int> fixed(const Strategy& s) const {
    for (const Choice& c : req.fixed)
      if (c.strategy == s.name()) return c.knob;
    return std::nullopt;
  }
  std::vector<int> knobs(const Strategy& s) const {
    if (auto f = fixed(s)) return {*f};
    return s.candidates(w);
  }
  // The descent revisits knob sets (a single strategy's second pass, auto's "off" trials, serial);
  // evaluate() is deterministic, so each set is scheduled and simulated once.
  mutable std::map<std::vector<std::pair<std::string, int>>, double> steps;
  double step(const std::vector<Choice>& c) const {
    std::vector<std::pair<std::string, int>> key;
    for (const Choice& x : c) key.emplace_back(x.strategy, x.knob);
    auto it = steps.find(key);
    if (it == steps.end()) it = steps.emplace(std::move(key), evaluate(w, cm, comm, c, req.timeline()).step_us).first;
    return it->second;
  }

  // Coordinate descent over the strategies' knobs; an optional strategy may also be left off.
  std::vector<Choice> best(const std::vector<const Strategy*>& set, bool optional) const {
    std::vector<Choice> cur;
    for (const Strategy* s : set) cur.push_back({std::string(s->name()), knobs(*s).front()});
    double best_us = step(cur);
    for (int pass = 0; pass < 2; ++pass) {
      bool improved = false;
      for (const Strategy* s : set) {
        auto at = std::find_if(cur.begin(), cur.end(), [&](const Choice& c) { return c.strategy == s->name(); });
        std::vector<int> options = knobs(*s);
        if (optional) options.push_back(0);  // 0: off
        for (int k : options) {
          std::vector<Choice> trial = cur;
          auto t = trial.begin() + (at - cur.begin());
          if (at == cur.end()) {
            if (k == 0) continue;
            trial.push_back({std::string(s->name()), k});
          } else if (k == 0) {
            trial.erase(t);
          } else {
            if (t->knob == k) continue;
            t->knob = k;
          }
          double us = step(trial);
          if (us < best_us * (1 - 1e-12)) {
            best_us = us;
            cur = std::move(trial);
            improved = true;
            at = std::find_if(cur.begin(), cur.end(), [&](const Choice& c) { return c.strategy == s->name(); });
          }
        }
      }
      if (!improved) break;
    }
    // Descent from "everything on" can stop in a local optimum; serial is always a candidate.
    if (optional && !cur.empty() && step({}) < best_us) cur.clear();
    // Keep registry order so names read the same whatever the search path.
    std::vector<Choice> ordered;
    for (const Strategy* s : strategy_registry())
      for (const Choice& c : cur)
        if (c.strategy == s->name()) ordered.push_back(c);
    return ordered;
  }
};

}  // namespace

std::vector<StrategyResult> knob_schedules(const Workload& w, ComputeModel& cm, CommModel& comm, const Request& req) {
  std::vector<StrategyResult> out;
  for (const Strategy* s : strategy_registry()) {
    std::string why;
    if (!s->applies(w, &why)) continue;
    std::vector<int> knobs = s->candidates(w);
    for (const Choice& c : req.fixed)
      if (c.strategy == s->name()) knobs = {c.knob};
    for (int k : knobs) out.push_back(evaluate(w, cm, comm, {{std::string(s->name()), k}}, req.timeline()));
  }
  return out;
}

Report run(const Workload& w, ComputeModel& cm, CommModel& comm, const Request& req) {
  if (!(req.contention >= 0)) throw InputError("--contention must be >= 0");
  if (!(req.comm_contention >= 0)) throw InputError("communication contention must be >= 0");
  bool want_auto = false, want_none = false;
  std::vector<const Strategy*> named;
  for (const std::string& n : req.strategies) {
    if (n == "auto") want_auto = true;
    else if (n == "none") want_none = true;
    else named.push_back(&strategy(n));
  }
  for (const Choice& c : req.fixed) strategy(c.strategy);
  if (want_none && (want_auto || !named.empty())) throw InputError("--strategy none does not combine with others");

  Report rep;
  std::vector<const Strategy*> applicable;
  for (const Strategy* s : strategy_registry()) {
    std::string why;
    if (s->applies(w, &why)) applicable.push_back(s);
    else rep.skipped.push_back(std::string(s->name()) + ": " + why);
  }
  for (const Strategy* s : named)
    if (std::find(applicable.begin(), applicable.end(), s) == applicable.end()) {
      std::string why;
      s->applies(w, &why);
      throw InputError("--strategy " + std::string(s->name()) + " does not apply: " + why);
    }

  Search search{w, cm, comm, req, {}};
  auto finish = [&](std::vector<Choice> choices, std::string name) {
    StrategyResult r = evaluate(w, cm, comm, choices, req.timeline());
    if (!name.empty()) r.name = std::move(name);
    r.speedup_no_contention = evaluate(w, cm, comm, choices, Contention{0, 0, req.one_comm_stream}).step_us;
    rep.rows.push_back(std::move(r));
  };
  finish({}, "");
  if (!want_none) {
    for (const Strategy* s : applicable) finish(search.best({s}, false), "");
    if (want_auto) finish(search.best(applicable, true), "auto");
    else if (named.size() > 1) finish(search.best(named, false), "");
  }
  const double none_us = rep.rows.front().step_us;
  for (auto& r : rep.rows) {
    r.speedup = r.step_us > 0 ? none_us / r.step_us : 1;
    r.speedup_no_contention = r.speedup_no_contention > 0 ? none_us / r.speedup_no_contention : 1;
  }
  // The requested schedule goes last: a single named strategy is already among the rows.
  if (!want_auto && named.size() == 1) {
    auto it = std::find_if(rep.rows.begin(), rep.rows.end(), [&](const StrategyResult& r) { return r.name == named[0]->name(); });
    std::rotate(it, it + 1, rep.rows.end());
  }
  return rep;
}

Report evaluate_schedules(const Workload& w, ComputeModel& cm, CommModel& comm, const std::vector<NamedSchedule>& schedules,
                          const Request& req) {
  if (schedules.empty()) throw InputError("no schedules to evaluate");
  Report rep;
  for (const NamedSchedule& s : schedules) {
    StrategyResult r = evaluate(w, cm, comm, s.choices, req.timeline());
    r.name = s.name;
    r.speedup_no_contention = evaluate(w, cm, comm, s.choices, Contention{0, 0, req.one_comm_stream}).step_us;
    rep.rows.push_back(std::move(r));
  }
  const double none_us = rep.rows.front().step_us;
  for (auto& r : rep.rows) {
    r.speedup = r.step_us > 0 ? none_us / r.step_us : 1;
    r.speedup_no_contention = r.speedup_no_contention > 0 ? none_us / r.speedup_no_contention : 1;
  }
  return rep;
}

}  // namespace collkit::overlap
