#include "collkit/overlap/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <tuple>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/json_cursor.h"
#include "collkit/core/provenance_json.h"

namespace collkit::overlap {

namespace {

std::int64_t divided(std::int64_t v, int factor) { return std::max<std::int64_t>(1, v / factor); }

}  // namespace

Model scale_model(const Model& m, int factor) {
  if (factor < 1) throw InputError("--scale must be a positive integer, got " + std::to_string(factor));
  if (factor == 1) return m;
  Model s = m;
  s.name = m.name + "/" + std::to_string(factor);
  s.hidden = divided(m.hidden, factor);
  s.ffn = divided(m.ffn, factor);
  s.head_dim = divided(m.head_dim, factor);
  s.vocab = divided(m.vocab, factor);
  // Round to nearest, at least one layer; a MoE model keeps at least one MoE layer.
  s.layers = std::max(1, static_cast<int>(std::lround(static_cast<double>(m.layers) / factor)));
  if (s.moe) {
    s.moe->expert_ffn = divided(m.moe->expert_ffn, factor);
    s.moe->dense_layers = std::min(s.layers - 1, static_cast<int>(std::lround(static_cast<double>(m.moe->dense_layers) / factor)));
  }
  if (s.mla) {
    for (std::int64_t* v :
         {&s.mla->q_lora_rank, &s.mla->kv_lora_rank, &s.mla->qk_nope_head_dim, &s.mla->qk_rope_head_dim, &s.mla->v_head_dim})
      *v = divided(*v, factor);
  }
  s.published_params = 0;
  return s;
}

Layout scale_layout(const Layout& l, int factor) {
  if (factor < 1) throw InputError("--scale must be a positive integer, got " + std::to_string(factor));
  Layout s = l;
  s.seq_len = std::max<std::int64_t>(1, l.seq_len / factor);
  return s;
}

bool GemmShape::operator<(const GemmShape& o) const { return std::tie(m, k, n, reps) < std::tie(o.m, o.k, o.n, o.reps); }

GemmShape exec_shape(const ComputeOp& op, double fraction) {
  GemmShape g;
  g.reps = std::max(1, static_cast<int>(std::lround(op.mult)));
  g.m = std::max<std::int64_t>(1, std::llround(op.m * fraction * op.mult / g.reps));
  g.k = std::max<std::int64_t>(1, std::llround(op.k));
  g.n = std::max<std::int64_t>(1, std::llround(op.n));
  return g;
}

topo::GpuPeak host_peak(int ranks_on_host, double mem_gbps) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "CPU";
  double mhz = 0;
  int lanes = 4;  // SSE
  for (std::string_view key; std::getline(in, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    key = std::string_view(line).substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = line.substr(std::min(line.size(), colon + 2));
    if (key == "model name") model = value;
    else if (key == "cpu MHz" && mhz == 0) mhz = std::atof(value.c_str());
    else if (key == "flags") {
      std::istringstream flags(value);
      for (std::string f; flags >> f;) {
        if (f == "avx512f") lanes = std::max(lanes, 16);
        else if (f == "avx2") lanes = std::max(lanes, 8);
      }
    }
  }
  if (mhz <= 0) throw InputError("/proc/cpuinfo: no \"cpu MHz\": give the model a calibration (coll-overlap calibrate)");
  double cores = std::max(1u, std::thread::hardware_concurrency());
  double per_rank = cores / std::max(1, ranks_on_host);
  // Two FMA units per core (Intel Xeon Scalable Gold/Platinum, AMD Zen 4), 2 FLOPs per FMA lane.
  double gflops = per_rank * mhz / 1000 * 2 * 2 * lanes;
  return {fmt::format("{} ({:.2g} cores per rank, fp32, {} lanes)", model, per_rank, lanes), gflops / 1000, mem_gbps};
}

std::optional<double> Calibration::gemm_us(const GemmShape& s) const {
  if (gemms.empty()) return std::nullopt;
  const GemmSample* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  auto lg = [](std::int64_t v) { return std::log2(static_cast<double>(v)); };
  for (const GemmSample& g : gemms) {
    if (g.shape.m == s.m && g.shape.k == s.k && g.shape.n == s.n) return g.time_us / g.shape.reps * s.reps * compute_scale;
    double d = std::abs(lg(g.shape.m) - lg(s.m)) + std::abs(lg(g.shape.k) - lg(s.k)) + std::abs(lg(g.shape.n) - lg(s.n));
    if (d < best_d) best_d = d, best = &g;
  }
  double flops = static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n) * s.reps;
  double theirs =
      static_cast<double>(best->shape.m) * static_cast<double>(best->shape.k) * static_cast<double>(best->shape.n) * best->shape.reps;
  return best->time_us * flops / theirs * compute_scale;
}

namespace {

// A collective's time through `same` (samples of one collective and rank count): the sample of
// that size, else the least-squares line.
std::optional<double> through_samples(const std::vector<const CommSample*>& same, std::uint64_t bytes) {
  if (same.empty()) return std::nullopt;
  for (const CommSample* s : same)
    if (s->bytes == bytes) return s->time_us;
  auto b = static_cast<double>(bytes);
  if (same.size() == 1) return same[0]->time_us * b / static_cast<double>(same[0]->bytes);
  // Least squares of t = a + slope·bytes; a line that does not rise falls back to the nearest sample.
  double n = static_cast<double>(same.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const CommSample* s : same) {
    auto x = static_cast<double>(s->bytes);
    sx += x, sy += s->time_us, sxx += x * x, sxy += x * s->time_us;
  }
  double den = n * sxx - sx * sx;
  double slope = den > 0 ? (n * sxy - sx * sy) / den : 0;
  double a = (sy - slope * sx) / n;
  if (slope > 0 && a + slope * b > 0) return a + slope * b;
  const CommSample* near = *std::min_element(same.begin(), same.end(), [&](const CommSample* x, const CommSample* y) {
    return std::abs(static_cast<double>(x->bytes) - b) < std::abs(static_cast<double>(y->bytes) - b);
  });
  return near->time_us;
}

// The same times `factor` (Calibration::comm_scale).
std::optional<double> through(const std::vector<const CommSample*>& same, std::uint64_t bytes, double factor) {
  std::optional<double> t = through_samples(same, bytes);
  if (t) *t *= factor;
  return t;
}

}  // namespace

std::optional<double> Calibration::comm_us(plan::Collective c, Group g, int nranks, std::uint64_t bytes) const {
  std::vector<const CommSample*> mine, any;
  for (const CommSample& s : collectives) {
    if (s.coll != c || s.nranks != nranks) continue;
    any.push_back(&s);
    if (s.group == g) mine.push_back(&s);
  }
  return through(mine.empty() ? any : mine, bytes, comm_scale);
}

std::optional<double> Calibration::comm_us(plan::Collective c, int nranks, std::uint64_t bytes) const {
  std::vector<const CommSample*> same;
  for (const CommSample& s : collectives)
    if (s.coll == c && s.nranks == nranks) same.push_back(&s);
  if (same.size() > 1) {
    // Several groups' samples of one size: their mean (the samples of one size no longer differ by group).
    double sum = 0;
    int k = 0;
    for (const CommSample* s : same)
      if (s->bytes == bytes) sum += s->time_us, ++k;
    if (k > 0) return sum / k * comm_scale;
  }
  return through(same, bytes, comm_scale);
}

double chunk_sync(double serial_excess_us, int serial_collectives, double chunked_excess_us, int whole, int further) {
  if (further <= 0 || serial_collectives <= 0) return 0;
  const double per_collective = serial_excess_us / serial_collectives;
  return std::max(0.0, chunked_excess_us - per_collective * whole) / further;
}

double level(double measured_us, double from_samples_us) {
  return measured_us > 0 && from_samples_us > 0 ? measured_us / from_samples_us : 1.0;
}

std::string to_json(const Calibration& c) {
  nlohmann::json j;
  j["schema"] = "collkit.overlap-calibration/" + std::to_string(kCalibrationSchemaMajor);
  j["source"] = c.source;
  j["ranks"] = c.ranks;
  j["compute_slowdown"] = c.compute_slowdown;
  j["comm_slowdown"] = c.comm_slowdown;
  j["sync_us"] = c.sync_us;
  j["chunk_sync_us"] = c.chunk_sync_us;
  j["compute_scale"] = c.compute_scale;
  j["comm_scale"] = c.comm_scale;
  nlohmann::json g = nlohmann::json::array();
  for (const GemmSample& s : c.gemms)
    g.push_back({{"m", s.shape.m},
                 {"k", s.shape.k},
                 {"n", s.shape.n},
                 {"reps", s.shape.reps},
                 {"time_us", s.time_us},
                 {"gflops", 2.0 * static_cast<double>(s.shape.m * s.shape.k * s.shape.n) * s.shape.reps / s.time_us / 1e3}});
  j["gemms"] = g;
  nlohmann::json cs = nlohmann::json::array();
  for (const CommSample& s : c.collectives) {
    nlohmann::json x = {
        {"collective", std::string(plan::to_string(s.coll))}, {"nranks", s.nranks}, {"bytes", s.bytes}, {"time_us", s.time_us}};
    if (s.group) x["group"] = std::string(to_string(*s.group));
    cs.push_back(std::move(x));
  }
  j["collectives"] = cs;
  return append_provenance(j.dump(1) + "\n", 1);
}

Calibration parse_calibration(const std::string& text, const std::string& file) {
  nlohmann::json doc = json::parse(file, text);
  json::Cursor root(file, doc);
  root.expect_object();
  root.expect_schema("overlap-calibration", kCalibrationSchemaMajor);
  root.expect_keys({"schema", "source", "ranks", "compute_slowdown", "comm_slowdown", "sync_us", "chunk_sync_us", "compute_scale",
                    "comm_scale", "gemms", "collectives", "provenance"});
  Calibration c;
  c.source = root.at("source").string();
  c.ranks = static_cast<int>(root.at("ranks").integer());
  if (c.ranks < 1) root.at("ranks").fail("must be at least 1");
  c.compute_slowdown = root.at("compute_slowdown").non_negative_number();
  c.comm_slowdown = root.at("comm_slowdown").non_negative_number();
  c.sync_us = root.at("sync_us").non_negative_number();
  if (auto cs = root.find("chunk_sync_us")) c.chunk_sync_us = cs->non_negative_number();  // optional: files from before it
  // Optional: files from before they were measured keep the samples' own level.
  if (auto x = root.find("compute_scale")) c.compute_scale = x->positive_number();
  if (auto x = root.find("comm_scale")) c.comm_scale = x->positive_number();
  json::Cursor gemms = root.at("gemms");
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    json::Cursor g = gemms[i];
    g.expect_keys({"m", "k", "n", "reps", "time_us", "gflops"});
    GemmSample s;
    auto dim = [&](const char* key) {
      std::int64_t v = g.at(key).integer();
      if (v < 1) g.at(key).fail("must be a positive integer, got " + std::to_string(v));
      return v;
    };
    s.shape = {dim("m"), dim("k"), dim("n"), static_cast<int>(dim("reps"))};
    s.time_us = g.at("time_us").positive_number();
    c.gemms.push_back(s);
  }
  json::Cursor colls = root.at("collectives");
  for (std::size_t i = 0; i < colls.size(); ++i) {
    json::Cursor x = colls[i];
    x.expect_keys({"collective", "nranks", "bytes", "time_us", "group"});
    CommSample s;
    auto coll = plan::parse_collective(x.at("collective").string());
    if (!coll) x.at("collective").fail("unknown collective \"" + x.at("collective").string() + "\"");
    s.coll = *coll;
    s.nranks = static_cast<int>(x.at("nranks").integer());
    if (s.nranks < 2) x.at("nranks").fail("must be at least 2");
    std::int64_t bytes = x.at("bytes").integer();
    if (bytes < 1) x.at("bytes").fail("must be a positive integer");
    s.bytes = static_cast<std::uint64_t>(bytes);
    s.time_us = x.at("time_us").positive_number();
    // Optional: files from before groups were recorded keep one sample for every group.
    if (auto grp = x.find("group")) {
      const std::string name = grp->string();
      for (Group g : {Group::Tp, Group::Ep, Group::Dp, Group::ExpertDp, Group::Pp})
        if (to_string(g) == name) s.group = g;
      if (!s.group) grp->fail("unknown group \"" + name + "\" (known: tp, ep, dp, expert-dp, pp)");
    }
    c.collectives.push_back(s);
  }
  return c;
}

Calibration load_calibration(const std::string& file) { return parse_calibration(read_file(file), file); }

}  // namespace collkit::overlap
