// Tests for sim/workload/distribution: each form's moments (5-standard-error tolerances at
// the stated sample size), bounds, token rounding, and YAML parsing with located errors.
#include "sim/workload/distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "hw_models/error.h"

namespace fleetsim::workload {
namespace {

constexpr int kN = 200'000;
const std::string kTestsDir = std::string(FLEETSIM_SOURCE_DIR) + "/tests";

struct Moments {
  double mean = 0, sd = 0;
};

Moments moments(const Distribution& d, Rng& rng, int n = kN) {
  double s = 0, ss = 0;
  for (int i = 0; i < n; ++i) {
    const double x = d.sample(rng);
    s += x;
    ss += x * x;
  }
  const double mean = s / n;
  return {mean, std::sqrt((ss / n - mean * mean) * n / (n - 1))};
}

// Parses `yaml` (a mapping holding `key`) as the section "workload" of "test.yaml".
std::unique_ptr<Distribution> parse(const std::string& yaml, const std::string& key, Quantity q) {
  auto src = std::make_shared<yaml::Source>();
  src->file = "test.yaml";
  yaml::Map m(YAML::Load(yaml), src, "workload");
  return parse_distribution(m, key, q, kTestsDir);
}

// The InputError from parsing, or a test failure.
InputError parse_error(const std::string& yaml, const std::string& key, Quantity q) {
  try {
    parse(yaml, key, q);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError for: " << yaml;
  return InputError("none");
}

TEST(Distribution, FixedAlwaysReturnsItsValue) {
  auto d = make_fixed(512);
  Rng rng(1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(d->sample(rng), 512.0);
  EXPECT_EQ(d->mean(), 512.0);
  EXPECT_EQ(d->describe(), "fixed(512)");
}

TEST(Distribution, UniformIntegerIsInclusiveWithRightMoments) {
  auto d = make_uniform(128, 1024, true);
  Rng rng(2);
  double lo = 1e9, hi = 0;
  bool integral = true;
  for (int i = 0; i < kN; ++i) {
    const double x = d->sample(rng);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    integral = integral && x == std::floor(x);
  }
  EXPECT_TRUE(integral);
  EXPECT_EQ(lo, 128.0);   // both ends are reachable: each has probability 1/897
  EXPECT_EQ(hi, 1024.0);
  Rng rng2(3);
  const Moments m = moments(*d, rng2);
  // Discrete uniform on 897 values: mean (128 + 1024)/2 = 576, variance (897² - 1)/12 =
  // 67050.67, SD 258.94. SE(mean) = 258.94/sqrt(2e5) = 0.579 → 5 SE = 2.9.
  EXPECT_NEAR(m.mean, 576.0, 2.9);
  // SE(SD) ≈ SD·sqrt((κ - 1)/(4n)) with kurtosis κ = 1.8: 258.94·sqrt(0.8/8e5) = 0.259 → 1.3.
  EXPECT_NEAR(m.sd, 258.94, 1.3);
  EXPECT_EQ(d->mean(), 576.0);
}

TEST(Distribution, UniformContinuous) {
  auto d = make_uniform(1.0, 3.0, false);
  Rng rng(4);
  const Moments m = moments(*d, rng);
  // U(1, 3): mean 2, SD 2/sqrt(12) = 0.5774; SE(mean) = 0.5774/sqrt(2e5) = 1.29e-3 → 6.5e-3.
  EXPECT_NEAR(m.mean, 2.0, 6.5e-3);
  // SE(SD) = 0.5774·sqrt(0.8/8e5) = 5.77e-4 → 2.9e-3.
  EXPECT_NEAR(m.sd, 0.5774, 2.9e-3);
}

TEST(Distribution, NormalMoments) {
  auto d = make_normal(512, 128, -INFINITY, INFINITY);
  Rng rng(5);
  const Moments m = moments(*d, rng);
  // SE(mean) = 128/sqrt(2e5) = 0.286 → 1.43; SE(SD) = 128/sqrt(2n) = 0.202 → 1.01.
  EXPECT_NEAR(m.mean, 512.0, 1.43);
  EXPECT_NEAR(m.sd, 128.0, 1.01);
  EXPECT_EQ(d->describe(), "normal(mean=512, std=128)");
}

TEST(Distribution, NormalRedrawsIntoBoundsThenClamps) {
  // Bounds [400, 600] around mean 512: every draw lands inside.
  auto d = make_normal(512, 128, 400, 600);
  Rng rng(6);
  for (int i = 0; i < 10000; ++i) {
    const double x = d->sample(rng);
    ASSERT_GE(x, 400.0);
    ASSERT_LE(x, 600.0);
  }
  // Bounds 100 SD away: 64 redraws all fail (P(inside) ~ 0), so the draw is clamped to 1000.
  auto far = make_normal(0, 1, 1000, 2000);
  EXPECT_EQ(far->sample(rng), 1000.0);
}

TEST(Distribution, LognormalMedianAndSigma) {
  auto d = make_lognormal(400, 1.0, 0, INFINITY);
  // Mean exp(μ + σ²/2) = 400·e^0.5 = 659.49.
  EXPECT_NEAR(d->mean(), 659.49, 0.01);
  Rng rng(7);
  double s = 0, ss = 0;
  int below = 0;
  for (int i = 0; i < kN; ++i) {
    const double x = d->sample(rng);
    below += x < 400 ? 1 : 0;
    const double l = std::log(x);
    s += l;
    ss += l * l;
  }
  // ln X ~ N(ln 400, 1): SE(mean) = 1/sqrt(2e5) = 2.24e-3 → 0.0112; SE(SD) = 1/sqrt(4e5)
  // = 1.58e-3 → 7.9e-3. P(X < median) = 0.5, SE sqrt(0.25/2e5) = 1.12e-3 → 5.6e-3.
  const double mean = s / kN, sd = std::sqrt(ss / kN - mean * mean);
  EXPECT_NEAR(mean, std::log(400.0), 0.0112);
  EXPECT_NEAR(sd, 1.0, 7.9e-3);
  EXPECT_NEAR(static_cast<double>(below) / kN, 0.5, 5.6e-3);
}

TEST(Distribution, ExponentialMean) {
  auto d = make_exponential(5.0);
  Rng rng(8);
  const Moments m = moments(*d, rng);
  // SE(mean) = 5/sqrt(2e5) = 0.0112 → 0.056. SD = mean; SE(SD) = 5·sqrt(8/(4n)) = 0.0158 → 0.079.
  EXPECT_NEAR(m.mean, 5.0, 0.056);
  EXPECT_NEAR(m.sd, 5.0, 0.079);
}

TEST(Distribution, EmpiricalDrawsRecordedValuesUniformly) {
  auto d = make_empirical({1, 2, 3, 10});
  EXPECT_EQ(d->mean(), 4.0);  // (1 + 2 + 3 + 10)/4
  Rng rng(9);
  std::map<double, int> counts;
  for (int i = 0; i < kN; ++i) ++counts[d->sample(rng)];
  ASSERT_EQ(counts.size(), 4u);
  // Each value: Binomial(2e5, 1/4), mean 50000, SD sqrt(2e5·0.25·0.75) = 193.6 → 5 SD = 968.
  for (auto [v, c] : counts) EXPECT_NEAR(c, 50000, 968) << v;
}

TEST(Distribution, ToTokensRoundsAndClamps) {
  EXPECT_EQ(to_tokens(0.4), 1);     // at least 1
  EXPECT_EQ(to_tokens(-3.0), 1);
  EXPECT_EQ(to_tokens(std::nan("")), 1);
  EXPECT_EQ(to_tokens(1.5), 2);     // nearest, halves away from zero
  EXPECT_EQ(to_tokens(2.49), 2);
  EXPECT_EQ(to_tokens(511.6), 512);
  EXPECT_EQ(to_tokens(1e12), INT32_MAX);
}

TEST(Distribution, MakeRejectsBadParameters) {
  EXPECT_THROW(make_uniform(5, 1, true), std::invalid_argument);
  EXPECT_THROW(make_normal(0, -1, 0, 1), std::invalid_argument);
  EXPECT_THROW(make_lognormal(0, 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(make_lognormal(1, 0, 0, 1), std::invalid_argument);
  EXPECT_THROW(make_exponential(0), std::invalid_argument);
  EXPECT_THROW(make_empirical({}), std::invalid_argument);
}

// ---- YAML ---------------------------------------------------------------------------

TEST(DistributionYaml, ScalarForms) {
  Rng rng(1);
  auto tokens = parse("prompt_tokens: 512", "prompt_tokens", Quantity::kTokens);
  EXPECT_EQ(tokens->sample(rng), 512.0);
  auto dur = parse("think_time: 150ms", "think_time", Quantity::kDuration);
  EXPECT_DOUBLE_EQ(dur->sample(rng), 0.150);  // 150 ms = 0.15 s
}

TEST(DistributionYaml, ScalarErrors) {
  // A bare number for a duration needs a unit.
  InputError e = parse_error("think_time: 2", "think_time", Quantity::kDuration);
  EXPECT_EQ(e.field(), "workload.think_time");
  EXPECT_EQ(e.file(), "test.yaml");
  e = parse_error("prompt_tokens: 0", "prompt_tokens", Quantity::kTokens);
  EXPECT_EQ(e.field(), "workload.prompt_tokens");
  e = parse_error("prompt_tokens: lots", "prompt_tokens", Quantity::kTokens);
  EXPECT_EQ(e.field(), "workload.prompt_tokens");
  e = parse_error("other: 1", "prompt_tokens", Quantity::kTokens);
  EXPECT_EQ(e.field(), "workload.prompt_tokens");
  EXPECT_NE(e.message().find("missing"), std::string::npos);
}

TEST(DistributionYaml, MappingForms) {
  auto d = parse("x: {dist: fixed, value: 64}", "x", Quantity::kTokens);
  EXPECT_EQ(d->mean(), 64.0);
  d = parse("x: {dist: uniform, min: 128, max: 1024}", "x", Quantity::kTokens);
  EXPECT_EQ(d->mean(), 576.0);  // (128 + 1024)/2
  EXPECT_EQ(d->describe(), "uniform(128..1024)");
  d = parse("x: {dist: normal, mean: 512, std: 128}", "x", Quantity::kTokens);
  EXPECT_EQ(d->mean(), 512.0);
  d = parse("x: {dist: lognormal, median: 400, sigma: 1.0}", "x", Quantity::kTokens);
  EXPECT_NEAR(d->mean(), 659.49, 0.01);  // 400·e^0.5
  d = parse("x: {dist: exponential, mean: 2s}", "x", Quantity::kDuration);
  EXPECT_EQ(d->mean(), 2.0);
  d = parse("x: {dist: uniform, min: 500ms, max: 1.5s}", "x", Quantity::kDuration);
  EXPECT_DOUBLE_EQ(d->mean(), 1.0);  // (0.5 + 1.5)/2 s
  d = parse("x: {dist: normal, mean: 1s, std: 200ms}", "x", Quantity::kDuration);
  EXPECT_DOUBLE_EQ(d->mean(), 1.0);
}

TEST(DistributionYaml, OptionalBoundsClamp) {
  // Exponential mean 1000 tokens clamped to [10, 2000]: P(X > 2000) = e^-2 = 13.5 % of draws
  // sit exactly at 2000, P(X < 10) = 1 - e^-0.01 = 1 % exactly at 10.
  auto d = parse("x: {dist: exponential, mean: 1000, min: 10, max: 2000}", "x", Quantity::kTokens);
  Rng rng(2);
  int at_max = 0;
  for (int i = 0; i < kN; ++i) {
    const double x = d->sample(rng);
    ASSERT_GE(x, 10.0);
    ASSERT_LE(x, 2000.0);
    at_max += x == 2000.0 ? 1 : 0;
  }
  // SE = sqrt(0.1353·0.8647/2e5) = 7.65e-4 → 5 SE = 3.8e-3.
  EXPECT_NEAR(static_cast<double>(at_max) / kN, std::exp(-2.0), 3.8e-3);
  EXPECT_EQ(d->describe(), "exponential(mean=1000, min=10, max=2000)");

  d = parse("x: {dist: lognormal, median: 400, sigma: 1.0, max: 800}", "x", Quantity::kTokens);
  for (int i = 0; i < 10000; ++i) ASSERT_LE(d->sample(rng), 800.0);
  d = parse("x: {dist: fixed, value: 5, min: 10}", "x", Quantity::kTokens);
  EXPECT_EQ(d->sample(rng), 10.0);
}

TEST(DistributionYaml, EmpiricalFromTraceColumn) {
  // tests/data/azure_conv_head.csv: 199 rows, ContextTokens sum 179552, GeneratedTokens sum
  // 46641 (summed with awk) → means 902.271 and 234.377.
  auto in = parse("x: {dist: empirical, trace: data/azure_conv_head.csv, column: input}", "x",
                  Quantity::kTokens);
  EXPECT_NEAR(in->mean(), 179552.0 / 199, 1e-9);
  auto out = parse("x: {dist: empirical, trace: data/azure_conv_head.csv, column: output}", "x",
                   Quantity::kTokens);
  EXPECT_NEAR(out->mean(), 46641.0 / 199, 1e-9);
  Rng rng(3);
  // Every draw is one of the recorded token counts: an integer >= 1.
  for (int i = 0; i < 1000; ++i) {
    const double x = in->sample(rng);
    ASSERT_EQ(x, std::floor(x));
    ASSERT_GE(x, 1.0);
  }
}

struct ErrorCase {
  const char* yaml;
  Quantity q;
  const char* field;    // expected InputError::field()
  const char* message;  // a fragment of the message
};

TEST(DistributionYaml, ErrorsNameTheField) {
  const ErrorCase cases[] = {
      {"x: {dist: normal, mean: 512, std: -5}", Quantity::kTokens, "workload.x.std", "std must be >= 0"},
      {"x: {dist: uniform, min: 1024, max: 128}", Quantity::kTokens, "workload.x.max", "must be >= min"},
      {"x: {dist: uniform, min: 1}", Quantity::kTokens, "workload.x.max", "uniform needs min and max"},
      {"x: {dist: lognormal, median: 400, sigma: 0}", Quantity::kTokens, "workload.x.sigma", "sigma must be > 0"},
      {"x: {dist: lognormal, median: -1, sigma: 1}", Quantity::kTokens, "workload.x.median", "median must be > 0"},
      {"x: {dist: exponential, mean: 0s}", Quantity::kDuration, "workload.x.mean", "mean must be > 0"},
      {"x: {dist: exponential, mean: 5}", Quantity::kDuration, "workload.x.mean", ""},  // no unit
      {"x: {dist: fixed, value: -1s}", Quantity::kDuration, "workload.x.value", ">= 0"},
      {"x: {dist: fixed, value: 0}", Quantity::kTokens, "workload.x.value", ">= 1"},
      {"x: {dist: gaussian, mean: 1}", Quantity::kTokens, "workload.x.dist", "unknown value"},
      {"x: {mean: 1}", Quantity::kTokens, "workload.x.dist", "missing"},
      {"x: {dist: fixed, value: 3, vlaue: 4}", Quantity::kTokens, "workload.x.vlaue", "unknown field"},
      {"x: {dist: normal, mean: 1s, std: 1s, min: -1s}", Quantity::kDuration, "workload.x.min", ">= 0"},
      {"x: {dist: empirical, trace: data/nope.csv, column: input}", Quantity::kTokens, "workload.x.trace", "cannot open"},
      {"x: {dist: empirical, trace: data/azure_conv_head.csv, column: both}", Quantity::kTokens, "workload.x.column", "unknown value"},
      {"x: {dist: empirical, trace: data/azure_conv_head.csv, column: input}", Quantity::kDuration, "workload.x.dist", "not available for durations"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    InputError e = parse_error(c.yaml, "x", c.q);
    EXPECT_EQ(e.field(), c.field);
    EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "test.yaml");
  }
}

TEST(DistributionYaml, ErrorCarriesTheLineOfTheField) {
  // "std" sits on line 4 of this document.
  InputError e = parse_error("x:\n  dist: normal\n  mean: 512\n  std: -5\n", "x", Quantity::kTokens);
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.field(), "workload.x.std");
}

}  // namespace
}  // namespace fleetsim::workload
