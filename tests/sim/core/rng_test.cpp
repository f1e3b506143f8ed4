// Tests for sim/core/rng: determinism, known answers, stream independence and the moments of
// every sampler. Moment tolerances are 5 standard errors of the estimator at the sample size
// used (a false failure has probability < 1e-6 per check; with a fixed seed the outcome is
// fixed anyway, the margin only guards against an unlucky seed choice).
#include "sim/core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace fleetsim {
namespace {

constexpr int kN = 1'000'000;

struct Moments {
  double mean = 0, var = 0;
};

template <class Draw>
Moments moments(Draw draw, int n = kN) {
  // Welford's running mean and variance.
  double mean = 0, m2 = 0;
  for (int i = 1; i <= n; ++i) {
    const double x = draw();
    const double d = x - mean;
    mean += d / i;
    m2 += d * (x - mean);
  }
  return {mean, m2 / (n - 1)};
}

TEST(Rng, KnownAnswersMatchReferenceXoshiro256StarStar) {
  // Expected values from an independent Python transcription of the reference splitmix64
  // and xoshiro256** (Blackman & Vigna); its splitmix64(0) first output is the published
  // 0xe220a8397b1dcdaf, which checks the transcription.
  Rng r0(0);
  EXPECT_EQ(r0.next_u64(), 0x99ec5f36cb75f2b4ULL);
  EXPECT_EQ(r0.next_u64(), 0xbf6e1f784956452aULL);
  EXPECT_EQ(r0.next_u64(), 0x1a5f849d4933e6e0ULL);
  Rng r42(42);
  EXPECT_EQ(r42.next_u64(), 0x15780b2e0c2ec716ULL);
  EXPECT_EQ(r42.next_u64(), 0x6104d9866d113a7eULL);
  // uniform01 = (first output >> 11) · 2^-53 = 0x15780b2e0c2ec716 >> 11 · 2^-53.
  Rng u42(42);
  EXPECT_DOUBLE_EQ(u42.uniform01(), static_cast<double>(0x15780b2e0c2ec716ULL >> 11) * 0x1.0p-53);
}

TEST(Rng, StreamSeedIsSplitmixOfSeedXorFnv1a) {
  // fnv1a64("arrivals") = 0xb10bc22ca203cc53; stream seed = splitmix64(7 ^ that); the first
  // two outputs of that stream, from the Python reference.
  Rng s = RngStreams(7).stream("arrivals");
  EXPECT_EQ(s.next_u64(), 0x459cf0e345eed278ULL);
  EXPECT_EQ(s.next_u64(), 0x107af3f9e284ed6fULL);
}

TEST(Rng, SameSeedSameSequenceDifferentSeedDifferent) {
  Rng a(123), b(123), c(124);
  int same_as_c = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    same_as_c += x == c.next_u64() ? 1 : 0;
  }
  // Two independent 64-bit streams agree at a position with probability 2^-64.
  EXPECT_EQ(same_as_c, 0);
}

TEST(Rng, StreamsAreReproducibleAndIndependent) {
  RngStreams streams(2024);
  Rng a1 = streams.stream("arrivals"), a2 = streams.stream("arrivals");
  Rng l = streams.stream("lengths");
  Rng other_seed = RngStreams(2025).stream("arrivals");
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a1.next_u64(), a2.next_u64());
  EXPECT_NE(streams.stream("arrivals").next_u64(), l.next_u64());
  EXPECT_NE(streams.stream("arrivals").next_u64(), other_seed.next_u64());

  // Correlation of paired uniforms from two streams: for independent streams the sample
  // correlation has standard error 1/sqrt(n) = 1e-3 at n = 1e6; allow 5 SE.
  Rng x = streams.stream("arrivals"), y = streams.stream("lengths");
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  for (int i = 0; i < kN; ++i) {
    const double u = x.uniform01(), v = y.uniform01();
    sx += u, sy += v, sxx += u * u, syy += v * v, sxy += u * v;
  }
  const double n = kN;
  const double cov = sxy / n - (sx / n) * (sy / n);
  const double corr =
      cov / std::sqrt((sxx / n - (sx / n) * (sx / n)) * (syy / n - (sy / n) * (sy / n)));
  EXPECT_NEAR(corr, 0.0, 5e-3);
}

TEST(Rng, Uniform01RangeMeanVariance) {
  Rng r(1);
  for (int i = 0; i < 10000; ++i) {
    const double u = r.uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    const double v = r.uniform01_open_low();
    ASSERT_GT(v, 0.0);
    ASSERT_LE(v, 1.0);
  }
  const Moments m = moments([&] { return r.uniform01(); });
  // U(0,1): mean 1/2, variance 1/12. SE(mean) = sqrt(1/12/n) = 2.89e-4 → 5 SE = 1.44e-3.
  EXPECT_NEAR(m.mean, 0.5, 1.44e-3);
  // SE(var) = sqrt((μ4 - σ⁴)/n) with μ4 = 1/80, σ⁴ = 1/144: sqrt(5.56e-3/1e6) = 7.45e-5 → 5 SE.
  EXPECT_NEAR(m.var, 1.0 / 12.0, 3.73e-4);
}

TEST(Rng, UniformU64IsInRangeAndUnbiased) {
  Rng r(2);
  EXPECT_EQ(r.uniform_u64(1), 0u);  // the only value in [0, 1)
  const uint64_t big = (1ULL << 63) + 1;
  for (int i = 0; i < 1000; ++i) ASSERT_LT(r.uniform_u64(big), big);

  // Six faces, n = 600000 rolls: each count ~ Binomial(n, 1/6), mean 100000,
  // SD sqrt(n·(1/6)·(5/6)) = 288.7 → 5 SD = 1443.
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 600000; ++i) ++counts[r.uniform_u64(6)];
  for (int c : counts) EXPECT_NEAR(c, 100000, 1443);
}

TEST(Rng, NormalMeanVariance) {
  Rng r(3);
  const Moments m = moments([&] { return r.normal(); });
  // N(0,1): SE(mean) = 1/sqrt(n) = 1e-3 → 5e-3; SE(var) = sqrt(2/n) = 1.41e-3 → 7.07e-3.
  EXPECT_NEAR(m.mean, 0.0, 5e-3);
  EXPECT_NEAR(m.var, 1.0, 7.07e-3);
}

TEST(Rng, ExponentialMeanVariance) {
  Rng r(4);
  const Moments m = moments([&] { return r.exponential(2.0); });
  // Exp(mean 2): variance 4. SE(mean) = 2/sqrt(n) = 2e-3 → 1e-2.
  EXPECT_NEAR(m.mean, 2.0, 1e-2);
  // μ4 = 9·mean⁴ = 144, σ⁴ = 16: SE(var) = sqrt(128/n) = 1.13e-2 → 5 SE = 5.66e-2.
  EXPECT_NEAR(m.var, 4.0, 5.66e-2);
}

TEST(Rng, GammaShapeAboveOneMeanVariance) {
  Rng r(5);
  const Moments m = moments([&] { return r.gamma(3.0, 2.0); });
  // Gamma(k=3, θ=2): mean kθ = 6, variance kθ² = 12. SE(mean) = sqrt(12/n) = 3.46e-3 → 1.73e-2.
  EXPECT_NEAR(m.mean, 6.0, 1.73e-2);
  // Central μ4 = 3k(k+2)θ⁴ = 720, σ⁴ = 144: SE(var) = sqrt(576/n) = 0.024 → 5 SE = 0.12.
  EXPECT_NEAR(m.var, 12.0, 0.12);
}

TEST(Rng, GammaShapeBelowOneMeanVariance) {
  Rng r(6);
  const Moments m = moments([&] { return r.gamma(0.25, 4.0); });
  // Gamma(k=0.25, θ=4): mean 1, variance 4. SE(mean) = sqrt(4/n) = 2e-3 → 1e-2.
  EXPECT_NEAR(m.mean, 1.0, 1e-2);
  // μ4 = 3k(k+2)θ⁴ = 3·0.25·2.25·256 = 432, σ⁴ = 16: SE(var) = sqrt(416/n) = 0.0204 → 0.102.
  EXPECT_NEAR(m.var, 4.0, 0.102);
}

TEST(Rng, GammaShapeOneIsExponential) {
  Rng r(7);
  // Gamma(1, θ) is Exp(mean θ): P(X > θ) = e^-1 = 0.3679. SE = sqrt(p(1-p)/n) = 4.82e-4 → 5 SE.
  int above = 0;
  for (int i = 0; i < kN; ++i) above += r.gamma(1.0, 3.0) > 3.0 ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(above) / kN, std::exp(-1.0), 2.41e-3);
}

}  // namespace
}  // namespace fleetsim
