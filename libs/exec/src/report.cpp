#include "report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <ostream>

#include "collkit/core/provenance_json.h"
#include "collkit/core/size.h"

namespace collkit::exec {

namespace {

using json = nlohmann::json;

// nccl-tests prints times with two decimals below 10 ms, and in whole microseconds above.
std::string time_text(double us) { return us < 1e4 ? fmt::format("{:7.2f}", us) : fmt::format("{:7.0f}", us); }

std::string timing_text(const Timing& t) {
  if (!t.ran) return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "-", "-", "-", "-");
  std::string wrong = t.checked ? std::to_string(t.wrong) : "N/A";
  return fmt::format("  {}  {:6.2f}  {:6.2f}  {:>6}", time_text(t.time_us), t.algbw_gbps, t.busbw_gbps, wrong);
}

std::string lead(const Row& row) {
  bool reduces = plan::facts(row.coll).reduces;
  return fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.bytes, row.count, to_string(row.type),
                     reduces ? std::string(to_string(row.op)) : "none", row.root);
}

void column_heads(std::ostream& out) {
  out << "#\n";
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:^33}  {:^33}\n", "", "", "", "", "", "out-of-place", "in-place");
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n", "size",
                     "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n", "(B)",
                     "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

double avg_busbw(const Table& t, bool native) {
  double sum = 0;
  int n = 0;
  for (const Row& r : t.rows) {
    std::array<const Timing*, 2> both{native ? &r.native_out_of_place : &r.out_of_place, native ? &r.native_in_place : &r.in_place};
    for (const Timing* x : both)
      if (x->ran) {
        sum += x->busbw_gbps;
        ++n;
      }
  }
  return n ? sum / n : 0;
}

std::uint64_t wrong_total(const Table& t, bool native) {
  std::uint64_t w = 0;
  for (const Row& r : t.rows)
    w += native ? r.native_out_of_place.wrong + r.native_in_place.wrong : r.out_of_place.wrong + r.in_place.wrong;
  return w;
}

json timing_json(const Timing& t) {
  if (!t.ran) return nullptr;
  json j = {{"time_us", t.time_us}, {"algbw_gbps", t.algbw_gbps}, {"busbw_gbps", t.busbw_gbps}};
  if (t.block_median_us > 0) j["block_median_us"] = t.block_median_us;
  if (t.checked) j["wrong"] = t.wrong;
  return j;
}

}  // namespace

void print_preamble(std::ostream& out, const Results& r, const RunOptions& opt) {
  out << fmt::format("# coll-run: backend {} ({}), {} ranks on {} host(s)", r.backend, r.library_version, r.nranks,
                     [&] {
                       std::vector<std::string> h = r.hosts;
                       std::sort(h.begin(), h.end());
                       return std::unique(h.begin(), h.end()) - h.begin();
                     }())
      << (r.topology.empty() ? std::string() : ", planned on topology " + r.topology) << "\n";
  out << fmt::format("#  iters: {}  warm-up: {}  check: {}  timeout: {} s\n", opt.iters, opt.warmup, opt.check, opt.timeout_s);
  out << std::flush;
}

void print_table_head(std::ostream& out, const Table& t, bool) {
  out << "#\n# " << plan::to_string(t.coll) << ", plan " << t.algorithm << ", " << to_string(t.type);
  if (plan::facts(t.coll).reduces) out << ", " << to_string(t.op);
  out << "\n";
  column_heads(out);
  out << std::flush;
}

void print_row(std::ostream& out, const Row& row) {
  out << "  " << lead(row) << timing_text(row.out_of_place) << timing_text(row.in_place);
  if (!row.in_place_note.empty()) out << "   # in-place " << row.in_place_note;
  out << "\n" << std::flush;
}

void print_table_tail(std::ostream& out, const Table& t, bool baseline) {
  out << "# Out of bounds values : " << wrong_total(t, false) << (wrong_total(t, false) == 0 ? " OK" : " FAILED") << "\n";
  out << fmt::format("# Avg bus bandwidth    : {:.4f} \n", avg_busbw(t, false));
  if (!baseline || t.rows.empty()) return;
  out << "#\n# native " << t.native_name << "\n";
  column_heads(out);
  for (const Row& r : t.rows) {
    out << "  " << lead(r) << timing_text(r.native_out_of_place) << timing_text(r.native_in_place);
    if (!r.native_note.empty()) out << "   # " << r.native_note;
    out << "\n";
  }
  out << "# Out of bounds values : " << wrong_total(t, true) << (wrong_total(t, true) == 0 ? " OK" : " FAILED") << "\n";
  out << fmt::format("# Avg bus bandwidth    : {:.4f} \n", avg_busbw(t, true));
  bool predicted = false;
  for (const Row& r : t.rows) predicted |= r.predicted_us > 0;
  out << "#\n# plan vs " << t.native_name << ": time ratio plan / native (below 1: the plan is faster)\n";
  out << fmt::format("# {:>10}  {:>10}  {:>12}  {:>12}  {:>7}  {:>7}{}\n", "size", "plan", "out-of-place", "native", "ratio", "in-pl.",
                     predicted ? "  predicted(us)   error%" : "");
  for (const Row& r : t.rows) {
    auto ratio = [](const Timing& a, const Timing& b) {
      return a.ran && b.ran && b.time_us > 0 ? fmt::format("{:7.3f}", a.time_us / b.time_us) : fmt::format("{:>7}", "-");
    };
    out << fmt::format("  {:>10}  {:>10}  {:>12}  {:>12}  {}  {}", format_size_bytes(r.bytes), r.algorithm,
                       r.out_of_place.ran ? time_text(r.out_of_place.time_us) : "-",
                       r.native_out_of_place.ran ? time_text(r.native_out_of_place.time_us) : "-",
                       ratio(r.out_of_place, r.native_out_of_place), ratio(r.in_place, r.native_in_place));
    if (predicted) {
      // The model's error against this run: (predicted - measured) / measured, as coll-plan compare.
      bool both = r.predicted_us > 0 && r.out_of_place.ran && r.out_of_place.time_us > 0;
      out << fmt::format("  {:>13.2f}  {:>7}", r.predicted_us,
                         both ? fmt::format("{:+.1f}", (r.predicted_us - r.out_of_place.time_us) / r.out_of_place.time_us * 100) : "-");
    }
    out << "\n";
  }
  out << std::flush;
}

std::string to_json(const Results& r) {
  json j;
  j["schema"] = "collkit.results/1";
  j["backend"] = r.backend;
  j["library_version"] = r.library_version;
  j["nranks"] = r.nranks;
  j["hosts"] = r.hosts;
  if (!r.topology.empty()) j["topology"] = r.topology;
  j["total_wrong"] = r.total_wrong;
  j["iters"] = r.iters;
  j["warmup_iters"] = r.warmup_iters;
  // Only a run that was stopped (or is still going) says so: complete files stay as they were.
  if (!r.complete) j["complete"] = false;
  json tables = json::array();
  for (const Table& t : r.tables) {
    json tj = {{"collective", plan::to_string(t.coll)}, {"algorithm", t.algorithm}, {"type", to_string(t.type)},
               {"native", t.native_name}, {"avg_busbw_gbps", avg_busbw(t, false)}};
    if (plan::facts(t.coll).reduces) tj["redop"] = to_string(t.op);
    if (!t.notes.empty()) tj["notes"] = t.notes;
    json rows = json::array();
    for (const Row& row : t.rows) {
      json rj = {{"bytes", row.bytes},
                 {"count", row.count},
                 {"root", row.root},
                 {"algorithm", row.algorithm},
                 {"out_of_place", timing_json(row.out_of_place)},
                 {"in_place", timing_json(row.in_place)},
                 {"native_out_of_place", timing_json(row.native_out_of_place)},
                 {"native_in_place", timing_json(row.native_in_place)}};
      if (!row.in_place_note.empty()) rj["in_place_note"] = row.in_place_note;
      if (!row.native_note.empty()) rj["native_note"] = row.native_note;
      if (row.out_of_place.ran && row.native_out_of_place.ran && row.native_out_of_place.time_us > 0)
        rj["ratio"] = row.out_of_place.time_us / row.native_out_of_place.time_us;
      if (row.predicted_us > 0) rj["predicted_us"] = row.predicted_us;
      if (row.bound_us > 0) rj["bound_us"] = row.bound_us;
      rj["plan"] = json::parse(row.plan_json);
      rj["plan"].erase("provenance");  // the file's own says where it came from
      rows.push_back(std::move(rj));
    }
    tj["rows"] = std::move(rows);
    tables.push_back(std::move(tj));
  }
  j["tables"] = std::move(tables);
  return append_provenance(j.dump(2) + "\n", 2);
}

std::string to_csv(const Results& r) {
  std::string out =
      "collective,algorithm,type,redop,root,bytes,count,"
      "time_us,algbw_gbps,busbw_gbps,wrong,inplace_time_us,inplace_algbw_gbps,inplace_busbw_gbps,inplace_wrong,"
      "native_time_us,native_busbw_gbps,native_wrong,ratio,predicted_us,bound_us\n";
  // Empty where a placement did not run or was not checked (a spreadsheet's blank, not a 0).
  auto num = [](bool have, double v) { return have ? fmt::format("{:.6g}", v) : std::string(); };
  auto wrong = [](const Timing& t) { return t.checked ? std::to_string(t.wrong) : std::string(); };
  for (const Table& t : r.tables)
    for (const Row& row : t.rows) {
      const Timing &o = row.out_of_place, &i = row.in_place, &n = row.native_out_of_place;
      bool ratio = o.ran && n.ran && n.time_us > 0;
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", plan::to_string(t.coll), row.algorithm,
                         to_string(t.type), plan::facts(t.coll).reduces ? to_string(t.op) : "", row.root, row.bytes, row.count,
                         num(o.ran, o.time_us), num(o.ran, o.algbw_gbps), num(o.ran, o.busbw_gbps), wrong(o), num(i.ran, i.time_us),
                         num(i.ran, i.algbw_gbps), num(i.ran, i.busbw_gbps), wrong(i), num(n.ran, n.time_us), num(n.ran, n.busbw_gbps),
                         wrong(n), num(ratio, ratio ? o.time_us / n.time_us : 0), num(row.predicted_us > 0, row.predicted_us),
                         num(row.bound_us > 0, row.bound_us));
    }
  return out;
}

}  // namespace collkit::exec
