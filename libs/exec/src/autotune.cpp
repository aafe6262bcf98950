// coll-run autotune: the measured winners of a run (autotune.h).

#include "collkit/exec/autotune.h"

#include <map>
#include <nlohmann/json.hpp>

#include "collkit/core/error.h"

namespace collkit::exec {

namespace {

int channels_of(const std::string& plan_json) {
  auto j = nlohmann::json::parse(plan_json, nullptr, false);
  if (j.is_discarded() || !j.contains("channels") || !j["channels"].is_number_integer()) return 1;
  return j["channels"].get<int>();
}

}  // namespace

std::vector<TunedSize> tune_from(const Results& r) {
  std::map<std::uint64_t, TunedSize> by_size;
  bool any_auto = false;
  for (const Table& t : r.tables) {
    bool is_auto = t.algorithm == "auto";
    any_auto = any_auto || is_auto;
    for (const Row& row : t.rows) {
      if (!row.out_of_place.ran || row.out_of_place.time_us <= 0) continue;
      TunedSize& s = by_size[row.bytes];
      s.bytes = row.bytes;
      double us = row.out_of_place.time_us;
      if (is_auto) {
        s.model_choice = row.algorithm;
        s.model_choice_us = us;
        continue;
      }
      if (s.best.empty() || us < s.best_us) {
        s.best = row.algorithm;
        s.best_us = us;
        s.best_channels = channels_of(row.plan_json);
        s.best_predicted_us = row.predicted_us;
      }
      if ((row.algorithm == "ring" || row.algorithm == "tree") && (s.best_nccl.empty() || us < s.best_nccl_us)) {
        s.best_nccl = row.algorithm;
        s.best_nccl_us = us;
        s.best_nccl_channels = channels_of(row.plan_json);
      }
    }
  }
  if (!any_auto) throw InputError("autotune: the run has no `auto` table to compare the measured choice with");
  std::vector<TunedSize> out;
  for (auto& [bytes, s] : by_size) {
    if (s.best.empty() || s.model_choice_us <= 0) continue;
    // The model's choice is a candidate too: where it ran fastest, or where the fastest is the same
    // algorithm (measured in another table, a moment apart: the difference is the machine's noise),
    // the model chose right.
    if (s.model_choice_us <= s.best_us || s.model_choice == s.best) {
      s.best = s.model_choice;
      s.best_us = s.model_choice_us;
    }
    out.push_back(std::move(s));
  }
  return out;
}

plan::TuningTable tuning_table(const std::vector<TunedSize>& sizes, plan::Collective coll, int nranks, const std::string& topology) {
  plan::TuningTable t;
  t.collective = coll;
  t.nranks = nranks;
  t.topology_name = topology;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const TunedSize& s = sizes[i];
    std::optional<plan::NcclChoice> nccl;
    if (auto a = plan::nccl_counterpart(s.best_nccl)) nccl = plan::NcclChoice{*a, std::nullopt, s.best_nccl_channels, 0};
    std::uint64_t lo = i == 0 ? 0 : s.bytes;
    std::optional<std::uint64_t> hi;
    if (i + 1 < sizes.size()) hi = sizes[i + 1].bytes - 1;
    if (!t.ranges.empty()) {
      plan::TuningRange& last = t.ranges.back();
      bool same_nccl = last.nccl.has_value() == nccl.has_value() &&
                       (!nccl || (last.nccl->algorithm == nccl->algorithm && last.nccl->channels == nccl->channels));
      if (last.algorithm == s.best && last.channels == s.best_channels && same_nccl) {
        last.max_bytes = hi;
        continue;
      }
    }
    t.ranges.push_back({lo, hi, s.best, s.best_channels, s.best_predicted_us, s.best_us, nccl});
  }
  return t;
}

}  // namespace collkit::exec
