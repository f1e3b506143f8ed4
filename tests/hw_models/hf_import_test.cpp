// fleetsim import-model's reading of Hugging Face config.json files: every shipped model
// whose config is transcribed in tests/data/hf_configs imports to the same shape (and so the
// same parameter counts) as its hand-written catalog entry, the file it writes loads back,
// and the family spellings and bad configs are handled as documented.
#include "hw_models/hf_import.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "hw_models/error.h"
#include "tests/hw_models/hw_test_util.h"

namespace fleetsim::hw {
namespace {

using test_util::catalog;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fixture(const std::string& id) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/tests/data/hf_configs/" + id + ".json";
}

HfImport import_text(const std::string& json, HfImportOptions opt = {}) {
  if (opt.id.empty()) opt.id = "test-model";
  return import_hf_config(json, "config.json", opt);
}

// Every field of the shape (not the published counts, sources or routing statistics).
void expect_same_shape(const ModelSpec& a, const ModelSpec& b) {
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.ffn, b.ffn);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.gated_mlp, b.gated_mlp);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.attention_bias, b.attention_bias);
  EXPECT_EQ(a.max_context_tokens, b.max_context_tokens);
  EXPECT_EQ(a.sliding_window_tokens, b.sliding_window_tokens);
  EXPECT_EQ(a.sliding_window_layers, b.sliding_window_layers);
  EXPECT_EQ(a.attention_chunk_tokens, b.attention_chunk_tokens);
  EXPECT_EQ(a.chunked_attention_layers, b.chunked_attention_layers);
  EXPECT_EQ(a.mtp_layers, b.mtp_layers);
  ASSERT_EQ(a.mla.has_value(), b.mla.has_value());
  if (a.mla) {
    EXPECT_EQ(a.mla->q_lora_rank, b.mla->q_lora_rank);
    EXPECT_EQ(a.mla->kv_lora_rank, b.mla->kv_lora_rank);
    EXPECT_EQ(a.mla->qk_nope_head_dim, b.mla->qk_nope_head_dim);
    EXPECT_EQ(a.mla->qk_rope_head_dim, b.mla->qk_rope_head_dim);
    EXPECT_EQ(a.mla->v_head_dim, b.mla->v_head_dim);
  }
  ASSERT_EQ(a.moe.has_value(), b.moe.has_value());
  if (a.moe) {
    EXPECT_EQ(a.moe->experts, b.moe->experts);
    EXPECT_EQ(a.moe->top_k, b.moe->top_k);
    EXPECT_EQ(a.moe->shared_experts, b.moe->shared_experts);
    EXPECT_EQ(a.moe->expert_ffn, b.moe->expert_ffn);
    EXPECT_EQ(a.moe->dense_layers, b.moe->dense_layers);
  }
}

class ShippedModel : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedModel, ImportsToTheHandWrittenEntry) {
  const std::string id = GetParam();
  const ModelSpec& shipped = catalog().model(id);
  HfImportOptions opt;
  opt.id = id;
  opt.published_params = shipped.published_params;
  opt.published_active = shipped.published_active_params;
  const HfImport r = import_hf_config(read_text(fixture(id)), fixture(id), opt);
  expect_same_shape(r.model, shipped);
  // The same shape gives the same count by the same formula, to the parameter.
  EXPECT_EQ(r.model.derived_params(), shipped.derived_params());

  // The file it writes loads as a catalog model with that shape.
  const auto dir = std::filesystem::temp_directory_path() / ("fleetsim-hf-" + id);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (id + ".yaml")).string();
  std::ofstream(path) << r.yaml;
  const ModelSpec loaded = load_model_file(path);
  std::filesystem::remove_all(dir);
  expect_same_shape(loaded, shipped);
  EXPECT_EQ(loaded.published_params, shipped.published_params);
}

INSTANTIATE_TEST_SUITE_P(HfImport, ShippedModel,
                         ::testing::Values("llama-3.1-8b", "mixtral-8x7b", "qwen3-30b-a3b",
                                           "deepseek-v3", "gpt-oss-120b", "llama-4-maverick"));

TEST(HfImport, EachValueNamesTheKeyItCameFrom) {
  const HfImport r =
      import_hf_config(read_text(fixture("deepseek-v3")), "dsv3.json",
                       {"deepseek-v3", "DeepSeek-V3", "", 671e9, 37e9, "deepseek-ai/DeepSeek-V3"});
  EXPECT_NE(r.yaml.find("hf_repo: deepseek-ai/DeepSeek-V3"), std::string::npos);
  EXPECT_NE(r.yaml.find("dense_layers: 3           # first_k_dense_replace 3\n"),
            std::string::npos);
  EXPECT_NE(r.yaml.find("expert_ffn: 2048          # moe_intermediate_size\n"), std::string::npos);
  EXPECT_NE(r.yaml.find("published_params: 6.71e+11  # the model card's (--params)"),
            std::string::npos);
  EXPECT_TRUE(r.assumed.empty());
  // Llama 4 interleaves its dense layers; the catalog's order differs and the file says so.
  const HfImport l = import_hf_config(read_text(fixture("llama-4-maverick")), "l4.json",
                                      {"llama-4-maverick", "", "", 0, 0, ""});
  EXPECT_NE(l.yaml.find("interleave_moe_layer_step 2 (the catalog puts the dense layers first"),
            std::string::npos);
  // Chunked attention: the config has attention_chunk_size 8192 and no no_rope_layers, so
  // 48 - 48 / 4 = 36 layers are chunked (every 4th attends to everything), an assumption
  // listed with the missing published figures.
  EXPECT_EQ(l.model.attention_chunk_tokens, 8192);
  EXPECT_EQ(l.model.chunked_attention_layers, 36);
  EXPECT_NE(l.yaml.find("chunked_attention:\n  tokens: 8192"), std::string::npos);
  ASSERT_EQ(l.assumed.size(), 3u);
  EXPECT_NE(l.assumed[0].find("attention_chunk_size without no_rope_layers"), std::string::npos);
  EXPECT_NE(l.yaml.find("# ASSUMPTION: attention_chunk_size"), std::string::npos);
}

TEST(HfImport, QwenSharedMlpAndSparseStep) {
  // Qwen1.5-MoE-style: a shared MLP of 5632 = 4 experts of 1408; decoder_sparse_step 2 with
  // mlp_only_layers [0] over 8 layers routes layers 1, 3, 5, 7 ((i + 1) % 2 == 0, i ≠ 0):
  // 4 dense layers, of intermediate_size 5632.
  const HfImport r = import_text(R"({"model_type": "qwen2_moe", "num_hidden_layers": 8,
    "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 16,
    "vocab_size": 151936, "max_position_embeddings": 8192, "tie_word_embeddings": false,
    "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "intermediate_size": 5632,
    "decoder_sparse_step": 2, "mlp_only_layers": [0]})");
  ASSERT_TRUE(r.model.moe);
  EXPECT_EQ(r.model.moe->shared_experts, 4);
  EXPECT_EQ(r.model.moe->dense_layers, 4);
  EXPECT_EQ(r.model.ffn, 5632);
  EXPECT_EQ(r.model.head_dim, 2048 / 16);  // no head_dim key: hidden / heads
  EXPECT_TRUE(r.model.attention_bias);     // Qwen2's Q, K, V biases
}

TEST(HfImport, ChunkedAttentionLayersFromTheConfig) {
  const std::string base = R"("num_hidden_layers": 8, "hidden_size": 1024,
    "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 4096,
    "vocab_size": 32000, "max_position_embeddings": 32768, "tie_word_embeddings": false,
    "attention_chunk_size": 2048)";
  // An explicit no_rope_layers list: its 1s (RoPE layers) are the chunked ones, 5 of 8.
  HfImport r = import_text("{" + base + R"(, "no_rope_layers": [1, 1, 0, 1, 1, 0, 1, 0]})");
  EXPECT_EQ(r.model.attention_chunk_tokens, 2048);
  EXPECT_EQ(r.model.chunked_attention_layers, 5);
  // An interval of 2: every 2nd layer attends to everything, 8 - 8 / 2 = 4 are chunked, and
  // the config said it, so no assumption is listed for it.
  r = import_text("{" + base + R"(, "no_rope_layer_interval": 2})");
  EXPECT_EQ(r.model.chunked_attention_layers, 4);
  for (const auto& a : r.assumed) EXPECT_EQ(a.find("attention_chunk_size"), std::string::npos);
  // An interval of 0 is an error naming the key.
  try {
    import_text("{" + base + R"(, "no_rope_layer_interval": 0})");
    ADD_FAILURE() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no_rope_layer_interval"), std::string::npos);
  }
}

TEST(HfImport, SlidingWindows) {
  const std::string base = R"("num_hidden_layers": 32, "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "vocab_size": 32000, "max_position_embeddings": 32768, "tie_word_embeddings": false)";
  // Mistral 7B v0.1: a 4096-token window on every layer.
  HfImport r = import_text("{" + base + R"(, "sliding_window": 4096})");
  EXPECT_EQ(r.model.sliding_window_tokens, 4096);
  EXPECT_EQ(r.model.sliding_window_layers, 32);
  // Qwen-style configs name a window but switch it off.
  r = import_text("{" + base + R"(, "sliding_window": 4096, "use_sliding_window": false})");
  EXPECT_EQ(r.model.sliding_window_layers, 0);
  r = import_text("{" + base + R"(, "sliding_window": null})");
  EXPECT_EQ(r.model.sliding_window_layers, 0);
}

TEST(HfImport, BadConfigsAreInputErrors) {
  // Not JSON: the error names the line.
  try {
    import_text("{\n  \"num_hidden_layers\": 32,\n  oops\n}");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(e.message().find("not valid JSON"), std::string::npos);
  }
  // A missing shape key names the key and its spellings.
  try {
    import_text(R"({"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10})");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("num_hidden_layers or n_layer or num_layers"), std::string::npos);
  }
  // A wrong type names its line and key.
  try {
    import_text("{\"num_hidden_layers\": 2,\n\"hidden_size\": \"big\"}");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "hidden_size");
    EXPECT_EQ(e.line(), 2);
  }
  // A model card figure far from the shape: 8.03B derived for Llama 3.1 8B, "70B" given.
  HfImportOptions opt;
  opt.id = "llama-3.1-8b";
  opt.published_params = 70e9;
  EXPECT_THROW(import_hf_config(read_text(fixture("llama-3.1-8b")), "c.json", opt), InputError);
  // Mixtral's spelling (intermediate_size is the experts') cannot also size dense layers.
  EXPECT_THROW(import_text(R"({"num_hidden_layers": 4, "hidden_size": 64,
    "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 128,
    "num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 128,
    "first_k_dense_replace": 1})"),
               InputError);
}

}  // namespace
}  // namespace fleetsim::hw
