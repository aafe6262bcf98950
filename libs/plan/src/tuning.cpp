// collkit.tuning/1 read and written (docs/tuning.md). Built into a position-independent library of
// its own with collective.cpp (libs/plan/CMakeLists.txt), so that the NCCL tuner plugin links it.

#include "collkit/plan/tuning.h"

#include <array>
#include <cmath>
#include <utility>

#include "collkit/core/error.h"
#include "collkit/core/json_cursor.h"
#include "collkit/core/provenance_json.h"

namespace collkit::plan {

namespace {

// NCCL's names, in its ABI's order (REFERENCE.md 1.1), spelt as NCCL_ALGO / NCCL_PROTO take them.
constexpr std::array<std::string_view, 7> kAlgoNames = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
constexpr std::array<std::string_view, 3> kProtoNames = {"ll", "ll128", "simple"};

std::string lower(std::string_view text) {
  std::string s(text);
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

template <std::size_t N>
std::string joined(const std::array<std::string_view, N>& names) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) out += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i]);
  return out;
}

std::uint64_t size_at(const json::Cursor& c) {
  std::int64_t v = c.integer();
  if (v < 0) c.fail("must be >= 0, got " + std::to_string(v));
  auto u = static_cast<std::uint64_t>(v);
  if (u > kTuningMaxBytes)
    c.fail("sizes must be below 2^53 (9007199254740992) to survive JSON readers; leave out max_bytes for no upper end");
  return u;
}

int channels_at(const json::Cursor& c) {
  std::int64_t v = c.integer();
  if (v < 0 || v > 64) c.fail("channels must be 0..64 (NCCL's MAXCHANNELS), got " + std::to_string(v));
  return static_cast<int>(v);
}

NcclChoice read_nccl(const json::Cursor& c) {
  c.expect_object();
  c.expect_keys({"algorithm", "protocol", "channels", "predicted_us_at_min"});
  NcclChoice n;
  json::Cursor a = c.at("algorithm");
  auto algo = parse_nccl_algo(a.string());
  if (!algo) a.fail("unknown NCCL algorithm \"" + a.string() + "\" (expected " + joined(kAlgoNames) + ")");
  n.algorithm = *algo;
  if (auto p = c.find("protocol")) {
    auto proto = parse_nccl_proto(p->string());
    if (!proto) p->fail("unknown NCCL protocol \"" + p->string() + "\" (expected " + joined(kProtoNames) + ")");
    n.protocol = proto;
  }
  if (auto ch = c.find("channels")) n.channels = channels_at(*ch);
  if (auto t = c.find("predicted_us_at_min")) n.predicted_us_at_min = t->non_negative_number();
  return n;
}

}  // namespace

std::string_view to_string(NcclAlgo a) { return kAlgoNames.at(static_cast<std::size_t>(a)); }
std::string_view to_string(NcclProto p) { return kProtoNames.at(static_cast<std::size_t>(p)); }

std::optional<NcclAlgo> parse_nccl_algo(std::string_view text) {
  std::string s = lower(text);
  for (std::size_t i = 0; i < kAlgoNames.size(); ++i)
    if (s == kAlgoNames[i]) return static_cast<NcclAlgo>(i);
  return std::nullopt;
}

std::optional<NcclProto> parse_nccl_proto(std::string_view text) {
  std::string s = lower(text);
  for (std::size_t i = 0; i < kProtoNames.size(); ++i)
    if (s == kProtoNames[i]) return static_cast<NcclProto>(i);
  return std::nullopt;
}

std::optional<NcclAlgo> nccl_counterpart(std::string_view collkit_algorithm) {
  if (collkit_algorithm == "ring") return NcclAlgo::Ring;
  if (collkit_algorithm == "tree") return NcclAlgo::Tree;
  return std::nullopt;
}

const TuningRange* TuningTable::find(std::uint64_t bytes) const {
  for (const TuningRange& r : ranges)
    if (r.covers(bytes)) return &r;
  return nullptr;
}

TuningTable read_tuning_table(const std::string& file, const std::string& text) {
  nlohmann::json doc = json::parse(file, text);
  json::Cursor root(file, doc);
  root.expect_schema("tuning", 1);
  root.expect_keys({"schema", "collective", "nranks", "topology", "ranges", "iters", "warmup_iters", "provenance"});
  TuningTable t;
  json::Cursor coll = root.at("collective");
  auto c = parse_collective(coll.string());
  if (!c) coll.fail("unknown collective \"" + coll.string() + "\"");
  t.collective = *c;
  json::Cursor nranks = root.at("nranks");
  std::int64_t n = nranks.integer();
  if (n < 1 || n > (std::int64_t{1} << 31) - 1) nranks.fail("must be a rank count >= 1, got " + std::to_string(n));
  t.nranks = static_cast<int>(n);
  if (auto topo = root.find("topology")) {
    topo->expect_object();
    topo->expect_keys({"name", "fingerprint"});
    if (auto name = topo->find("name")) t.topology_name = name->string();
    if (auto fp = topo->find("fingerprint")) t.topology_fingerprint = fp->string();
  }
  for (auto [key, to] : {std::pair{"iters", &t.iters}, std::pair{"warmup_iters", &t.warmup_iters}})
    if (auto count = root.find(key)) {
      std::int64_t v = count->integer();
      if (v < 0 || v > (std::int64_t{1} << 31) - 1) count->fail("must be a count >= 0, got " + std::to_string(v));
      *to = static_cast<int>(v);
    }
  json::Cursor ranges = root.at("ranges");
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    json::Cursor r = ranges[i];
    r.expect_object();
    r.expect_keys({"min_bytes", "max_bytes", "algorithm", "channels", "predicted_us_at_min", "measured_us_at_min", "nccl"});
    TuningRange out;
    out.min_bytes = size_at(r.at("min_bytes"));
    if (auto hi = r.find("max_bytes")) {
      out.max_bytes = size_at(*hi);
      if (*out.max_bytes < out.min_bytes)
        hi->fail("max_bytes " + std::to_string(*out.max_bytes) + " is below min_bytes " + std::to_string(out.min_bytes));
    }
    out.algorithm = r.at("algorithm").string();
    if (auto ch = r.find("channels")) out.channels = channels_at(*ch);
    if (auto p = r.find("predicted_us_at_min")) out.predicted_us_at_min = p->non_negative_number();
    if (auto m = r.find("measured_us_at_min")) out.measured_us_at_min = m->non_negative_number();
    if (auto nccl = r.find("nccl")) out.nccl = read_nccl(*nccl);
    if (!t.ranges.empty()) {
      const TuningRange& prev = t.ranges.back();
      if (!prev.max_bytes || out.min_bytes <= *prev.max_bytes)
        r.at("min_bytes").fail("ranges must ascend without overlap: " + std::to_string(out.min_bytes) + " is within the range before");
    }
    t.ranges.push_back(std::move(out));
  }
  return t;
}

std::string write_tuning_table(const TuningTable& table) {
  nlohmann::json ranges = nlohmann::json::array();
  for (const TuningRange& r : table.ranges) {
    if (r.min_bytes > kTuningMaxBytes || (r.max_bytes && *r.max_bytes > kTuningMaxBytes))
      throw InputError("tuning table: sizes must be below 2^53 bytes, got a range up to " +
                       std::to_string(r.max_bytes.value_or(r.min_bytes)));
    nlohmann::json j{
        {"min_bytes", r.min_bytes}, {"algorithm", r.algorithm}, {"channels", r.channels}, {"predicted_us_at_min", r.predicted_us_at_min}};
    if (r.max_bytes) j["max_bytes"] = *r.max_bytes;
    if (r.measured_us_at_min > 0) j["measured_us_at_min"] = r.measured_us_at_min;
    if (r.nccl) {
      nlohmann::json n{{"algorithm", to_string(r.nccl->algorithm)}};
      if (r.nccl->protocol) n["protocol"] = to_string(*r.nccl->protocol);
      if (r.nccl->channels > 0) n["channels"] = r.nccl->channels;
      if (r.nccl->predicted_us_at_min > 0) n["predicted_us_at_min"] = r.nccl->predicted_us_at_min;
      j["nccl"] = std::move(n);
    }
    ranges.push_back(std::move(j));
  }
  nlohmann::json j{{"schema", "collkit.tuning/1"},
                   {"collective", to_string(table.collective)},
                   {"nranks", table.nranks},
                   {"topology", {{"name", table.topology_name}, {"fingerprint", table.topology_fingerprint}}},
                   {"ranges", std::move(ranges)}};
  if (table.iters > 0) {
    j["iters"] = table.iters;
    j["warmup_iters"] = table.warmup_iters;
  }
  return append_provenance(j.dump(2) + "\n", 2);
}

}  // namespace collkit::plan
