// Tests for sim/validation/error_band: the most specific group with enough cases, its
// statistics, and what a report says with it.
#include "sim/validation/error_band.h"

#include <gtest/gtest.h>

namespace fleetsim::validation {
namespace {

BandCase c(const char* engine, const char* kind, const char* fam, double abs_err, double opt) {
  BandCase b;
  b.engine = engine;
  b.model_kind = kind;
  b.gpu_family = fam;
  b.category = "throughput";
  b.abs_error = abs_err;
  b.optimism = opt;
  return b;
}

TEST(ErrorBand, MostSpecificGroupWithEnoughCases) {
  std::vector<BandCase> v;
  // 4 MoE cases on Blackwell with trtllm-1: errors 0.1, 0.2, 0.3, 0.4.
  for (double e : {0.1, 0.2, 0.3, 0.4}) v.push_back(c("trtllm-1", "moe", "NVIDIA Blackwell", e, e));
  // 2 MoE cases on Blackwell with sglang, 3 dense on Hopper.
  v.push_back(c("sglang", "moe", "NVIDIA Blackwell", 0.5, -0.5));
  v.push_back(c("sglang", "moe", "NVIDIA Blackwell", 0.7, -0.7));
  for (double e : {0.05, 0.06, 0.07}) v.push_back(c("vllm-v1", "dense", "NVIDIA Hopper", e, e));

  // kind × family × engine has 4 cases (= kMinBandCases): median of 0.1..0.4 = 0.25;
  // 75th percentile at position 0.75·3 = 2.25 → 0.3 + 0.25·0.1 = 0.325.
  auto b = error_band(v, "moe", "NVIDIA Blackwell", "trtllm-1");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->group, "MoE on NVIDIA Blackwell, trtllm-1");
  EXPECT_EQ(b->n, 4);
  EXPECT_NEAR(b->median_abs, 0.25, 1e-12);
  EXPECT_NEAR(b->p75_abs, 0.325, 1e-12);
  EXPECT_NEAR(b->capacity_factor_p75(), 1.325, 1e-12);
  EXPECT_NEAR(b->median_optimism, 0.25, 1e-12);

  // sglang has only 2 there: falls back to kind × family (6 cases: median of
  // 0.1, 0.2, 0.3, 0.4, 0.5, 0.7 = 0.35).
  b = error_band(v, "moe", "NVIDIA Blackwell", "sglang");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->group, "MoE on NVIDIA Blackwell");
  EXPECT_EQ(b->n, 6);
  EXPECT_NEAR(b->median_abs, 0.35, 1e-12);

  // Dense on Hopper: 3 cases < 4 at every level with "dense"; then all cases (9).
  b = error_band(v, "dense", "NVIDIA Hopper", "vllm-v1");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->group, "all cases");
  EXPECT_EQ(b->n, 9);

  EXPECT_FALSE(error_band({}, "moe", "x", "y"));
}

TEST(ErrorBand, DescribeSaysDirectionAndCapacity) {
  ErrorBand b;
  b.group = "MoE on NVIDIA Blackwell, trtllm-1";
  b.n = 12;
  b.median_abs = 0.2;
  b.p75_abs = 0.4;
  b.median_optimism = -0.1;
  EXPECT_EQ(describe(b),
            "MoE on NVIDIA Blackwell, trtllm-1: median error ±20 % (pessimistic by 10 % at the "
            "median) over 12 published cases; at the 75th percentile (40 %) the answer would need "
            "1.40x the capacity");
}

TEST(ErrorBand, ShippedFileLoads) {
  // The suite's bands file is written by `fleetsim validate --update-baseline`.
  const auto v = load_band_cases(default_bands_file());
  EXPECT_GE(v.size(), 120u);
}

}  // namespace
}  // namespace fleetsim::validation
