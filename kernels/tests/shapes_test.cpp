// Shapes come from the model catalog; the kernels' constraints hold for all of them, and
// the device names map to catalog GPU ids.
#include "kernels/common/shapes.h"

#include <gtest/gtest.h>

#include <map>

#include "kernels/common/gpu_ids.h"

namespace fleetsim::kernels {
namespace {

const hw::Catalog& catalog() {
  static const hw::Catalog c =
      hw::Catalog::load(std::string(FLEETSIM_SOURCE_DIR) + "/hw_models/catalog");
  return c;
}

std::map<std::string, std::pair<int, int>> by_proj(const std::string& model) {
  std::map<std::string, std::pair<int, int>> m;
  for (const auto& s : model_gemm_shapes(catalog().model(model))) m[s.proj] = {s.n, s.k};
  return m;
}

TEST(Shapes, Llama31) {
  auto s8 = by_proj("llama-3.1-8b");
  EXPECT_EQ(s8["qkv"], std::make_pair(6144, 4096));  // (32 + 2·8)·128
  EXPECT_EQ(s8["o"], std::make_pair(4096, 4096));
  EXPECT_EQ(s8["gate_up"], std::make_pair(28672, 4096));
  EXPECT_EQ(s8["down"], std::make_pair(4096, 14336));
  auto s70 = by_proj("llama-3.1-70b");
  EXPECT_EQ(s70["qkv"], std::make_pair(10240, 8192));  // (64 + 2·8)·128
  EXPECT_EQ(s70["o"], std::make_pair(8192, 8192));
  EXPECT_EQ(s70["gate_up"], std::make_pair(57344, 8192));
  EXPECT_EQ(s70["down"], std::make_pair(8192, 28672));
}

TEST(Shapes, MixtralAndDeepSeekV3) {
  auto mx = by_proj("mixtral-8x7b");
  EXPECT_EQ(mx.size(), 4u);  // no dense MLP
  EXPECT_EQ(mx["expert_gate_up"], std::make_pair(28672, 4096));
  EXPECT_EQ(mx["expert_down"], std::make_pair(4096, 14336));
  auto ds = by_proj("deepseek-v3");
  EXPECT_EQ(ds["q_a"], std::make_pair(1536, 7168));
  EXPECT_EQ(ds["q_b"], std::make_pair(24576, 1536));  // 128 heads · (128 + 64)
  EXPECT_EQ(ds["kv_a"], std::make_pair(576, 7168));   // 512 latent + 64 rope key
  EXPECT_EQ(ds["kv_b"], std::make_pair(32768, 512));  // 128 heads · (128 + 128)
  EXPECT_EQ(ds["o"], std::make_pair(7168, 16384));
  EXPECT_EQ(ds["gate_up"], std::make_pair(36864, 7168));
  EXPECT_EQ(ds["down"], std::make_pair(7168, 18432));
  EXPECT_EQ(ds["expert_gate_up"], std::make_pair(4096, 7168));
  EXPECT_EQ(ds["expert_down"], std::make_pair(7168, 2048));
  const MoeShape m = model_moe(catalog().model("deepseek-v3"));
  EXPECT_EQ(m.experts, 256);
  EXPECT_EQ(m.top_k, 8);
  EXPECT_EQ(model_moe(catalog().model("mixtral-8x7b")).top_k, 2);
  EXPECT_THROW(model_moe(catalog().model("llama-3.1-8b")), std::invalid_argument);
}

TEST(Shapes, KernelConstraintsHoldForEveryShape) {
  std::vector<GemmShape> all;
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"})
    for (const auto& s : model_gemm_shapes(catalog().model(id))) all.push_back(s);
  const auto unique = unique_gemm_shapes(all);
  EXPECT_LT(unique.size(), all.size());  // Mixtral's shapes repeat Llama 3.1 8B's
  for (const auto& s : unique) {
    // 16-byte rows for cp.async (k % 8) and FP8 cuBLASLt (k, n % 16).
    EXPECT_EQ(s.k % 16, 0) << s.model << " " << s.proj;
    EXPECT_EQ(s.n % 16, 0) << s.model << " " << s.proj;
  }
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"}) {
    const AttnShape a = model_attention(catalog().model(id));
    EXPECT_EQ(a.head_dim, 128);
    EXPECT_EQ(a.heads % a.kv_heads, 0);
    EXPECT_LE(a.heads / a.kv_heads, 16);  // the decode kernel's largest GQA group
  }
  EXPECT_EQ(gemm_token_counts().front(), 1);
  EXPECT_EQ(gemm_token_counts().back(), 16384);
}

TEST(GpuIds, DeviceNamesMapToCatalogIds) {
  EXPECT_EQ(catalog_gpu_id("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(catalog_gpu_id("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(catalog_gpu_id("NVIDIA H100 NVL"), "");
  EXPECT_EQ(catalog_gpu_id("NVIDIA H200"), "h200-sxm");
  EXPECT_EQ(catalog_gpu_id("NVIDIA H200 NVL"), "");
  EXPECT_EQ(catalog_gpu_id("NVIDIA H800"), "h800-sxm");
  EXPECT_EQ(catalog_gpu_id("NVIDIA A100-SXM4-80GB"), "a100-80gb-sxm");
  EXPECT_EQ(catalog_gpu_id("NVIDIA A100-SXM4-40GB"), "");
  EXPECT_EQ(catalog_gpu_id("NVIDIA B200"), "b200");
  EXPECT_EQ(catalog_gpu_id("NVIDIA GB200"), "gb200");
  EXPECT_EQ(catalog_gpu_id("NVIDIA L40S"), "l40s");
  EXPECT_EQ(catalog_gpu_id("NVIDIA GeForce RTX 4090"), "rtx-4090");
  EXPECT_EQ(catalog_gpu_id("NVIDIA GeForce RTX 5090"), "rtx-5090");
  EXPECT_EQ(catalog_gpu_id("Tesla T4"), "");
  // Every id it returns is in the catalog.
  for (const char* name : {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200",
                           "NVIDIA H800", "NVIDIA A100-SXM4-80GB", "NVIDIA B200", "NVIDIA GB200",
                           "NVIDIA L40S", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090"})
    EXPECT_NO_THROW(catalog().gpu(catalog_gpu_id(name))) << name;
}

}  // namespace
}  // namespace fleetsim::kernels
