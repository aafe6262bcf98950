// compare_results(): a coll-run results file against the simulator (fidelity.h).

#include "collkit/exec/fidelity.h"

#include <algorithm>
#include <cmath>

#include "collkit/core/error.h"
#include "collkit/core/json_cursor.h"
#include "collkit/plan/io.h"

namespace collkit::exec {

void summarise(Fidelity& f) {
  std::vector<double> errors;
  errors.reserve(f.rows.size());
  for (const FidelityRow& r : f.rows) errors.push_back(std::fabs(r.error_percent()));
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  std::size_t n = sorted.size();
  f.median_abs_error_percent = n == 0 ? 0 : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  f.worst_row = static_cast<std::size_t>(std::max_element(errors.begin(), errors.end()) - errors.begin());
  f.worst_abs_error_percent = n == 0 ? 0 : errors[f.worst_row];
}

Fidelity compare_results(const std::string& file, const std::string& text, const topo::Topology* topo, const plan::SimOptions& sim,
                         Measured which) {
  nlohmann::json doc = json::parse(file, text);
  json::Cursor root(file, doc);
  root.expect_schema("results", 1);
  Fidelity f;
  json::Cursor tables = root.at("tables");
  for (std::size_t t = 0; t < tables.size(); ++t) {
    json::Cursor table = tables[t];
    std::string collective = table.at("collective").string();
    std::string type = table.find("type") ? table.at("type").string() : "";
    json::Cursor rows = table.at("rows");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      json::Cursor row = rows[i];
      FidelityRow out;
      out.collective = collective;
      out.type = type;
      out.algorithm = row.at("algorithm").string();
      std::int64_t bytes = row.at("bytes").integer();
      if (bytes < 0) row.at("bytes").fail("must be >= 0");
      out.bytes = static_cast<std::uint64_t>(bytes);
      json::Cursor measured = row.at("out_of_place");
      if (measured.value().is_null()) {  // the plan did not run at this size
        ++f.skipped;
        continue;
      }
      if (which == Measured::BlockMedian && !measured.find("block_median_us"))
        measured.fail("has no block_median_us (measured by a coll-run before it was recorded): compare its mean, --measured mean");
      out.measured_us = measured.at(which == Measured::BlockMedian ? "block_median_us" : "time_us").non_negative_number();
      if (topo) {
        json::Cursor plan_json = row.at("plan");
        auto plan = plan::from_json(plan_json.value().dump(), file + " " + plan_json.pointer());
        out.predicted_us = plan::simulated_us(*plan, *topo, sim);
      } else if (auto p = row.find("predicted_us")) {
        out.predicted_us = p->non_negative_number();
      }
      if (out.measured_us <= 0 || out.predicted_us <= 0) {
        ++f.skipped;
        continue;
      }
      f.rows.push_back(std::move(out));
    }
  }
  if (f.rows.empty())
    throw InputError(file + ": no row has both a measured time and a prediction" +
                     (topo ? "" : " (run coll-run with --topo, or give --topo here to simulate the rows' plans)"));
  summarise(f);
  return f;
}

}  // namespace collkit::exec
