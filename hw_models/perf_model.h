// Step-time and memory model of one serving replica.
//
// estimate_step(deployment, batch) is the seam the simulator calls: a pure function from a
// deployment (model, GPU, parallelism, precision, efficiency, network, offload, calibration)
// and a batch shape to a breakdown of one iteration's time. It is a per-operator roofline:
// each operator costs
//     max(FLOPs / (peak_rate · compute_eff), bytes / (peak_bw · memory_eff))
// or, where a calibration table exists for the GPU and operator,
//     max(FLOPs / peak_rate, bytes / peak_bw) / fraction(FLOPs)
// (hw_models/calibration.h), summed over operators and layers, plus communication through
// the NetworkModel seam, offload transfers and per-iteration overheads.
//
// Operators, per GPU, for T tokens in the iteration (prefill tokens + decode sequences),
// with Megatron tensor parallelism tp (column-parallel QKV and MLP up/gate, row-parallel O
// and MLP down, vocab-parallel LM head), attention data parallelism D (each of D groups of
// tp GPUs runs its own sequences' attention; the MLP of a layer spans all G = tp·D GPUs; the
// groups step in lockstep, so with pp 1 the attention side is the busiest group's: an even
// share T/D, or the largest prompt chunk and an even share of the decodes where that chunk
// is more than T/D's prefill share, since a chunk is not divided among groups) and
// pipeline parallelism pp (layers split in pp stages; pp micro-batches of T/pp tokens in
// flight, so one iteration = pp · stage time). GEMM (rows × in × out shard): FLOPs
// 2·rows·in·out, bytes in·out·weight_bytes + rows·(in + out)·act_bytes.
//   embedding      gather: rows·hidden·(weight_bytes + act_bytes) bytes
//   attention proj GQA: QKV (T/D, hidden, (heads + 2·kv_heads)·head_dim / tp), O (T/D,
//                  heads·head_dim/tp, hidden). MLA: q_a (hidden→q_lora), q_b (q_lora→heads/tp·
//                  (nope+rope)), kv_a (hidden→kv_lora+rope), kv_b (kv_lora→heads/tp·(nope+v)),
//                  O (heads/tp·v→hidden); with weight absorption in decode the same FLOPs.
//   attention      GQA decode per context token 4·(heads/tp)·head_dim FLOPs, 2·(kv_heads/tp)·
//                  head_dim·kv_bytes bytes (kv_heads/tp at least 1: replicated when tp >
//                  kv_heads); prefill 4·(heads/tp)·head_dim FLOPs per causal pair, KV read
//                  once per chunk plus Q in and output out. MLA decode per context token
//                  (heads/tp)·(4·kv_lora + 2·rope) FLOPs over the latent (kv_lora+rope)·kv_bytes
//                  bytes, which every tp rank holds whole; MLA prefill (heads/tp)·(2·(nope+rope)
//                  + 2·v) FLOPs per pair. Sliding-window layers attend to at most W tokens:
//                  decode costs decode_seqs·W context tokens (every sequence is taken to have
//                  W tokens already: the affine fast path needs it, and prompts are longer
//                  than W = 128 in practice), prefill pairs min(pairs, prefill_tokens·W).
//   dense MLP      up+gate (T, hidden, 2·ffn/G), down (T, ffn/G, hidden) (ungated: ffn/G)
//   MoE            router (T, hidden, experts); expected experts hit by T tokens choosing
//                  top_k of E: A = E·(1 − (1 − k/E)^T). Expert-parallel (experts whole, E/G
//                  per GPU): the busiest GPU gets imbalance·T·k/G token copies and reads A/G
//                  experts' weights; imbalance = max(eff.moe_imbalance, (hot + n − 1)/n)
//                  with n = E/G experts per GPU and hot = the model's moe.hot_expert (the busiest
//                  GPU holds the hottest expert and n − 1 average ones). Tensor-parallel experts: each GPU does 1/G of every
//                  expert for all T·k copies and reads 1/G of the A experts hit. Shared
//                  experts: a dense gated MLP of shared·expert_ffn (replicated under EP).
//   LM head        (logits_tokens/D, hidden, vocab/tp)
//   communication  per layer: all-reduce of (T/D)·hidden·residual_bytes over tp after O
//                  (residual_bytes = max(act_bytes, 2): reductions run at 16 bits); then
//                  an all-reduce of T·hidden·residual_bytes over G after the MLP (all-gather +
//                  reduce-scatter when D > 1), or, for expert-parallel MoE layers, dispatch
//                  and combine all-to-alls of (T/G)·top_k·hidden·act_bytes per GPU, each
//                  plus eff.ep_alltoall_call_s (the kernels' fixed cost);
//                  pipeline: a point-to-point hand-off of (T/pp)·hidden·residual_bytes per
//                  stage.
//   offload        layers or cold experts kept in host memory: streamed over the host link
//                  each pass (`stream`), or computed by the host (`host_compute`) at its rate
//   overhead       eff.iteration_overhead_s (scheduler) + eff.per_sequence_overhead_s per
//                  sampling sequence + launches: one graph launch for decode-only iterations
//                  with CUDA graphs of at most eff.cuda_graph_max_batch sequences, otherwise
//                  one per kernel (kernels_per_layer·layers + 2) at eff.kernel_launch_s of
//                  CPU time each, of which only what exceeds the GPU's work shows (launches
//                  are asynchronous; the decode attention over the context is not counted
//                  as hiding them, which keeps decode affine in the context); plus
//                  eff.operator_latency_s per kernel on dataflow parts.
//   every GPU operator takes at least eff.min_kernel_s (a kernel's launch, ramp and drain),
//                  except the decode attention over the context (affine, as below).
//   moe layer      router GEMM; top-k (T·(4E + 8k) bytes); sort of the copies by expert
//                  (8 bytes a copy); the grouped up+gate and down GEMMs as one operator;
//                  the gated activation (3·f_local·act bytes a copy); with tensor-parallel
//                  experts the weighted sum of the copies ((copies + T)·h·act bytes); each
//                  at least eff.min_kernel_s.
// Engine terms (hw_models/catalog/engines): every GPU operator's time is divided by
// eff.kernel_efficiency, and its compute side (FLOPs / rate) by eff.compute_efficiency
// before the roofline's max; the routed-expert grouped GEMM's compute side runs at m/(m + m_half)
// of its rate, m = token rows per expert hit, m_half = eff.moe_half_tokens: each expert's
// GEMM does the work of m + m_half rows (tile padding and per-group cost), and the whole
// operator at eff.moe_efficiency · w/(w + w_half) of the dense GEMM tables' rates, w one
// expert's weight bytes on the GPU, w_half = eff.moe_half_expert_bytes (small experts: few
// tiles each, the pipeline's fill and drain paid per expert); GGUF block
// weights stream at eff.quant_bandwidth of the byte rate (dequantisation work); with
// eff.pipeline_sequential the pp stages run one after another on the whole batch.
// Math units: GEMMs run at the FP8 rate for W8A8 FP8 (and W4A8), INT8 for W8A8 INT8, FP4 for
// W4A4 FP4, and at the 16-bit rate for weight-only quantisation (dequantised in the kernel);
// a part without the unit falls back to the next wider one. Attention runs at the 16-bit rate.
//
// Property the simulator's fast path relies on (tested): for a decode-only batch of n
// sequences the step time is exactly affine in the total attended context,
//     t(n, ctx) = decode_affine(n).fixed_s + decode_affine(n).per_ctx_token_s · ctx,
// because attention's FLOPs and KV bytes are both proportional to ctx, so their max is too,
// and the calibrated decode-attention fraction is a constant per GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw_models/catalog.h"
#include "hw_models/network.h"

namespace fleetsim::hw {

class CalibrationSet;
struct CalibrationRow;
struct CalibrationTable;

/// Element formats. The llama.cpp GGUF block formats carry their scales: q8_0 is 34 bytes per
/// 32 weights (8.5 bits), q4_0 18 bytes per 32 (4.5 bits); q4_k_m mixes Q4_K and Q6_K
/// tensors, 4.82 bits per weight on average (Llama-3-70B: 39.59 GB against 131.42 GB at
/// F16, XiongjieDai/GPU-Benchmarks-on-LLM-Inference README). They are weight-only formats:
/// the math runs at the 16-bit rate after dequantisation.
enum class DType { kBf16, kFp16, kFp8, kInt8, kInt4, kFp4, kQ8_0, kQ4_0, kQ4KM };
double dtype_bytes(DType d);
const char* dtype_name(DType d);
/// "bf16", "fp16", "fp8", "int8", "int4", "fp4" (also "mxfp4", "nvfp4" → fp4), "q8_0",
/// "q4_0", "q4_k_m"; false if unknown.
bool parse_dtype(const std::string& s, DType* out);

struct Parallelism {
  int tp = 1;                    ///< tensor-parallel degree
  int pp = 1;                    ///< pipeline stages
  int dp_attention = 1;          ///< attention data-parallel groups (DeepSeek-style DP attention)
  bool expert_parallel = false;  ///< MoE experts whole on GPUs (EP over tp·dp_attention)
  /// Expert-parallel load balancing (EPLB, DeepSeek-V3 report §3.4): this many replicas of
  /// hot experts on top of the model's experts, placed from routing statistics (0: none).
  int redundant_experts = 0;
  /// Two-batch overlap (SGLang --enable-two-batch-overlap; DeepSeek's inference system):
  /// the iteration runs as two micro-batches so that one's EP all-to-all overlaps the
  /// other's compute.
  bool two_batch_overlap = false;
  int gpus_per_stage() const { return tp * dp_attention; }
  int gpus() const { return tp * dp_attention * pp; }
};

/// Bytes per element of each tensor class and the unit GEMMs run on.
struct Precision {
  double weight_bytes = 2;  ///< BF16
  double act_bytes = 2;
  double kv_bytes = 2;
  DType math = DType::kBf16;  ///< the tensor-core format GEMMs use
  bool block_quant = false;   ///< weights in a GGUF block format (q8_0, q4_0, q4_k_m)
  /// Bytes per element of the residual stream, the hidden states between layers: at least
  /// 16 bits. FP8 and FP4 GEMMs write their outputs in BF16/FP16, tensor-parallel
  /// all-reduces sum them at that width and pipeline stages hand them on at it; only a GEMM's
  /// input is quantised (TensorRT-LLM, vLLM and SGLang alike).
  double residual_bytes() const { return act_bytes > 2 ? act_bytes : 2; }
  /// Bytes from the dtypes, and the math unit by the rule in the header comment.
  static Precision of(DType weights, DType activations, DType kv);
};

/// Efficiency factors and fixed costs, resolved from the GPU's catalog entry and any
/// scenario overrides (each one says where it came from).
/// The most tokens a mat-vec kernel multiplies at once: ggml's CUDA backend runs matmuls of
/// up to MMVQ_MAX_BATCH_SIZE = 8 tokens on its mat-vec kernels (mmvq.cuh), larger ones as
/// matrix multiplications (EngineSpec::matvec_sm_bandwidth limits only the former).
inline constexpr double kMatVecMaxTokens = 8;

struct Efficiency {
  double compute = 0.7;             ///< achieved / peak tensor rate
  double memory = 0.8;              ///< achieved / peak HBM bandwidth
  double iteration_overhead_s = 0;  ///< scheduler (CPU) time per iteration
  double kernel_launch_s = 0;       ///< CPU time per kernel launch, eager mode
  /// The shortest time a GPU operator takes, however little it computes or moves: a
  /// kernel's launch on the GPU, its ramp-up and drain. SGLang PR #24707 (H100 SXM, Nsight
  /// Compute): an RMSNorm of 32 tokens x 512 (32 kB) takes 5,738-6,273 cycles, 2.9-3.2 us
  /// at the 1.98 GHz boost clock; ninfer PR #150: 0.86-1.5 us for 4-row RMSNorms. 2 us sits
  /// between them.
  double min_kernel_s = 2e-6;
  /// A device-side latency per operator, never hidden (dataflow parts such as a Cerebras
  /// wafer, where no host launches kernels): added for each of the kernels an eager
  /// iteration would launch. 0 on GPUs.
  double operator_latency_s = 0;
  bool cuda_graphs = true;         ///< decode-only iterations replay one graph
  double moe_imbalance = 1.0;      ///< busiest expert-parallel GPU / mean (≥ 1)
  double allreduce_latency_s = 0;  ///< α of the scale-up level
  double link_bw_bytes_per_s = 0;  ///< β⁻¹ of the scale-up level (per GPU, per direction)
  // Serving-engine terms (hw_models/catalog/engines; apply_engine sets them).
  double per_sequence_overhead_s = 0;   ///< CPU time per sampling sequence per iteration
  int64_t cuda_graph_max_batch = 0;     ///< decode batches above this run eagerly (0: none do)
  double kernel_efficiency = 1.0;       ///< achieved / calibrated rate of every GPU operator
  double compute_efficiency = 1.0;      ///< and of the compute side of each operator
  double moe_half_tokens = 0;           ///< grouped GEMM rate ∝ m / (m + this), m tokens/expert
  double moe_half_expert_bytes = 0;     ///< and ∝ w / (w + this), w one expert's weight bytes
  double moe_efficiency = 1.0;          ///< routed-expert grouped GEMM / dense GEMM rate
  double moe_compute_efficiency = 1.0;  ///< and of its compute side
  double mla_efficiency = 1.0;          ///< MLA attention kernels / the calibrated rate
  double quant_bandwidth = 1.0;         ///< GGUF block-format weight streaming / 16-bit's
  bool fp16_accumulate = false;         ///< 16-bit GEMMs at the FP16-accumulate rate
  int64_t dequant_gemm_min_tokens = 0;  ///< GGUF matmuls of ≥ this many tokens: FP16 copy
  double matvec_sm_bandwidth = 0;       ///< mat-vec bytes/s per SM (0: no limit)
  bool pipeline_sequential = false;     ///< pp stages one after another (llama.cpp layer split)
  double ep_alltoall_call_s = 0;        ///< fixed cost per EP dispatch/combine call
};

/// Sets the engine's overhead and kernel terms on `eff` (scheduler defaults are the
/// scenario loader's business).
void apply_engine(const EngineSpec& engine, Efficiency* eff);

/// Weights kept in host memory (the llama.cpp partial-offload case, MoE expert offload).
struct Offload {
  enum class Mode { kStream, kHostCompute };
  Mode mode = Mode::kStream;
  int layers_on_host = 0;             ///< the last N layers' weights live on the host
  double experts_on_host = 0;         ///< fraction of the least popular routed experts
  double expert_popularity_zipf = 0;  ///< p_i ∝ i^-s over experts; 0 = uniform
  LinkLevel host_link;                ///< GPU↔host
  double host_memory_bw_bytes_per_s = 0;
  double host_flops_per_s = 0;
  bool any() const { return layers_on_host > 0 || experts_on_host > 0; }
};

/// Everything estimate_step needs to know about a replica.
struct Deployment {
  std::shared_ptr<const ModelSpec> model;
  std::shared_ptr<const GpuSpec> gpu;
  Parallelism par;
  Precision prec;
  Efficiency eff;
  int scaleup_domain_gpus = 8;                  ///< GPUs per NVLink/xGMI domain
  std::shared_ptr<const NetworkModel> network;  ///< null: α-β from eff (scale-up only)
  Offload offload;
  std::shared_ptr<const CalibrationSet> calibration;  ///< null: efficiency factors only
  /// Memory of a co-resident model (a speculative-decoding draft) on each GPU.
  double extra_weight_bytes_per_gpu = 0;
  double extra_kv_bytes_per_token_per_gpu = 0;
  /// Rows of `calibration` for this GPU, [gemm, attn_prefill, attn_decode][memory, compute,
  /// compute far from the ridge], resolved once by bind_calibration so that estimate_step
  /// does no look-ups.
  const std::vector<CalibrationRow>* calib_rows[3][3] = {};
  /// Attaches `set` (may be null) and resolves calib_rows for this GPU and precision. A
  /// compute-bound slot this GPU has no rows for takes its compute twin's, if it has one.
  void bind_calibration(std::shared_ptr<const CalibrationSet> set);
  /// True when some calib_rows slot holds rows that `table` contributes to.
  bool uses_table(const CalibrationTable& table) const;
};

/// What one iteration computes, aggregated over the batch.
struct BatchShape {
  int64_t prefill_tokens = 0;     ///< prompt tokens computed this iteration (all chunks)
  double prefill_attn_pairs = 0;  ///< Σ over chunks of c·(p + (c+1)/2): causal query-key pairs
                                  ///< for a chunk of c tokens after p cached tokens
  int64_t prefill_kv_tokens = 0;  ///< Σ over chunks of (p + c): KV tokens the chunks read
  int64_t decode_seqs = 0;        ///< sequences decoding one token each
  int64_t decode_ctx_tokens =
      0;                      ///< Σ over decode sequences of tokens attended (incl. the new one)
  int64_t logits_tokens = 0;  ///< sequences that sample a token (LM head rows)
  /// The chunk with the most tokens (0: none given): its tokens, causal pairs and KV tokens
  /// read. With attention data parallelism a chunk stays on one rank and the ranks step in
  /// lockstep, so the busiest rank's prefill is at least this chunk (see estimate_step).
  int64_t largest_chunk_tokens = 0;
  double largest_chunk_pairs = 0;
  int64_t largest_chunk_kv_tokens = 0;
};

/// The catalog's efficiency figures for `gpu` (compute, memory, α, link bandwidth), with no
/// iteration overhead. Scenario overrides are applied on top by the caller.
Efficiency catalog_efficiency(const GpuSpec& gpu);

/// Where one iteration's time goes, in seconds.
struct StepBreakdown {
  double gemm_s = 0;           ///< embedding, attention projections, dense MLP, LM head
  double attention_s = 0;      ///< prefill and decode attention
  double moe_s = 0;            ///< router, routed and shared experts
  double communication_s = 0;  ///< TP all-reduce, EP all-to-all, pipeline hand-off
  double offload_s = 0;        ///< host-memory weights: transfer or host compute
  double overhead_s = 0;       ///< scheduler and launch cost per iteration
  double overlap_s = 0;        ///< <= 0: EP all-to-all hidden by two-batch overlap
  double total_s() const {
    return gemm_s + attention_s + moe_s + communication_s + offload_s + overhead_s + overlap_s;
  }
};

/// A memo of the parts of an iteration's time that depend on its token count alone (the
/// embedding gather, attention projections, MLPs and MoE; not attention, communication,
/// offload or overheads), for one deployment: estimate_step with it returns bit-identical
/// results and skips that work for a token count it has met before. Deployments with
/// host-resident layers are not memoised. Not thread-safe: one per deployment and thread.
class StepCache {
 public:
  struct TokenPart {
    double gemm_s = 0, moe_s = 0;
    bool set = false;
  };
  static constexpr int64_t kMaxTokens = 1 << 20;
  /// The memo of `tokens` (nullptr past kMaxTokens).
  TokenPart* part(int64_t tokens);

 private:
  std::vector<TokenPart> parts_;
};

/// One operator of an iteration, for `fleetsim run --explain`.
struct OpCost {
  std::string category;  ///< gemm | attention | moe | communication | offload | overhead
  std::string name;
  double count = 0;             ///< times per iteration (layers × micro-batches), per GPU
  double flops = 0, bytes = 0;  ///< per occurrence, per GPU
  double time_s = 0;            ///< total over `count`
  std::string bound;            ///< compute | memory | network | calibrated | fixed
};

/// One iteration's time. An empty batch (no tokens, no context) costs exactly 0.
/// Preconditions (std::invalid_argument otherwise): model and gpu set; tp, pp, D >= 1;
/// a scale-up bandwidth when a group spans GPUs; efficiencies and rates > 0.
StepBreakdown estimate_step(const Deployment& d, const BatchShape& batch);
/// The same with `cache` (may be null) memoising its token-count terms (StepCache).
StepBreakdown estimate_step(const Deployment& d, const BatchShape& batch, StepCache* cache);
/// The expert-parallel all-to-all of one iteration of `tokens` token rows (prompt tokens
/// plus decode rows), as estimate_step prices it: `calls` all-to-alls (dispatch and combine
/// for every MoE layer), each GPU sending `bytes_per_gpu` per call spread evenly over the
/// other members of `group` (NetworkModel::alltoall_s's meaning). calls = 0 when the
/// deployment runs no EP all-to-all (dense model, experts split by TP, one GPU, or
/// attention TP without attention DP: every rank holds every token and the MoE output is
/// all-reduced).
struct EpAllToAll {
  double calls = 0;
  double bytes_per_gpu = 0;
  CommGroup group;
};
EpAllToAll ep_alltoall(const Deployment& d, double tokens);
/// True when the deployment's EP all-to-all group is larger than its scale-up domain (its
/// all-to-all crosses the NICs; network.live_alltoall can run it live).
bool ep_alltoall_leaves_domain(const Deployment& d);

/// The same iteration, operator by operator (sums to estimate_step's total).
std::vector<OpCost> explain_step(const Deployment& d, const BatchShape& batch);

/// Convenience: a deployment of `model` on `gpu` with α-β scale-up from `eff`.
Deployment make_deployment(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                           const Precision& prec, const Efficiency& eff);
StepBreakdown estimate_step(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                            const Precision& prec, const Efficiency& eff, const BatchShape& batch);

/// Decode-only batch of `n` sequences: t = fixed_s + per_ctx_token_s * Σctx.
/// fixed_s = estimate_step(decode_seqs = n, logits_tokens = n, ctx = 0).total_s();
/// per_ctx_token_s does not depend on n.
struct DecodeAffine {
  double fixed_s = 0;
  double per_ctx_token_s = 0;
};
DecodeAffine decode_affine(const Deployment& d, int64_t n);
DecodeAffine decode_affine(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                           const Precision& prec, const Efficiency& eff, int64_t n);

/// Multi-LoRA serving (S-LoRA, Sheng et al., MLSys 2024; Punica, Chen et al., MLSys 2024):
/// the extra cost of one iteration of `rows` tokens that use `adapters` distinct rank-`rank`
/// adapters on every attention and MLP projection (q, k, v, o, gate, up, down), batched with
/// SGMV-style kernels: FLOPs 2·rows·rank·Σ(in + out) over the projections and layers (split
/// by tp), bytes = adapters · lora_adapter_bytes / tp (their A and B matrices are read).
double lora_step_s(const Deployment& d, double rows, double adapters, int rank);
/// Bytes of one adapter: rank · Σ(in + out) · layers · weight_bytes (dense MLP layers; for
/// MoE layers the shared and routed experts are not adapted).
double lora_adapter_bytes(const ModelSpec& m, int rank, double weight_bytes);

/// Per-GPU memory budget of a replica.
struct MemoryFit {
  double usable_bytes = 0;        ///< gpu memory * memory_utilization
  double weight_bytes = 0;        ///< per GPU (host-resident weights excluded)
  double host_weight_bytes = 0;   ///< per GPU share of weights kept in host memory
  double activation_bytes = 0;    ///< per GPU, peak for a batch of max_batched_tokens
  double reserve_bytes = 0;       ///< runtime reserve (CUDA context, allocator slack)
  double kv_bytes = 0;            ///< what is left for the KV cache, per GPU (may be < 0)
  double kv_bytes_per_token = 0;  ///< per GPU
  int64_t kv_blocks = 0;          ///< KV blocks of `block_tokens` tokens the replica can hold
                                  ///< (dp_attention groups each hold their own sequences)
};

/// Computes the memory budget. Throws InputError when the KV cache would have room for
/// less than one full-length sequence of `min_kv_tokens`, saying by how much it misses and
/// what would fit (larger TP, more pipeline stages, FP8 weights, FP8 KV, fewer batched
/// tokens), and when tp does not divide the attention heads.
///   usable      = memory_bytes · memory_utilization
///   weights     = (layers·(attention/tp + norms) + dense layers·dense_mlp/G
///                  + moe layers·(router + (experts + shared)·expert)/G + embeddings/tp) / pp
///                 · weight_bytes, less the host-resident share
///   activations = (T/D)·act_bytes·(2·hidden + (heads/tp + 2·kv_heads/tp)·head_dim
///                 + (heads/tp)·head_dim) + T·act_bytes·max(3·ffn/G, 3·top_k·expert_ffn/G)
///                 + min(T, 256)·vocab/tp·4 (fp32 logits), T = max_batched_tokens
///   kv_bytes    = usable − weights − activations − reserve
///   kv_blocks   = D · floor(kv_bytes / (block_tokens · kv bytes per token per GPU))
/// Preconditions (std::invalid_argument otherwise): tp, pp >= 1, block_tokens >= 1.
MemoryFit fit_memory(const Deployment& d, double memory_utilization, double reserve_bytes,
                     int64_t max_batched_tokens, int block_tokens, int64_t min_kv_tokens);
MemoryFit fit_memory(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                     const Precision& prec, double memory_utilization, double reserve_bytes,
                     int64_t max_batched_tokens, int block_tokens, int64_t min_kv_tokens);

}  // namespace fleetsim::hw
