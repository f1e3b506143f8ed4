// Number formats, the exact random inputs and the error metrics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "kernels/common/numeric.h"
#include "kernels/common/rand.h"

namespace fleetsim::kernels {
namespace {

TEST(Bf16, ConvertsAndRoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  // 1 + 2^-8 is halfway between 1 (0x3F80) and 1 + 2^-7 (0x3F81): ties to even.
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3·2^-8 is halfway between 0x3F81 and 0x3F82: ties to even (0x3F82).
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  // Just above the halfway point rounds up.
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(bf16_nonfinite(0xFFFF));  // the poison pattern (memset 0xFF) is NaN
  EXPECT_TRUE(bf16_nonfinite(0x7F80));
  EXPECT_FALSE(bf16_nonfinite(0x3F80));
}

TEST(Fp8E4m3, DecodesTheFormat) {
  EXPECT_EQ(fp8_e4m3_to_float(0x38), 1.0f);  // exp 7, mantissa 0
  EXPECT_EQ(fp8_e4m3_to_float(0xB8), -1.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x3C), 1.5f);                  // mantissa 4/8
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);                // largest finite
  EXPECT_EQ(fp8_e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_float(0x00), 0.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0xFF)));
}

TEST(RandomInputs, Bf16ValuesAreExactDeterministicAndCentred) {
  double sum = 0;
  std::set<float> distinct;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const float v = rand_bf16_exact(42, static_cast<std::uint64_t>(i), 1.0f);
    ASSERT_EQ(bf16_to_float(float_to_bf16(v)), v) << "not exact in bf16: " << v;
    ASSERT_LE(std::fabs(v), 255.0f / 256.0f);
    ASSERT_EQ(v, rand_bf16_exact(42, static_cast<std::uint64_t>(i), 1.0f));
    const float v4 = rand_bf16_exact(42, static_cast<std::uint64_t>(i), 4.0f);
    ASSERT_EQ(v4, 4.0f * v);
    ASSERT_EQ(bf16_to_float(float_to_bf16(v4)), v4);
    sum += v;
    distinct.insert(v);
  }
  EXPECT_LT(std::fabs(sum / n), 0.01);
  EXPECT_EQ(distinct.size(), 511u);
  int same = 0;
  for (int i = 0; i < 1000; ++i)
    same += rand_bf16_exact(1, static_cast<std::uint64_t>(i), 1.0f) ==
            rand_bf16_exact(2, static_cast<std::uint64_t>(i), 1.0f);
  EXPECT_LT(same, 20);  // another seed gives other inputs
}

TEST(RandomInputs, Fp8BitsAreNormalValuesInRange) {
  for (int i = 0; i < 100000; ++i) {
    const float v = fp8_e4m3_to_float(rand_fp8_e4m3_bits(7, static_cast<std::uint64_t>(i)));
    ASSERT_FALSE(std::isnan(v));
    ASSERT_GE(std::fabs(v), 0.125f);
    ASSERT_LE(std::fabs(v), 3.75f);
  }
}

TEST(ErrorStats, MeasuresAndJudges) {
  const Tolerance tol;
  EXPECT_TRUE(tol.pass(compare({1, 2, 3}, {1, 2, 3})));
  EXPECT_FALSE(tol.pass(compare({}, {})));  // nothing compared never passes
  const auto nan = compare({1, std::numeric_limits<double>::quiet_NaN(), 3}, {1, 2, 3});
  EXPECT_EQ(nan.nonfinite, 1u);
  EXPECT_FALSE(tol.pass(nan));
  // 1000 values, one off by 0.5: relative L2 is small but the max error is large against
  // the RMS, which the second criterion catches.
  std::vector<double> ref(1000, 1.0), out(1000, 1.0);
  out[500] = 1.5;
  const auto e = compare(out, ref);
  EXPECT_LT(e.rel_l2, 0.02);
  EXPECT_NEAR(e.max_over_rms(), 0.5, 1e-12);
  EXPECT_FALSE(tol.pass(e));
  EXPECT_NEAR(compare({1.001, 2}, {1, 2}).rel_l2, 0.001 / std::sqrt(5.0), 1e-9);
}

TEST(SampleIndices, AllWhenSmallEdgesAndDistinctWhenLarge) {
  EXPECT_EQ(sample_indices(5, 8, 1), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(sample_indices(0, 8, 1).empty());
  const auto s = sample_indices(10000, 40, 3);
  ASSERT_EQ(s.size(), 40u);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::set<int>(s.begin(), s.end()).size(), 40u);
  for (int must : {0, 1, 63, 64, 127, 128, 5000, 9998, 9999})
    EXPECT_TRUE(std::binary_search(s.begin(), s.end(), must)) << must;
  EXPECT_GE(s.front(), 0);
  EXPECT_LT(s.back(), 10000);
  EXPECT_EQ(sample_indices(10000, 40, 3), s);  // seeded
  EXPECT_EQ(sample_indices(200, 3, 9).size(), 3u);
}

}  // namespace
}  // namespace fleetsim::kernels
