#include "hw_models/perf_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/error.h"
#include "hw_models/units.h"

namespace fleetsim::hw {

// ---- dtypes ---------------------------------------------------------------------------------

double dtype_bytes(DType d) {
  switch (d) {
    case DType::kBf16:
    case DType::kFp16: return 2;
    case DType::kFp8:
    case DType::kInt8: return 1;
    case DType::kInt4:
    case DType::kFp4: return 0.5;
    case DType::kQ8_0: return 34.0 / 32;
    case DType::kQ4_0: return 18.0 / 32;
    case DType::kQ4KM: return 4.82 / 8;
  }
  return 2;
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
    case DType::kFp8: return "fp8";
    case DType::kInt8: return "int8";
    case DType::kInt4: return "int4";
    case DType::kFp4: return "fp4";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
    case DType::kQ4KM: return "q4_k_m";
  }
  return "bf16";
}

bool parse_dtype(const std::string& s, DType* out) {
  static const std::pair<const char*, DType> kNames[] = {
      {"bf16", DType::kBf16}, {"fp16", DType::kFp16},  {"fp8", DType::kFp8},
      {"int8", DType::kInt8}, {"int4", DType::kInt4},  {"fp4", DType::kFp4},
      {"mxfp4", DType::kFp4}, {"nvfp4", DType::kFp4},  {"q8_0", DType::kQ8_0},
      {"q4_0", DType::kQ4_0}, {"q4_k_m", DType::kQ4KM}};
  for (const auto& [name, d] : kNames)
    if (s == name) {
      *out = d;
      return true;
    }
  return false;
}

Precision Precision::of(DType w, DType a, DType kv) {
  Precision p;
  p.weight_bytes = dtype_bytes(w);
  p.act_bytes = dtype_bytes(a);
  p.kv_bytes = dtype_bytes(kv);
  p.block_quant = w == DType::kQ8_0 || w == DType::kQ4_0 || w == DType::kQ4KM;
  if (a == DType::kFp8 && (w == DType::kFp8 || w == DType::kInt4 || w == DType::kFp4))
    p.math = DType::kFp8;
  else if (a == DType::kInt8 && (w == DType::kInt8 || w == DType::kInt4))
    p.math = DType::kInt8;
  else if (a == DType::kFp4 && w == DType::kFp4)
    p.math = DType::kFp4;
  else
    p.math = DType::kBf16;
  return p;
}

namespace {

// The tensor rate of `math` on `gpu`, falling back to a wider unit the part has.
double math_rate(const GpuSpec& gpu, DType math) {
  switch (math) {
    case DType::kFp4:
      if (gpu.fp4_flops_per_s > 0) return gpu.fp4_flops_per_s;
      [[fallthrough]];
    case DType::kFp8:
      if (gpu.fp8_flops_per_s > 0) return gpu.fp8_flops_per_s;
      return gpu.bf16_flops_per_s;
    case DType::kInt8:
      if (gpu.int8_ops_per_s > 0) return gpu.int8_ops_per_s;
      return gpu.bf16_flops_per_s;
    default: return gpu.bf16_flops_per_s;
  }
}

// The dtype a calibration table row must have for GEMMs running on `math`: "fp4" on the FP4
// unit, "fp8" on the FP8 unit, "bf16" on the 16-bit one, "" on units no table covers (INT8).
const char* calib_gemm_dtype(const GpuSpec& gpu, DType math) {
  const double rate = math_rate(gpu, math);
  if (math == DType::kFp4 && gpu.fp4_flops_per_s > 0) return "fp4";
  const bool fp8_unit = (math == DType::kFp8 || math == DType::kFp4) && gpu.fp8_flops_per_s > 0 &&
                        rate == gpu.fp8_flops_per_s;
  if (fp8_unit) return "fp8";
  return rate == gpu.bf16_flops_per_s ? "bf16" : "";
}

// Where an operator runs: its peak rates, efficiency factors and calibration rows.
struct Unit {
  double gemm_peak = 0, attn_peak = 0, bw_peak = 0;
  double eff_compute = 1, eff_memory = 1;
  double eff_gemm_compute = 1;  // GEMMs' compute efficiency (eff_compute, or FP4's measured one)
  double kernel_eff = 1;        // the engine's kernels against the calibrated/catalog rates
  double compute_eff = 1;       // and their compute side
  double dequant_min_rows = 0;  // GGUF matmuls of ≥ this many rows run on an FP16 copy (0: never)
  double matvec_bw = 0;         // mat-vec kernels stream at most this many bytes/s (0: no limit)
  double min_kernel_s = 0;      // the shortest time a GPU operator takes (0: on the host)
  const std::vector<CalibrationRow>* const (*rows)[3] = nullptr;  // Deployment::calib_rows
};

Unit gpu_unit(const Deployment& d) {
  Unit u;
  u.gemm_peak = math_rate(*d.gpu, d.prec.math);
  u.attn_peak = d.gpu->bf16_flops_per_s;
  u.bw_peak = d.gpu->memory_bw_bytes_per_s;
  u.eff_compute = u.eff_gemm_compute = d.eff.compute;
  u.eff_memory = d.eff.memory;
  // FP4 GEMMs on an FP4 unit: its measured fraction where the catalog has one (best-shape
  // BF16 fractions overstate it); a calibration table's fp4 rows, where there are any,
  // replace it shape by shape.
  if (d.prec.math == DType::kFp4 && d.gpu->fp4_flops_per_s > 0 && d.gpu->fp4_compute_efficiency > 0)
    u.eff_gemm_compute = d.gpu->fp4_compute_efficiency;
  u.kernel_eff = d.eff.kernel_efficiency;
  u.compute_eff = d.eff.compute_efficiency;
  u.rows = d.calib_rows;
  u.min_kernel_s = d.eff.min_kernel_s;
  // ggml's CUDA backend before its MMQ kernels became the default multiplied batched GGUF
  // matmuls by dequantising the weights into an FP16 buffer and calling cuBLAS; Metal's
  // kernels dequantise in place.
  if (d.prec.block_quant && d.eff.dequant_gemm_min_tokens > 0 && d.gpu->vendor == "NVIDIA")
    u.dequant_min_rows = static_cast<double>(d.eff.dequant_gemm_min_tokens);
  // Mat-vec kernels with few loads in flight per SM: at most sm_count × the per-SM rate.
  if (d.eff.matvec_sm_bandwidth > 0 && d.gpu->sm_count > 0 && d.gpu->vendor == "NVIDIA")
    u.matvec_bw = d.gpu->sm_count * d.eff.matvec_sm_bandwidth;
  // 16-bit GEMMs (and the FP16 copies) accumulating in FP16: the part's FP16-accumulate rate.
  if (d.eff.fp16_accumulate && d.prec.math == DType::kBf16 && d.gpu->fp16_acc16_flops_per_s > 0 &&
      (d.prec.weight_bytes == 2 || u.dequant_min_rows > 0))
    u.gemm_peak = d.gpu->fp16_acc16_flops_per_s;
  return u;
}

// The host as a compute unit (offloaded layers): its rates are achieved figures.
Unit host_unit(const Deployment& d) {
  Unit u;
  u.gemm_peak = u.attn_peak = d.offload.host_flops_per_s;
  u.bw_peak = d.offload.host_memory_bw_bytes_per_s;
  return u;
}

enum class Kind { kGemm, kPrefill, kDecode, kOther };

// With expert-parallel load balancing (redundant experts placed from routing statistics),
// the busiest rank's routed tokens / the mean: TensorRT-LLM's EP blog (blog4, Table 1)
// measured an imbalance ratio (max − mean)/mean of 0.109 (EP 32, 9 slots per rank) and
// 0.115 (EP 36, 8 slots) for DeepSeek-R1 with 32 redundant experts, 1.564 without.
constexpr double kEplbImbalance = 1.11;

// Busiest expert-parallel GPU's routed tokens / the mean GPU's: it holds the hottest expert
// (hot × the mean expert's tokens) and n − 1 average ones, n = E/G experts per GPU; with
// redundant experts (EPLB) at most kEplbImbalance; at least the explicit floor
// eff.moe_imbalance.
double ep_imbalance(const Deployment& d) {
  const double n = static_cast<double>(d.model->moe->experts) / d.par.gpus_per_stage();
  const double hot = std::max(1.0, d.model->moe->hot_expert);
  double skew = (hot + n - 1.0) / n;
  if (d.par.redundant_experts > 0) skew = std::min(skew, kEplbImbalance);
  return std::max(d.eff.moe_imbalance, skew);
}

// Micro-batches in flight: pp with overlapped stages (each GPU runs its layers for each of
// pp micro-batches of T/pp tokens), 1 when the stages run one after another on the whole
// batch (llama.cpp's layer split), which costs the same layer count on T tokens.
double micro_batches(const Deployment& d) {
  return d.eff.pipeline_sequential ? 1.0 : static_cast<double>(d.par.pp);
}

const std::vector<CalibrationRow>* calib_rows(const Unit& u, int kind, bool compute_bound) {
  if (u.rows == nullptr || kind < 0 || kind > 2) return nullptr;
  return u.rows[kind][compute_bound ? 1 : 0];
}

class Calc {
 public:
  Calc(const Deployment& d, std::vector<OpCost>* ops, StepCache* cache = nullptr)
      : d_(d), m_(*d.model), ops_(ops), cache_(cache) {
    if (d.model == nullptr || d.gpu == nullptr)
      throw std::invalid_argument("estimate_step: deployment without model or gpu");
    const Parallelism& p = d.par;
    if (p.tp < 1 || p.pp < 1 || p.dp_attention < 1)
      throw std::invalid_argument("estimate_step: tp, pp and dp_attention must be >= 1");
    if (d.network) {
      net_ = d.network.get();
    } else {
      local_net_ = AnalyticNetwork({d.eff.allreduce_latency_s, d.eff.link_bw_bytes_per_s}, {});
      net_ = &local_net_;
    }
    if (p.gpus_per_stage() > 1 && !d.network && !(d.eff.link_bw_bytes_per_s > 0))
      throw std::invalid_argument("estimate_step: tp > 1 needs eff.link_bw_bytes_per_s > 0");
    gpu_ = gpu_unit(d);
    if (d.offload.mode == Offload::Mode::kHostCompute && d.offload.layers_on_host > 0) {
      if (!(d.offload.host_flops_per_s > 0 && d.offload.host_memory_bw_bytes_per_s > 0))
        throw std::invalid_argument(
            "estimate_step: host_compute offload needs host rates (node host_compute and "
            "host_memory_bandwidth)");
      host_ = host_unit(d);
    }
  }

  StepBreakdown run(const BatchShape& b);
  double decode_unit_s(const Unit& u) const;  // decode attention per context token per layer

 private:
  // Adds `count` occurrences of an operator of `flops` and `bytes` (each) to `bucket`.
  // `compute_scale` (≤ 1) slows the compute side only (grouped-GEMM tile occupancy).
  void op(double* bucket, const char* cat, const char* name, double count, double flops,
          double bytes, Kind kind, const Unit& u, double compute_scale = 1.0,
          double time_scale = 1.0, double floor_s = 0);
  void fixed(double* bucket, const char* cat, const char* name, double count, double t,
             const char* bound);
  // Weights of a GGUF block format stream at quant_bandwidth of the 16-bit rate (the
  // dequantising mat-vec kernels are not purely bandwidth-bound): charged as extra bytes.
  double weight_bytes(double params) const {
    return params * d_.prec.weight_bytes / (d_.prec.block_quant ? d_.eff.quant_bandwidth : 1.0);
  }
  double gemm_bytes(double rows, double in, double out) const {
    return weight_bytes(in * out) + rows * (in + out) * d_.prec.act_bytes;
  }
  void gemm(double* bucket, const char* cat, const char* name, double count, double rows, double in,
            double out, const Unit& u) {
    if (rows <= 0 || count <= 0) return;
    if (u.dequant_min_rows > 0 && rows >= u.dequant_min_rows) {
      // Read the block format, write the FP16 copy; the GEMM then reads 2 bytes a weight.
      const double w = in * out;
      op(bucket, cat, "dequantize weights to FP16", count, 0, w * (d_.prec.weight_bytes + 2.0),
         Kind::kOther, u);
      op(bucket, cat, name, count, 2.0 * rows * w, 2.0 * w + rows * (in + out) * d_.prec.act_bytes,
         Kind::kGemm, u);
      return;
    }
    // A mat-vec kernel streams its weights (at their stored size) and activations no
    // faster than the per-SM limit allows.
    const double floor_s =
        u.matvec_bw > 0 && rows <= kMatVecMaxTokens
            ? (in * out * d_.prec.weight_bytes + rows * (in + out) * d_.prec.act_bytes) /
                  u.matvec_bw
            : 0.0;
    op(bucket, cat, name, count, 2.0 * rows * in * out, gemm_bytes(rows, in, out), Kind::kGemm, u,
       1.0, 1.0, floor_s);
  }
  // What layer_ops adds: the operators whose cost depends on the token count only
  // (projections, MLPs, MoE), the attention, or both.
  enum Parts { kTokenOps = 1, kAttentionOps = 2, kAllOps = 3 };
  // The busiest attention rank's prefill tokens, causal pairs and KV tokens read, per micro-
  // batch: an even share of the iteration's, or with attention data parallelism (pp 1) its
  // largest chunk where that is more (a chunk is not divided among ranks); and its
  // attention-side tokens (that prefill and an even share of the decodes).
  struct RankPrefill {
    double tokens = 0, pairs = 0, kv_tokens = 0, attn_tokens = 0;
    bool uneven = false;  // the largest chunk is more than an even share
  };
  RankPrefill rank_prefill(const BatchShape& b) const;
  void layer_ops(StepBreakdown& s, const BatchShape& b, double scale, const Unit& u, bool on_host,
                 int parts = kAllOps);
  void embedding(StepBreakdown& s, double Ta, double mb);

  CommGroup group(int size) const {
    return {size, std::min(size, std::max(1, d_.scaleup_domain_gpus))};
  }

  const Deployment& d_;
  const ModelSpec& m_;
  std::vector<OpCost>* ops_;
  StepCache* cache_ = nullptr;
  const NetworkModel* net_ = nullptr;
  AnalyticNetwork local_net_;
  Unit gpu_, host_;
  double decode_ctx_attention_s_ = 0;  // decode attention over the context, so far
};

void Calc::op(double* bucket, const char* cat, const char* name, double count, double flops,
              double bytes, Kind kind, const Unit& u, double compute_scale, double time_scale,
              double floor_s) {
  const double peak = kind == Kind::kGemm ? u.gemm_peak : u.attn_peak;
  const double tf = flops / (peak * compute_scale * u.compute_eff), tb = bytes / u.bw_peak;
  const bool compute_bound = tf >= tb;
  const std::vector<CalibrationRow>* rows = calib_rows(u, static_cast<int>(kind), compute_bound);
  // A shape far from the ridge is costed from the rows far from it when there are any: a
  // kernel on the ridge is held back by its memory traffic too, and its fraction of the
  // FLOPs roofline says little about a large prefill GEMM.
  bool far_rows = false;
  if (compute_bound && tf >= kFarFromRidge * tb && u.rows != nullptr) {
    const auto* far = u.rows[static_cast<int>(kind)][2];
    if (far != nullptr && !far->empty()) {
      rows = far;
      far_rows = true;
    }
  }
  double t;
  const char* bound;
  if (rows != nullptr && !rows->empty()) {
    t = std::max(tf, tb) / CalibrationSet::fraction_at(*rows, compute_bound ? flops : bytes);
    bound = far_rows        ? "compute (calibrated, rows far from the ridge)"
            : compute_bound ? "compute (calibrated)"
                            : "memory (calibrated)";
  } else {
    const double tc = tf / (kind == Kind::kGemm ? u.eff_gemm_compute : u.eff_compute),
                 tm = tb / u.eff_memory;
    t = std::max(tc, tm);
    bound = tc >= tm ? "compute" : "memory";
  }
  t /= u.kernel_eff * time_scale;
  if (t < u.min_kernel_s) {
    t = u.min_kernel_s;
    bound = "fixed (shortest kernel)";
  }
  if (t < floor_s) {
    t = floor_s;
    bound = "memory (mat-vec, per-SM limit)";
  }
  *bucket += count * t;
  if (ops_ != nullptr) ops_->push_back({cat, name, count, flops, bytes, count * t, bound});
}

void Calc::fixed(double* bucket, const char* cat, const char* name, double count, double t,
                 const char* bound) {
  if (count <= 0 || t <= 0) return;
  *bucket += count * t;
  if (ops_ != nullptr) ops_->push_back({cat, name, count, 0, 0, count * t, bound});
}

double Calc::decode_unit_s(const Unit& u) const {
  // One context token of decode attention in one layer, on one GPU (see the header).
  const int tp = d_.par.tp;
  const double qh = static_cast<double>(m_.heads) / tp;
  double flops, bytes;
  if (m_.mla) {
    flops = qh * (4.0 * m_.mla->kv_lora_rank + 2.0 * m_.mla->qk_rope_head_dim);
    bytes = m_.mla->latent_dim() * d_.prec.kv_bytes;
  } else {
    const double kvh = std::max(static_cast<double>(m_.kv_heads) / tp, 1.0);
    flops = 4.0 * qh * m_.head_dim;
    bytes = 2.0 * kvh * m_.head_dim * d_.prec.kv_bytes;
  }
  // Decode attention is memory-bound; with a table, the long-kernel fraction of its
  // memory-bound rows, so that the cost stays exactly linear in the context.
  const double tf = flops / (u.attn_peak * u.compute_eff), tb = bytes / u.bw_peak;
  const auto* rows = calib_rows(u, static_cast<int>(Kind::kDecode), tf >= tb);
  if (rows != nullptr && !rows->empty())
    return std::max(tf, tb) / CalibrationSet::fraction_large(*rows) / u.kernel_eff;
  return std::max(tf / u.eff_compute, tb / u.eff_memory) / u.kernel_eff;
}

Calc::RankPrefill Calc::rank_prefill(const BatchShape& b) const {
  const double mb = micro_batches(d_), D = d_.par.dp_attention, split = mb * D;
  const double Tm = static_cast<double>(b.prefill_tokens + b.decode_seqs) / mb;
  RankPrefill r{static_cast<double>(b.prefill_tokens) / split, b.prefill_attn_pairs / split,
                static_cast<double>(b.prefill_kv_tokens) / split, Tm / D, false};
  if (D > 1 && d_.par.pp == 1 && static_cast<double>(b.largest_chunk_tokens) > r.tokens) {
    r.tokens = static_cast<double>(b.largest_chunk_tokens);
    r.pairs = std::max(r.pairs, b.largest_chunk_pairs);
    r.kv_tokens = std::max(r.kv_tokens, static_cast<double>(b.largest_chunk_kv_tokens));
    r.attn_tokens = r.tokens + static_cast<double>(b.decode_seqs) / split;
    r.uneven = true;
  }
  return r;
}

// The per-layer operators of one iteration, `scale` of the layers (1 when nothing is
// offloaded), on unit `u`. Per GPU, per micro-batch; count = layers × scale (each GPU runs
// layers/pp layers for each of pp micro-batches).
void Calc::layer_ops(StepBreakdown& s, const BatchShape& b, double scale, const Unit& u,
                     bool on_host, int parts) {
  const Parallelism& p = d_.par;
  const int tp = p.tp, D = p.dp_attention, G = p.gpus_per_stage();
  const double mb = micro_batches(d_), split = mb * D;
  const double h = m_.hidden, act = d_.prec.act_bytes;
  const double T = static_cast<double>(b.prefill_tokens + b.decode_seqs);
  const RankPrefill rp = rank_prefill(b);
  const double Tm = T / mb, Ta = rp.attn_tokens;
  const double L = m_.layers * scale;
  const double Lsw = m_.sliding_window_layers * scale, Lfull = L - Lsw;
  const double Lchunk = m_.chunked_attention_layers * scale;  // among Lfull
  const double Ldense = m_.dense_mlp_layers() * scale, Lmoe = m_.moe_layers() * scale;
  const double qh = static_cast<double>(m_.heads) / tp;
  double* g_bucket = on_host ? &s.offload_s : &s.gemm_s;
  double* a_bucket = on_host ? &s.offload_s : &s.attention_s;
  double* e_bucket = on_host ? &s.offload_s : &s.moe_s;

  // Attention projections.
  if ((parts & kTokenOps) && Ta > 0) {
    if (m_.mla) {
      const MlaSpec& a = *m_.mla;
      const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      if (a.q_lora_rank > 0) {
        gemm(g_bucket, "gemm", "q_a projection (MLA)", L, Ta, h, a.q_lora_rank, u);
        gemm(g_bucket, "gemm", "q_b projection (MLA)", L, Ta, a.q_lora_rank, qh * qk, u);
      } else {
        gemm(g_bucket, "gemm", "q projection (MLA)", L, Ta, h, qh * qk, u);
      }
      gemm(g_bucket, "gemm", "kv_a projection (MLA)", L, Ta, h, a.latent_dim(), u);
      gemm(g_bucket, "gemm", "kv_b projection (MLA, absorbed in decode)", L, Ta, a.kv_lora_rank,
           qh * (a.qk_nope_head_dim + a.v_head_dim), u);
      gemm(g_bucket, "gemm", "output projection", L, Ta, qh * a.v_head_dim, h, u);
    } else {
      const double kvh = std::max(static_cast<double>(m_.kv_heads) / tp, 1.0);
      gemm(g_bucket, "gemm", "QKV projection", L, Ta, h, (qh + 2.0 * kvh) * m_.head_dim, u);
      gemm(g_bucket, "gemm", "output projection", L, Ta, qh * m_.head_dim, h, u);
    }
  }

  // Attention. The engine's MLA kernels at their own efficiency (not on the host).
  const double attn_scale = m_.mla && !on_host ? d_.eff.mla_efficiency : 1.0;
  auto per = [&](int64_t v) { return static_cast<double>(v) / split; };
  const double pairs = rp.pairs, kvtok = rp.kv_tokens, ptok = rp.tokens;
  const double ctx = per(b.decode_ctx_tokens), seqs = per(b.decode_seqs);
  if ((parts & kAttentionOps) && (pairs > 0 || kvtok > 0)) {
    double f_pair, b_kv, b_q;
    if (m_.mla) {
      const MlaSpec& a = *m_.mla;
      f_pair = qh * (2.0 * (a.qk_nope_head_dim + a.qk_rope_head_dim) + 2.0 * a.v_head_dim);
      b_kv = a.latent_dim() * d_.prec.kv_bytes;
      b_q = qh * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) * act;
    } else {
      const double kvh = std::max(static_cast<double>(m_.kv_heads) / tp, 1.0);
      f_pair = 4.0 * qh * m_.head_dim;
      b_kv = 2.0 * kvh * m_.head_dim * d_.prec.kv_bytes;
      b_q = 2.0 * qh * m_.head_dim * act;
    }
    if (Lfull - Lchunk > 0)
      op(a_bucket, "attention", "prefill attention", Lfull - Lchunk, f_pair * pairs,
         kvtok * b_kv + ptok * b_q, Kind::kPrefill, u, 1.0, attn_scale);
    if (Lchunk > 0) {
      // A token attends to the tokens before it in its own aligned chunk of C: a prompt of
      // n·C tokens has n·C(C+1)/2 pairs where full attention has nC(nC+1)/2, so about C/2
      // per token. The batch's pairs are capped at that: exact for whole prompts of at most
      // one chunk or of whole chunks, and right on average over the pieces of a longer
      // prompt. A piece that starts late in a prompt's first chunk (chunked prefill of a
      // prompt shorter than C) gets fewer pairs than it has: an 8,000-token prompt in pieces
      // of 2,048 about 24 % fewer in these layers (24.4M of 32.0M).
      const double c = m_.attention_chunk_tokens;
      const double pairs_c = std::min(pairs, ptok * (c + 1.0) / 2.0);
      const double kv_c = pairs > 0 ? kvtok * pairs_c / pairs : kvtok;
      op(a_bucket, "attention", "prefill attention (chunked)", Lchunk, f_pair * pairs_c,
         kv_c * b_kv + ptok * b_q, Kind::kPrefill, u, 1.0, attn_scale);
    }
    if (Lsw > 0) {
      const double w = m_.sliding_window_tokens;
      const double pairs_sw = std::min(pairs, ptok * w);
      const double kv_sw = pairs > 0 ? kvtok * pairs_sw / pairs : kvtok;
      op(a_bucket, "attention", "prefill attention (sliding window)", Lsw, f_pair * pairs_sw,
         kv_sw * b_kv + ptok * b_q, Kind::kPrefill, u);
    }
  }
  const double unit = (parts & kAttentionOps) ? decode_unit_s(u) / attn_scale : 0.0;
  if ((parts & kAttentionOps) && ctx > 0 && Lfull > 0) {
    const double t = ctx * unit;
    *a_bucket += Lfull * t;
    decode_ctx_attention_s_ += Lfull * t;
    if (ops_ != nullptr)
      ops_->push_back({"attention", "decode attention", Lfull, 0, 0, Lfull * t,
                       calib_rows(u, static_cast<int>(Kind::kDecode), false) ? "memory (calibrated)"
                                                                             : "roofline"});
  }
  if ((parts & kAttentionOps) && seqs > 0 && Lsw > 0) {
    const double t = seqs * m_.sliding_window_tokens * unit;
    *a_bucket += Lsw * t;
    if (ops_ != nullptr)
      ops_->push_back({"attention", "decode attention (sliding window)", Lsw, 0, 0, Lsw * t,
                       calib_rows(u, static_cast<int>(Kind::kDecode), false) ? "memory (calibrated)"
                                                                             : "roofline"});
  }

  if (!(parts & kTokenOps)) return;

  // MLPs.
  if (Tm > 0 && Ldense > 0) {
    const double f = m_.ffn;
    gemm(g_bucket, "gemm", "MLP up+gate", Ldense, Tm, h, (m_.gated_mlp ? 2.0 : 1.0) * f / G, u);
    gemm(g_bucket, "gemm", "MLP down", Ldense, Tm, f / G, h, u);
  }
  if (Tm > 0 && Lmoe > 0) {
    const MoeSpec& e = *m_.moe;
    const double E = e.experts, k = e.top_k, fe = e.expert_ffn;
    // Expected experts hit by Tm tokens each choosing k of E.
    const double hit = E * (1.0 - std::pow(1.0 - k / E, Tm));
    // Grouped GEMM: with m token rows per expert its tiles are mostly empty at small m; the
    // compute side runs at m / (m + m_half) of the dense rate (m_half = 0: at the dense rate).
    // The engine's grouped-GEMM compute efficiency multiplies the occupancy.
    auto occupancy = [&](double m) {
      const double mh = d_.eff.moe_half_tokens;
      return (mh > 0 && m > 0 ? m / (m + mh) : 1.0) * d_.eff.moe_compute_efficiency;
    };
    // The routed-expert layer as the engines run it (vLLM's fused_moe, SGLang, TensorRT-LLM):
    // router GEMM, top-k over the expert scores, the sort of token copies by expert, the
    // grouped up+gate GEMM (gathering its rows), the gated activation, the grouped down GEMM,
    // and (tensor-parallel experts) the weighted sum of each token's copies; with expert
    // parallelism that sum happens in the EP combine all-to-all. Each is its own kernel and
    // costs at least the shortest kernel: on an H200 the stages around the grouped GEMMs took
    // 36-79 µs per layer at one token in PyTorch (hw_models/calibration/measured/
    // h200-sxm-2026-12-04/README.md), where one router GEMM was charged before.
    // `tokens`: tokens routed on this GPU; `copies`: token copies its experts process;
    // `experts`: expert weight sets it reads; `fl`: expert FFN width on this GPU; `m`: rows
    // per hit expert (the grouped GEMM's occupancy).
    // W4A4 grouped GEMMs on an FP4 unit keep the catalog's single measured FP4 fraction and
    // memory efficiency, not a table's dense fp4 rows: those time single dense GEMMs (small
    // ones at 1-2.8 TB/s, launch-bound), not the engines' grouped MoE kernels, which stream
    // every hit expert's weights in one launch; and the engines' MoE terms were fitted
    // against that fraction (hw_models/calibration/README.md, "FP4 rows").
    const bool fp4_grouped = d_.prec.math == DType::kFp4 && d_.gpu->fp4_flops_per_s > 0;
    Unit grouped_fp4 = u;
    grouped_fp4.rows = nullptr;
    // Each expert's GEMMs in the grouped kernel also cost as if their weights were
    // eff.moe_half_expert_bytes larger (few tiles per expert: the pipeline's fill and drain
    // and the last wave's idle SMs are paid per expert), so the operator runs at
    // w / (w + w_half) of its rate, memory and compute side alike (fitting the streaming side
    // alone did worse, README), w the expert's stored weight bytes on this GPU.
    auto size_efficiency = [&](double fl) {
      const double w = 3.0 * h * fl * d_.prec.weight_bytes, wh = d_.eff.moe_half_expert_bytes;
      return wh > 0 ? w / (w + wh) : 1.0;
    };
    auto routed = [&](const char* gemm_name, double tokens, double copies, double experts,
                      double fl, double m, bool combine) {
      gemm(e_bucket, "moe", "router", Lmoe, tokens, h, E, u);
      op(e_bucket, "moe", "router top-k", Lmoe, 0, tokens * (E * 4.0 + k * 8.0), Kind::kOther, u);
      op(e_bucket, "moe", "token copies sorted by expert", Lmoe, 0, copies * 8.0, Kind::kOther, u);
      op(e_bucket, "moe", gemm_name, Lmoe, 2.0 * copies * 3.0 * h * fl,
         weight_bytes(experts * 3.0 * h * fl) + copies * (2.0 * h + 3.0 * fl) * act, Kind::kGemm,
         fp4_grouped ? grouped_fp4 : u, occupancy(m), d_.eff.moe_efficiency * size_efficiency(fl));
      op(e_bucket, "moe", "expert activation (SiLU x up)", Lmoe, 0, copies * 3.0 * fl * act,
         Kind::kOther, u);
      if (combine)
        op(e_bucket, "moe", "expert outputs combined (weighted sum)", Lmoe, 0,
           (copies + tokens) * h * act, Kind::kOther, u);
    };
    if (p.expert_parallel) {
      const double copies = ep_imbalance(d_) * Tm * k / G;
      // Redundant replicas (EPLB) are more expert slots per GPU: (E + R) / E as many weights.
      const double slots = (E + p.redundant_experts) / E;
      // Attention DP: each GPU routes its own Tm/G tokens, and the combine all-to-all sums
      // each token's copies. Attention TP (D = 1): every GPU holds all Tm tokens and routes
      // them all, runs its experts on the copies routed to them, and the all-reduce after
      // the layer sums the copies (TensorRT-LLM fuses the MoE finalize into that all-reduce:
      // no pass of its own); the shared expert is split by TP as a dense MLP is.
      const bool tp_attention = D == 1;
      const double rows = tp_attention ? Tm : Tm / G;  // tokens each GPU holds
      routed("routed experts (grouped GEMM, EP)", rows, copies, slots * hit / G, fe, Tm * k / hit,
             false);
      if (e.shared_experts > 0) {
        const double fs = static_cast<double>(e.shared_experts) * fe;
        const double shard = tp_attention ? G : 1;
        gemm(e_bucket, "moe", "shared expert up+gate", Lmoe, rows, h, 2.0 * fs / shard, u);
        gemm(e_bucket, "moe", "shared expert down", Lmoe, rows, fs / shard, h, u);
      }
    } else {
      const double copies = Tm * k;
      routed("routed experts (grouped GEMM, TP)", Tm, copies, hit, fe / G, copies / hit, true);
      if (e.shared_experts > 0) {
        const double fs = static_cast<double>(e.shared_experts) * fe;
        gemm(e_bucket, "moe", "shared expert up+gate", Lmoe, Tm, h, 2.0 * fs / G, u);
        gemm(e_bucket, "moe", "shared expert down", Lmoe, Tm, fs / G, h, u);
      }
    }
  }
}

void Calc::embedding(StepBreakdown& s, double Ta, double mb) {
  // Embedding gather: each token reads one row of the table and writes it.
  if (Ta > 0) {
    const double bytes = Ta * m_.hidden * (d_.prec.weight_bytes + d_.prec.act_bytes);
    op(&s.gemm_s, "gemm", "embedding gather", mb, 0, bytes, Kind::kOther, gpu_);
  }
}

StepBreakdown Calc::run(const BatchShape& b) {
  StepBreakdown s;
  const int64_t tokens = b.prefill_tokens + b.decode_seqs;
  if (tokens == 0 && b.logits_tokens == 0 && b.decode_ctx_tokens == 0 && b.prefill_attn_pairs == 0)
    return s;  // an empty iteration does nothing and costs nothing

  const Parallelism& p = d_.par;
  const int tp = p.tp, D = p.dp_attention, G = p.gpus_per_stage();
  const double mb = micro_batches(d_);
  const double h = m_.hidden;
  const double T = static_cast<double>(tokens), Tm = T / mb;
  const RankPrefill rp = rank_prefill(b);
  const double Ta = rp.attn_tokens;
  const Offload& off = d_.offload;
  const int host_layers = std::min(off.layers_on_host, m_.layers);
  const double host_share = static_cast<double>(host_layers) / m_.layers;

  // The memo holds iterations whose attention-side tokens follow from the token count.
  StepCache::TokenPart* memo =
      cache_ != nullptr && ops_ == nullptr && host_layers == 0 && !rp.uneven ? cache_->part(tokens)
                                                                             : nullptr;
  if (memo != nullptr) {
    // The token operators as a first iteration of this many tokens found them: the same
    // additions in the same order, so the sums are bit-identical.
    if (!memo->set) {
      StepBreakdown t;
      embedding(t, Ta, mb);
      layer_ops(t, b, 1.0, gpu_, false, kTokenOps);
      *memo = {t.gemm_s, t.moe_s, true};
    }
    s.gemm_s = memo->gemm_s;
    s.moe_s = memo->moe_s;
    layer_ops(s, b, 1.0, gpu_, false, kAttentionOps);
  } else if (off.mode == Offload::Mode::kHostCompute && host_layers > 0) {
    embedding(s, Ta, mb);
    layer_ops(s, b, 1.0 - host_share, gpu_, false);
    layer_ops(s, b, host_share, host_, true);
  } else {
    embedding(s, Ta, mb);
    layer_ops(s, b, 1.0, gpu_, false);
  }

  // LM head: vocab-parallel over tp, on the sampling rows of this DP group.
  if (b.logits_tokens > 0)
    gemm(&s.gemm_s, "gemm", "LM head", mb, static_cast<double>(b.logits_tokens) / mb / D, h,
         static_cast<double>(m_.vocab) / tp, gpu_);

  // Communication.
  if (tokens > 0) {
    const double L = m_.layers;
    const double red = d_.prec.residual_bytes();
    if (tp > 1)
      fixed(&s.communication_s, "communication", "TP all-reduce after attention", L,
            net_->allreduce_s(Ta * h * red, group(tp)), "network");
    // Expert parallelism exchanges tokens by all-to-all only under attention DP, where
    // each rank holds different tokens. Under attention TP every rank already holds every
    // token: it runs its own experts on them and the MoE output is all-reduced, as after a
    // dense MLP (TensorRT-LLM enables its MoE all-to-all only with enable_attention_dp;
    // otherwise reducescatter_or_allreduce). ep_alltoall() returns no calls then.
    const double ep_layers = p.expert_parallel && D > 1 ? m_.moe_layers() : 0.0;
    if (G > 1) {
      fixed(&s.communication_s, "communication",
            D > 1 ? "all-gather + reduce-scatter around the MLP" : "TP all-reduce after MLP",
            L - ep_layers, net_->allreduce_s(Tm * h * red, group(G)), "network");
      if (ep_layers > 0) {
        const EpAllToAll a2a = ep_alltoall(d_, T);
        const double before = s.communication_s;
        fixed(&s.communication_s, "communication", "EP dispatch + combine all-to-all", a2a.calls,
              net_->alltoall_s(a2a.bytes_per_gpu, a2a.group) + d_.eff.ep_alltoall_call_s,
              "network");
        if (p.two_batch_overlap) {
          // Two micro-batches of compute c and all-to-all m per layer, each layer's pipeline
          // drained at its end: 2·max(c, m) + min(c, m) per layer instead of 2c + 2m, i.e.
          // half of min(compute, all-to-all) of the iteration is hidden.
          const double m = s.communication_s - before;
          const double c = s.gemm_s + s.attention_s + s.moe_s;
          const double hidden = 0.5 * std::min(c, m);
          s.overlap_s -= hidden;
          if (ops_ != nullptr)
            ops_->push_back({"overlap", "EP all-to-all hidden by two-batch overlap", 1, 0, 0,
                             -hidden, "overlap"});
        }
      }
    }
    if (p.pp > 1) {
      const bool cross = p.gpus() > d_.scaleup_domain_gpus;
      fixed(&s.communication_s, "communication", "pipeline hand-off", mb,
            net_->p2p_s(Tm * h * red, cross), "network");
    }
  }

  // Offload transfers: host-resident weights streamed over the host link each pass.
  if (tokens > 0 && off.mode == Offload::Mode::kStream && host_layers > 0) {
    if (!(off.host_link.bw_bytes_per_s > 0))
      throw std::invalid_argument("estimate_step: offload needs a host link bandwidth");
    const double per_layer =
        (m_.layers > 0 ? 1.0 : 0.0) *
        (m_.attention_params_per_layer() / tp +
         (m_.is_moe() ? (static_cast<double>(m_.moe->experts) + m_.moe->shared_experts) *
                            m_.expert_params() * m_.moe_layers() / m_.layers / G
                      : 0.0) +
         m_.dense_mlp_params() * m_.dense_mlp_layers() / m_.layers / G) *
        d_.prec.weight_bytes;
    fixed(&s.offload_s, "offload", "stream host-resident layers over the host link", mb,
          off.host_link.latency_s + host_layers * per_layer / p.pp / off.host_link.bw_bytes_per_s,
          "network");
  }
  if (tokens > 0 && m_.is_moe() && off.experts_on_host > 0) {
    // Cold experts: the least popular `experts_on_host` share, popularity p_i ∝ i^-s.
    const MoeSpec& e = *m_.moe;
    const int E = e.experts;
    std::vector<double> pop(E);
    double sum = 0;
    for (int i = 0; i < E; ++i) sum += pop[i] = std::pow(i + 1.0, -off.expert_popularity_zipf);
    const int cold = static_cast<int>(std::lround(off.experts_on_host * E));
    double hit = 0, cold_copies = 0;
    for (int i = E - cold; i < E; ++i) {
      const double q = std::min(1.0, e.top_k * pop[i] / sum);
      hit += 1.0 - std::pow(1.0 - q, Tm);
      cold_copies += Tm * q;
    }
    const double bytes = hit * m_.expert_params() * d_.prec.weight_bytes / G;
    if (off.mode == Offload::Mode::kStream) {
      if (!(off.host_link.bw_bytes_per_s > 0))
        throw std::invalid_argument("estimate_step: offload needs a host link bandwidth");
      fixed(&s.offload_s, "offload", "stream cold experts over the host link",
            static_cast<double>(m_.moe_layers()),
            off.host_link.latency_s + bytes / off.host_link.bw_bytes_per_s, "network");
    } else {
      const Unit hu = host_unit(d_);
      if (!(hu.gemm_peak > 0 && hu.bw_peak > 0))
        throw std::invalid_argument("estimate_step: host_compute offload needs host rates");
      op(&s.offload_s, "offload", "cold experts on the host", static_cast<double>(m_.moe_layers()),
         2.0 * cold_copies * 3.0 * m_.hidden * e.expert_ffn / G, bytes, Kind::kOther, hu);
    }
  }

  // Overheads: scheduler time, kernel launches (one graph for decode-only iterations) and a
  // dataflow part's latency per operator.
  fixed(&s.overhead_s, "overhead", "scheduler (iteration overhead)", 1, d_.eff.iteration_overhead_s,
        "fixed");
  fixed(&s.overhead_s, "overhead", "per-sequence CPU work (sampling, detokenisation)",
        static_cast<double>(b.logits_tokens), d_.eff.per_sequence_overhead_s, "fixed");
  if (d_.eff.kernel_launch_s > 0 || d_.eff.operator_latency_s > 0) {
    // Each attention-DP rank captures and replays graphs of its own batch.
    const bool graph_fits =
        d_.eff.cuda_graph_max_batch == 0 ||
        static_cast<double>(b.decode_seqs) / D <= static_cast<double>(d_.eff.cuda_graph_max_batch);
    const bool graph = d_.eff.cuda_graphs && b.prefill_tokens == 0 && graph_fits;
    // Kernels a layer: 9, an MoE layer's router, top-k, sort and weighted sum 4 more (its
    // grouped GEMMs and activation stand where a dense MLP's three are), 2 all-reduces with
    // tensor parallelism; plus the embedding and the LM head. A graph replay is one launch.
    const double per_layer = 9.0 + (m_.is_moe() ? 4.0 : 0.0) + (G > 1 ? 2.0 : 0.0);
    const double eager_kernels = (per_layer * m_.layers / p.pp + 2.0) * mb;
    const double launches = graph ? mb : eager_kernels;
    fixed(&s.overhead_s, "overhead", "operator latency (device-side)", eager_kernels,
          d_.eff.operator_latency_s, "fixed");
    if (graph) {
      fixed(&s.overhead_s, "overhead", "CUDA graph launch", launches, d_.eff.kernel_launch_s,
            "fixed");
    } else {
      // Launches are asynchronous: the CPU queues kernels while the GPU runs earlier ones, so
      // only the launch time beyond the GPU's work shows. The GPU work counted is all but
      // the decode attention over the context, which keeps a decode-only iteration's time
      // affine in its context (the fast path's property); that attention is then taken to
      // hide no launches, an upper bound on the launch time that shows.
      const double gpu_work = s.gemm_s + s.attention_s - decode_ctx_attention_s_ + s.moe_s +
                              s.communication_s + s.offload_s + s.overlap_s;
      const double shown = launches * d_.eff.kernel_launch_s - gpu_work;
      if (shown > 0)
        fixed(&s.overhead_s, "overhead", "kernel launches not hidden by GPU work", launches,
              shown / launches, "fixed");
    }
  }
  return s;
}

}  // namespace

void Deployment::bind_calibration(std::shared_ptr<const CalibrationSet> set) {
  calibration = std::move(set);
  for (auto& k : calib_rows) k[0] = k[1] = k[2] = nullptr;
  if (!calibration || !gpu) return;
  const std::string gemm_dtype = calib_gemm_dtype(*gpu, prec.math);
  const CalibOp ops[3] = {CalibOp::kGemm, CalibOp::kAttnPrefill, CalibOp::kAttnDecode};
  for (int k = 0; k < 3; ++k) {
    const std::string dtype = k == 0 ? gemm_dtype : "bf16";
    if (dtype.empty()) continue;
    for (int regime = 0; regime < 2; ++regime) {
      const bool cb = regime == 1;
      calib_rows[k][regime] = calibration->rows(gpu->id, ops[k], dtype, cb);
      // A compute-bound row is a fraction of the dense tensor rate, which the twin shares
      // (checked when the catalog loads); memory-bound rows depend on the memory, which
      // it does not.
      if (cb && calib_rows[k][regime] == nullptr && !gpu->compute_twin.empty())
        calib_rows[k][regime] = calibration->rows(gpu->compute_twin, ops[k], dtype, cb);
    }
    // Far-from-ridge rows come from the same table as the compute-bound slot above.
    const bool own = calibration->rows(gpu->id, ops[k], dtype, true) != nullptr;
    calib_rows[k][2] = calibration->rows_far(own ? gpu->id : gpu->compute_twin, ops[k], dtype);
  }
}

bool Deployment::uses_table(const CalibrationTable& table) const {
  if (!calibration) return false;
  for (const auto& r : table.rows) {
    const auto* rows = calibration->rows(table.gpu, r.op, r.dtype, r.compute_bound);
    for (const auto& slot : calib_rows)
      if (rows != nullptr && (slot[0] == rows || slot[1] == rows)) return true;
  }
  return false;
}

void apply_engine(const EngineSpec& engine, Efficiency* eff) {
  eff->iteration_overhead_s = engine.iteration_overhead_s;
  eff->per_sequence_overhead_s = engine.per_sequence_overhead_s;
  eff->kernel_launch_s = engine.kernel_launch_s;
  eff->cuda_graph_max_batch = engine.cuda_graph_max_batch;
  eff->kernel_efficiency = engine.kernel_efficiency;
  eff->compute_efficiency = engine.compute_efficiency;
  eff->moe_half_tokens = engine.moe_half_tokens;
  eff->moe_half_expert_bytes = engine.moe_half_expert_mb * 1e6;
  eff->moe_efficiency = engine.moe_efficiency;
  eff->moe_compute_efficiency = engine.moe_compute_efficiency;
  eff->moe_imbalance = engine.moe_imbalance;
  eff->mla_efficiency = engine.mla_efficiency;
  eff->quant_bandwidth = engine.quant_bandwidth;
  eff->fp16_accumulate = engine.fp16_accumulate;
  eff->dequant_gemm_min_tokens = engine.dequant_gemm_min_tokens;
  eff->matvec_sm_bandwidth = engine.matvec_sm_bandwidth;
  eff->pipeline_sequential = engine.pipeline_sequential;
  eff->ep_alltoall_call_s = engine.ep_alltoall_call_s;
}

Efficiency catalog_efficiency(const GpuSpec& gpu) {
  Efficiency e;
  e.compute = gpu.compute_efficiency;
  e.memory = gpu.memory_efficiency;
  e.iteration_overhead_s = 0;
  e.allreduce_latency_s = gpu.scaleup_latency_s;
  e.link_bw_bytes_per_s = gpu.scaleup_bw_bytes_per_s;
  return e;
}

Deployment make_deployment(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                           const Precision& prec, const Efficiency& eff) {
  Deployment d;
  d.model = std::make_shared<const ModelSpec>(model);
  d.gpu = std::make_shared<const GpuSpec>(gpu);
  d.par = par;
  d.prec = prec;
  d.eff = eff;
  d.scaleup_domain_gpus = std::max(8, par.gpus());
  return d;
}

EpAllToAll ep_alltoall(const Deployment& d, double tokens) {
  EpAllToAll out;
  const ModelSpec& m = *d.model;
  const Parallelism& p = d.par;
  const int G = p.gpus_per_stage();
  // Attention TP holds every token on every rank: its EP MoE all-reduces instead.
  if (!p.expert_parallel || !m.is_moe() || G <= 1 || p.dp_attention <= 1 || m.moe_layers() == 0)
    return out;
  // Per micro-batch (pp of them), each GPU dispatches its Tm/G tokens' top-k activations
  // and gets them back combined: 2 all-to-alls per MoE layer.
  const double Tm = tokens / micro_batches(d);
  out.calls = 2.0 * m.moe_layers();
  out.bytes_per_gpu = Tm / G * m.moe->top_k * m.hidden * d.prec.act_bytes;
  out.group = {G, std::min(G, std::max(1, d.scaleup_domain_gpus))};
  return out;
}

bool ep_alltoall_leaves_domain(const Deployment& d) {
  const EpAllToAll a = ep_alltoall(d, 1.0);
  return a.calls > 0 && a.group.size > a.group.per_domain;
}

StepBreakdown estimate_step(const Deployment& d, const BatchShape& batch) {
  return Calc(d, nullptr).run(batch);
}

StepBreakdown estimate_step(const Deployment& d, const BatchShape& batch, StepCache* cache) {
  return Calc(d, nullptr, cache).run(batch);
}

StepCache::TokenPart* StepCache::part(int64_t tokens) {
  if (tokens < 0 || tokens > kMaxTokens) return nullptr;
  const auto i = static_cast<size_t>(tokens);
  if (i >= parts_.size()) parts_.resize(std::max(i + 1, parts_.size() * 2));
  return &parts_[i];
}

std::vector<OpCost> explain_step(const Deployment& d, const BatchShape& batch) {
  std::vector<OpCost> ops;
  Calc(d, &ops).run(batch);
  return ops;
}

StepBreakdown estimate_step(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                            const Precision& prec, const Efficiency& eff, const BatchShape& batch) {
  return estimate_step(make_deployment(model, par, gpu, prec, eff), batch);
}

DecodeAffine decode_affine(const Deployment& d, int64_t n) {
  BatchShape b;
  b.decode_seqs = n;
  b.logits_tokens = n;
  DecodeAffine a;
  a.fixed_s = estimate_step(d, b).total_s();
  // One context token and nothing else: decode attention only (no tokens means no GEMMs,
  // communication or transfers), minus the per-iteration overhead. The same arithmetic
  // estimate_step multiplies the context by, so the two agree up to rounding; it does not
  // depend on n.
  BatchShape one;
  one.decode_ctx_tokens = 1;
  const StepBreakdown s = estimate_step(d, one);
  a.per_ctx_token_s = s.total_s() - s.overhead_s;
  return a;
}

DecodeAffine decode_affine(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                           const Precision& prec, const Efficiency& eff, int64_t n) {
  return decode_affine(make_deployment(model, par, gpu, prec, eff), n);
}

// ---- multi-LoRA ------------------------------------------------------------------------------

namespace {
// Σ(in + out) over the adapted projections of one layer.
double lora_dims_per_layer(const ModelSpec& m) {
  const double h = m.hidden;
  const double q = static_cast<double>(m.heads) * m.head_dim,
               kv = static_cast<double>(m.kv_heads) * m.head_dim;
  double dims = (h + q) + 2 * (h + kv) + (q + h);                       // q, k, v, o
  if (!m.is_moe() && m.ffn > 0) dims += 2 * (h + m.ffn) + (m.ffn + h);  // gate, up, down
  return dims;
}
}  // namespace

double lora_adapter_bytes(const ModelSpec& m, int rank, double weight_bytes) {
  return static_cast<double>(rank) * lora_dims_per_layer(m) * m.layers * weight_bytes;
}

double lora_step_s(const Deployment& d, double rows, double adapters, int rank) {
  if (rows <= 0 || rank <= 0) return 0.0;
  const ModelSpec& m = *d.model;
  const double tp = d.par.tp;
  const double flops = 2.0 * rows * rank * lora_dims_per_layer(m) * m.layers / tp;
  const double bytes = adapters * lora_adapter_bytes(m, rank, d.prec.weight_bytes) / tp +
                       rows * 2.0 * rank * m.layers * 7 * d.prec.act_bytes;
  return std::max(flops / (d.gpu->bf16_flops_per_s * d.eff.compute),
                  bytes / (d.gpu->memory_bw_bytes_per_s * d.eff.memory));
}

// ---- memory ---------------------------------------------------------------------------------

namespace {

// Rows of logits materialised at once: vLLM computes logits only for sequences that sample,
// at most max_num_seqs of them, 256 by default.
constexpr double kMaxLogitsRows = 256;

struct Fit {
  MemoryFit f;
  int64_t per_group_blocks = 0;
};

// Weight bytes per GPU before offload (see fit_memory's formula).
double weights_per_gpu(const ModelSpec& m, const Parallelism& p, double wb) {
  const int tp = p.tp, G = p.gpus_per_stage();
  double w = m.layers * (m.attention_params_per_layer() / tp + 2.0 * m.hidden) +
             m.dense_mlp_layers() * m.dense_mlp_params() / G + m.embedding_params() / tp +
             m.hidden;  // final norm
  if (m.moe)
    w += m.moe_layers() *
         (static_cast<double>(m.hidden) * m.moe->experts +
          (static_cast<double>(m.moe->experts) + p.redundant_experts + m.moe->shared_experts) *
              m.expert_params()) /
         G;
  return w / p.pp * wb;
}

Fit compute_fit(const Deployment& d, double utilization, double reserve_bytes,
                int64_t max_batched_tokens, int block_tokens) {
  const ModelSpec& m = *d.model;
  const Parallelism& p = d.par;
  const int tp = p.tp, G = p.gpus_per_stage(), D = p.dp_attention;
  const Precision& prec = d.prec;
  Fit out;
  MemoryFit& f = out.f;
  f.usable_bytes = d.gpu->memory_bytes * utilization;
  const double all = weights_per_gpu(m, p, prec.weight_bytes);
  double host = 0;
  if (d.offload.layers_on_host > 0)
    host += all * std::min(1.0, static_cast<double>(d.offload.layers_on_host) / m.layers);
  if (m.moe && d.offload.experts_on_host > 0)
    host += static_cast<double>(std::lround(d.offload.experts_on_host * m.moe->experts)) *
            m.expert_params() * m.moe_layers() / G / p.pp * prec.weight_bytes;
  f.host_weight_bytes = std::min(host, all);
  f.weight_bytes = all - f.host_weight_bytes + d.extra_weight_bytes_per_gpu;

  const double t = static_cast<double>(max_batched_tokens);
  const double qh = static_cast<double>(m.heads) / tp;
  const double kvh = std::max(static_cast<double>(m.kv_heads) / tp, 1.0);
  const double attn_width = 2.0 * m.hidden + (qh + 2.0 * kvh) * m.head_dim + qh * m.head_dim;
  double mlp_width = (m.gated_mlp ? 3.0 : 2.0) * m.ffn / G;
  if (m.moe)
    mlp_width =
        std::max(mlp_width, 3.0 * m.moe->top_k * d.eff.moe_imbalance * m.moe->expert_ffn / G);
  f.activation_bytes = (t / D * attn_width + t * mlp_width) * prec.act_bytes +
                       std::min(t / D, kMaxLogitsRows) * m.vocab / tp * 4.0;
  f.reserve_bytes = reserve_bytes;
  f.kv_bytes = f.usable_bytes - f.weight_bytes - f.activation_bytes - f.reserve_bytes;
  // Per GPU: the layers of its stage; GQA heads split by tp, the MLA latent whole.
  const double per_layer = m.mla ? m.kv_elements_per_token_per_layer() : 2.0 * kvh * m.head_dim;
  f.kv_bytes_per_token =
      static_cast<double>(m.layers - m.sliding_window_layers) / p.pp * per_layer * prec.kv_bytes +
      d.extra_kv_bytes_per_token_per_gpu;
  const double block_bytes = block_tokens * f.kv_bytes_per_token;
  out.per_group_blocks = f.kv_bytes > 0 && block_bytes > 0
                             ? static_cast<int64_t>(std::floor(f.kv_bytes / block_bytes))
                             : 0;
  f.kv_blocks = out.per_group_blocks * D;
  return out;
}

bool fits(const Fit& f, int block_tokens, int64_t min_kv_tokens) {
  return f.per_group_blocks * block_tokens >= min_kv_tokens;
}

std::string id_of(const std::string& id, const std::string& name) { return id.empty() ? name : id; }

}  // namespace

MemoryFit fit_memory(const Deployment& d, double memory_utilization, double reserve_bytes,
                     int64_t max_batched_tokens, int block_tokens, int64_t min_kv_tokens) {
  const ModelSpec& model = *d.model;
  const Parallelism& par = d.par;
  if (par.tp < 1 || par.pp < 1 || par.dp_attention < 1)
    throw std::invalid_argument("fit_memory: tp, pp and dp_attention must be >= 1");
  if (block_tokens < 1) throw std::invalid_argument("fit_memory: block_tokens must be >= 1");
  const std::string model_id = id_of(model.id, model.name), gpu_id = id_of(d.gpu->id, d.gpu->name);
  if (model.heads % par.tp != 0) {
    std::string ok;
    for (int t = 1; t <= model.heads; t *= 2)
      if (model.heads % t == 0) ok += (ok.empty() ? "" : ", ") + std::to_string(t);
    throw InputError("tp " + std::to_string(par.tp) + " does not divide the " +
                         std::to_string(model.heads) + " attention heads of " + model_id,
                     "use tp: " + ok);
  }
  if (par.pp > model.layers)
    throw InputError("pp " + std::to_string(par.pp) + " is more than the " +
                         std::to_string(model.layers) + " layers of " + model_id,
                     "use pp <= " + std::to_string(model.layers));

  const Fit f = compute_fit(d, memory_utilization, reserve_bytes, max_batched_tokens, block_tokens);
  if (fits(f, block_tokens, min_kv_tokens)) return f.f;

  // What it needs: everything above plus KV for min_kv_tokens, rounded up to whole blocks.
  using units::Dim;
  using units::format;
  const int64_t need_blocks = (min_kv_tokens + block_tokens - 1) / block_tokens;
  const double kv_need = static_cast<double>(need_blocks * block_tokens) * f.f.kv_bytes_per_token;
  const double need = f.f.weight_bytes + f.f.activation_bytes + f.f.reserve_bytes + kv_need;
  const double short_by = need - f.f.usable_bytes;

  // What would fit instead, each checked with the same budget, so the hint never suggests
  // a miss: a larger tp (dividing the heads, within the scale-up domain), more pipeline
  // stages, FP8 weights, FP8 KV, fewer batched tokens.
  auto fits_with = [&](const Deployment& alt, int64_t tokens) {
    return fits(compute_fit(alt, memory_utilization, reserve_bytes, tokens, block_tokens),
                block_tokens, min_kv_tokens);
  };
  std::vector<std::string> options;
  for (int t = par.tp * 2; t <= 64 && t <= model.heads; t *= 2) {
    Deployment alt = d;
    alt.par.tp = t;
    if (model.heads % t == 0 && fits_with(alt, max_batched_tokens)) {
      options.push_back("tp: " + std::to_string(t) + " or more");
      break;
    }
  }
  for (int s = par.pp * 2; s <= 16 && s <= model.layers; s *= 2) {
    Deployment alt = d;
    alt.par.pp = s;
    if (fits_with(alt, max_batched_tokens)) {
      options.push_back("pp: " + std::to_string(s));
      break;
    }
  }
  if (d.prec.weight_bytes > 1) {
    Deployment alt = d;
    alt.prec.weight_bytes = 1;
    if (fits_with(alt, max_batched_tokens))
      options.push_back("FP8 weights (fit at tp " + std::to_string(par.tp) + ")");
  }
  if (d.prec.kv_bytes > 1) {
    Deployment alt = d;
    alt.prec.kv_bytes = 1;
    if (fits_with(alt, max_batched_tokens)) options.push_back("kv: fp8");
  }
  for (int64_t t = max_batched_tokens / 2; t >= 1; t /= 2) {
    if (fits_with(d, t)) {
      options.push_back("max_batched_tokens: " + std::to_string(t) + " or less");
      break;
    }
  }
  std::string hint;
  for (const auto& o : options) hint += (hint.empty() ? "try " : ", or ") + o;
  if (hint.empty())
    hint = "no tp up to 64 or pp up to 16 fits on " + gpu_id +
           " at this precision; try a GPU with more memory, FP8 weights or a smaller model";

  throw InputError(model_id + " does not fit on " + std::to_string(par.gpus()) + " x " + gpu_id +
                       ": needs " + format(need, Dim::kBytes) + " per GPU (weights " +
                       format(f.f.weight_bytes, Dim::kBytes) + ", activations " +
                       format(f.f.activation_bytes, Dim::kBytes) + ", reserve " +
                       format(f.f.reserve_bytes, Dim::kBytes) + ", KV cache for " +
                       std::to_string(min_kv_tokens) + " tokens " + format(kv_need, Dim::kBytes) +
                       "), " + format(f.f.usable_bytes, Dim::kBytes) + " usable (short by " +
                       format(short_by, Dim::kBytes) + ")",
                   hint);
}

MemoryFit fit_memory(const ModelSpec& model, const Parallelism& par, const GpuSpec& gpu,
                     const Precision& prec, double memory_utilization, double reserve_bytes,
                     int64_t max_batched_tokens, int block_tokens, int64_t min_kv_tokens) {
  return fit_memory(make_deployment(model, par, gpu, prec, Efficiency{}), memory_utilization,
                    reserve_bytes, max_batched_tokens, block_tokens, min_kv_tokens);
}

}  // namespace fleetsim::hw
