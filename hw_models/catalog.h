// The hardware and model catalog: data files, one per item, each citing its sources.
//
// Layout: <catalog>/gpus/<id>.yaml and <catalog>/models/<id>.yaml, where <id> is the
// file name without extension ("h100-sxm", "llama-3.1-8b"). Dimensioned fields carry units
// in strings. Datasheet figures and empirical corrections (efficiency factors) are stored
// apart, each with its own source, so a report can say which is which.
//
// GPU file fields: name, vendor, memory (bytes), memory_bandwidth, bf16_dense, fp8_dense
// (optional; absent = no FP8), scaleup_bandwidth (per GPU, per direction), tdp, sources
// (list), and a required `empirical:` section with dense_gemm_achieved (FLOP/s),
// memory_bandwidth_achieved (bytes/s), scaleup_latency (time) and its own sources.
// Model file fields: name, layers, hidden, heads, kv_heads, head_dim, ffn, vocab,
// gated_mlp (default true), tied_embeddings (default false), max_context_tokens,
// published_params (a plain number, e.g. 8.03e9; the shape must derive it within 10%),
// sources (list). Unknown fields are errors.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fleetsim::hw {

/// One accelerator. Rates are dense (no 2:4 sparsity).
struct GpuSpec {
  std::string id;    ///< file stem, e.g. "h100-sxm"
  std::string name;  ///< display name, e.g. "NVIDIA H100 SXM5 80GB"
  std::string vendor;
  double memory_bytes = 0;              ///< HBM capacity
  double memory_bw_bytes_per_s = 0;     ///< peak HBM bandwidth
  double bf16_flops_per_s = 0;          ///< dense BF16 tensor rate
  double fp8_flops_per_s = 0;           ///< dense FP8 tensor rate; 0 when the part has none
  double scaleup_bw_bytes_per_s = 0;    ///< per-GPU, per-direction NVLink/xGMI bandwidth
  double scaleup_latency_s = 0;         ///< α of one scale-up hop (collective step latency);
                                        ///< measured, read from the `empirical:` section
  double tdp_w = 0;
  std::vector<std::string> sources;     ///< datasheet citations

  /// Empirical corrections: achieved / peak, measured by someone and cited separately.
  /// The file stores the measured figures (`empirical: dense_gemm_achieved`,
  /// `memory_bandwidth_achieved`); the loader divides them by the datasheet peaks.
  double compute_efficiency = 0;        ///< achieved dense GEMM rate / bf16 peak, in (0, 1]
  double memory_efficiency = 0;         ///< achieved streaming bandwidth / peak, in (0, 1]
  std::vector<std::string> efficiency_sources;
};

/// A dense decoder-only transformer (Llama family shape). MoE/MLA come with the full catalog.
struct ModelSpec {
  std::string id;    ///< file stem, e.g. "llama-3.1-8b"
  std::string name;
  int layers = 0;
  int hidden = 0;       ///< d_model
  int heads = 0;        ///< query heads
  int kv_heads = 0;     ///< key/value heads (GQA when < heads)
  int head_dim = 0;
  int ffn = 0;          ///< MLP intermediate size
  int vocab = 0;
  bool gated_mlp = true;        ///< SwiGLU: gate, up and down projections (3 matrices)
  bool tied_embeddings = false; ///< LM head shares the embedding matrix
  int max_context_tokens = 0;
  double published_params = 0;  ///< the parameter count its authors publish
  std::vector<std::string> sources;

  /// Parameter count derived from the shape (embeddings, attention, MLP, norms, LM head).
  double derived_params() const;
  /// GEMM weight parameters of one transformer layer: Q, K, V and O projections
  /// (2·h·heads·head_dim + 2·h·kv_heads·head_dim) and the MLP (3·h·ffn gated, 2·h·ffn not).
  /// Norm scales are excluded. layers · this + the LM head are the weights a token's
  /// forward pass multiplies by (the embedding table is a gather, not a GEMM).
  double gemm_params_per_layer() const;
  /// KV-cache bytes per token over all layers: 2 (K and V) * layers * kv_heads * head_dim * bytes.
  double kv_bytes_per_token(double bytes_per_element) const;
};

class Catalog {
 public:
  /// Loads every gpus/*.yaml and models/*.yaml under `dir`. Any malformed file is an
  /// InputError naming the file, line and field.
  static Catalog load(const std::string& dir);
  /// The catalog directory: $FLEETSIM_CATALOG if set, else the one in the source tree.
  static std::string default_dir();

  /// Look-ups throw InputError "unknown GPU 'x'" with did-you-mean and the list of ids.
  const GpuSpec& gpu(const std::string& id) const;
  const ModelSpec& model(const std::string& id) const;
  const std::map<std::string, GpuSpec>& gpus() const { return gpus_; }
  const std::map<std::string, ModelSpec>& models() const { return models_; }

 private:
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, ModelSpec> models_;
};

/// Parse one file (exposed for tests of bad catalog files).
GpuSpec load_gpu_file(const std::string& path);
ModelSpec load_model_file(const std::string& path);

}  // namespace fleetsim::hw
