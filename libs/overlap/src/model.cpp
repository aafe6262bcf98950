#include "collkit/overlap/model.h"

#include <algorithm>
#include <filesystem>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/json_cursor.h"
#include "collkit/topo/synth.h"

namespace collkit::overlap {

namespace fs = std::filesystem;

std::int64_t attention_params(const Model& m) {
  const std::int64_t h = m.hidden, H = m.heads;
  if (m.mla) {
    // MLA (DeepSeek-V2 Section 2.1): W_DQ, W_UQ (+rope part), W_DKV (+shared rope key), W_UK and W_UV, W_O.
    const MlaShape& a = *m.mla;
    return h * a.q_lora_rank + a.q_lora_rank * H * (a.qk_nope_head_dim + a.qk_rope_head_dim) +
           h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank * H * (a.qk_nope_head_dim + a.v_head_dim) +
           H * a.v_head_dim * h;
  }
  return h * H * m.head_dim + 2 * h * m.kv_heads * m.head_dim + H * m.head_dim * h;
}

std::int64_t mlp_params(const Model& m, std::int64_t ffn) { return (m.gated_mlp ? 3 : 2) * m.hidden * ffn; }

std::int64_t layer_params(const Model& m, int layer) {
  std::int64_t p = attention_params(m) + 2 * m.hidden;  // two RMSNorm/LayerNorm weight vectors
  if (m.is_moe_layer(layer)) {
    const MoeShape& e = *m.moe;
    p += static_cast<std::int64_t>(e.experts + e.shared_experts) * mlp_params(m, e.expert_ffn) + m.hidden * e.experts;
  } else {
    p += mlp_params(m, m.ffn);
  }
  return p;
}

std::int64_t parameter_count(const Model& m) {
  std::int64_t p = (m.tied_embeddings ? 1 : 2) * m.vocab * m.hidden + m.hidden;
  for (int l = 0; l < m.layers; ++l) p += layer_params(m, l);
  return p;
}

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
    e.shared_experts = static_cast<int>(moe->at("shared_experts").integer());
    e.dense_layers = static_cast<int>(moe->at("dense_layers").integer());
    if (e.top_k > e.experts) moe->at("top_k").fail("exceeds the " + std::to_string(e.experts) + " experts");
    if (e.shared_experts < 0) moe->at("shared_experts").fail("must be >= 0");
    if (e.dense_layers < 0 || e.dense_layers >= m.layers) moe->at("dense_layers").fail("must be in 0.." + std::to_string(m.layers - 1));
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
