#include "collkit/overlap/model.h"

#include <algorithm>
#include <filesystem>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/json_cursor.h"
#include "collkit/core/limits.h"
#include "collkit/topo/synth.h"

namespace collkit::overlap {

namespace fs = std::filesystem;

namespace {

// The counts in T: std::int64_t for the API below; long double for parse_model's check that they
// fit (dimensions each below 2^31 multiplied past 2^63: undefined behaviour, shown through fuzz_model).
template <class T>
T attention_in(const Model& m) {
  const T h = static_cast<T>(m.hidden), H = static_cast<T>(m.heads);
  if (m.mla) {
    // MLA (DeepSeek-V2 Section 2.1): W_DQ, W_UQ (+rope part), W_DKV (+shared rope key), W_UK and W_UV, W_O.
    const MlaShape& a = *m.mla;
    const T q = static_cast<T>(a.q_lora_rank), kv = static_cast<T>(a.kv_lora_rank), nope = static_cast<T>(a.qk_nope_head_dim),
            rope = static_cast<T>(a.qk_rope_head_dim), v = static_cast<T>(a.v_head_dim);
    return h * q + q * H * (nope + rope) + h * (kv + rope) + kv * H * (nope + v) + H * v * h;
  }
  const T d = static_cast<T>(m.head_dim);
  return h * H * d + 2 * h * static_cast<T>(m.kv_heads) * d + H * d * h;
}

template <class T>
T mlp_in(const Model& m, std::int64_t ffn) {
  return (m.gated_mlp ? 3 : 2) * static_cast<T>(m.hidden) * static_cast<T>(ffn);
}

template <class T>
T layer_in(const Model& m, int layer) {
  T p = attention_in<T>(m) + 2 * static_cast<T>(m.hidden);  // two RMSNorm/LayerNorm weight vectors
  if (m.is_moe_layer(layer)) {
    const MoeShape& e = *m.moe;
    p += static_cast<T>(static_cast<std::int64_t>(e.experts) + e.shared_experts) * mlp_in<T>(m, e.expert_ffn) +
         static_cast<T>(m.hidden) * static_cast<T>(e.experts);
  } else {
    p += mlp_in<T>(m, m.ffn);
  }
  return p;
}

template <class T>
T count_in(const Model& m) {
  T p = (m.tied_embeddings ? 1 : 2) * static_cast<T>(m.vocab) * static_cast<T>(m.hidden) + static_cast<T>(m.hidden);
  for (int l = 0; l < m.layers; ++l) p += layer_in<T>(m, l);
  return p;
}

}  // namespace

std::int64_t attention_params(const Model& m) { return attention_in<std::int64_t>(m); }

std::int64_t mlp_params(const Model& m, std::int64_t ffn) { return mlp_in<std::int64_t>(m, ffn); }

std::int64_t layer_params(const Model& m, int layer) { return layer_in<std::int64_t>(m, layer); }

std::int64_t parameter_count(const Model& m) { return count_in<std::int64_t>(m); }

namespace {

int positive_int(const json::Cursor& c) {
  std::int64_t v = c.integer();
  if (v < 1 || v > (1LL << 31) - 1) c.fail("must be a positive integer, got " + std::to_string(v));
  return static_cast<int>(v);
}

}  // namespace

Model parse_model(const std::string& text, const std::string& file) {
  nlohmann::json doc = json::parse(file, text);
  json::Cursor root(file, doc);
  root.expect_object();
  root.expect_schema("model", 1);
  root.expect_keys({"schema", "name", "description", "sources", "layers", "hidden", "ffn", "gated_mlp", "heads", "kv_heads",
                    "head_dim", "vocab", "tied_embeddings", "moe", "mla", "published_params", "cite"});
  Model m;
  m.name = root.at("name").string();
  m.description = root.at("description").string();
  json::Cursor sources = root.at("sources");
  for (std::size_t i = 0; i < sources.size(); ++i) m.sources.push_back(sources[i].string());
  if (m.sources.empty()) sources.fail("at least one source is needed");
  m.layers = positive_int(root.at("layers"));
  if (m.layers > limits::kModelLayers)
    root.at("layers").fail(std::to_string(m.layers) + " is more than " + std::to_string(limits::kModelLayers) + " (the limit on layers)");
  m.hidden = positive_int(root.at("hidden"));
  m.ffn = positive_int(root.at("ffn"));
  m.gated_mlp = root.at("gated_mlp").boolean();
  m.heads = positive_int(root.at("heads"));
  m.kv_heads = positive_int(root.at("kv_heads"));
  m.head_dim = positive_int(root.at("head_dim"));
  m.vocab = positive_int(root.at("vocab"));
  m.tied_embeddings = root.at("tied_embeddings").boolean();
  m.published_params = root.at("published_params").positive_number();
  if (m.heads % m.kv_heads != 0) root.at("kv_heads").fail("must divide heads (" + std::to_string(m.heads) + ")");
  if (auto moe = root.find("moe")) {
    moe->expect_keys({"experts", "top_k", "expert_ffn", "shared_experts", "dense_layers"});
    MoeShape e;
    e.experts = positive_int(moe->at("experts"));
    e.top_k = positive_int(moe->at("top_k"));
    e.expert_ffn = positive_int(moe->at("expert_ffn"));
    // Both checked before they narrow to int: 4294967296 dense layers once read as 0.
    const std::int64_t shared = moe->at("shared_experts").integer(), dense = moe->at("dense_layers").integer();
    if (e.top_k > e.experts) moe->at("top_k").fail("exceeds the " + std::to_string(e.experts) + " experts");
    if (shared < 0 || shared > (1LL << 31) - 1) moe->at("shared_experts").fail("must be >= 0");
    if (dense < 0 || dense >= m.layers) moe->at("dense_layers").fail("must be in 0.." + std::to_string(m.layers - 1));
    e.shared_experts = static_cast<int>(shared);
    e.dense_layers = static_cast<int>(dense);
    m.moe = e;
  }
  if (auto mla = root.find("mla")) {
    mla->expect_keys({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
    MlaShape a;
    a.q_lora_rank = positive_int(mla->at("q_lora_rank"));
    a.kv_lora_rank = positive_int(mla->at("kv_lora_rank"));
    a.qk_nope_head_dim = positive_int(mla->at("qk_nope_head_dim"));
    a.qk_rope_head_dim = positive_int(mla->at("qk_rope_head_dim"));
    a.v_head_dim = positive_int(mla->at("v_head_dim"));
    m.mla = a;
  }
  // Checked before anything multiplies them in 64 bits (parameter_count, coll-overlap's memory).
  if (count_in<long double>(m) > static_cast<long double>(limits::kModelParams))
    throw InputError(file + ": the shapes make more than " + std::to_string(limits::kModelParams) +
                     " parameters (the limit on a model's size)");
  // Every figure names its source (by [n] of "sources").
  json::Cursor cite = root.at("cite");
  cite.expect_object();
  for (std::string_view key : {"layers", "hidden", "ffn", "gated_mlp", "heads", "kv_heads", "head_dim", "vocab", "tied_embeddings",
                               "moe", "mla", "published_params"}) {
    if (!root.find(key)) continue;
    auto c = cite.find(key);
    if (!c) cite.fail("no source for \"" + std::string(key) + "\"");
    if (c->string().find('[') == std::string::npos) c->fail("must cite a source by [n]");
  }
  return m;
}

std::vector<std::string> list_models() {
  std::vector<std::string> names;
  fs::path dir = fs::path(topo::config_dir()) / "models";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Model load_model(std::string_view name_or_path) {
  std::string arg(name_or_path);
  bool is_path = arg.find('/') != std::string::npos || (arg.size() > 5 && arg.ends_with(".json"));
  std::string path = is_path ? arg : (fs::path(topo::config_dir()) / "models" / (arg + ".json")).string();
  if (!is_path && !fs::exists(path)) {
    std::string known;
    for (const auto& n : list_models()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown model \"" + arg + "\" (known: " + known + ")");
  }
  return parse_model(read_file(path), fs::path(path).filename().string());
}

}  // namespace collkit::overlap
