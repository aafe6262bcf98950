// Model configs: every file loads, its parameter count is within 2% of the published figure, and
// bad files or names get one-line errors naming the place.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "collkit/core/error.h"
#include "collkit/overlap/model.h"

using namespace collkit::overlap;

TEST_CASE("overlap models: the six required models are present") {
  auto names = list_models();
  for (const char* want : {"llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b", "mixtral-8x7b", "deepseek-v3"})
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
}

TEST_CASE("overlap models: every config loads and its parameter count is within 2% of the published one") {
  for (const auto& name : list_models()) {
    CAPTURE(name);
    Model m = load_model(name);
    CHECK(m.name == name);
    CHECK(!m.sources.empty());
    double p = static_cast<double>(parameter_count(m));
    CHECK(std::abs(p - m.published_params) / m.published_params < 0.02);
  }
}

TEST_CASE("overlap models: counts match the shapes worked out by hand") {
  // REFERENCE Part C 3.1: Llama-3 70B has 855.7 M parameters per layer (attention 150.99 M + gated MLP 704.64 M).
  Model l70 = load_model("llama3-70b");
  CHECK(attention_params(l70) == 8192LL * 64 * 128 + 2LL * 8192 * 8 * 128 + 64LL * 128 * 8192);
  CHECK(mlp_params(l70, l70.ffn) == 3LL * 8192 * 28672);
  // DeepSeek-V3 MLA: 187.1 M per layer; one routed expert 44.04 M.
  Model ds = load_model("deepseek-v3");
  CHECK(std::abs(static_cast<double>(attention_params(ds)) - 187.1e6) < 0.1e6);
  CHECK(mlp_params(ds, ds.moe->expert_ffn) == 3LL * 7168 * 2048);
  CHECK(!ds.is_moe_layer(2));
  CHECK(ds.is_moe_layer(3));
  // Mixtral: 8 experts, top-2, every layer MoE.
  Model mx = load_model("mixtral-8x7b");
  CHECK(mx.moe->top_k == 2);
  CHECK(mx.is_moe_layer(0));
}

TEST_CASE("overlap models: an unknown name lists the known ones") {
  CHECK_THROWS_WITH_AS(load_model("llama9"),
                       "unknown model \"llama9\" (known: deepseek-v3, gpt3-175b, llama3-405b, llama3-70b, llama3-8b, mixtral-8x7b)",
                       collkit::InputError);
}

TEST_CASE("overlap models: a figure without a source, a bad value and a wrong schema are refused with the place") {
  std::string good = R"({"schema": "collkit.model/1", "name": "x", "description": "d", "sources": ["[1] s"],
    "layers": 2, "hidden": 64, "ffn": 128, "gated_mlp": true, "heads": 4, "kv_heads": 2, "head_dim": 16, "vocab": 100,
    "tied_embeddings": false, "published_params": 1e5,
    "cite": {"layers": "[1]", "hidden": "[1]", "ffn": "[1]", "gated_mlp": "[1]", "heads": "[1]", "kv_heads": "[1]",
             "head_dim": "[1]", "vocab": "[1]", "tied_embeddings": "[1]", "published_params": "[1]"}})";
  Model m = parse_model(good, "x.json");
  CHECK(parameter_count(m) == 2 * 100 * 64 + 64 + 2 * (64 * 4 * 16 + 2 * 64 * 2 * 16 + 4 * 16 * 64 + 2 * 64 + 3 * 64 * 128));
  std::string uncited = good;
  const std::string vocab_cite = "\"vocab\": \"[1]\", ";
  uncited.replace(uncited.find(vocab_cite), vocab_cite.size(), "");
  CHECK_THROWS_WITH_AS(parse_model(uncited, "x.json"), "x.json: /cite: no source for \"vocab\"", collkit::InputError);
  std::string bad = good;
  bad.replace(bad.find("\"layers\": 2"), 11, "\"layers\": 0");
  CHECK_THROWS_WITH_AS(parse_model(bad, "x.json"), "x.json: /layers: must be a positive integer, got 0", collkit::InputError);
  std::string schema = good;
  schema.replace(schema.find("collkit.model/1"), 15, "collkit.model/2");
  CHECK_THROWS_AS(parse_model(schema, "x.json"), collkit::InputError);
}

TEST_CASE("overlap models: shapes past the limits are refused before they are multiplied") {
  const std::string good = R"({"schema": "collkit.model/1", "name": "x", "description": "d", "sources": ["[1] s"],
    "layers": 2, "hidden": 64, "ffn": 128, "gated_mlp": true, "heads": 4, "kv_heads": 2, "head_dim": 16, "vocab": 100,
    "tied_embeddings": false, "published_params": 1e5,
    "moe": {"experts": 4, "top_k": 2, "expert_ffn": 32, "shared_experts": 0, "dense_layers": 1},
    "cite": {"layers": "[1]", "hidden": "[1]", "ffn": "[1]", "gated_mlp": "[1]", "heads": "[1]", "kv_heads": "[1]",
             "head_dim": "[1]", "vocab": "[1]", "tied_embeddings": "[1]", "moe": "[1]", "published_params": "[1]"}})";
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK(parameter_count(parse_model(good, "x.json")) > 0);
  // Each dimension below 2^31, their products past 2^63: signed overflow in parameter_count.
  CHECK_THROWS_WITH_AS(
      parse_model(with("\"hidden\": 64, \"ffn\": 128, \"gated_mlp\": true, \"heads\": 4, \"kv_heads\": 2",
                       "\"hidden\": 2147483647, \"ffn\": 128, \"gated_mlp\": true, \"heads\": 2147483647, \"kv_heads\": 1"),
                  "x.json"),
      "x.json: the shapes make more than 1000000000000000 parameters (the limit on a model's size)", collkit::InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("\"experts\": 4, \"top_k\": 2, \"expert_ffn\": 32",
                                        "\"experts\": 2147483647, \"top_k\": 2, \"expert_ffn\": 2147483647"),
                                   "x.json"),
                       "x.json: the shapes make more than 1000000000000000 parameters (the limit on a model's size)", collkit::InputError);
  // 2^31 - 1 layers: parameter_count walked every one (a hang).
  CHECK_THROWS_WITH_AS(parse_model(with("\"layers\": 2", "\"layers\": 2147483647"), "x.json"),
                       "x.json: /layers: 2147483647 is more than 4096 (the limit on layers)", collkit::InputError);
  // Checked before narrowing to int: 2^32 dense layers read as 0.
  CHECK_THROWS_WITH_AS(parse_model(with("\"dense_layers\": 1", "\"dense_layers\": 4294967296"), "x.json"),
                       "x.json: /moe/dense_layers: must be in 0..1", collkit::InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("\"shared_experts\": 0", "\"shared_experts\": 4294967296"), "x.json"),
                       "x.json: /moe/shared_experts: must be >= 0", collkit::InputError);
}

TEST_CASE("overlap models: the documented example loads and counts as worked out in docs/models.md") {
  Model m = load_model(std::string(COLLKIT_DOCS_DIR) + "/examples/model.json");
  CHECK(m.name == "tiny-moe");
  CHECK(!m.is_moe_layer(0));
  CHECK(m.is_moe_layer(1));
  // embeddings (tied) 32000·512 + final norm + dense layer + MoE layer with 4 experts and the router
  CHECK(parameter_count(m) == 32000LL * 512 + 512 + (655360 + 1024 + 3 * 512 * 1536) + (655360 + 1024 + 4 * 3 * 512 * 1024 + 512 * 4));
  CHECK(std::abs(static_cast<double>(parameter_count(m)) - m.published_params) / m.published_params < 0.02);
}
