#include "hw_models/perf_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "hw_models/error.h"
#include "hw_models/units.h"

namespace fleetsim::hw {

namespace {

// Achieved rates of one GPU: datasheet peak times efficiency.
struct Rates {
  double gemm_flops_per_s;  ///< projections and LM head
  double attn_flops_per_s;  ///< attention (always at the 16-bit tensor rate)
  double bw_bytes_per_s;
};

Rates rates_of(const GpuSpec& gpu, const Precision& prec, const Efficiency& eff) {
  // W8A8 GEMMs (8-bit weights and activations) run on FP8 tensor cores where the part has
  // them; weight-only quantisation (W8A16) still multiplies at the 16-bit rate.
  const bool fp8 = prec.weight_bytes <= 1 && prec.act_bytes <= 1 && gpu.fp8_flops_per_s > 0;
  const double gemm_peak = fp8 ? gpu.fp8_flops_per_s : gpu.bf16_flops_per_s;
  return {gemm_peak * eff.compute, gpu.bf16_flops_per_s * eff.compute,
          gpu.memory_bw_bytes_per_s * eff.memory};
}

double roofline_s(double flops, double bytes, double flops_per_s, double bytes_per_s) {
  return std::max(flops / flops_per_s, bytes / bytes_per_s);
}

// Query heads per GPU: heads / tp (heads are split evenly).
double q_heads_per_gpu(const ModelSpec& m, int tp) { return static_cast<double>(m.heads) / tp; }

// KV heads per GPU: kv_heads / tp, but at least one — when tp > kv_heads each GPU keeps a
// replica of the KV head its query heads use (as vLLM does).
double kv_heads_per_gpu(const ModelSpec& m, int tp) {
  return std::max(static_cast<double>(m.kv_heads) / tp, 1.0);
}

// One GEMM on one GPU: `rows` tokens × `in` features times an in × out weight shard.
//   FLOPs = 2·rows·in·out
//   bytes = in·out·weight_bytes            (the weight shard, read once)
//         + rows·(in + out)·act_bytes      (input activations read, output written)
double gemm_s(double rows, double in, double out, const Precision& prec, const Rates& r) {
  const double flops = 2.0 * rows * in * out;
  const double bytes = in * out * prec.weight_bytes + rows * (in + out) * prec.act_bytes;
  return roofline_s(flops, bytes, r.gemm_flops_per_s, r.bw_bytes_per_s);
}

// The four projections of one layer for `rows` tokens, Megatron-style sharding:
// column-parallel QKV and MLP up/gate (output split by tp), row-parallel O and MLP down
// (input split by tp). Each GPU does 1/tp of the FLOPs and reads 1/tp of the weights.
double layer_gemm_s(const ModelSpec& m, int tp, double rows, const Precision& prec,
                    const Rates& r) {
  const double h = m.hidden, d = m.head_dim, f = m.ffn;
  const double qh = q_heads_per_gpu(m, tp), kvh = kv_heads_per_gpu(m, tp);
  const double qkv = gemm_s(rows, h, (qh + 2.0 * kvh) * d, prec, r);
  const double o = gemm_s(rows, qh * d, h, prec, r);
  const double up = gemm_s(rows, h, (m.gated_mlp ? 2.0 : 1.0) * f / tp, prec, r);
  const double down = gemm_s(rows, f / tp, h, prec, r);
  return qkv + o + up + down;
}

// Decode attention cost per attended context token, summed over layers. Per layer and
// token, on one GPU:
//   FLOPs = 4·(heads/tp)·head_dim          (q·k: 2·head_dim per head, p·v: 2·head_dim per head)
//   bytes = 2·kv_heads_per_gpu·head_dim·kv_bytes   (read that token's K and V)
// Both are proportional to the context, so max(F·S, M·S) = S·max(F, M): exactly linear.
double decode_attention_per_ctx_token_s(const ModelSpec& m, int tp, const Precision& prec,
                                        const Rates& r) {
  const double flops = 4.0 * q_heads_per_gpu(m, tp) * m.head_dim;
  const double bytes = 2.0 * kv_heads_per_gpu(m, tp) * m.head_dim * prec.kv_bytes;
  return m.layers * roofline_s(flops, bytes, r.attn_flops_per_s, r.bw_bytes_per_s);
}

// Prefill attention over all chunks of the iteration, summed over layers. Per layer:
//   FLOPs = 4·(heads/tp)·head_dim·prefill_attn_pairs
//   bytes = prefill_kv_tokens·2·kv_heads_per_gpu·head_dim·kv_bytes   (K and V read)
//         + prefill_tokens·2·(heads/tp)·head_dim·act_bytes          (Q read, output written)
double prefill_attention_s(const ModelSpec& m, int tp, const Precision& prec, const Rates& r,
                           const BatchShape& b) {
  const double qh = q_heads_per_gpu(m, tp), kvh = kv_heads_per_gpu(m, tp), d = m.head_dim;
  const double flops = 4.0 * qh * d * b.prefill_attn_pairs;
  const double bytes = static_cast<double>(b.prefill_kv_tokens) * 2.0 * kvh * d * prec.kv_bytes +
                       static_cast<double>(b.prefill_tokens) * 2.0 * qh * d * prec.act_bytes;
  return m.layers * roofline_s(flops, bytes, r.attn_flops_per_s, r.bw_bytes_per_s);
}

// Ring all-reduce of `bytes` over tp GPUs (α-β model): 2·(tp−1) steps, each paying the
// latency α and moving bytes/tp over the link:
//   t = 2·(tp−1)·α + 2·(tp−1)/tp · bytes / link_bw
double ring_allreduce_s(double bytes, int tp, const Efficiency& eff) {
  if (tp <= 1) return 0.0;
  const double steps = 2.0 * (tp - 1);
  return steps * eff.allreduce_latency_s + steps / tp * bytes / eff.link_bw_bytes_per_s;
}

void check_parallelism(const Parallelism& par, const Efficiency& eff) {
  if (par.tp < 1) throw std::invalid_argument("estimate_step: tp must be >= 1");
  if (par.tp > 1 && !(eff.link_bw_bytes_per_s > 0))
    throw std::invalid_argument("estimate_step: tp > 1 needs eff.link_bw_bytes_per_s > 0");
}

}  // namespace

Efficiency catalog_efficiency(const GpuSpec& gpu) {
  Efficiency e;
  e.compute = gpu.compute_efficiency;
  e.memory = gpu.memory_efficiency;
  e.iteration_overhead_s = 0;
  e.allreduce_latency_s = gpu.scaleup_latency_s;
  e.link_bw_bytes_per_s = gpu.scaleup_bw_bytes_per_s;
  return e;
}

StepBreakdown estimate_step(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                            const Precision& prec, const Efficiency& eff, const BatchShape& batch) {
  check_parallelism(par, eff);
  StepBreakdown out;
  const int64_t tokens = batch.prefill_tokens + batch.decode_seqs;
  if (tokens == 0 && batch.logits_tokens == 0 && batch.decode_ctx_tokens == 0 &&
      batch.prefill_attn_pairs == 0)
    return out;  // an empty iteration does nothing and costs nothing

  const Rates r = rates_of(gpu, prec, eff);
  const int tp = par.tp;
  const double rows = static_cast<double>(tokens);

  // Projections: every token of the iteration goes through every layer. The LM head runs
  // once, on the rows that sample a token, vocab-parallel (each GPU holds vocab/tp rows).
  if (tokens > 0) out.gemm_s = model.layers * layer_gemm_s(model, tp, rows, prec, r);
  if (batch.logits_tokens > 0)
    out.gemm_s += gemm_s(static_cast<double>(batch.logits_tokens), model.hidden,
                         static_cast<double>(model.vocab) / tp, prec, r);

  out.attention_s = prefill_attention_s(model, tp, prec, r, batch) +
                    static_cast<double>(batch.decode_ctx_tokens) *
                        decode_attention_per_ctx_token_s(model, tp, prec, r);

  // Two all-reduces per layer (after the attention output projection and after the MLP
  // down projection), each of the tokens' hidden states: tokens·hidden·act_bytes.
  if (tokens > 0)
    out.communication_s =
        model.layers * 2.0 * ring_allreduce_s(rows * model.hidden * prec.act_bytes, tp, eff);

  out.overhead_s = eff.iteration_overhead_s;
  return out;
}

DecodeAffine decode_affine(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                           const Precision& prec, const Efficiency& eff, int64_t n) {
  check_parallelism(par, eff);
  BatchShape b;
  b.decode_seqs = n;
  b.logits_tokens = n;
  b.decode_ctx_tokens = 0;
  DecodeAffine a;
  a.fixed_s = estimate_step(model, par, gpu, prec, eff, b).total_s();
  // The same function estimate_step multiplies decode_ctx_tokens by, so the two agree up to
  // floating-point rounding; it does not depend on n.
  a.per_ctx_token_s = decode_attention_per_ctx_token_s(model, par.tp, prec, rates_of(gpu, prec, eff));
  return a;
}

// ---- memory ---------------------------------------------------------------------------------

namespace {

// Rows of logits materialised at once: vLLM computes logits only for sequences that sample,
// at most max_num_seqs of them, 256 by default.
constexpr double kMaxLogitsRows = 256;

// Peak activation memory per GPU for one forward pass of T = max_batched_tokens tokens.
// Layers run one after another and reuse their buffers, so the peak is one layer's live
// tensors plus the logits:
//   T·act_bytes·( 2·hidden                               layer input + residual
//               + (heads/tp + 2·kv_heads_per_gpu)·head_dim  QKV output
//               + (heads/tp)·head_dim                    attention output
//               + (3 or 2)·ffn/tp )                      gate+up output and their product
//   + min(T, 256)·vocab·4                                 fp32 logits of the sampled rows
double activation_bytes(const ModelSpec& m, int tp, const Precision& prec, int64_t max_tokens) {
  const double t = static_cast<double>(max_tokens);
  const double qh = q_heads_per_gpu(m, tp), kvh = kv_heads_per_gpu(m, tp);
  const double width = 2.0 * m.hidden + (qh + 2.0 * kvh) * m.head_dim + qh * m.head_dim +
                       (m.gated_mlp ? 3.0 : 2.0) * m.ffn / tp;
  return t * width * prec.act_bytes + std::min(t, kMaxLogitsRows) * m.vocab * 4.0;
}

// KV-cache bytes one token takes on one GPU: 2·layers·kv_heads_per_gpu·head_dim·kv_bytes.
double kv_bytes_per_token_per_gpu(const ModelSpec& m, int tp, const Precision& prec) {
  return 2.0 * m.layers * kv_heads_per_gpu(m, tp) * m.head_dim * prec.kv_bytes;
}

MemoryFit compute_fit(const ModelSpec& model, int tp, const GpuSpec& gpu, const Precision& prec,
                      double utilization, double reserve_bytes, int64_t max_batched_tokens,
                      int block_tokens) {
  MemoryFit f;
  f.usable_bytes = gpu.memory_bytes * utilization;
  // Every weight matrix (embedding and LM head included, vocab-parallel) is split tp ways;
  // the replicated norm vectors are a rounding error (~1e-5 of the total).
  f.weight_bytes = model.derived_params() * prec.weight_bytes / tp;
  f.activation_bytes = activation_bytes(model, tp, prec, max_batched_tokens);
  f.reserve_bytes = reserve_bytes;
  f.kv_bytes = f.usable_bytes - f.weight_bytes - f.activation_bytes - f.reserve_bytes;
  const double block_bytes = block_tokens * kv_bytes_per_token_per_gpu(model, tp, prec);
  f.kv_blocks = f.kv_bytes > 0 ? static_cast<int64_t>(std::floor(f.kv_bytes / block_bytes)) : 0;
  return f;
}

bool fits(const MemoryFit& f, int block_tokens, int64_t min_kv_tokens) {
  return f.kv_blocks * block_tokens >= min_kv_tokens;
}

std::string id_of(const std::string& id, const std::string& name) { return id.empty() ? name : id; }

}  // namespace

MemoryFit fit_memory(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                     const Precision& prec, double memory_utilization, double reserve_bytes,
                     int64_t max_batched_tokens, int block_tokens, int64_t min_kv_tokens) {
  if (par.tp < 1) throw std::invalid_argument("fit_memory: tp must be >= 1");
  if (block_tokens < 1) throw std::invalid_argument("fit_memory: block_tokens must be >= 1");
  const std::string model_id = id_of(model.id, model.name), gpu_id = id_of(gpu.id, gpu.name);
  if (model.heads % par.tp != 0) {
    std::string ok;
    for (int t = 1; t <= model.heads; t *= 2)
      if (model.heads % t == 0) ok += (ok.empty() ? "" : ", ") + std::to_string(t);
    throw InputError("tp " + std::to_string(par.tp) + " does not divide the " +
                         std::to_string(model.heads) + " attention heads of " + model_id,
                     "use tp: " + ok);
  }

  const MemoryFit f = compute_fit(model, par.tp, gpu, prec, memory_utilization, reserve_bytes,
                                  max_batched_tokens, block_tokens);
  if (fits(f, block_tokens, min_kv_tokens)) return f;

  // What it needs: everything above plus KV for min_kv_tokens, rounded up to whole blocks.
  using units::Dim;
  using units::format;
  const int64_t need_blocks = (min_kv_tokens + block_tokens - 1) / block_tokens;
  const double kv_need =
      static_cast<double>(need_blocks * block_tokens) * kv_bytes_per_token_per_gpu(model, par.tp, prec);
  const double need = f.weight_bytes + f.activation_bytes + f.reserve_bytes + kv_need;
  const double short_by = need - f.usable_bytes;

  // What would fit instead: a larger tp (dividing the heads), FP8 weights, fewer batched
  // tokens. Each is checked with the same budget, so the hint never suggests a miss.
  auto fits_with = [&](int tp, const Precision& p, int64_t tokens) {
    return fits(compute_fit(model, tp, gpu, p, memory_utilization, reserve_bytes, tokens,
                            block_tokens),
                block_tokens, min_kv_tokens);
  };
  std::vector<std::string> options;
  for (int t = par.tp * 2; t <= 64 && t <= model.heads; t *= 2) {
    if (model.heads % t == 0 && fits_with(t, prec, max_batched_tokens)) {
      options.push_back("tp: " + std::to_string(t) + " or more");
      break;
    }
  }
  if (prec.weight_bytes > 1) {
    Precision p8 = prec;
    p8.weight_bytes = 1;
    if (fits_with(par.tp, p8, max_batched_tokens))
      options.push_back("FP8 weights (fit at tp " + std::to_string(par.tp) + ")");
  }
  for (int64_t t = max_batched_tokens / 2; t >= 1; t /= 2) {
    if (fits_with(par.tp, prec, t)) {
      options.push_back("max_batched_tokens: " + std::to_string(t) + " or less");
      break;
    }
  }
  std::string hint;
  for (const auto& o : options) hint += (hint.empty() ? "try " : ", or ") + o;
  if (hint.empty())
    hint = "no tp up to 64 fits on " + gpu_id +
           " at this precision; try a GPU with more memory, FP8 weights or a smaller model";

  throw InputError(
      model_id + " does not fit on " + std::to_string(par.tp) + " x " + gpu_id + ": needs " +
      format(need, Dim::kBytes) + " per GPU (weights " + format(f.weight_bytes, Dim::kBytes) +
      ", activations " + format(f.activation_bytes, Dim::kBytes) + ", reserve " +
      format(f.reserve_bytes, Dim::kBytes) + ", KV cache for " + std::to_string(min_kv_tokens) +
      " tokens " + format(kv_need, Dim::kBytes) + "), " + format(f.usable_bytes, Dim::kBytes) +
      " usable (short by " + format(short_by, Dim::kBytes) + ")",
      hint);
}

}  // namespace fleetsim::hw
