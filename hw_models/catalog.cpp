#include "hw_models/catalog.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <tuple>

#include "hw_models/error.h"
#include "hw_models/units.h"
#include "hw_models/yaml_reader.h"

#ifndef FLEETSIM_DEFAULT_CATALOG
#define FLEETSIM_DEFAULT_CATALOG "hw_models/catalog"
#endif

namespace fleetsim::hw {

namespace fs = std::filesystem;
using units::Dim;

// ---- ModelSpec ----------------------------------------------------------------------------

double ModelSpec::attention_params_per_layer() const {
  const double h = hidden;
  if (mla) {
    // Q: with compression h→q_lora (+ its RMSNorm) → heads·(nope+rope); without, h→heads·(nope+rope).
    // KV: h→(kv_lora + rope) (the latent and the shared RoPE key), the latent's RMSNorm,
    // then kv_lora→heads·(nope + v). O: heads·v→h.
    const MlaSpec& a = *mla;
    const double qk = static_cast<double>(a.qk_nope_head_dim) + a.qk_rope_head_dim;
    const double q = a.q_lora_rank > 0
                         ? h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * heads * qk
                         : h * heads * qk;
    const double kv =
        h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
        static_cast<double>(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim);
    const double o = static_cast<double>(heads) * a.v_head_dim * h;
    return q + kv + o;
  }
  const double qd = static_cast<double>(heads) * head_dim,
               kvd = static_cast<double>(kv_heads) * head_dim;
  // Q and O: h·(H·d) each; K and V: h·(K·d) each; biases on Q, K, V (H·d + 2·K·d) and O (h).
  return 2.0 * h * qd + 2.0 * h * kvd + (attention_bias ? qd + 2.0 * kvd + h : 0.0);
}

double ModelSpec::dense_mlp_params() const {
  return (gated_mlp ? 3.0 : 2.0) * static_cast<double>(hidden) * ffn;
}

double ModelSpec::expert_params() const {
  return moe ? 3.0 * static_cast<double>(hidden) * moe->expert_ffn : 0.0;
}

double ModelSpec::embedding_params() const {
  return static_cast<double>(vocab) * hidden * (tied_embeddings ? 1.0 : 2.0);
}

namespace {
// Σ over layers of attention + MLP + two RMSNorm vectors, plus embeddings and the final norm;
// `experts_per_moe_layer` routed experts counted in each MoE layer (all, or top_k).
double params_with(const ModelSpec& s, double experts_per_moe_layer) {
  const double h = s.hidden;
  const double common = s.attention_params_per_layer() + 2.0 * h;
  double total =
      s.embedding_params() + h + s.layers * common + s.dense_mlp_layers() * s.dense_mlp_params();
  if (s.moe) {
    const double router = h * s.moe->experts;
    total += s.moe_layers() *
             (router + (experts_per_moe_layer + s.moe->shared_experts) * s.expert_params());
  }
  return total;
}
}  // namespace

double ModelSpec::derived_params() const { return params_with(*this, moe ? moe->experts : 0); }

double ModelSpec::derived_active_params() const {
  return params_with(*this, moe ? moe->top_k : 0) -
         (active_excludes_input_embedding ? static_cast<double>(vocab) * hidden : 0.0);
}

double ModelSpec::gemm_params_per_layer() const {
  return attention_params_per_layer() + dense_mlp_params();
}

double ModelSpec::kv_elements_per_token_per_layer() const {
  if (mla) return mla->latent_dim();
  return 2.0 * kv_heads * head_dim;  // K and V
}

double ModelSpec::kv_bytes_per_token(double bytes_per_element) const {
  // Sliding-window layers keep only their window per sequence; they are left out here
  // (hw_models/perf_model.h explains the approximation).
  return (layers - sliding_window_layers) * kv_elements_per_token_per_layer() * bytes_per_element;
}

// ---- file loading --------------------------------------------------------------------------

namespace {

std::string stem_of(const std::string& path) { return fs::path(path).stem().string(); }

int to_int(int64_t v) { return static_cast<int>(v); }

std::vector<std::string> required_sources(yaml::Map& m, const std::string& hint) {
  std::vector<std::string> s = m.str_list_or("sources", {});
  if (s.empty()) m.fail("sources", "missing required field", hint);
  return s;
}

}  // namespace

GpuSpec load_gpu_file(const std::string& path) {
  yaml::Map m = yaml::load_file(path);
  GpuSpec g;
  g.id = stem_of(path);
  g.name = m.str("name");
  g.vendor = m.str("vendor");
  // Minimums of one SI unit reject zero and negative values with the field named.
  g.memory_bytes = m.quantity("memory", Dim::kBytes, 1.0);
  g.memory_bw_bytes_per_s = m.quantity("memory_bandwidth", Dim::kBandwidth, 1.0);
  g.bf16_flops_per_s = m.quantity("bf16_dense", Dim::kFlopRate, 1.0);
  g.fp8_flops_per_s = m.quantity_or("fp8_dense", Dim::kFlopRate, 0.0, 1.0);
  g.int8_ops_per_s = m.quantity_or("int8_dense", Dim::kFlopRate, 0.0, 1.0);
  g.fp4_flops_per_s = m.quantity_or("fp4_dense", Dim::kFlopRate, 0.0, 1.0);
  g.fp16_acc16_flops_per_s = m.quantity_or("fp16_accumulate_dense", Dim::kFlopRate, 0.0, 1.0);
  g.sm_count = static_cast<int>(m.integer_or("sm_count", 1, 100000, 0));
  g.compute_twin = m.str_or("compute_twin", "");
  g.scaleup = m.str_or("scaleup", "");
  if (!g.scaleup.empty())
    g.scaleup_bw_bytes_per_s = m.quantity("scaleup_bandwidth", Dim::kBandwidth, 1.0);
  else if (m.has("scaleup_bandwidth"))
    m.fail("scaleup_bandwidth", "scaleup_bandwidth without scaleup",
           "name the fabric, e.g. 'scaleup: nvlink4', or drop the bandwidth");
  g.host_link = m.str("host_link");
  g.tdp_w = m.quantity("tdp", Dim::kPower, 1.0);
  g.idle_power_w = m.quantity_or("idle_power", Dim::kPower, 0.0, 1.0);
  g.price_usd = m.number_or("price_usd", 0.0, 1e9, 0.0);
  g.cloud_usd_per_gpu_hour = m.number_or("cloud_usd_per_gpu_hour", 0.0, 1e4, 0.0);
  g.sources = required_sources(m, "cite the datasheet the numbers come from: 'sources: [\"...\"]'");

  // Measured figures, kept apart from the datasheet: efficiency = achieved / datasheet peak.
  g.compute_efficiency = GpuSpec::kAssumedComputeEfficiency;
  g.memory_efficiency = GpuSpec::kAssumedMemoryEfficiency;
  bool measured_compute = false, measured_memory = false;
  if (auto e = m.map_opt("empirical")) {
    g.efficiency_sources = required_sources(*e, "cite where the measured figures come from");
    // A measured rate as a fraction of its datasheet peak (never above it).
    auto fraction = [&](const char* key, Dim dim, double peak, const char* hint, double* out) {
      if (!e->has(key)) return false;
      const double achieved = e->quantity(key, dim, 1.0);
      if (achieved > peak)
        e->fail(key,
                "achieved " + units::format(achieved, dim) + " exceeds the datasheet peak " +
                    units::format(peak, dim),
                hint);
      *out = achieved / peak;
      return true;
    };
    if (g.fp4_flops_per_s > 0)
      fraction("fp4_gemm_achieved", Dim::kFlopRate, g.fp4_flops_per_s,
               "give a measured dense FP4 GEMM rate on a real model shape",
               &g.fp4_compute_efficiency);
    else if (e->has("fp4_gemm_achieved"))
      e->fail("fp4_gemm_achieved", "the GPU has no fp4_dense rate", "drop it, or add fp4_dense");
    measured_compute =
        fraction("dense_gemm_achieved", Dim::kFlopRate, g.bf16_flops_per_s,
                 "give the measured dense BF16 GEMM rate (no 2:4 sparsity)", &g.compute_efficiency);
    measured_memory =
        fraction("memory_bandwidth_achieved", Dim::kBandwidth, g.memory_bw_bytes_per_s,
                 "give the measured streaming bandwidth (e.g. STREAM triad)", &g.memory_efficiency);
    g.scaleup_latency_s = e->quantity_or("scaleup_latency", Dim::kTime, 0.0, 0.0);
    e->finish();
  }
  g.efficiency_basis = measured_compute && measured_memory ? "measured"
                       : measured_compute                  ? "measured compute, assumed memory"
                       : measured_memory                   ? "assumed compute, measured memory"
                                                           : "assumed";
  m.finish();
  return g;
}

ModelSpec load_model_file(const std::string& path) {
  yaml::Map m = yaml::load_file(path);
  ModelSpec s;
  s.id = stem_of(path);
  s.name = m.str("name");
  s.layers = to_int(m.integer("layers", 1, 1000));
  s.hidden = to_int(m.integer("hidden", 1, 1 << 20));
  s.heads = to_int(m.integer("heads", 1, 4096));
  s.kv_heads = to_int(m.integer("kv_heads", 1, 4096));
  s.head_dim = to_int(m.integer("head_dim", 1, 4096));
  s.ffn = to_int(m.integer("ffn", 0, 1 << 22));
  s.vocab = to_int(m.integer("vocab", 1, 1 << 24));
  s.gated_mlp = m.boolean_or("gated_mlp", true);
  s.tied_embeddings = m.boolean_or("tied_embeddings", false);
  s.attention_bias = m.boolean_or("attention_bias", false);
  s.max_context_tokens = to_int(m.integer("max_context_tokens", 1, 1 << 30));
  if (auto a = m.map_opt("mla")) {
    MlaSpec x;
    x.q_lora_rank = to_int(a->integer("q_lora_rank", 0, 1 << 20));
    x.kv_lora_rank = to_int(a->integer("kv_lora_rank", 1, 1 << 20));
    x.qk_nope_head_dim = to_int(a->integer("qk_nope_head_dim", 1, 4096));
    x.qk_rope_head_dim = to_int(a->integer("qk_rope_head_dim", 0, 4096));
    x.v_head_dim = to_int(a->integer("v_head_dim", 1, 4096));
    a->finish();
    s.mla = x;
  }
  if (auto e = m.map_opt("moe")) {
    MoeSpec x;
    x.experts = to_int(e->integer("experts", 1, 1 << 16));
    x.top_k = to_int(e->integer("top_k", 1, x.experts));
    x.shared_experts = to_int(e->integer_or("shared_experts", 0, 1 << 10, 0));
    x.expert_ffn = to_int(e->integer("expert_ffn", 1, 1 << 22));
    x.dense_layers = to_int(e->integer_or("dense_layers", 0, s.layers, 0));
    // An expert cannot be chosen by more than every token: hot ≤ experts / top_k.
    x.hot_expert = e->number_or("hot_expert", 1.0, static_cast<double>(x.experts) / x.top_k, 1.0);
    e->finish();
    s.moe = x;
  }
  if (auto w = m.map_opt("sliding_window")) {
    s.sliding_window_tokens = to_int(w->integer("tokens", 1, 1 << 30));
    s.sliding_window_layers = to_int(w->integer("layers", 1, s.layers));
    w->finish();
  }
  if (auto c = m.map_opt("chunked_attention")) {
    s.attention_chunk_tokens = to_int(c->integer("tokens", 1, 1 << 30));
    s.chunked_attention_layers =
        to_int(c->integer("layers", 1, s.layers - s.sliding_window_layers));
    c->finish();
  }
  s.mtp_layers = to_int(m.integer_or("mtp_layers", 0, 64, 0));
  s.published_params = m.number("published_params", 1.0, 1e15);
  s.published_rounding = m.number_or("published_rounding", 0.0, 1e15, 0.0);
  s.active_excludes_input_embedding = m.boolean_or("active_excludes_input_embedding", false);
  if (s.moe)
    s.published_active_params = m.number("published_active_params", 1.0, 1e15);
  else if (m.has("published_active_params"))
    m.fail("published_active_params", "a dense model has no separate active count",
           "drop the field, or add a 'moe:' section");
  s.hf_repo = m.str_or("hf_repo", "");
  if (!s.hf_repo.empty() && (s.hf_repo.find('/') == std::string::npos ||
                             s.hf_repo.find_first_of(" \t\"'") != std::string::npos))
    m.fail("hf_repo", "expected a Hugging Face repository 'owner/name', got '" + s.hf_repo + "'",
           "e.g. meta-llama/Llama-3.1-8B-Instruct");
  s.sources = required_sources(m, "cite the config.json / model card / paper the shape comes from");
  if (s.heads % s.kv_heads != 0)
    m.fail("kv_heads", "heads (" + std::to_string(s.heads) + ") must be a multiple of kv_heads (" +
                           std::to_string(s.kv_heads) + ")");
  if (s.dense_mlp_layers() > 0 && s.ffn == 0)
    m.fail("ffn",
           "ffn is 0 but " + std::to_string(s.dense_mlp_layers()) + " layers have a dense MLP",
           "give the dense intermediate size, or set moe.dense_layers: 0");
  // A typo in a shape field shows up as a parameter count far from the published one.
  auto check = [&](const char* key, double derived, double published) {
    if (std::fabs(derived - published) > 0.10 * published)
      m.fail(key,
             "the shape gives " + units::format_count(derived) + " parameters but " + key + " is " +
                 units::format_count(published) + " (more than 10% apart)",
             "check layers, hidden, heads, kv_heads, head_dim, ffn, vocab and the moe/mla "
             "sections against config.json");
  };
  check("published_params", s.derived_params(), s.published_params);
  if (s.moe) check("published_active_params", s.derived_active_params(), s.published_active_params);
  m.finish();
  return s;
}

InterconnectSpec load_interconnect_file(const std::string& path) {
  yaml::Map m = yaml::load_file(path);
  InterconnectSpec l;
  l.id = stem_of(path);
  l.name = m.str("name");
  l.kind = m.choice("kind", {"scaleup", "host", "scaleout", "wan"});
  l.bw_bytes_per_s = m.quantity("bandwidth", Dim::kBandwidth, 1.0);
  l.latency_s = m.quantity("latency", Dim::kTime, 0.0);
  l.sources = required_sources(m, "cite the specification or measurement");
  m.finish();
  return l;
}

NodeSpec load_node_file(const std::string& path) {
  yaml::Map m = yaml::load_file(path);
  NodeSpec n;
  n.id = stem_of(path);
  n.name = m.str("name");
  n.gpu = m.str("gpu");
  n.gpus_per_node = to_int(m.integer("gpus_per_node", 1, 1024));
  n.scaleup_domain_gpus = to_int(m.integer_or("scaleup_domain_gpus", 1, 1 << 20, n.gpus_per_node));
  n.nics_per_node = to_int(m.integer("nics_per_node", 0, 1024));
  if (n.nics_per_node > 0)
    n.nic = m.str("nic");
  else
    n.nic = m.str_or("nic", "");
  n.host_memory_bytes = m.quantity("host_memory", Dim::kBytes, 1.0);
  n.host_memory_bw_bytes_per_s = m.quantity_or("host_memory_bandwidth", Dim::kBandwidth, 0.0, 1.0);
  n.host_flops_per_s = m.quantity_or("host_compute", Dim::kFlopRate, 0.0, 1.0);
  n.node_power_w = m.quantity("node_power", Dim::kPower, 1.0);
  n.nodes_per_rack = to_int(m.integer("nodes_per_rack", 1, 1024));
  n.rack_power_w = m.quantity_or("rack_power", Dim::kPower, 0.0, 1.0);
  n.price_usd = m.number_or("price_usd", 0.0, 1e10, 0.0);
  n.sources = required_sources(m, "cite the system datasheet");
  m.finish();
  return n;
}

// ---- EngineSpec ----------------------------------------------------------------------------

namespace {
// Fit parameters: file key (under overhead: or kernels:), unit, bounds (SI).
struct FitParam {
  const char* name;
  double EngineSpec::*field;
  double lo, hi;
  const char* section;  // where it is written in the engine file
  const char* key;
  bool time;               // a duration (written in us)
  bool bandwidth = false;  // a byte rate (written in GB/s)
};
const FitParam kFitParams[] = {
    {"iteration_overhead", &EngineSpec::iteration_overhead_s, 0.0, 0.05, "overhead", "iteration",
     true},
    {"per_sequence_overhead", &EngineSpec::per_sequence_overhead_s, 0.0, 2e-4, "overhead",
     "per_sequence", true},
    {"kernel_launch", &EngineSpec::kernel_launch_s, 0.0, 5e-5, "overhead", "kernel_launch", true},
    {"kernel_efficiency", &EngineSpec::kernel_efficiency, 0.3, 1.2, "kernels", "efficiency", false},
    {"compute_efficiency", &EngineSpec::compute_efficiency, 0.2, 1.2, "kernels", "compute", false},
    {"moe_half_tokens", &EngineSpec::moe_half_tokens, 0.0, 512.0, "kernels", "moe_half_tokens",
     false},
    {"moe_half_expert_mb", &EngineSpec::moe_half_expert_mb, 0.0, 256.0, "kernels",
     "moe_half_expert_mb", false},
    // A grouped GEMM streams its experts' weights no faster than the dense GEMM tables'
    // kernels stream the same bytes: at most 1.
    {"moe_efficiency", &EngineSpec::moe_efficiency, 0.2, 1.0, "kernels", "moe_efficiency", false},
    {"moe_compute_efficiency", &EngineSpec::moe_compute_efficiency, 0.1, 1.2, "kernels",
     "moe_compute", false},
    {"moe_imbalance", &EngineSpec::moe_imbalance, 1.0, 3.0, "kernels", "moe_imbalance", false},
    {"mla_efficiency", &EngineSpec::mla_efficiency, 0.02, 1.2, "kernels", "mla_efficiency", false},
    {"quant_bandwidth", &EngineSpec::quant_bandwidth, 0.2, 1.0, "kernels", "quant_bandwidth",
     false},
    {"matvec_sm_bandwidth", &EngineSpec::matvec_sm_bandwidth, 2e9, 50e9, "kernels",
     "matvec_sm_bandwidth", false, true},
};
const FitParam& fit_param(const std::string& name) {
  for (const auto& p : kFitParams)
    if (name == p.name) return p;
  throw std::invalid_argument("unknown engine parameter '" + name + "'");
}
}  // namespace

const std::vector<std::string>& engine_fit_parameters() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& p : kFitParams) v.push_back(p.name);
    return v;
  }();
  return names;
}

double engine_parameter(const EngineSpec& e, const std::string& name) {
  return e.*(fit_param(name).field);
}

EngineParameterInfo engine_parameter_info(const std::string& name) {
  const FitParam& p = fit_param(name);
  return {p.lo, p.hi, p.section, p.key, p.time, p.bandwidth};
}

void set_engine_parameter(EngineSpec& e, const std::string& name, double value) {
  const FitParam& p = fit_param(name);
  e.*(p.field) = std::clamp(value, p.lo, p.hi);
}

EngineSpec load_engine_file(const std::string& path) {
  yaml::Map m = yaml::load_file(path);
  EngineSpec e;
  e.id = stem_of(path);
  e.name = m.str("name");
  if (auto s = m.map_opt("scheduler")) {
    e.chunked_prefill = s->boolean_or("chunked_prefill", e.chunked_prefill);
    e.split_prompts = s->boolean_or("split_prompts", e.split_prompts);
    e.split_long_prompts = s->boolean_or("split_long_prompts", e.split_long_prompts);
    e.max_batched_tokens = s->integer_or("max_batched_tokens", 1, 1 << 24, e.max_batched_tokens);
    e.max_num_seqs = s->integer_or("max_num_seqs", 1, 65536, e.max_num_seqs);
    e.limits_per_dp_rank = s->boolean_or("limits_per_dp_rank", e.limits_per_dp_rank);
    e.reserve_at_admission = s->choice_or("admission", {"paged", "reserve"}, "paged") == "reserve";
    e.pipeline_sequential =
        s->choice_or("pipeline", {"overlapped", "sequential"}, "overlapped") == "sequential";
    s->finish();
  }
  if (auto o = m.map_opt("overhead")) {
    e.iteration_overhead_s = o->quantity_or("iteration", Dim::kTime, 0.0);
    e.per_sequence_overhead_s = o->quantity_or("per_sequence", Dim::kTime, 0.0);
    e.cuda_graph_max_batch = o->integer_or("cuda_graph_max_batch", 0, 1 << 20, 0);
    e.kernel_launch_s = o->quantity_or("kernel_launch", Dim::kTime, 0.0);
    e.ep_alltoall_call_s = o->quantity_or("ep_alltoall_call", Dim::kTime, 0.0);
    o->finish();
  }
  if (auto k = m.map_opt("kernels")) {
    e.kernel_efficiency = k->number_or("efficiency", 0.2, 1.5, 1.0);
    e.compute_efficiency = k->number_or("compute", 0.2, 1.5, 1.0);
    e.moe_half_tokens = k->number_or("moe_half_tokens", 0.0, 1024.0, 0.0);
    e.moe_half_expert_mb = k->number_or("moe_half_expert_mb", 0.0, 1024.0, 0.0);
    e.moe_efficiency = k->number_or("moe_efficiency", 0.2, 1.5, 1.0);
    e.moe_compute_efficiency = k->number_or("moe_compute", 0.1, 1.5, 1.0);
    e.moe_imbalance = k->number_or("moe_imbalance", 1.0, 4.0, 1.0);
    e.mla_efficiency = k->number_or("mla_efficiency", 0.02, 1.5, 1.0);
    e.quant_bandwidth = k->number_or("quant_bandwidth", 0.1, 1.0, 1.0);
    e.fp16_accumulate = k->boolean_or("fp16_accumulate", false);
    e.dequant_gemm_min_tokens = k->integer_or("dequant_gemm_min_tokens", 0, 1 << 20, 0);
    e.matvec_sm_bandwidth = k->quantity_or("matvec_sm_bandwidth", Dim::kBandwidth, 0.0);
    k->finish();
  }
  e.rocm_variant = m.str_or("rocm_variant", "");
  e.metal_variant = m.str_or("metal_variant", "");
  e.fit = m.str_list_or("fit", {});
  if (e.fit.size() > 4)
    m.fail("fit", "at most 4 fitted parameters per engine, got " + std::to_string(e.fit.size()),
           "fit the few parameters the training cases can pin down");
  for (const auto& f : e.fit)
    if (std::find(engine_fit_parameters().begin(), engine_fit_parameters().end(), f) ==
        engine_fit_parameters().end()) {
      std::string list;
      for (const auto& n : engine_fit_parameters()) list += (list.empty() ? "" : ", ") + n;
      m.fail("fit", "unknown parameter '" + f + "'", "fit parameters: " + list);
    }
  if (m.has("fitted")) {
    const YAML::Node n = m.node()["fitted"];
    e.fitted = YAML::Dump(n);
    if (n.IsMap() && n["before"] && n["before"].IsMap())
      for (const auto& kv : n["before"]) {
        const std::string k = kv.first.as<std::string>();
        const auto& names = engine_fit_parameters();
        if (std::find(names.begin(), names.end(), k) == names.end())
          m.fail("fitted", "fitted.before names an unknown parameter '" + k + "'",
                 "rerun 'fleetsim calibrate fit --write'");
        try {
          e.priors[k] = kv.second.as<double>();
        } catch (const YAML::Exception&) {
          m.fail("fitted", "fitted.before." + k + " is not a number",
                 "rerun 'fleetsim calibrate fit --write'");
        }
      }
  }
  e.sources = required_sources(m, "cite where the overheads and scheduler defaults come from");
  m.finish();
  return e;
}

// ---- Catalog -------------------------------------------------------------------------------

namespace {

std::vector<std::string> yaml_files(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());  // deterministic order, whatever the file system does
  return out;
}

template <class T>
const T& find_or_fail(const std::map<std::string, T>& items, const std::string& id,
                      const std::string& what) {
  auto it = items.find(id);
  if (it != items.end()) return it->second;
  std::vector<std::string> ids;
  std::string list;
  for (const auto& [k, v] : items) {
    ids.push_back(k);
    list += (list.empty() ? "" : ", ") + k;
  }
  // "h100" is far from "h100-sxm" by edit distance but plainly a prefix of it (and of
  // "h100-pcie"): prefix matches come first, then the closest by edit distance.
  std::string suggestion;
  for (const auto& k : ids)
    if (!id.empty() && k.rfind(id, 0) == 0) suggestion += (suggestion.empty() ? "'" : "' or '") + k;
  if (suggestion.empty()) {
    const std::string close = closest_match(id, ids);
    if (!close.empty()) suggestion = "'" + close;
  }
  if (!suggestion.empty()) suggestion += "'";
  throw InputError("unknown " + what + " '" + id + "'" +
                       (suggestion.empty() ? std::string() : " (did you mean " + suggestion + "?)"),
                   "known " + what + "s: " + (list.empty() ? "(none)" : list) +
                       "; add a file to the catalog to define another");
}

}  // namespace

Catalog Catalog::load(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw InputError("catalog directory not found",
                     "set FLEETSIM_CATALOG to the folder holding gpus/ and models/", dir);
  // A folder with none of the catalog's subfolders (a wrong --catalog, e.g. /etc) would load
  // as an empty catalog and fail later with "unknown gpu": say what a catalog holds.
  std::size_t found = 0;
  for (const char* sub : {"gpus", "models", "nodes", "interconnects", "engines"})
    found += yaml_files(fs::path(dir) / sub).size();
  if (found == 0)
    throw InputError(
        "not a catalog folder: it has no gpus/, models/, nodes/, interconnects/ or "
        "engines/ subfolder with .yaml files",
        "give the folder that holds gpus/ and models/ (the bundled one is "
        "hw_models/catalog), or unset FLEETSIM_CATALOG",
        dir);
  Catalog c;
  c.dir_ = dir;
  for (const auto& f : yaml_files(fs::path(dir) / "interconnects")) {
    InterconnectSpec l = load_interconnect_file(f);
    c.links_.emplace(l.id, std::move(l));
  }
  // A reference to another catalog item, checked where it is written.
  auto check_ref = [&](const std::string& file, const std::string& key, const std::string& id,
                       const char* what, auto lookup) {
    try {
      lookup(id);
    } catch (const InputError& e) {
      yaml::Map m = yaml::load_file(file);
      (void)m.str(key);
      throw m.locate(key, InputError(e.message() + " in field " + what, e.hint()));
    }
  };
  auto link = [&](const std::string& id) { return c.interconnect(id); };
  for (const auto& f : yaml_files(fs::path(dir) / "gpus")) {
    GpuSpec g = load_gpu_file(f);
    check_ref(f, "host_link", g.host_link, "host_link", link);
    const InterconnectSpec& host = c.interconnect(g.host_link);
    if (!g.scaleup.empty()) {
      check_ref(f, "scaleup", g.scaleup, "scaleup", link);
      if (g.scaleup_latency_s == 0) g.scaleup_latency_s = c.interconnect(g.scaleup).latency_s;
    } else {
      // No GPU fabric: peer-to-peer traffic crosses the host link (PCIe).
      g.scaleup_bw_bytes_per_s = host.bw_bytes_per_s;
      if (g.scaleup_latency_s == 0) g.scaleup_latency_s = host.latency_s;
    }
    c.gpus_.emplace(g.id, std::move(g));
  }
  // A compute twin must exist and have the same dense tensor rates: only then do its
  // compute-bound calibration rows (fractions of those rates) describe this GPU.
  for (const auto& [id, g] : c.gpus_) {
    if (g.compute_twin.empty()) continue;
    const std::string file = (fs::path(dir) / "gpus" / (id + ".yaml")).string();
    check_ref(file, "compute_twin", g.compute_twin, "compute_twin",
              [&](const std::string& v) { return c.gpu(v); });
    const GpuSpec& t = c.gpu(g.compute_twin);
    std::string why;
    if (t.id == id) why = "a GPU cannot be its own compute twin";
    for (auto [name, a, b] : {std::tuple{"bf16_dense", g.bf16_flops_per_s, t.bf16_flops_per_s},
                              std::tuple{"fp8_dense", g.fp8_flops_per_s, t.fp8_flops_per_s},
                              std::tuple{"fp4_dense", g.fp4_flops_per_s, t.fp4_flops_per_s}})
      if (why.empty() && std::abs(a - b) > 1e-9 * std::max(a, b))
        why = std::string(name) + " " + units::format(a, Dim::kFlopRate) + " differs from " + t.id +
              "'s " + units::format(b, Dim::kFlopRate);
    if (!why.empty()) {
      yaml::Map m = yaml::load_file(file);
      (void)m.str("compute_twin");
      throw m.locate("compute_twin",
                     InputError("compute_twin " + g.compute_twin + ": " + why,
                                "a compute twin has the same die, SM count and clocks, so the "
                                "same dense tensor rates; drop compute_twin otherwise"));
    }
  }
  for (const auto& f : yaml_files(fs::path(dir) / "models")) {
    ModelSpec s = load_model_file(f);
    c.models_.emplace(s.id, std::move(s));
  }
  for (const auto& f : yaml_files(fs::path(dir) / "engines")) {
    EngineSpec e = load_engine_file(f);
    c.engines_.emplace(e.id, std::move(e));
  }
  for (const auto& [id, e] : c.engines_) {
    const std::string file = (fs::path(dir) / "engines" / (id + ".yaml")).string();
    const auto engine = [&](const std::string& v) { return c.engine(v); };
    if (!e.rocm_variant.empty())
      check_ref(file, "rocm_variant", e.rocm_variant, "rocm_variant", engine);
    if (!e.metal_variant.empty())
      check_ref(file, "metal_variant", e.metal_variant, "metal_variant", engine);
  }
  for (const auto& f : yaml_files(fs::path(dir) / "nodes")) {
    NodeSpec n = load_node_file(f);
    check_ref(f, "gpu", n.gpu, "gpu", [&](const std::string& id) { return c.gpu(id); });
    if (!n.nic.empty()) check_ref(f, "nic", n.nic, "nic", link);
    c.nodes_.emplace(n.id, std::move(n));
  }
  return c;
}

const NodeSpec* Catalog::default_node_for(const std::string& gpu_id) const {
  for (const auto& [id, n] : nodes_)
    if (n.gpu == gpu_id) return &n;
  return nullptr;
}

const EngineSpec& Catalog::engine(const std::string& id) const {
  return find_or_fail(engines_, id, "engine");
}

const NodeSpec& Catalog::node(const std::string& id) const {
  return find_or_fail(nodes_, id, "node");
}

const InterconnectSpec& Catalog::interconnect(const std::string& id) const {
  return find_or_fail(links_, id, "interconnect");
}

std::string Catalog::default_dir() {
  const char* env = std::getenv("FLEETSIM_CATALOG");
  if (env != nullptr && *env != '\0') return env;
  return FLEETSIM_DEFAULT_CATALOG;
}

const GpuSpec& Catalog::gpu(const std::string& id) const { return find_or_fail(gpus_, id, "GPU"); }

const ModelSpec& Catalog::model(const std::string& id) const {
  return find_or_fail(models_, id, "model");
}

}  // namespace fleetsim::hw
