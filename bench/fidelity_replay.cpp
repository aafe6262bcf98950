// Replays a recorded calibration offline: the figures `coll-run calibrate` printed (its report,
// kept in results/fidelity.md) are fitted again by this build's model, so a change to the model or
// the fit is judged against measurements made on an idle machine, without measuring anew on a
// loaded one. Used by bench/fidelity_replay.sh, which then runs `coll-plan compare` on the rows.
//
// Usage: fidelity_replay TOPOLOGY RESULTS FIDELITY_MD OUT
//   TOPOLOGY     the job's topology (its vertices and ranks; rates and any calibration are refitted)
//   RESULTS      a coll-run results file holding the timed plans (ring / rhd rows; their measured
//                times are taken from the report, not from this file)
//   FIDELITY_MD  results/fidelity.md: the calibration report between its ``` fences
//   OUT          the calibrated topology to write
// Shared-memory pair classes only (one host): the report keeps each class's fit, not its samples,
// so samples on the fitted line stand for them. With COLLKIT_REPLAY_FIT_COLLS (a comma list of
// collectives) the factors are fitted to the ring and rhd rows of those collectives in RESULTS,
// at their times there, instead of the report's timed plans: models compared on one measurement.
// COLLKIT_REPLAY_EXTRA (a comma list of "collective algorithm", e.g. "allreduce tree") adds those
// rows of RESULTS, at their times there, to the report's timed plans: what the fit would make of
// plans calibrate does not time (judged on rows it was fitted to: a test of identifiability, not a
// fidelity figure).
// The cores come from the report (`N core(s) per rank's CPU set`) or fidelity.md's header (`N cores,`);
// COLLKIT_REPLAY_CORES=0 replays the model without them (as calibrations before them were), a
// before/after from one build. COLLKIT_REPLAY_CORE_CACHE=BYTES (or "sysfs": this machine's level-2
// cache) also fits the factor of reductions within a core's cache, which calibrate leaves out.

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/size.h"
#include "collkit/exec/calibrate.h"
#include "collkit/topo/io.h"
#include "nlohmann/json.hpp"

using namespace collkit;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 5) throw InputError("usage: fidelity_replay TOPOLOGY RESULTS FIDELITY_MD OUT");
  topo::Topology t = topo::load(argv[1]);
  t.calibration.reset();
  nlohmann::json results = nlohmann::json::parse(read_all(argv[2]));
  exec::Measurements m;
  m.source = fmt::format("fidelity_replay of {}", argv[3]);
  std::map<std::string, double> timed;  // "allgather ring 64K" -> measured us
  const std::regex shared(
      R"(^shared memory on (\S+): ranks (\d+)-(\d+) alone ([0-9.]+) us \+ bytes / ([0-9.]+) GB/s \([^)]*\)(; (\d+) at once ([0-9.]+) GB/s in all)?)");
  const std::regex reduction(R"(float32 reduction ([0-9.]+) GB/s)");
  const std::regex cache(R"(beyond the (\d+) MiB cache)");
  const std::regex plan_line(R"(^  (\S+ \S+ \S+): measured ([0-9.]+) us)");
  // The cores: the report's own figure when it has one, else fidelity.md's header ("2 cores, ").
  const std::regex cores_report(R"(; (\d+) core\(s\) per rank's CPU set)");
  const std::regex cores_header(R"(, (\d+) cores, `mpirun)");
  const std::regex core_cache(R"(reductions within the (\d+) KiB core cache)");
  std::istringstream md(read_all(argv[3]));
  std::smatch k;
  for (std::string line; std::getline(md, line);) {
    if (std::regex_search(line, k, shared)) {
      exec::PairClassMeasurement c;
      c.name = "shared memory on " + k[1].str();
      c.rank_a = std::stoi(k[2]);
      c.rank_b = std::stoi(k[3]);
      c.shared_vertex = true;
      c.vertex = t.at(k[1].str());
      double fixed = std::stod(k[4]), gbps = std::stod(k[5]);
      int pairs = k[7].matched ? std::stoi(k[7]) : 0;
      double all = k[8].matched ? std::stod(k[8]) : 0;
      for (std::uint64_t b : {8ull, 1024ull, 8192ull, 65536ull, 524288ull, 4194304ull}) {
        c.alone.push_back({b, fixed + static_cast<double>(b) / (gbps * 1e3)});
        // Only the slope of the pairs at once enters the model.
        if (pairs > 0) c.concurrent.push_back({b, fixed + static_cast<double>(b) / (all / pairs * 1e3)});
      }
      c.concurrent_pairs = pairs;
      m.classes.push_back(std::move(c));
    }
    if (std::regex_search(line, k, reduction)) m.reduce_gbps = std::stod(k[1]);
    if (std::regex_search(line, k, cache)) m.cache_bytes = std::stoull(k[1]) << 20;
    if (std::regex_search(line, k, plan_line)) timed[k[1].str()] = std::stod(k[2]);
    if (std::regex_search(line, k, core_cache)) m.core_cache_bytes = std::stoull(k[1]) << 10;
    if (std::regex_search(line, k, cores_report) || (m.cores == 0 && std::regex_search(line, k, cores_header))) m.cores = std::stoi(k[1]);
  }
  if (m.classes.empty() || m.reduce_gbps <= 0 || timed.empty())
    throw InputError(std::string(argv[3]) + ": no calibration report (shared-memory class, reduction rate and timed plans) found");
  // COLLKIT_REPLAY_CORES=0: replay as calibrations without a core count were (the model before it).
  if (const char* c = std::getenv("COLLKIT_REPLAY_CORES")) m.cores = std::atoi(c);
  // calibrate does not measure a core's cache (docs/adapt.md); COLLKIT_REPLAY_CORE_CACHE=BYTES
  // fits its factor anyway, "sysfs" with this machine's (the replay runs where the measurements
  // were made).
  if (const char* c = std::getenv("COLLKIT_REPLAY_CORE_CACHE"))
    m.core_cache_bytes = std::string(c) == "sysfs" ? exec::core_cache_bytes() : std::strtoull(c, nullptr, 10);
  const char* fit_colls = std::getenv("COLLKIT_REPLAY_FIT_COLLS");
  const char* extra = std::getenv("COLLKIT_REPLAY_EXTRA");
  std::size_t extras = 0;
  for (const auto& table : results.at("tables"))
    for (const auto& row : table.at("rows")) {
      if (fit_colls) {
        std::string coll = table.at("collective").get<std::string>(), algo = row.at("algorithm").get<std::string>();
        if ((algo == "ring" || algo == "rhd") && ("," + std::string(fit_colls) + ",").find("," + coll + ",") != std::string::npos)
          m.plans.push_back({row.at("plan").dump(), coll + " " + algo, row.at("out_of_place").at("time_us").get<double>()});
        continue;
      }
      std::string what = fmt::format("{} {} {}", table.at("collective").get<std::string>(), row.at("algorithm").get<std::string>(),
                                     format_size_bytes(row.at("bytes").get<std::uint64_t>()));
      if (auto it = timed.find(what); it != timed.end()) m.plans.push_back({row.at("plan").dump(), what, it->second});
      else if (extra && ("," + std::string(extra) + ",")
                                .find("," + table.at("collective").get<std::string>() + " " + row.at("algorithm").get<std::string>() +
                                      ",") != std::string::npos) {
        m.plans.push_back({row.at("plan").dump(), what, row.at("out_of_place").at("time_us").get<double>()});
        ++extras;
      }
    }
  if (!fit_colls && m.plans.size() != timed.size() + extras)
    throw InputError(fmt::format("{}: {} of the report's {} timed plans found", argv[2], m.plans.size(), timed.size()));
  std::string report;
  topo::Topology out = exec::apply_calibration(t, m, &report);
  std::cout << report;
  write_file_atomic(argv[4], topo::to_json(out));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fidelity_replay: " << e.what() << "\n";
  return 1;
}
