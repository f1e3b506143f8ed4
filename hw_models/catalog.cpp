#include "hw_models/catalog.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

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

double ModelSpec::gemm_params_per_layer() const {
  const double h = hidden, q = static_cast<double>(heads) * head_dim,
               kv = static_cast<double>(kv_heads) * head_dim, f = ffn;
  // Q and O: h·(H·d) each; K and V: h·(K·d) each; MLP: gate, up, down = 3·h·f (2·h·f ungated).
  const double attention = 2.0 * h * q + 2.0 * h * kv;
  const double mlp = (gated_mlp ? 3.0 : 2.0) * h * f;
  return attention + mlp;
}

double ModelSpec::derived_params() const {
  const double h = hidden, v = vocab;
  // Per layer: the GEMM weights plus two RMSNorm scale vectors (before attention, before MLP).
  const double per_layer = gemm_params_per_layer() + 2.0 * h;
  // Embedding table v·h, layers, final RMSNorm h, and an LM head v·h unless it is tied to
  // the embedding table.
  return v * h + layers * per_layer + h + (tied_embeddings ? 0.0 : v * h);
}

double ModelSpec::kv_bytes_per_token(double bytes_per_element) const {
  // K and V, each kv_heads·head_dim elements per layer.
  return 2.0 * layers * kv_heads * head_dim * bytes_per_element;
}

// ---- file loading --------------------------------------------------------------------------

namespace {

std::string stem_of(const std::string& path) { return fs::path(path).stem().string(); }

int to_int(int64_t v) { return static_cast<int>(v); }

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
  g.scaleup_bw_bytes_per_s = m.quantity("scaleup_bandwidth", Dim::kBandwidth, 1.0);
  g.tdp_w = m.quantity("tdp", Dim::kPower, 1.0);
  g.sources = m.str_list_or("sources", {});
  if (g.sources.empty())
    m.fail("sources", "missing required field",
           "cite the datasheet the numbers come from: 'sources: [\"...\"]'");

  // Measured figures, kept apart from the datasheet: efficiency = achieved / datasheet peak.
  yaml::Map e = m.map("empirical");
  const double gemm = e.quantity("dense_gemm_achieved", Dim::kFlopRate, 1.0);
  const double bw = e.quantity("memory_bandwidth_achieved", Dim::kBandwidth, 1.0);
  g.scaleup_latency_s = e.quantity("scaleup_latency", Dim::kTime, 0.0);
  g.efficiency_sources = e.str_list_or("sources", {});
  if (g.efficiency_sources.empty())
    e.fail("sources", "missing required field", "cite where the measured figures come from");
  if (gemm > g.bf16_flops_per_s)
    e.fail("dense_gemm_achieved",
           "achieved " + units::format(gemm, Dim::kFlopRate) + " exceeds the datasheet peak " +
               units::format(g.bf16_flops_per_s, Dim::kFlopRate),
           "give the measured dense BF16 GEMM rate (no 2:4 sparsity)");
  if (bw > g.memory_bw_bytes_per_s)
    e.fail("memory_bandwidth_achieved",
           "achieved " + units::format(bw, Dim::kBandwidth) + " exceeds the datasheet peak " +
               units::format(g.memory_bw_bytes_per_s, Dim::kBandwidth),
           "give the measured streaming bandwidth (e.g. STREAM triad)");
  g.compute_efficiency = gemm / g.bf16_flops_per_s;
  g.memory_efficiency = bw / g.memory_bw_bytes_per_s;
  e.finish();
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
  s.ffn = to_int(m.integer("ffn", 1, 1 << 22));
  s.vocab = to_int(m.integer("vocab", 1, 1 << 24));
  s.gated_mlp = m.boolean_or("gated_mlp", true);
  s.tied_embeddings = m.boolean_or("tied_embeddings", false);
  s.max_context_tokens = to_int(m.integer("max_context_tokens", 1, 1 << 30));
  s.published_params = m.number("published_params", 1.0, 1e15);
  s.sources = m.str_list_or("sources", {});
  if (s.sources.empty())
    m.fail("sources", "missing required field",
           "cite the config.json / model card / paper the shape comes from");
  if (s.heads % s.kv_heads != 0)
    m.fail("kv_heads",
           "heads (" + std::to_string(s.heads) + ") must be a multiple of kv_heads (" +
               std::to_string(s.kv_heads) + ")");
  // A typo in a shape field shows up as a parameter count far from the published one.
  const double derived = s.derived_params();
  if (std::fabs(derived - s.published_params) > 0.10 * s.published_params)
    m.fail("published_params",
           "the shape gives " + units::format_count(derived) +
               " parameters but published_params is " + units::format_count(s.published_params) +
               " (more than 10% apart)",
           "check layers, hidden, heads, kv_heads, head_dim, ffn and vocab against config.json");
  m.finish();
  return s;
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
  std::string suggestion = closest_match(id, ids);
  // "h100" is far from "h100-sxm" by edit distance but plainly a prefix of it.
  if (suggestion.empty() && !id.empty()) {
    for (const auto& k : ids)
      if (k.rfind(id, 0) == 0) {
        suggestion = k;
        break;
      }
  }
  throw InputError(
      "unknown " + what + " '" + id + "'" +
          (suggestion.empty() ? std::string() : " (did you mean '" + suggestion + "'?)"),
      "known " + what + "s: " + (list.empty() ? "(none)" : list) +
          "; add a file to the catalog to define another");
}

}  // namespace

Catalog Catalog::load(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw InputError("catalog directory not found",
                     "set FLEETSIM_CATALOG to the folder holding gpus/ and models/", dir);
  Catalog c;
  for (const auto& f : yaml_files(fs::path(dir) / "gpus")) {
    GpuSpec g = load_gpu_file(f);
    c.gpus_.emplace(g.id, std::move(g));
  }
  for (const auto& f : yaml_files(fs::path(dir) / "models")) {
    ModelSpec s = load_model_file(f);
    c.models_.emplace(s.id, std::move(s));
  }
  return c;
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
