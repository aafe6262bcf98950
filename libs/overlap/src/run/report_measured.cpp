// coll-overlap run's artifacts: collkit.overlap/1 with a "measured" block beside the predicted
// rows, and the measured timeline in the --trace format.

#include <cmath>
#include <nlohmann/json.hpp>

#include "collkit/core/provenance_json.h"
#include "collkit/overlap/execute.h"
#include "collkit/overlap/report.h"

namespace collkit::overlap {

namespace {

double us(double v) { return std::round(v * 1000.0) / 1000.0; }

}  // namespace

std::string measured_json(const Report& r, const RunContext& ctx, const std::vector<Measured>& measured, const Calibration* cal,
                          const std::string& calibration_file, const std::map<Group, std::vector<std::vector<int>>>& groups) {
  nlohmann::json j = nlohmann::json::parse(to_json(r, ctx));
  j.erase("provenance");  // appended again below, last and on one line
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < measured.size() && i < r.rows.size(); ++i) {
    const Measured& m = measured[i];
    const StrategyResult& p = r.rows[i];
    nlohmann::json tasks = nlohmann::json::array();
    for (const Task& t : m.tasks) {
      nlohmann::json x = {{"name", t.name},
                          {"stream", std::string(to_string(t.stream))},
                          {"start_us", us(t.start_us)},
                          {"dur_us", us(t.end_us - t.start_us)},
                          {"deps", t.deps}};
      if (t.bytes) x["bytes"] = t.bytes;
      tasks.push_back(std::move(x));
    }
    rows.push_back({{"name", p.name},
                    {"predicted_step_us", us(p.step_us)},
                    {"compute_us", us(m.compute_alone_us)},
                    {"comm_us", us(m.comm_alone_us)},
                    {"compute_under_overlap_us", us(m.compute_actual_us)},
                    {"comm_under_overlap_us", us(m.comm_actual_us)},
                    {"exposed_comm_us", us(m.exposed_comm_us)},
                    {"hidden_comm_us", us(m.hidden_comm_us)},
                    {"overlap_ratio", m.overlap_ratio},
                    {"compute_slowdown", m.compute_slowdown},
                    {"step_us", us(m.step_us)},
                    {"step_max_rank_us", us(m.step_max_rank_us)},
                    {"step_min_us", us(m.step_min_us)},
                    {"step_max_us", us(m.step_max_us)},
                    {"step_error", p.step_us > 0 && m.step_us > 0 ? p.step_us / m.step_us - 1 : 0.0},
                    {"collectives_checked", m.collectives_checked},
                    {"wrong", m.wrong},
                    {"dependency_violations", m.dependency_violations},
                    {"tasks", tasks}});
  }
  j["measured"] = rows;
  if (!measured.empty()) {
    j["iters"] = measured.front().iters;
    j["warmup_iters"] = measured.front().warmup_iters;
  }
  j["calibration"] = cal ? nlohmann::json{{"file", calibration_file},
                                          {"compute_slowdown", cal->compute_slowdown},
                                          {"comm_slowdown", cal->comm_slowdown},
                                          {"gemm_shapes", cal->gemms.size()},
                                          {"collectives", cal->collectives.size()}}
                         : nlohmann::json(nullptr);
  nlohmann::json g = nlohmann::json::object();
  for (const auto& [kind, list] : groups) g[std::string(to_string(kind))] = list;
  j["groups"] = g;
  return append_provenance(j.dump(1) + "\n", 1);
}

std::string measured_trace(const StrategyResult& predicted, const Measured& m, const RunContext& ctx) {
  StrategyResult row = predicted;
  row.tasks = m.tasks;
  row.step_us = m.step_us;
  row.stats.exposed_comm_us = m.exposed_comm_us;
  row.overlap_ratio = m.overlap_ratio;
  row.slowdown = m.compute_slowdown;
  return to_trace(row, ctx, true);
}

}  // namespace collkit::overlap
