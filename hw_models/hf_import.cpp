#include "hw_models/hf_import.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hw_models/error.h"
#include "hw_models/units.h"

namespace fleetsim::hw {

namespace {

using nlohmann::json;

// Model families whose MLP has two matrices (up, down) instead of SwiGLU's three.
bool ungated_family(const std::string& model_type) {
  for (const char* t : {"gpt2", "gpt_neox", "opt", "falcon", "gpt_bigcode", "bloom", "phi"})
    if (model_type == t) return true;
  return false;
}

// A double-quoted scalar: a JSON string is one in YAML, with JSON's escapes (quotes,
// backslashes and control characters).
std::string yaml_quoted(const std::string& s) { return json(s).dump(); }

// The config's decoder keys (a multimodal config's text_config over the top level), with
// the line each key first appears on for errors.
class Config {
 public:
  Config(const std::string& text, std::string file) : text_(text), file_(std::move(file)) {
    try {
      root_ = json::parse(text);
    } catch (const json::parse_error& e) {
      throw InputError(std::string("not valid JSON: ") + e.what(),
                       "give the model's config.json as Hugging Face publishes it", file_,
                       line_at(e.byte > 0 ? e.byte - 1 : 0));
    }
    if (!root_.is_object())
      throw InputError("expected a JSON object (a Hugging Face config.json)",
                       "give the model's config.json", file_, 1);
    keys_ = root_;
    if (root_.contains("text_config") && root_["text_config"].is_object()) {
      for (const auto& [k, v] : root_["text_config"].items()) keys_[k] = v;
      from_text_config_ = true;
    }
  }

  bool from_text_config() const { return from_text_config_; }
  bool has(const char* key) const { return keys_.contains(key) && !keys_[key].is_null(); }

  std::string str(const char* key, const std::string& fallback = {}) const {
    return has(key) && keys_[key].is_string() ? keys_[key].get<std::string>() : fallback;
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!keys_[key].is_boolean())
      throw error(key, "expected true or false, got " + keys_[key].dump());
    return keys_[key].get<bool>();
  }

  // The first of `keys` the config has, as an integer; `used` names it. Absent: -1.
  int64_t integer(std::initializer_list<const char*> keys, std::string* used = nullptr) const {
    for (const char* k : keys) {
      if (!has(k)) continue;
      const json& v = keys_[k];
      double d = 0;
      if (v.is_number()) d = v.get<double>();
      if (!v.is_number() || d != std::floor(d) || d < 0 || d > 1e12)
        throw error(k, "expected a non-negative integer, got " + v.dump());
      if (used != nullptr) *used = k;
      return static_cast<int64_t>(d);
    }
    return -1;
  }

  int64_t required(std::initializer_list<const char*> keys, std::string* used = nullptr) const {
    const int64_t v = integer(keys, used);
    if (v >= 0) return v;
    std::string names;
    for (const char* k : keys) names += std::string(names.empty() ? "" : " or ") + k;
    throw InputError("missing " + names, "a decoder's config.json names its shape with these keys",
                     file_, 0, *keys.begin());
  }

  // The list under `key` (strings or integers), empty when absent.
  const json* list(const char* key) const {
    return has(key) && keys_[key].is_array() ? &keys_[key] : nullptr;
  }

  InputError error(const char* key, const std::string& what,
                   const std::string& hint = "check the config.json") const {
    const size_t at = text_.find("\"" + std::string(key) + "\"");
    return InputError(what, hint, file_, at == std::string::npos ? 0 : line_at(at), key);
  }

 private:
  int line_at(size_t byte) const {
    byte = std::min(byte, text_.size());
    return 1 + static_cast<int>(
                   std::count(text_.begin(), text_.begin() + static_cast<long>(byte), '\n'));
  }

  const std::string& text_;
  std::string file_;
  json root_, keys_;
  bool from_text_config_ = false;
};

// One line of the catalog file: "key: value" padded to a column, then "# comment".
void line(std::ostringstream& out, const std::string& indent, const std::string& key,
          const std::string& value, const std::string& comment) {
  std::string s = indent + key + ": " + value;
  if (!comment.empty()) {
    if (s.size() < 27) s.resize(27, ' ');
    s += " # " + comment;
  }
  out << s << "\n";
}

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

HfImport import_hf_config(const std::string& json_text, const std::string& file,
                          const HfImportOptions& opt) {
  const Config c(json_text, file);
  HfImport r;
  ModelSpec& m = r.model;
  std::vector<std::string>& assumed = r.assumed;
  const std::string type = c.str("model_type");
  m.id = opt.id;
  m.name = !opt.name.empty() ? opt.name : c.str("_name_or_path", opt.id);

  std::string k_layers, k_heads, k_kv, k_head_dim, k_vocab, k_ctx;
  m.layers =
      static_cast<int>(c.required({"num_hidden_layers", "n_layer", "num_layers"}, &k_layers));
  m.hidden = static_cast<int>(c.required({"hidden_size", "d_model", "n_embd"}));
  m.heads = static_cast<int>(c.required({"num_attention_heads", "n_head"}, &k_heads));
  m.vocab = static_cast<int>(c.required({"vocab_size"}, &k_vocab));
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.vocab < 1)
    throw c.error(k_layers.c_str(), "layers, hidden size, heads and vocabulary must be positive");
  std::string kv_note = "num_key_value_heads";
  m.kv_heads = static_cast<int>(c.integer({"num_key_value_heads", "n_head_kv"}, &k_kv));
  if (m.kv_heads <= 0) {
    m.kv_heads = m.heads;
    kv_note = "no num_key_value_heads: one KV head per query head (multi-head attention)";
  }
  if (m.heads % m.kv_heads != 0)
    throw c.error("num_key_value_heads", "num_attention_heads (" + std::to_string(m.heads) +
                                             ") is not a multiple of num_key_value_heads (" +
                                             std::to_string(m.kv_heads) + ")");
  // MLA (DeepSeek-V2/V3, Kimi-K2): per-head K and V decompressed from a latent.
  if (c.has("kv_lora_rank")) {
    MlaSpec a;
    a.q_lora_rank = static_cast<int>(std::max<int64_t>(0, c.integer({"q_lora_rank"})));
    a.kv_lora_rank = static_cast<int>(c.required({"kv_lora_rank"}));
    a.qk_nope_head_dim = static_cast<int>(c.required({"qk_nope_head_dim"}));
    a.qk_rope_head_dim = static_cast<int>(c.required({"qk_rope_head_dim"}));
    a.v_head_dim = static_cast<int>(c.required({"v_head_dim"}));
    m.mla = a;
    m.kv_heads = m.heads;  // every head has its own decompressed K and V
    kv_note = "MLA: every query head has its own K and V, decompressed from the latent";
  }
  std::string head_dim_note = "head_dim";
  if (m.mla) {
    m.head_dim = m.mla->v_head_dim;
    head_dim_note = "v_head_dim (MLA: the q/k head dim is qk_nope_head_dim + qk_rope_head_dim)";
  } else if (c.integer({"head_dim"}) > 0) {
    m.head_dim = static_cast<int>(c.integer({"head_dim"}));
  } else {
    if (m.hidden % m.heads != 0)
      throw c.error("num_attention_heads",
                    "no head_dim, and hidden_size is not a multiple of "
                    "num_attention_heads",
                    "add head_dim to the config");
    m.head_dim = m.hidden / m.heads;
    head_dim_note = "hidden_size / num_attention_heads (no head_dim key)";
  }
  m.max_context_tokens = static_cast<int>(
      c.required({"max_position_embeddings", "n_positions", "max_seq_len"}, &k_ctx));
  std::string tied_note = "tie_word_embeddings";
  if (c.has("tie_word_embeddings")) {
    m.tied_embeddings = c.boolean("tie_word_embeddings", false);
  } else {
    tied_note = "ASSUMPTION: no tie_word_embeddings key; an untied LM head assumed";
    assumed.push_back("tie_word_embeddings not given: untied LM head");
  }
  std::string bias_note = "attention_bias";
  if (c.has("attention_bias")) {
    m.attention_bias = c.boolean("attention_bias", false);
  } else if (type == "qwen2" || type == "qwen2_moe") {
    // Qwen2 carries biases on Q, K and V (not O); the catalog's flag adds O's too.
    m.attention_bias = true;
    bias_note = "Qwen2: biases on Q, K, V (the catalog adds O's: hidden more per layer)";
  } else {
    bias_note = "no attention_bias key: none";
  }
  m.gated_mlp = !ungated_family(type);
  const std::string gated_note =
      m.gated_mlp ? "gated MLP (gate, up, down)" : "model_type " + type + ": up and down only";

  // Mixture of experts.
  std::string k_experts, k_topk, k_expert_ffn, k_dense_ffn = "intermediate_size";
  const int64_t experts =
      c.integer({"n_routed_experts", "num_local_experts", "num_experts"}, &k_experts);
  const int64_t dense_size =
      c.integer({"intermediate_size_mlp", "intermediate_size", "ffn_dim", "n_inner"}, &k_dense_ffn);
  std::string dense_note, moe_block;
  if (experts > 0) {
    MoeSpec e;
    e.experts = static_cast<int>(experts);
    e.top_k = static_cast<int>(
        c.required({"num_experts_per_tok", "experts_per_token", "moe_topk"}, &k_topk));
    if (e.top_k < 1 || e.top_k > e.experts)
      throw c.error(k_topk.c_str(), "experts per token must be 1 to " + std::to_string(experts));
    // Each expert's size: moe_intermediate_size where the family has one, else (Mixtral,
    // gpt-oss, Llama 4) intermediate_size.
    e.expert_ffn = static_cast<int>(c.integer({"moe_intermediate_size"}, &k_expert_ffn));
    if (e.expert_ffn <= 0)
      e.expert_ffn = static_cast<int>(c.required({"intermediate_size"}, &k_expert_ffn));
    // Which layers route.
    int sparse = m.layers;
    bool dense_first = true;  // the config's dense layers come first, as the catalog's do
    std::string layers_note = "every layer routes";
    if (c.has("interleave_moe_layer_step")) {  // Llama 4: layers step-1, 2·step-1, ... route
      const int64_t step = c.integer({"interleave_moe_layer_step"});
      if (step < 1) throw c.error("interleave_moe_layer_step", "expected at least 1");
      sparse = static_cast<int>(m.layers / step);
      dense_first = step == 1;
      layers_note = "interleave_moe_layer_step " + std::to_string(step);
    } else if (c.has("first_k_dense_replace")) {  // DeepSeek, Kimi
      const int64_t k = c.integer({"first_k_dense_replace"});
      const int64_t freq = std::max<int64_t>(1, c.integer({"moe_layer_freq"}));
      sparse = 0;
      for (int64_t i = k; i < m.layers; ++i) sparse += (i % freq == 0);
      dense_first = freq == 1;
      layers_note = "first_k_dense_replace " + std::to_string(k) +
                    (freq > 1 ? ", moe_layer_freq " + std::to_string(freq) : "");
    } else if (c.has("decoder_sparse_step") || c.list("mlp_only_layers") != nullptr) {  // Qwen
      const int64_t step = std::max<int64_t>(1, c.integer({"decoder_sparse_step"}));
      std::vector<int64_t> mlp_only;
      if (const json* l = c.list("mlp_only_layers"))
        for (const auto& v : *l)
          if (v.is_number_integer()) mlp_only.push_back(v.get<int64_t>());
      sparse = 0;
      for (int64_t i = 0; i < m.layers; ++i) {
        const bool routes =
            std::find(mlp_only.begin(), mlp_only.end(), i) == mlp_only.end() && (i + 1) % step == 0;
        // A dense layer after a routing one: the catalog's order (dense first) differs.
        if (!routes && sparse > 0) dense_first = false;
        sparse += routes;
      }
      layers_note = "decoder_sparse_step " + std::to_string(step) + ", mlp_only_layers " +
                    std::to_string(mlp_only.size());
    }
    e.dense_layers = m.layers - sparse;
    if (e.dense_layers > 0 && !dense_first)
      layers_note += " (the catalog puts the dense layers first: same cost, another order)";
    // Shared experts: DeepSeek's count; Qwen2-MoE's one shared MLP of its own size, as
    // that many experts' worth; Llama 4's one.
    std::string shared_note = "no shared expert";
    if (c.integer({"n_shared_experts"}) >= 0) {
      e.shared_experts = static_cast<int>(c.integer({"n_shared_experts"}));
      shared_note = "n_shared_experts";
    } else if (c.integer({"shared_expert_intermediate_size"}) > 0) {
      const int64_t s = c.integer({"shared_expert_intermediate_size"});
      if (s % e.expert_ffn != 0)
        throw c.error("shared_expert_intermediate_size",
                      "the shared MLP (" + std::to_string(s) +
                          ") is not a whole number of experts of " + std::to_string(e.expert_ffn),
                      "the catalog expresses a shared MLP as shared_experts of expert_ffn each");
      e.shared_experts = static_cast<int>(s / e.expert_ffn);
      shared_note = "shared_expert_intermediate_size " + std::to_string(s) + " = " +
                    std::to_string(e.shared_experts) + " experts of " +
                    std::to_string(e.expert_ffn);
    } else if (type == "llama4_text" || type == "llama4" || c.has("interleave_moe_layer_step")) {
      e.shared_experts = 1;
      shared_note = "Llama 4: one shared expert of the experts' size";
    }
    m.moe = e;
    if (e.dense_layers > 0) {
      if (dense_size <= 0)
        throw c.error(k_experts.c_str(),
                      std::to_string(e.dense_layers) +
                          " layers have a dense MLP but the config "
                          "gives no dense intermediate size",
                      "add intermediate_size (or intermediate_size_mlp)");
      // Mixtral-style configs use intermediate_size for the experts; a dense layer then
      // needs its own key.
      if (k_expert_ffn == "intermediate_size" && k_dense_ffn == "intermediate_size")
        throw c.error("intermediate_size",
                      "intermediate_size is the experts' size, and dense layers need their own",
                      "add intermediate_size_mlp for the dense layers");
      m.ffn = static_cast<int>(dense_size);
      dense_note = k_dense_ffn + " (the dense layers' MLP)";
    } else {
      m.ffn = 0;
      dense_note = "no dense MLP layer: every layer is MoE";
    }
    std::ostringstream moe;
    line(moe, "  ", "experts", std::to_string(e.experts), k_experts);
    line(moe, "  ", "top_k", std::to_string(e.top_k), k_topk);
    line(moe, "  ", "shared_experts", std::to_string(e.shared_experts), shared_note);
    line(moe, "  ", "expert_ffn", std::to_string(e.expert_ffn), k_expert_ffn);
    line(moe, "  ", "dense_layers", std::to_string(e.dense_layers), layers_note);
    moe_block = moe.str();
  } else {
    if (dense_size <= 0)
      throw InputError("missing intermediate_size", "a dense decoder names its MLP size", file, 0,
                       "intermediate_size");
    m.ffn = static_cast<int>(dense_size);
    dense_note = k_dense_ffn;
  }

  // Sliding-window attention: gpt-oss and Gemma list each layer's kind; Mistral-style
  // configs window every layer unless use_sliding_window is false.
  std::string window_note;
  if (c.integer({"sliding_window"}) > 0) {
    const int64_t w = c.integer({"sliding_window"});
    int layers = 0;
    if (const json* l = c.list("layer_types")) {
      for (const auto& v : *l)
        if (v.is_string() && v.get<std::string>() == "sliding_attention") ++layers;
      window_note = "layer_types: " + std::to_string(layers) + " sliding_attention";
    } else if (c.boolean("use_sliding_window", true)) {
      const int64_t max_window = c.integer({"max_window_layers"});
      layers =
          max_window >= 0 ? static_cast<int>(std::min<int64_t>(max_window, m.layers)) : m.layers;
      window_note = max_window >= 0 ? "max_window_layers" : "every layer (no layer_types)";
    }
    if (layers > 0) {
      m.sliding_window_tokens = static_cast<int>(w);
      m.sliding_window_layers = layers;
    }
  }
  // Chunked attention (Llama 4): the layers with RoPE attend within their chunk, the NoPE
  // ones (every no_rope_layer_interval-th) to everything.
  std::string chunk_note;
  if (c.integer({"attention_chunk_size"}) > 0) {
    int layers = 0;
    if (const json* l = c.list("no_rope_layers")) {
      for (const auto& v : *l)
        if (v.is_number_integer() && v.get<int64_t>() != 0) ++layers;
      chunk_note = "no_rope_layers: " + std::to_string(layers) + " with RoPE (chunked)";
    } else {
      const int64_t every =
          c.has("no_rope_layer_interval") ? c.integer({"no_rope_layer_interval"}) : int64_t{4};
      if (every < 1) throw c.error("no_rope_layer_interval", "expected at least 1");
      layers = m.layers - static_cast<int>(m.layers / every);
      chunk_note = "all but 1 in " + std::to_string(every) + " layers (no no_rope_layers)";
      if (!c.has("no_rope_layer_interval"))
        assumed.push_back(
            "attention_chunk_size without no_rope_layers: every 4th layer taken to attend to "
            "the whole context (transformers' Llama4TextConfig default), the others chunked");
    }
    layers = std::min(layers, m.layers - m.sliding_window_layers);
    if (layers > 0) {
      m.attention_chunk_tokens = static_cast<int>(c.integer({"attention_chunk_size"}));
      m.chunked_attention_layers = layers;
    }
  }
  m.mtp_layers = static_cast<int>(std::max<int64_t>(0, c.integer({"num_nextn_predict_layers"})));

  // Published counts: the model card's when given, else the shape's own (marked). Some
  // publishers leave the input embedding table (a gather, not a GEMM) out of the active
  // count (gpt-oss, DeepSeek-V3): a given active figure that matches the shape only without
  // it sets that convention.
  const double derived = m.derived_params();
  auto near = [](double a, double b) { return std::fabs(a - b) <= 0.10 * b; };
  if (m.moe && opt.published_active > 0 && !near(m.derived_active_params(), opt.published_active)) {
    m.active_excludes_input_embedding = true;
    if (!near(m.derived_active_params(), opt.published_active))
      m.active_excludes_input_embedding = false;  // neither convention: reported below
  }
  m.published_params = opt.published_params > 0 ? opt.published_params : derived;
  if (m.moe)
    m.published_active_params =
        opt.published_active > 0 ? opt.published_active : m.derived_active_params();
  if (opt.published_params <= 0)
    assumed.push_back(
        "published_params: the shape's own count (give the model card's with "
        "--params)");
  if (m.moe && opt.published_active <= 0)
    assumed.push_back(
        "published_active_params: the shape's own count (give the model card's "
        "with --active)");
  for (const auto& [key, derived_value, given] :
       {std::tuple{"--params", derived, opt.published_params},
        std::tuple{"--active", m.moe ? m.derived_active_params() : 0.0, opt.published_active}})
    if (given > 0 && !near(derived_value, given))
      throw InputError(std::string("the config's shape gives ") +
                           units::format_count(derived_value) + " parameters but " + key + " is " +
                           units::format_count(given) + " (more than 10% apart)",
                       "check the figure against the model card, or the config's keys", file);
  m.sources = {!opt.source.empty() ? opt.source : "Hugging Face config.json (" + file + ")"};

  // The catalog file.
  std::ostringstream y;
  y << "# " << m.name << ": imported from a Hugging Face config.json by fleetsim import-model"
    << (c.from_text_config() ? " (its text_config: the decoder)" : "") << ".\n"
    << "# Each value names the config key it came from; check the ASSUMPTION lines.\n";
  line(y, "", "name", yaml_quoted(m.name), "");
  line(y, "", "layers", std::to_string(m.layers), k_layers);
  line(y, "", "hidden", std::to_string(m.hidden), "hidden_size");
  line(y, "", "heads", std::to_string(m.heads), k_heads);
  line(y, "", "kv_heads", std::to_string(m.kv_heads), kv_note);
  line(y, "", "head_dim", std::to_string(m.head_dim), head_dim_note);
  line(y, "", "ffn", std::to_string(m.ffn), dense_note);
  line(y, "", "vocab", std::to_string(m.vocab), k_vocab);
  line(y, "", "gated_mlp", m.gated_mlp ? "true" : "false", gated_note);
  line(y, "", "tied_embeddings", m.tied_embeddings ? "true" : "false", tied_note);
  line(y, "", "attention_bias", m.attention_bias ? "true" : "false", bias_note);
  line(y, "", "max_context_tokens", std::to_string(m.max_context_tokens), k_ctx);
  if (m.mla) {
    y << "mla:\n";
    line(y, "  ", "q_lora_rank", std::to_string(m.mla->q_lora_rank), "q_lora_rank (0: none)");
    line(y, "  ", "kv_lora_rank", std::to_string(m.mla->kv_lora_rank), "kv_lora_rank");
    line(y, "  ", "qk_nope_head_dim", std::to_string(m.mla->qk_nope_head_dim), "qk_nope_head_dim");
    line(y, "  ", "qk_rope_head_dim", std::to_string(m.mla->qk_rope_head_dim), "qk_rope_head_dim");
    line(y, "  ", "v_head_dim", std::to_string(m.mla->v_head_dim), "v_head_dim");
  }
  if (m.moe) y << "moe:\n" << moe_block;
  if (m.sliding_window_layers > 0) {
    y << "sliding_window:\n";
    line(y, "  ", "tokens", std::to_string(m.sliding_window_tokens), "sliding_window");
    line(y, "  ", "layers", std::to_string(m.sliding_window_layers), window_note);
  }
  if (m.chunked_attention_layers > 0) {
    y << "chunked_attention:\n";
    line(y, "  ", "tokens", std::to_string(m.attention_chunk_tokens), "attention_chunk_size");
    line(y, "  ", "layers", std::to_string(m.chunked_attention_layers), chunk_note);
  }
  if (m.mtp_layers > 0)
    line(y, "", "mtp_layers", std::to_string(m.mtp_layers),
         "num_nextn_predict_layers (not in the parameter counts)");
  for (const auto& a : assumed)
    if (a.rfind("published", 0) != 0) y << "# ASSUMPTION: " << a << "\n";
  line(y, "", "published_params", num(m.published_params),
       opt.published_params > 0 ? "the model card's (--params)"
                                : "ASSUMPTION: the shape's own count; no model card figure given");
  if (m.active_excludes_input_embedding)
    line(y, "", "active_excludes_input_embedding", "true",
         "--active matches the shape without the input embedding table");
  if (m.moe)
    line(y, "", "published_active_params", num(m.published_active_params),
         opt.published_active > 0
             ? "the model card's (--active)"
             : "ASSUMPTION: the shape's own count; no model card figure given");
  if (!opt.hf_repo.empty()) {
    m.hf_repo = opt.hf_repo;
    line(y, "", "hf_repo", m.hf_repo, "the weights serving engines load (--hf-repo)");
  }
  y << "sources:\n  - " << yaml_quoted(m.sources.front()) << "\n";
  r.yaml = y.str();
  return r;
}

}  // namespace fleetsim::hw
