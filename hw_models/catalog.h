// The hardware and model catalog: data files, one per item, each citing its sources.
//
// Layout: <catalog>/{gpus,models,nodes,interconnects,engines}/<id>.yaml, where <id> is the file
// name without extension ("h100-sxm", "llama-3.1-8b"). The schema of each kind of file is
// in hw_models/catalog/README.md. Dimensioned fields carry units in strings. Datasheet
// figures and measured figures (the `empirical:` section) are stored apart, each with its
// own sources, so a report can say which is which. Unknown fields are errors.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fleetsim::hw {

/// One accelerator. Rates are dense (no 2:4 sparsity).
struct GpuSpec {
  std::string id;    ///< file stem, e.g. "h100-sxm"
  std::string name;  ///< display name, e.g. "NVIDIA H100 SXM5 80GB"
  std::string vendor;
  double memory_bytes = 0;           ///< device memory capacity
  double memory_bw_bytes_per_s = 0;  ///< peak device memory bandwidth
  double bf16_flops_per_s = 0;       ///< dense BF16 tensor rate (Apple: FP16 GPU rate)
  double fp8_flops_per_s = 0;        ///< dense FP8 tensor rate; 0 when the part has none
  double int8_ops_per_s = 0;         ///< dense INT8 tensor rate; 0 when not published
  double fp4_flops_per_s = 0;        ///< dense FP4 tensor rate; 0 when the part has none
  /// Dense FP16 tensor rate with FP16 accumulation; 0 = bf16_dense. GeForce cards run it at
  /// twice their FP32-accumulate rate; data-centre parts at the same rate.
  double fp16_acc16_flops_per_s = 0;
  /// Streaming multiprocessors (NVIDIA) on the part; 0 = not given. Kernels whose memory
  /// traffic is limited per SM (EngineSpec::matvec_sm_bandwidth) use it.
  int sm_count = 0;
  /// Catalog id of a GPU with the same die, SM count and clocks (equal dense tensor rates):
  /// its compute-bound calibration rows stand for this GPU's where this one has none of
  /// that operator and dtype (e.g. H200 SXM = H100 SXM's GH100 with other memory). "" = none.
  std::string compute_twin;
  std::string scaleup;                ///< interconnect id of the GPU fabric ("" = none)
  double scaleup_bw_bytes_per_s = 0;  ///< per-GPU, per-direction NVLink/xGMI bandwidth
  double scaleup_latency_s = 0;       ///< α of one collective step: measured (empirical)
                                      ///< or else the interconnect's latency
  std::string host_link;              ///< interconnect id of the GPU-host link
  double tdp_w = 0;
  double idle_power_w = 0;            ///< 0 = not published
  double price_usd = 0;               ///< purchase price; 0 = not published
  double cloud_usd_per_gpu_hour = 0;  ///< 0 = not published
  std::vector<std::string> sources;   ///< datasheet citations

  /// Achieved / peak. From the `empirical:` section when it has the measured figure
  /// (dense_gemm_achieved, memory_bandwidth_achieved); otherwise the assumed defaults
  /// below, and `efficiency_basis` says "assumed".
  double compute_efficiency = 0;
  double memory_efficiency = 0;
  /// Measured FP4 GEMM rate / fp4 peak (`empirical: fp4_gemm_achieved`); 0 = not measured
  /// (FP4 GEMMs then run at compute_efficiency of the FP4 peak).
  double fp4_compute_efficiency = 0;
  std::string
      efficiency_basis;  ///< "measured" | "assumed" | "measured compute, assumed memory" ...
  std::vector<std::string> efficiency_sources;

  static constexpr double kAssumedComputeEfficiency = 0.7;
  static constexpr double kAssumedMemoryEfficiency = 0.8;
};

/// Multi-head latent attention (DeepSeek-V2/V3).
struct MlaSpec {
  int q_lora_rank = 0;  ///< 0 = queries are not compressed
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  /// Elements cached per token per layer: the compressed latent plus the shared RoPE key.
  int latent_dim() const { return kv_lora_rank + qk_rope_head_dim; }
};

/// Mixture-of-experts MLP.
struct MoeSpec {
  int experts = 0;         ///< routed experts per MoE layer
  int top_k = 0;           ///< routed experts per token
  int shared_experts = 0;  ///< experts every token goes through
  int expert_ffn = 0;      ///< intermediate size of one expert
  int dense_layers = 0;    ///< the first N layers use a dense MLP of size `ffn`
  /// Routing skew measured without a load balancer: the hottest expert's tokens / the mean
  /// expert's (1 = balanced, the default where no routing statistics are published). Sets
  /// the busiest expert-parallel GPU's share (hw_models/perf_model.h).
  double hot_expert = 1.0;
};

/// A decoder-only transformer: dense or MoE MLP, MHA/GQA/MQA or MLA attention.
struct ModelSpec {
  std::string id;  ///< file stem, e.g. "llama-3.1-8b"
  std::string name;
  int layers = 0;
  int hidden = 0;    ///< d_model
  int heads = 0;     ///< query heads
  int kv_heads = 0;  ///< key/value heads (GQA when < heads, MQA when 1)
  int head_dim = 0;
  int ffn = 0;  ///< dense MLP intermediate size (0 when every layer is MoE)
  int vocab = 0;
  bool gated_mlp = true;         ///< SwiGLU: gate, up and down projections (3 matrices)
  bool tied_embeddings = false;  ///< LM head shares the embedding matrix
  bool attention_bias = false;   ///< Q, K, V and O carry bias vectors
  int max_context_tokens = 0;
  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;
  int sliding_window_tokens = 0;  ///< 0 = none
  int sliding_window_layers = 0;  ///< layers that attend to the last `tokens` only
  /// Chunked attention (Llama 4): these layers attend only within the token's own aligned
  /// chunk of `attention_chunk_tokens` (0 = none). Priced in prefill; decode and the KV cache
  /// treat them as full attention (an upper bound past one chunk of context).
  int attention_chunk_tokens = 0;
  int chunked_attention_layers = 0;
  int mtp_layers = 0;                  ///< multi-token-prediction modules (not in the params)
  double published_params = 0;         ///< total, as its authors publish it
  double published_active_params = 0;  ///< per token; MoE only (0 = dense: equals total)
  /// The publisher's active count leaves out the input embedding table (a gather, not a
  /// GEMM) but keeps the LM head: gpt-oss model card, DeepSeek-V3.
  bool active_excludes_input_embedding = false;
  /// The published figures are rounded to this many parameters ("37B": 1e9); 0 = exact.
  double published_rounding = 0;
  /// The Hugging Face repository serving engines load it from ("" = none: the deployable
  /// output then leaves the model path to the user).
  std::string hf_repo;
  std::vector<std::string> sources;

  bool is_moe() const { return moe.has_value(); }
  int moe_layers() const { return moe ? layers - moe->dense_layers : 0; }
  int dense_mlp_layers() const { return layers - moe_layers(); }

  /// Attention weights of one layer (projections, and biases when attention_bias).
  double attention_params_per_layer() const;
  /// Weights of one dense MLP: (gated ? 3 : 2)·hidden·ffn.
  double dense_mlp_params() const;
  /// Weights of one expert: 3·hidden·expert_ffn (experts are gated).
  double expert_params() const;
  /// Embedding table plus LM head (once when tied).
  double embedding_params() const;
  /// Total parameters derived from the shape (hw_models/catalog/README.md has the formula).
  double derived_params() const;
  /// Parameters one token's forward pass uses: top_k + shared experts instead of all.
  double derived_active_params() const;
  /// GEMM weight parameters of one dense transformer layer (attention + dense MLP), norms
  /// excluded.
  double gemm_params_per_layer() const;
  /// KV-cache elements per token per layer: 2·kv_heads·head_dim, or the MLA latent.
  double kv_elements_per_token_per_layer() const;
  /// KV-cache bytes per token over all layers that keep the whole context.
  double kv_bytes_per_token(double bytes_per_element) const;
};

/// A link technology: scale-up fabric, host link, scale-out NIC or WAN.
struct InterconnectSpec {
  std::string id;
  std::string name;
  std::string kind;           ///< scaleup | host | scaleout | wan
  double bw_bytes_per_s = 0;  ///< per GPU (scaleup, host) or per port, per direction
  double latency_s = 0;       ///< small-message one-way latency
  std::vector<std::string> sources;
};

/// A server (or an NVL72 compute tray) and how servers are racked.
struct NodeSpec {
  std::string id;
  std::string name;
  std::string gpu;  ///< gpu id
  int gpus_per_node = 0;
  int scaleup_domain_gpus = 0;  ///< GPUs in one NVLink/xGMI domain (72 for NVL72)
  int nics_per_node = 0;
  std::string nic;  ///< interconnect id ("" when nics_per_node == 0)
  double host_memory_bytes = 0;
  double host_memory_bw_bytes_per_s = 0;  ///< 0 = not given
  double host_flops_per_s = 0;            ///< 0 = not given
  double node_power_w = 0;
  int nodes_per_rack = 0;
  double rack_power_w = 0;  ///< 0 = not given
  double price_usd = 0;     ///< 0 = not published
  std::vector<std::string> sources;
};

/// A serving engine and version family (vLLM V1, TensorRT-LLM 1.x, llama.cpp, ...): its
/// scheduler semantics, the CPU and launch overheads it leaves exposed per iteration, and
/// how much of the calibrated kernel rates its kernels reach. Engines are data
/// (<catalog>/engines/<id>.yaml, schema in hw_models/catalog/README.md); the parameters named
/// in `fit` are fitted on the validation suite's training split by `fleetsim calibrate
/// fit`, which records what it did under `fitted`.
struct EngineSpec {
  std::string id;    ///< file stem, e.g. "vllm-v1"
  std::string name;  ///< e.g. "vLLM, V1 engine (0.8 and later)"
  // Scheduler semantics: defaults for the serving fields a scenario leaves out.
  bool chunked_prefill = true;  ///< prompts mixed with decodes in a token budget
  bool split_prompts = true;    ///< and split across iterations (false: whole prompts)
  /// Prefill-first: a prompt longer than the budget runs in budget-sized prefill iterations
  /// (SGLang's chunked_prefill_size) instead of being rejected (vLLM V0).
  bool split_long_prompts = false;
  int64_t max_batched_tokens = 8192;  ///< token budget per iteration
  int64_t max_num_seqs = 256;         ///< running sequences per replica
  /// The two limits above hold per attention-DP rank (each rank schedules its own requests
  /// into its own KV cache, as TensorRT-LLM's do): a scenario with dp_attention D that
  /// leaves them out gets D times each.
  bool limits_per_dp_rank = false;
  /// KV admission (`scheduler.admission: reserve`): a request is admitted only if its whole
  /// life's KV fits beside the running requests' and none is ever preempted (TensorRT-LLM's
  /// GUARANTEED_NO_EVICT); false (`paged`): vLLM's admission with preemption by recompute.
  bool reserve_at_admission = false;
  bool pipeline_sequential = false;  ///< pp stages run one after another (no micro-batches)
  // Overheads (seconds), exposed on the critical path of every iteration.
  double iteration_overhead_s = 0;     ///< scheduling, sampling set-up, Python, per iteration
  double per_sequence_overhead_s = 0;  ///< per sequence that samples a token this iteration
  int64_t cuda_graph_max_batch = 0;    ///< decode batches up to this size replay a graph (0: all)
  double kernel_launch_s = 0;          ///< per kernel launched eagerly
  // Kernels, relative to the calibrated rates (hw_models/calibration).
  double kernel_efficiency = 1.0;   ///< achieved / calibrated rate, every GPU operator
  double compute_efficiency = 1.0;  ///< and on top, of compute-bound operators only
  double moe_half_tokens = 0;       ///< grouped GEMM: tokens per expert at half its rate
  /// grouped GEMM: the expert weight size (MB, 10^6 bytes, one expert's slice on one GPU)
  /// at which the routed experts run at half their rate: w / (w + this) of it, w one
  /// expert's weight bytes, on the memory and the compute side alike
  double moe_half_expert_mb = 0;
  double moe_efficiency = 1.0;  ///< grouped GEMM rate / the dense GEMM tables' rate
  /// and on top, of the grouped GEMM's compute-bound side (block-scaled FP8 grouped GEMMs in
  /// Triton reach less of the tensor rate than the dense GEMMs do, while streaming expert
  /// weights at small batch runs near the dense rate)
  double moe_compute_efficiency = 1.0;
  double moe_imbalance = 1.0;  ///< busiest expert-parallel GPU's tokens / mean (floor)
  /// Multi-head latent attention kernels (prefill and decode; DeepSeek-V2/V3 models only)
  /// against the calibrated or roofline rate: FlashMLA-class kernels run near it, early
  /// Triton MLA kernels far below.
  double mla_efficiency = 1.0;
  double ep_alltoall_call_s = 0;  ///< fixed cost of one EP dispatch or combine call
  double quant_bandwidth = 1.0;   ///< block-quantised (GGUF) mat-vec bandwidth / 16-bit's
  /// 16-bit GEMMs accumulate in FP16 (cuBLAS CUBLAS_COMPUTE_16F): they run at the GPU's
  /// fp16_accumulate_dense rate.
  bool fp16_accumulate = false;
  /// On NVIDIA GPUs, a matmul of a GGUF block format over at least this many tokens
  /// dequantises the weights into an FP16 copy and runs an FP16 GEMM on it (0 = never: the
  /// block format is multiplied in place).
  int64_t dequant_gemm_min_tokens = 0;
  /// Bytes per second one streaming multiprocessor's mat-vec blocks stream (0 = no limit):
  /// a mat-vec kernel (a matmul of at most hw::kMatVecMaxTokens = 8 tokens) with few loads in
  /// flight per SM reaches at most sm_count × this, however fast the memory (Little's law:
  /// bandwidth = bytes in flight / latency). On NVIDIA GPUs whose sm_count is known.
  double matvec_sm_bandwidth = 0;
  /// The profile this engine runs as on AMD GPUs (its ROCm build: other kernels, other
  /// efficiencies), "" = the same profile everywhere.
  std::string rocm_variant;
  /// The profile this engine runs as on Apple GPUs (its Metal backend), "" = this one.
  std::string metal_variant;
  std::vector<std::string> fit;  ///< parameters `calibrate fit` may change (at most 4)
  std::string fitted;            ///< provenance of the last fit ("" = never fitted)
  /// The values a fit started from (`fitted: {before: ...}`): a refit starts there again, so
  /// fitting is reproducible and never compounds on its own output.
  std::map<std::string, double> priors;
  std::vector<std::string> sources;
};

class Catalog {
 public:
  /// Loads every {gpus,models,nodes,interconnects,engines}/*.yaml under `dir` and checks the
  /// references between them. Any malformed file is an InputError naming the file, line
  /// and field.
  static Catalog load(const std::string& dir);
  /// The catalog directory: $FLEETSIM_CATALOG if set, else the one in the source tree.
  static std::string default_dir();

  /// Look-ups throw InputError "unknown GPU 'x'" with did-you-mean and the list of ids.
  const GpuSpec& gpu(const std::string& id) const;
  const ModelSpec& model(const std::string& id) const;
  const NodeSpec& node(const std::string& id) const;
  const InterconnectSpec& interconnect(const std::string& id) const;
  const EngineSpec& engine(const std::string& id) const;
  /// Adds or replaces an engine (`calibrate fit` tries parameter values on a copy).
  void put_engine(EngineSpec e) { engines_[e.id] = std::move(e); }
  /// The first node (by id) built from `gpu_id`, or nullptr.
  const NodeSpec* default_node_for(const std::string& gpu_id) const;

  const std::map<std::string, GpuSpec>& gpus() const { return gpus_; }
  const std::map<std::string, ModelSpec>& models() const { return models_; }
  const std::map<std::string, NodeSpec>& nodes() const { return nodes_; }
  const std::map<std::string, InterconnectSpec>& interconnects() const { return links_; }
  const std::map<std::string, EngineSpec>& engines() const { return engines_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, ModelSpec> models_;
  std::map<std::string, NodeSpec> nodes_;
  std::map<std::string, InterconnectSpec> links_;
  std::map<std::string, EngineSpec> engines_;
};

/// The engine a scenario runs on when it names none (README "Serving engines").
inline constexpr const char* kDefaultEngine = "vllm-v1";
/// The parameters of an engine file that `calibrate fit` may fit, in file order.
const std::vector<std::string>& engine_fit_parameters();
/// Value of fit parameter `name` in `e` (SI units), and setting it.
double engine_parameter(const EngineSpec& e, const std::string& name);
void set_engine_parameter(EngineSpec& e, const std::string& name, double value);
/// A fit parameter's bounds (SI) and where the engine file keeps it (section.key; durations
/// carry a unit).
struct EngineParameterInfo {
  double lo = 0, hi = 0;
  std::string section, key;
  bool time = false;       ///< a duration: written in us
  bool bandwidth = false;  ///< a byte rate: written in GB/s
};
EngineParameterInfo engine_parameter_info(const std::string& name);

/// Parse one file (exposed for tests of bad catalog files).
GpuSpec load_gpu_file(const std::string& path);
ModelSpec load_model_file(const std::string& path);
NodeSpec load_node_file(const std::string& path);
InterconnectSpec load_interconnect_file(const std::string& path);
EngineSpec load_engine_file(const std::string& path);

}  // namespace fleetsim::hw
