#include "collkit/overlap/report.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/json_cursor.h"
#include "collkit/core/provenance_json.h"

namespace collkit::overlap {

namespace {

using nlohmann::json;

// Microseconds with nanosecond resolution (REFERENCE Part C §4: Perfetto reads ts as us).
double us(double v) { return std::round(v * 1000.0) / 1000.0; }

json choices_json(const std::vector<Choice>& cs) {
  json out = json::object();
  for (const Choice& c : cs) out[c.strategy] = c.knob;
  return out;
}

json layout_json(const Layout& l) {
  return {{"tp", l.tp}, {"sp", l.sp}, {"dp", l.dp}, {"zero", l.zero}, {"ep", l.ep}, {"pp", l.pp}, {"microbatches", l.microbatches},
          {"micro_batch", l.micro_batch}, {"seq_len", l.seq_len}, {"dtype", l.dtype}, {"mode", std::string(to_string(l.mode))},
          {"order", l.order}, {"gpus", l.gpus()}};
}

json row_json(const StrategyResult& r) {
  return {{"name", r.name},
          {"knobs", choices_json(r.choices)},
          {"compute_us", us(r.stats.compute_alone_us)},
          {"compute_under_overlap_us", us(r.stats.compute_actual_us)},
          {"comm_us", us(r.stats.comm_us)},
          {"comm_wait_us", us(r.stats.comm_wait_us)},
          {"exposed_comm_us", us(r.stats.exposed_comm_us)},
          {"overlap_ratio", r.overlap_ratio},
          {"compute_slowdown", r.slowdown},
          {"bubble_us", us(r.bubble_us)},
          {"step_us", us(r.step_us)},
          {"speedup", r.speedup},
          {"speedup_without_contention", r.speedup_no_contention}};
}

}  // namespace

std::string to_json(const Report& r, const RunContext& ctx) {
  const Workload& w = *ctx.workload;
  json j;
  j["schema"] = "collkit.overlap/" + std::to_string(kOverlapSchemaMajor);
  j["model"] = {{"name", w.model.name}, {"parameters", parameter_count(w.model)}, {"stage_layers", w.stage_layers}};
  j["layout"] = layout_json(w.layout);
  j["topology"] = {{"name", ctx.topo->name}, {"fingerprint", ctx.topo->fingerprint_hex()}, {"ranks", ctx.topo->num_ranks()}};
  const auto& p = ctx.compute->peak();
  const auto& e = ctx.compute->efficiency();
  j["gpu"] = {{"label", p.label}, {"peak_tflops", p.tflops}, {"mem_bw_gbps", p.mem_bw_gbps}};
  j["efficiency"] = {{"gemm", e.gemm}, {"attention", e.attention}, {"memory", e.memory}, {"kernel_us", e.kernel_us}};
  j["contention"] = ctx.contention;
  json colls = json::array();
  for (const auto& c : ctx.comm->estimates())
    colls.push_back({{"group", std::string(to_string(c.group))}, {"collective", std::string(plan::to_string(c.coll))}, {"bytes", c.bytes},
                     {"nranks", c.nranks}, {"algorithm", c.algorithm}, {"time_us", us(c.time_us)}});
  j["collectives"] = colls;
  json rows = json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row));
  j["strategies"] = rows;
  // Per layer kind (the first layer, and the first MoE layer when it differs): every op's cost.
  json layers = json::array();
  std::vector<int> shown = {0};
  for (int l = 1; l < w.stage_layers; ++l)
    if (w.model.is_moe_layer(l) != w.model.is_moe_layer(0)) {
      shown.push_back(l);
      break;
    }
  for (int l : shown) {
    json ops = json::array();
    for (const OpCost& c : layer_costs(w, *ctx.compute, *ctx.comm, l)) {
      json o = {{"name", c.name}, {"pass", c.backward ? "backward" : "forward"}, {"kind", c.kind}, {"time_us", us(c.time_us)}};
      if (c.comm) {
        o["group"] = c.group;
        o["bytes"] = static_cast<std::uint64_t>(c.bytes);
      } else {
        o["flops"] = c.flops;
        o["bytes"] = c.bytes;
        o["bound"] = c.memory_bound ? "memory" : "compute";
      }
      ops.push_back(std::move(o));
    }
    layers.push_back({{"layer", l}, {"moe", w.model.is_moe_layer(l)}, {"ops", ops}});
  }
  j["layers"] = layers;
  j["skipped"] = r.skipped;
  j["notes"] = w.notes;
  if (!r.rows.empty()) {
    const StrategyResult& chosen = r.rows.back();
    json tasks = json::array();
    for (const Task& t : chosen.tasks) {
      json x = {{"name", t.name}, {"stream", std::string(to_string(t.stream))}, {"start_us", us(t.start_us)}, {"dur_us", us(t.end_us - t.start_us)},
                {"layer", t.layer}, {"microbatch", t.microbatch}, {"backward", t.backward}};
      if (t.bytes) x["bytes"] = t.bytes;
      if (t.chunk >= 0) x["chunk"] = t.chunk;
      tasks.push_back(std::move(x));
    }
    j["schedule"] = {{"strategy", chosen.name}, {"knobs", choices_json(chosen.choices)}, {"tasks", tasks}};
  }
  return append_provenance(j.dump(1) + "\n", 1);
}

std::string to_trace(const StrategyResult& row, const RunContext& ctx, bool measured) {
  const Workload& w = *ctx.workload;
  json ev = json::array();
  ev.push_back(
      {{"ph", "M"},
       {"name", "process_name"},
       {"pid", 0},
       {"tid", 0},
       {"args", {{"name", "rank 0 (" + ctx.topo->host_of(0) + "): " + w.model.name + ", " + row.name + (measured ? ", measured" : "")}}}});
  for (int s = 0; s < kStreams; ++s) {
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", s}, {"args", {{"name", std::string(to_string(static_cast<Stream>(s)))}}}});
    ev.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", 0}, {"tid", s}, {"args", {{"sort_index", s}}}});
  }
  for (const Task& t : row.tasks) {
    // Zero-length waits are not slices; ts and dur come from rounded ends so that slices on a
    // track stay disjoint after rounding (Perfetto needs them nested).
    if (us(t.end_us) <= us(t.start_us)) continue;
    json args = {{"layer", t.layer}, {"microbatch", t.microbatch}, {"pass", t.backward ? "backward" : "forward"}};
    if (t.chunk >= 0) args["chunk"] = t.chunk;
    if (t.bytes) args["bytes"] = t.bytes;
    args["alone_us"] = us(t.work_us);
    ev.push_back({{"ph", "X"}, {"name", t.name}, {"cat", t.stream == Stream::Compute ? "compute" : "comm"}, {"pid", 0},
                  {"tid", static_cast<int>(t.stream)}, {"ts", us(t.start_us)}, {"dur", us(t.end_us) - us(t.start_us)}, {"args", args}});
  }
  json j = {{"displayTimeUnit", "ns"}, {"traceEvents", ev}};
  j["otherData"] = {{"tool", "coll-overlap"},
                    {"model", w.model.name},
                    {"strategy", row.name},
                    {"knobs", choices_json(row.choices)},
                    {"step_us", us(row.step_us)},
                    {"exposed_comm_us", us(row.stats.exposed_comm_us)},
                    {"overlap_ratio", row.overlap_ratio},
                    {"compute_slowdown", row.slowdown},
                    {"contention", ctx.contention},
                    {"simulated", !measured},
                    {"provenance", provenance_json()}};
  return j.dump() + "\n";
}

std::vector<NamedSchedule> parse_schedules(const std::string& text, const std::string& file) {
  nlohmann::json doc = collkit::json::parse(file, text);
  collkit::json::Cursor root(file, doc);
  root.expect_object();
  root.expect_schema("overlap", kOverlapSchemaMajor);
  collkit::json::Cursor rows = root.at("strategies");
  if (rows.size() == 0) rows.fail("no schedules");
  std::vector<NamedSchedule> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    collkit::json::Cursor row = rows[i];
    NamedSchedule s;
    s.name = row.at("name").string();
    collkit::json::Cursor knobs = row.at("knobs");
    knobs.expect_object();
    for (const auto& item : knobs.value().items()) {
      const std::string name = item.key();
      bool known = false;
      for (const StrategyInfo& info : strategies()) known = known || info.name == name;
      if (!known) knobs.at(name).fail("unknown strategy \"" + name + "\"");
      std::int64_t k = knobs.at(name).integer();
      if (k < 1 || k > kMaxKnob) knobs.at(name).fail("must be in 1.." + std::to_string(kMaxKnob) + ", got " + std::to_string(k));
      s.choices.push_back({name, static_cast<int>(k)});
    }
    // In registry order, as run() states them: the first strategy that takes a segment emits it.
    std::vector<Choice> ordered;
    for (const StrategyInfo& info : strategies())
      for (const Choice& c : s.choices)
        if (c.strategy == info.name) ordered.push_back(c);
    s.choices = std::move(ordered);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<NamedSchedule> load_schedules(const std::string& file) { return parse_schedules(read_file(file), file); }

}  // namespace collkit::overlap
