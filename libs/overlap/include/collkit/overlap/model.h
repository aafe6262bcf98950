#pragma once
// Transformer model shapes from configs/models/<name>.json (schema collkit.model/1, docs/models.md).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collkit::overlap {

/// Mixture-of-experts MLP: every layer after the first `dense_layers` replaces its MLP by experts.
struct MoeShape {
  int experts = 0;         ///< routed experts
  int top_k = 0;           ///< experts each token goes to
  std::int64_t expert_ffn = 0;
  int shared_experts = 0;  ///< always-on experts of the same shape (DeepSeekMoE)
  int dense_layers = 0;    ///< leading layers with a dense MLP of `ffn`
};

/// Multi-head latent attention (DeepSeek-V2/V3): low-rank query and key/value projections.
struct MlaShape {
  std::int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
};

struct Model {
  std::string name, description;
  std::vector<std::string> sources;
  int layers = 0;
  std::int64_t hidden = 0;
  std::int64_t ffn = 0;      ///< dense MLP width
  bool gated_mlp = true;     ///< SwiGLU: three matrices (gate, up, down); else two
  int heads = 0, kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t vocab = 0;
  bool tied_embeddings = false;
  std::optional<MoeShape> moe;
  std::optional<MlaShape> mla;
  double published_params = 0;  ///< the figure its authors publish

  bool is_moe_layer(int layer) const { return moe && layer >= moe->dense_layers; }
};

/// Weights of one layer's attention block (projections only).
std::int64_t attention_params(const Model& m);
/// Weights of one MLP (or one expert) of width `ffn`.
std::int64_t mlp_params(const Model& m, std::int64_t ffn);
/// Weights of layer `layer`: attention, MLP or all experts with the router, and the two norms.
std::int64_t layer_params(const Model& m, int layer);
/// The whole model: layers, embeddings (once when tied), final norm.
std::int64_t parameter_count(const Model& m);

/// Parses collkit.model/1 text; errors are InputErrors "<file>: <pointer>: <what>". Every figure
/// must be cited in "cite".
Model parse_model(const std::string& text, const std::string& file);
/// A name from configs/models/ ("llama3-70b") or a path to a file (contains '/' or ends in .json).
/// An unknown name gets `unknown model "x" (known: a, b, ...)`.
Model load_model(std::string_view name_or_path);
/// Names of the models in configs/models/, sorted.
std::vector<std::string> list_models();

}  // namespace collkit::overlap
