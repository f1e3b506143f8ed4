// The shapes the kernels are measured over, derived from the model catalog
// (hw_models/catalog/models/*.yaml), so they follow the catalog's config.json figures.
#pragma once

#include <string>
#include <vector>

#include "hw_models/catalog.h"

namespace fleetsim::kernels {

/// One weight GEMM of a model: Y[m×n] = X[m×k]·Wᵀ with W [n×k]; m (tokens) varies.
struct GemmShape {
  std::string model;  ///< catalog id
  std::string proj;   ///< qkv, o, gate_up, down, q_a, kv_a, q_b, kv_b, expert_gate_up, ...
  int n = 0;
  int k = 0;
};

/// Projections and MLP GEMMs of one layer (gate and up fused, as serving engines run them).
/// Dense attention: qkv [(heads + 2·kv_heads)·head_dim × hidden], o [hidden × heads·head_dim].
/// MLA (DeepSeek-V3): q_a, kv_a (latent + rope key), q_b, kv_b, o.
/// Dense MLP (ffn > 0): gate_up [2·ffn × hidden], down [hidden × ffn].
/// MoE: one expert's gate_up [2·expert_ffn × hidden] and down [hidden × expert_ffn].
std::vector<GemmShape> model_gemm_shapes(const hw::ModelSpec& m);

/// Shapes of several models with duplicate (n, k) removed (the first label is kept and the
/// others are appended to it, e.g. "qkv (= mixtral-8x7b qkv)").
std::vector<GemmShape> unique_gemm_shapes(const std::vector<GemmShape>& shapes);

/// Attention of a model with head_dim 128 (the kernels' head dimension).
struct AttnShape {
  std::string model;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
};
AttnShape model_attention(const hw::ModelSpec& m);

/// The routed experts of an MoE model.
struct MoeShape {
  std::string model;
  int experts = 0;
  int top_k = 0;
  int hidden = 0;
  int expert_ffn = 0;
};
MoeShape model_moe(const hw::ModelSpec& m);  ///< throws when the model is dense

/// Token counts the GEMMs are measured at: 1, 4, 16, ..., 16384 (powers of 4).
std::vector<int> gemm_token_counts();

}  // namespace fleetsim::kernels
