// Step-time and memory model of one serving replica (dense decoder-only transformer).
//
// estimate_step(...) is the seam the simulator calls: a pure function from (model,
// parallelism, GPU, efficiency, batch shape) to a breakdown of one iteration's time.
// This first version is a per-operator roofline: each operator costs
//     max(FLOPs / (peak_flops * compute_eff), bytes / (peak_bw * memory_eff))
// summed over operators and layers, plus tensor-parallel all-reduce (α-β ring) and a
// fixed per-iteration overhead. The calibrated model (issue 3) replaces the efficiency
// factors with measured kernel tables behind the same signature.
//
// Property the simulator's fast path relies on (tested): for a decode-only batch of n
// sequences the step time is exactly affine in the total attended context,
//     t(n, ctx) = decode_affine(n).fixed_s + decode_affine(n).per_ctx_token_s * ctx,
// because attention's FLOPs and KV bytes are both proportional to ctx, so the max of the
// two is too.
//
// Operators, per GPU, with T = prefill_tokens + decode_seqs and Megatron tensor parallelism
// (column-parallel QKV and MLP up/gate, row-parallel O and MLP down, vocab-parallel LM head):
//   GEMM (rows × in × out shard): FLOPs 2·rows·in·out,
//                                 bytes in·out·weight_bytes + rows·(in + out)·act_bytes
//     per layer: QKV (T, hidden, (heads + 2·kv_heads)·head_dim / tp), O (T, heads·head_dim/tp,
//     hidden), up+gate (T, hidden, 2·ffn/tp; ffn/tp ungated), down (T, ffn/tp, hidden);
//     once: LM head (logits_tokens, hidden, vocab/tp).
//   Attention per layer: prefill FLOPs 4·(heads/tp)·head_dim·prefill_attn_pairs, bytes
//     prefill_kv_tokens·2·kv_heads/tp·head_dim·kv_bytes + prefill_tokens·2·(heads/tp)·
//     head_dim·act_bytes; decode FLOPs 4·(heads/tp)·head_dim·decode_ctx_tokens, bytes
//     decode_ctx_tokens·2·kv_heads/tp·head_dim·kv_bytes. (kv_heads/tp is at least 1: KV
//     heads are replicated when tp > kv_heads.)
//   GEMMs run at the FP8 rate when weights and activations are both 8-bit and the GPU has
//   FP8; attention always runs at the BF16 rate.
//   Communication: 2 ring all-reduces per layer of T·hidden·act_bytes bytes each,
//     2·(tp−1)·α + 2·(tp−1)/tp · bytes / link_bw; none when tp == 1.
#pragma once

#include <cstdint>
#include <string>

#include "hw_models/catalog.h"

namespace fleetsim::hw {

struct Parallelism {
  int tp = 1;  ///< tensor-parallel degree (GPUs per replica)
};

/// Bytes per element of each tensor class.
struct Precision {
  double weight_bytes = 2;  ///< BF16
  double act_bytes = 2;
  double kv_bytes = 2;
};

/// Efficiency factors and fixed costs, resolved from the GPU's catalog entry and any
/// scenario overrides (each one says where it came from).
struct Efficiency {
  double compute = 0.7;           ///< achieved / peak tensor rate
  double memory = 0.8;            ///< achieved / peak HBM bandwidth
  double iteration_overhead_s = 0;///< scheduler + launch cost per iteration
  double allreduce_latency_s = 0; ///< α per ring step of a TP all-reduce
  double link_bw_bytes_per_s = 0; ///< β⁻¹: per-GPU per-direction link bandwidth
};

/// What one iteration computes, aggregated over the batch.
struct BatchShape {
  int64_t prefill_tokens = 0;     ///< prompt tokens computed this iteration (all chunks)
  double prefill_attn_pairs = 0;  ///< Σ over chunks of c·(p + (c+1)/2): causal query-key pairs
                                  ///< for a chunk of c tokens after p cached tokens
  int64_t prefill_kv_tokens = 0;  ///< Σ over chunks of (p + c): KV tokens the chunks read
  int64_t decode_seqs = 0;        ///< sequences decoding one token each
  int64_t decode_ctx_tokens = 0;  ///< Σ over decode sequences of tokens attended (incl. the new one)
  int64_t logits_tokens = 0;      ///< sequences that sample a token (LM head rows)
};

/// Where one iteration's time goes, in seconds.
/// The catalog's efficiency figures for `gpu` (compute, memory, α, link bandwidth), with no
/// iteration overhead. Scenario overrides are applied on top by the caller.
Efficiency catalog_efficiency(const GpuSpec& gpu);

struct StepBreakdown {
  double gemm_s = 0;           ///< QKV, output, MLP projections and LM head
  double attention_s = 0;      ///< prefill and decode attention
  double communication_s = 0;  ///< tensor-parallel all-reduce
  double overhead_s = 0;       ///< fixed per-iteration cost
  double total_s() const { return gemm_s + attention_s + communication_s + overhead_s; }
};

/// One iteration's time. An empty batch (no tokens, no context) costs exactly 0.
/// Preconditions (std::invalid_argument otherwise): tp >= 1; eff.link_bw_bytes_per_s > 0
/// when tp > 1; efficiencies and rates > 0.
StepBreakdown estimate_step(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                            const Precision& prec, const Efficiency& eff, const BatchShape& batch);

/// Decode-only batch of `n` sequences: t = fixed_s + per_ctx_token_s * Σctx.
/// fixed_s = estimate_step(decode_seqs = n, logits_tokens = n, ctx = 0).total_s();
/// per_ctx_token_s does not depend on n.
struct DecodeAffine {
  double fixed_s = 0;
  double per_ctx_token_s = 0;
};
DecodeAffine decode_affine(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                           const Precision& prec, const Efficiency& eff, int64_t n);

/// Per-GPU memory budget of a replica.
struct MemoryFit {
  double usable_bytes = 0;      ///< gpu memory * memory_utilization
  double weight_bytes = 0;      ///< per GPU
  double activation_bytes = 0;  ///< per GPU, peak for a batch of max_batched_tokens
  double reserve_bytes = 0;     ///< runtime reserve (CUDA context, allocator slack)
  double kv_bytes = 0;          ///< what is left for the KV cache, per GPU (may be < 0)
  int64_t kv_blocks = 0;        ///< KV blocks of `block_tokens` tokens the replica can hold
};

/// Computes the memory budget. Throws InputError when the KV cache would have room for
/// less than one full-length sequence of `min_kv_tokens`, saying by how much it misses and
/// what would fit (larger TP, FP8 weights, fewer batched tokens), and when tp does not
/// divide the attention heads.
///   usable      = memory_bytes · memory_utilization
///   weights     = derived_params · weight_bytes / tp
///   activations = T·act_bytes·(2·hidden + (heads/tp + 2·kv_heads/tp)·head_dim
///                 + (heads/tp)·head_dim + 3·ffn/tp)  + min(T, 256)·vocab·4 (fp32 logits)
///                 with T = max_batched_tokens (2·ffn/tp for an ungated MLP)
///   kv_bytes    = usable − weights − activations − reserve
///   kv_blocks   = floor(kv_bytes / (block_tokens · 2·layers·kv_heads/tp·head_dim·kv_bytes))
/// Preconditions (std::invalid_argument otherwise): tp >= 1, block_tokens >= 1.
MemoryFit fit_memory(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                     const Precision& prec, double memory_utilization, double reserve_bytes,
                     int64_t max_batched_tokens, int block_tokens, int64_t min_kv_tokens);

}  // namespace fleetsim::hw
