// Tests for hw_models/catalog: the shipped catalog files and errors in malformed ones.
#include "hw_models/catalog.h"

#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp, setenv, unsetenv (POSIX)

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "hw_models/error.h"

namespace fleetsim::hw {
namespace {

namespace fs = std::filesystem;

const std::string kCatalogDir = std::string(FLEETSIM_SOURCE_DIR) + "/hw_models/catalog";

const Catalog& shipped() {
  static const Catalog c = Catalog::load(kCatalogDir);
  return c;
}

TEST(Catalog, LoadsTheShippedFiles) {
  const Catalog& c = shipped();
  // Every GPU, model, node and interconnect the catalog promises is in it.
  for (const char* id :
       {"a100-80gb-sxm", "a100-80gb-pcie", "h100-sxm", "h100-pcie", "h800-sxm",
        "h200-sxm",      "b200",           "gb200",    "mi300x",    "mi325x",
        "l40s",          "rtx-4090",       "rtx-5090", "m2-ultra",  "m3-max",
        "m4-max",        "m4-pro-24gb",    "tpu-v5e",  "tpu-v6e",   "v100-sxm2-32gb"})
    EXPECT_NO_THROW(c.gpu(id)) << id;
  for (const char* id :
       {"llama-2-7b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
        "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3", "deepseek-r1", "qwen3-235b-a22b",
        "gpt-oss-20b", "gpt-oss-120b", "gpt4-class-moe"})
    EXPECT_NO_THROW(c.model(id)) << id;
  for (const char* id :
       {"hgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72", "mi300x-platform", "h100-pcie-4gpu-2u",
        "desktop-rtx4090", "mac-studio-m2-ultra", "dgx-1-v100", "macbook-pro-14-m4-pro-24gb"})
    EXPECT_NO_THROW(c.node(id)) << id;
  for (const char* id :
       {"nvlink3", "nvlink4", "nvlink5", "pcie4-x16", "pcie5-x16", "ib-ndr-400g", "roce-400g",
        "eth-100g", "infinity-fabric", "nvlink2", "pcie3-x16", "ib-edr-100g"})
    EXPECT_NO_THROW(c.interconnect(id)) << id;
  for (const auto& [id, g] : c.gpus()) {
    EXPECT_EQ(g.id, id);
    EXPECT_FALSE(g.sources.empty()) << id;
    // Measured efficiencies cite their measurement; assumed ones say so.
    if (g.efficiency_basis != "assumed") {
      EXPECT_FALSE(g.efficiency_sources.empty()) << id;
    }
    EXPECT_GT(g.compute_efficiency, 0.3) << id;
    EXPECT_LE(g.compute_efficiency, 1.0) << id;
    EXPECT_GT(g.memory_efficiency, 0.3) << id;
    EXPECT_LE(g.memory_efficiency, 1.0) << id;
    EXPECT_GT(g.scaleup_bw_bytes_per_s, 0) << id;  // the fabric, or PCIe when there is none
    // Every part has an hourly price, so a plan over the catalog drops none of them (for
    // parts no cloud rents, an owner-equivalent figure the file marks ASSUMPTION). The one
    // exception: the Cerebras WSE-3 is sold as a whole CS-3 system or as a per-token API,
    // with no published system price, so its file says so and costs show it as missing.
    if (id != "wse-3") {
      EXPECT_GT(g.cloud_usd_per_gpu_hour, 0) << id;
    }
  }
  for (const auto& [id, m] : c.models()) EXPECT_FALSE(m.sources.empty()) << id;
  // GB200 NVL72: 72 GPUs share one NVLink domain across 18 trays of 4.
  EXPECT_EQ(c.node("gb200-nvl72").scaleup_domain_gpus, 72);
  EXPECT_EQ(c.node("gb200-nvl72").gpus_per_node * c.node("gb200-nvl72").nodes_per_rack, 72);
}

// vLLM's V0 and V1 engines run the same model executor and MoE kernels (the Triton
// fused_moe); they differ in scheduling and CPU overhead. V0 has too few NVIDIA cases to fit,
// so its profile takes V1's fitted MoE efficiency: a refit of vllm-v1 that moves it must move
// vllm-v0's too. (On ROCm the two builds are fitted apart, on their own cases.)
TEST(Catalog, VllmV0RunsV1sFittedMoeKernels) {
  const EngineSpec& v0 = shipped().engine("vllm-v0");
  const EngineSpec& v1 = shipped().engine("vllm-v1");
  EXPECT_DOUBLE_EQ(v0.moe_efficiency, v1.moe_efficiency);
  EXPECT_DOUBLE_EQ(v0.moe_compute_efficiency, v1.moe_compute_efficiency);
  EXPECT_DOUBLE_EQ(v0.moe_half_tokens, v1.moe_half_tokens);
  // And it is a fitted value below the prior 1, not the prior left in place.
  EXPECT_LT(v0.moe_efficiency, 1.0);
}

TEST(Catalog, A100FieldsInSiUnits) {
  const GpuSpec& g = shipped().gpu("a100-80gb-sxm");
  EXPECT_EQ(g.memory_bytes, 81920.0 * 1048576.0);     // 81920 MiB = 80 GiB = 85,899,345,920 B
  EXPECT_DOUBLE_EQ(g.memory_bw_bytes_per_s, 2039e9);  // 2039 GB/s
  EXPECT_DOUBLE_EQ(g.bf16_flops_per_s, 312e12);       // dense, not the sparse 624
  EXPECT_EQ(g.fp8_flops_per_s, 0.0);                  // Ampere: no FP8
  EXPECT_DOUBLE_EQ(g.scaleup_bw_bytes_per_s, 300e9);  // 600 GB/s bidirectional / 2
  EXPECT_DOUBLE_EQ(g.tdp_w, 400.0);
  EXPECT_DOUBLE_EQ(g.compute_efficiency, 256.5 / 312.0);  // = 0.822 (Azure cuBLASLt 16384^3)
  EXPECT_DOUBLE_EQ(g.memory_efficiency, 1.70 / 2.039);    // = 0.834 (STREAM triad)
  EXPECT_DOUBLE_EQ(g.scaleup_latency_s, 3.2e-6);
}

TEST(Catalog, HopperFieldsInSiUnits) {
  const GpuSpec& h100 = shipped().gpu("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.bf16_flops_per_s, 989.4e12);
  EXPECT_DOUBLE_EQ(h100.fp8_flops_per_s, 1978.9e12);
  EXPECT_DOUBLE_EQ(h100.memory_bw_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.compute_efficiency, 794.5 / 989.4);  // = 0.803 (BF16 MAMF)
  EXPECT_DOUBLE_EQ(h100.memory_efficiency, 2.97 / 3.35);     // = 0.887
  const GpuSpec& h200 = shipped().gpu("h200-sxm");
  EXPECT_EQ(h200.memory_bytes, 143771.0 * 1048576.0);  // 143771 MiB ≈ 150.8e9 B
  EXPECT_DOUBLE_EQ(h200.memory_bw_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.memory_efficiency, 4.15 / 4.8);     // = 0.865
  EXPECT_EQ(h200.bf16_flops_per_s, h100.bf16_flops_per_s);  // same compute as H100
}

// derived = vocab·h (embedding) + layers·(2·h·H·d + 2·h·K·d + 3·h·ffn + 2·h) + h + vocab·h
TEST(Catalog, DerivedParamsMatchPublished) {
  const Catalog& c = shipped();
  // Llama-2-7B: embed 32000·4096 = 131,072,000; per layer 4·4096² = 67,108,864 (K = H) +
  // 3·4096·11008 = 135,266,304 + 8,192 = 202,383,360; ·32 = 6,476,267,520;
  // total 131,072,000·2 + 6,476,267,520 + 4,096 = 6,738,415,616 — exactly the checkpoint's
  // count (published 6.74e9).
  const ModelSpec& l2 = c.model("llama-2-7b");
  EXPECT_EQ(l2.derived_params(), 6738415616.0);
  EXPECT_NEAR(l2.derived_params(), l2.published_params, 0.01 * l2.published_params);

  // Llama-3.1-8B: embed 128256·4096 = 525,336,576; per layer 2·4096² = 33,554,432 +
  // 2·4096·1024 = 8,388,608 + 3·4096·14336 = 176,160,768 + 8,192 = 218,112,000;
  // ·32 = 6,979,584,000; total 525,336,576·2 + 6,979,584,000 + 4,096 = 8,030,261,248
  // (published 8.03e9).
  const ModelSpec& l8 = c.model("llama-3.1-8b");
  EXPECT_EQ(l8.derived_params(), 8030261248.0);
  EXPECT_NEAR(l8.derived_params(), l8.published_params, 0.01 * l8.published_params);

  // Llama-3.1-70B: embed 128256·8192 = 1,050,673,152; per layer 2·8192² = 134,217,728 +
  // 2·8192·1024 = 16,777,216 + 3·8192·28672 = 704,643,072 + 16,384 = 855,654,400;
  // ·80 = 68,452,352,000; total 1,050,673,152·2 + 68,452,352,000 + 8,192 = 70,553,706,496
  // (published 70.6e9).
  const ModelSpec& l70 = c.model("llama-3.1-70b");
  EXPECT_EQ(l70.derived_params(), 70553706496.0);
  EXPECT_NEAR(l70.derived_params(), l70.published_params, 0.01 * l70.published_params);
}

TEST(Catalog, TiedEmbeddingsDropTheLmHead) {
  ModelSpec m = shipped().model("llama-2-7b");
  m.tied_embeddings = true;
  EXPECT_EQ(m.derived_params(), 6738415616.0 - 32000.0 * 4096.0);  // minus vocab·h
}

TEST(Catalog, GemmParamsAndKvBytes) {
  const Catalog& c = shipped();
  // 7B layer: 4·4096² + 3·4096·11008 = 67,108,864 + 135,266,304 = 202,375,168.
  EXPECT_EQ(c.model("llama-2-7b").gemm_params_per_layer(), 202375168.0);
  // KV per token at 2 bytes: 2 · layers · kv_heads · head_dim · 2.
  EXPECT_EQ(c.model("llama-2-7b").kv_bytes_per_token(2), 524288.0);     // 2·32·32·128·2
  EXPECT_EQ(c.model("llama-3.1-8b").kv_bytes_per_token(2), 131072.0);   // 2·32·8·128·2
  EXPECT_EQ(c.model("llama-3.1-70b").kv_bytes_per_token(2), 327680.0);  // 2·80·8·128·2
  EXPECT_EQ(c.model("llama-3.1-70b").kv_bytes_per_token(1), 163840.0);  // FP8 KV halves it
}

TEST(Catalog, UnknownIdSuggestsAndListsKnownIds) {
  try {
    shipped().gpu("h100");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(), "unknown GPU 'h100' (did you mean 'h100-pcie' or 'h100-sxm'?)");
    EXPECT_NE(e.hint().find("a100-80gb-sxm, b200, gb200, h100-pcie, h100-sxm"), std::string::npos)
        << e.hint();
  }
  try {
    shipped().model("llama3.1-8b");  // one edit from llama-3.1-8b, two from llama-3.1-70b
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("unknown model 'llama3.1-8b'"), std::string::npos);
    EXPECT_NE(e.message().find("did you mean 'llama-3.1-8b'"), std::string::npos) << e.message();
  }
}

TEST(Catalog, DefaultDirHonoursTheEnvironment) {
  const char* old = std::getenv("FLEETSIM_CATALOG");
  const std::string saved = old ? old : "";
  ::setenv("FLEETSIM_CATALOG", "/some/where", 1);
  EXPECT_EQ(Catalog::default_dir(), "/some/where");
  ::unsetenv("FLEETSIM_CATALOG");
  EXPECT_EQ(Catalog::default_dir(), FLEETSIM_DEFAULT_CATALOG);
  EXPECT_TRUE(fs::is_directory(Catalog::default_dir()));
  if (old) ::setenv("FLEETSIM_CATALOG", saved.c_str(), 1);
}

TEST(Catalog, MissingDirectoryIsAnInputError) {
  EXPECT_THROW(Catalog::load("/no/such/catalog/dir"), InputError);
}

// ---- malformed files -----------------------------------------------------------------------

class BadCatalogFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fleetsim-catalog-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = fs::path(dir_) / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

  // Loads a GPU file and returns the error it raises.
  InputError gpu_error(const std::string& text) {
    const std::string path = write("gpus/test-gpu.yaml", text);
    try {
      load_gpu_file(path);
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << "no InputError for:\n" << text;
    return InputError("none");
  }

  InputError model_error(const std::string& text) {
    const std::string path = write("models/test-model.yaml", text);
    try {
      load_model_file(path);
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << "no InputError for:\n" << text;
    return InputError("none");
  }

  std::string gpu_path() const { return (fs::path(dir_) / "gpus/test-gpu.yaml").string(); }

  // A valid GPU file; line numbers are 1-based.
  static std::string good_gpu(const std::string& replace_key = "", const std::string& with = "") {
    const char* lines[] = {
        "name: Test GPU",                        // 1
        "vendor: Test",                          // 2
        "memory: 80GB",                          // 3
        "memory_bandwidth: 2TB/s",               // 4
        "bf16_dense: 300TFLOP/s",                // 5
        "host_link: pcie5-x16",                  // 6
        "tdp: 400W",                             // 7
        "sources: [test datasheet]",             // 8
        "empirical:",                            // 9
        "  dense_gemm_achieved: 240TFLOP/s",     // 10
        "  memory_bandwidth_achieved: 1.6TB/s",  // 11
        "  scaleup_latency: 3us",                // 12
        "  sources: [test measurement]",         // 13
    };
    std::string out;
    for (const char* l : lines) {
      std::string line = l;
      if (!replace_key.empty() && line.find(replace_key + ":") != std::string::npos) line = with;
      if (!line.empty()) out += line + "\n";
    }
    return out;
  }

  std::string dir_;
};

TEST_F(BadCatalogFile, GoodFileLoads) {
  const GpuSpec g = load_gpu_file(write("gpus/test-gpu.yaml", good_gpu()));
  EXPECT_EQ(g.id, "test-gpu");
  EXPECT_DOUBLE_EQ(g.compute_efficiency, 0.8);  // 240 / 300
  EXPECT_DOUBLE_EQ(g.memory_efficiency, 0.8);   // 1.6 / 2
}

TEST_F(BadCatalogFile, MissingFieldNamesFileLineAndField) {
  const InputError e = gpu_error(good_gpu("tdp", ""));
  EXPECT_EQ(e.file(), gpu_path());
  EXPECT_EQ(e.field(), "tdp");
  EXPECT_GT(e.line(), 0);
  const std::string what = e.what();
  EXPECT_NE(what.find(gpu_path() + ":"), std::string::npos) << what;
  EXPECT_NE(what.find("'tdp'"), std::string::npos) << what;
  EXPECT_NE(what.find("missing"), std::string::npos) << what;
}

TEST_F(BadCatalogFile, MissingUnitNamesFileLineAndField) {
  const InputError e = gpu_error(good_gpu("memory", "memory: 80"));
  EXPECT_EQ(e.file(), gpu_path());
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "memory");
  const std::string what = e.what();
  EXPECT_NE(what.find(gpu_path() + ":3:"), std::string::npos) << what;
  EXPECT_NE(what.find("'memory'"), std::string::npos) << what;
  EXPECT_NE(what.find("with a unit"), std::string::npos) << what;
}

TEST_F(BadCatalogFile, MissingUnitInsideEmpiricalSection) {
  const InputError e = gpu_error(good_gpu("  scaleup_latency", "  scaleup_latency: 3"));
  EXPECT_EQ(e.line(), 12);
  EXPECT_EQ(e.field(), "empirical.scaleup_latency");
  EXPECT_NE(std::string(e.what()).find(gpu_path() + ":12:"), std::string::npos) << e.what();
}

TEST_F(BadCatalogFile, WrongDimensionNamesTheField) {
  const InputError e = gpu_error(good_gpu("memory_bandwidth", "memory_bandwidth: 2TB"));
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.field(), "memory_bandwidth");
  EXPECT_NE(e.message().find("bandwidth"), std::string::npos) << e.what();
}

TEST_F(BadCatalogFile, UnknownKeyNamesFileLineAndField) {
  const InputError e = gpu_error(good_gpu() + "memroy_clock: 1.4GHz\n");  // line 14
  EXPECT_EQ(e.file(), gpu_path());
  EXPECT_EQ(e.line(), 14);
  EXPECT_EQ(e.field(), "memroy_clock");
  const std::string what = e.what();
  EXPECT_NE(what.find(gpu_path() + ":14:"), std::string::npos) << what;
  EXPECT_NE(what.find("unknown field"), std::string::npos) << what;
}

TEST_F(BadCatalogFile, UnknownKeyInsideEmpiricalSection) {
  const InputError e = gpu_error(good_gpu() + "  compute_eff: 0.8\n");  // line 14, in empirical
  EXPECT_EQ(e.line(), 14);
  EXPECT_EQ(e.field(), "empirical.compute_eff");
}

TEST_F(BadCatalogFile, AchievedAbovePeakIsRejected) {
  const InputError e =
      gpu_error(good_gpu("  dense_gemm_achieved", "  dense_gemm_achieved: 600TFLOP/s"));
  EXPECT_EQ(e.line(), 10);
  EXPECT_EQ(e.field(), "empirical.dense_gemm_achieved");
  EXPECT_NE(e.message().find("exceeds the datasheet peak"), std::string::npos) << e.what();
}

TEST_F(BadCatalogFile, MissingSourcesIsRejected) {
  const InputError e = gpu_error(good_gpu("sources", ""));  // removes both sources lines
  EXPECT_EQ(e.field(), "sources");
}

TEST_F(BadCatalogFile, ModelShapeTypoIsCaughtByTheParameterCount) {
  // Llama-2-7B with ffn 110080 instead of 11008: ~3.6x the published 6.74e9.
  const std::string text =
      "name: Typo\nlayers: 32\nhidden: 4096\nheads: 32\nkv_heads: 32\nhead_dim: 128\n"
      "ffn: 110080\nvocab: 32000\nmax_context_tokens: 4096\npublished_params: 6.74e9\n"
      "sources: [test]\n";
  const InputError e = model_error(text);
  EXPECT_EQ(e.field(), "published_params");
  EXPECT_EQ(e.line(), 10);
  EXPECT_NE(e.message().find("more than 10% apart"), std::string::npos) << e.what();
}

TEST_F(BadCatalogFile, ModelRepositoryMustBeOwnerSlashName) {
  // Llama-2-7B's shape (6.74e9 parameters) with a repository id that is not owner/name.
  const std::string text =
      "name: Repo\nlayers: 32\nhidden: 4096\nheads: 32\nkv_heads: 32\nhead_dim: 128\n"
      "ffn: 11008\nvocab: 32000\nmax_context_tokens: 4096\npublished_params: 6.74e9\n"
      "hf_repo: Llama-2-7b-hf\nsources: [test]\n";
  const InputError e = model_error(text);
  EXPECT_EQ(e.field(), "hf_repo");
  EXPECT_EQ(e.line(), 11);
  EXPECT_NE(e.message().find("owner/name"), std::string::npos) << e.what();
}

TEST_F(BadCatalogFile, ModelFieldMustBeAWholeNumber) {
  const std::string text =
      "name: Bad\nlayers: 32.5\nhidden: 4096\nheads: 32\nkv_heads: 32\nhead_dim: 128\n"
      "ffn: 11008\nvocab: 32000\nmax_context_tokens: 4096\npublished_params: 6.74e9\n"
      "sources: [test]\n";
  const InputError e = model_error(text);
  EXPECT_EQ(e.field(), "layers");
  EXPECT_EQ(e.line(), 2);
}

TEST_F(BadCatalogFile, CatalogLoadReportsTheBadFile) {
  write("gpus/good.yaml", good_gpu());
  const std::string bad = write("gpus/bad.yaml", good_gpu("tdp", "tdp: 400"));
  try {
    Catalog::load(dir_);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), bad);
    EXPECT_EQ(e.line(), 7);
    EXPECT_EQ(e.field(), "tdp");
  }
}

}  // namespace
}  // namespace fleetsim::hw

// ---- the full catalog ----------------------------------------------------------------------

namespace fleetsim::hw {
namespace {

// Total and active parameter counts derived from the shape must match the published
// figures within 1 % — or, where the publisher rounds (DeepSeek's "37B"), within half the
// rounding unit when that is larger.
TEST(Catalog, EveryModelMatchesItsPublishedCountsWithinOnePercent) {
  for (const auto& [id, m] : shipped().models()) {
    const double tol_total = std::max(0.01 * m.published_params, m.published_rounding / 2);
    EXPECT_NEAR(m.derived_params(), m.published_params, tol_total) << id;
    if (m.is_moe()) {
      const double tol = std::max(0.01 * m.published_active_params, m.published_rounding / 2);
      EXPECT_NEAR(m.derived_active_params(), m.published_active_params, tol) << id;
    } else {
      EXPECT_EQ(m.derived_active_params(), m.derived_params()) << id;
    }
  }
}

TEST(Catalog, MixtralCountsByHand) {
  // Mixtral-8x7B: attention per layer 2·4096·4096 + 2·4096·1024 (GQA, 8 KV heads of 128)
  //   = 41,943,040; router 4096·8 = 32,768; one expert 3·4096·14336 = 176,160,768;
  //   norms 2·4096 = 8,192. Per layer (all 8 experts): 41,943,040 + 32,768 + 8·176,160,768
  //   + 8,192 = 1,451,270,144; ·32 = 46,440,644,608; embeddings 2·32000·4096 = 262,144,000;
  //   final norm 4,096 → 46,702,792,704 (published 46.7B).
  //   Active (top-2): per layer 41,943,040 + 32,768 + 2·176,160,768 + 8,192 = 394,305,536;
  //   ·32 = 12,617,777,152 + 262,144,000 + 4,096 = 12,879,925,248 (published 12.9B).
  const ModelSpec& m = shipped().model("mixtral-8x7b");
  EXPECT_EQ(m.derived_params(), 46702792704.0);
  EXPECT_EQ(m.derived_active_params(), 12879925248.0);
}

TEST(Catalog, DeepSeekMlaAttentionByHand) {
  // DeepSeek-V3 MLA, per layer: q_a 7168·1536 + norm 1536 + q_b 1536·128·(128+64)
  //   = 11,010,048 + 1,536 + 37,748,736 = 48,760,320;
  //   kv_a 7168·(512+64) + norm 512 + kv_b 512·128·(128+128) = 4,128,768 + 512 + 16,777,216
  //   = 20,906,496; o 128·128·7168 = 117,440,512. Total 187,107,328.
  const ModelSpec& m = shipped().model("deepseek-v3");
  ASSERT_TRUE(m.mla.has_value());
  EXPECT_EQ(m.attention_params_per_layer(), 187107328.0);
  // KV cache: the 576-element latent per layer, not 2·heads·head_dim = 32,768 elements.
  EXPECT_EQ(m.kv_elements_per_token_per_layer(), 576.0);
  EXPECT_EQ(m.kv_bytes_per_token(1), 61 * 576.0);  // FP8 latent over 61 layers = 35,136 B
}

TEST_F(BadCatalogFile, NodeNamingAnUnknownGpuIsRejectedWhereItIsWritten) {
  write("interconnects/pcie5-x16.yaml",
        "name: PCIe 5\nkind: host\nbandwidth: 64GB/s\nlatency: 3us\nsources: [spec]\n");
  write("gpus/test-gpu.yaml", good_gpu());
  const std::string node = write("nodes/box.yaml",
                                 "name: Box\n"
                                 "gpu: test-gpuu\n"  // line 2: a typo
                                 "gpus_per_node: 8\nnics_per_node: 0\nhost_memory: 1TB\n"
                                 "node_power: 10kW\nnodes_per_rack: 4\nsources: [spec]\n");
  try {
    Catalog::load(dir_);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), node);
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.field(), "gpu");
    EXPECT_NE(e.message().find("did you mean 'test-gpu'"), std::string::npos) << e.what();
  }
}

TEST_F(BadCatalogFile, ComputeTwinMustExistAndShareTheTensorRates) {
  write("interconnects/pcie5-x16.yaml",
        "name: PCIe 5\nkind: host\nbandwidth: 64GB/s\nlatency: 3us\nsources: [spec]\n");
  write("gpus/test-gpu.yaml", good_gpu());
  // Same 300 TFLOP/s BF16, more bandwidth: a valid twin (line 14 = the 13 lines + 1).
  write("gpus/twin.yaml",
        good_gpu("memory_bandwidth", "memory_bandwidth: 3TB/s") + "compute_twin: test-gpu\n");
  EXPECT_EQ(Catalog::load(dir_).gpu("twin").compute_twin, "test-gpu");
  auto load_error = [&] {
    try {
      Catalog::load(dir_);
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << "no InputError";
    return InputError("none");
  };
  // Another BF16 rate: its calibration fractions would not describe this GPU.
  const std::string bad = write("gpus/twin.yaml", good_gpu("bf16_dense", "bf16_dense: 400TFLOP/s") +
                                                      "compute_twin: test-gpu\n");
  InputError e = load_error();
  EXPECT_EQ(e.file(), bad);
  EXPECT_EQ(e.line(), 14);
  EXPECT_EQ(e.field(), "compute_twin");
  EXPECT_NE(e.message().find("bf16_dense 400 TFLOP/s differs from test-gpu's 300 TFLOP/s"),
            std::string::npos)
      << e.what();
  // A typo, with did-you-mean.
  write("gpus/twin.yaml", good_gpu() + "compute_twin: test-gpuu\n");
  e = load_error();
  EXPECT_EQ(e.field(), "compute_twin");
  EXPECT_NE(e.message().find("did you mean 'test-gpu'"), std::string::npos) << e.what();
}

TEST_F(BadCatalogFile, InterconnectWithoutUnitIsRejected) {
  const std::string p =
      write("interconnects/x.yaml",
            "name: X\nkind: scaleout\nbandwidth: 50\nlatency: 1us\nsources: [s]\n");
  try {
    load_interconnect_file(p);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.field(), "bandwidth");
    EXPECT_NE(e.message().find("with a unit"), std::string::npos) << e.what();
  }
}

TEST_F(BadCatalogFile, GpuWithoutEmpiricalSectionIsAssumedAndSaysSo) {
  const GpuSpec g =
      load_gpu_file(write("gpus/test-gpu.yaml",
                          "name: T\nvendor: T\nmemory: 24GB\nmemory_bandwidth: 1TB/s\n"
                          "bf16_dense: 100TFLOP/s\nhost_link: pcie4-x16\ntdp: 300W\n"
                          "sources: [s]\n"));
  EXPECT_EQ(g.efficiency_basis, "assumed");
  EXPECT_EQ(g.compute_efficiency, GpuSpec::kAssumedComputeEfficiency);
  EXPECT_EQ(g.memory_efficiency, GpuSpec::kAssumedMemoryEfficiency);
}

}  // namespace
}  // namespace fleetsim::hw
