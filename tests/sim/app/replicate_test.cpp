// Tests for sim/app/replicate: Student's t quantiles and the confidence interval of a mean,
// against hand arithmetic.
#include "sim/app/replicate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fleetsim::app {
namespace {

TEST(Replications, StudentTQuantiles) {
  EXPECT_DOUBLE_EQ(t_quantile_95(1), 12.706);
  EXPECT_DOUBLE_EQ(t_quantile_95(9), 2.262);
  EXPECT_DOUBLE_EQ(t_quantile_95(30), 2.042);
  EXPECT_DOUBLE_EQ(t_quantile_95(500), 1.960);
  EXPECT_THROW(t_quantile_95(0), std::invalid_argument);
}

TEST(Replications, MeanAndConfidenceIntervalByHand) {
  // Seeds 1…4 on two threads, metric x = seed and y = 7 (constant):
  // mean x = 2.5; sample s.d. = sqrt(((1.5² + 0.5²)·2) / 3) = sqrt(5/3) = 1.29099;
  // half-width = t(0.975, 3) · s / √4 = 3.182 · 1.29099 / 2 = 2.05397. y: ± 0.
  const Replications r = replicate(4, 1, 2, [](uint64_t seed) {
    return std::vector<std::pair<std::string, double>>{{"x", static_cast<double>(seed)},
                                                       {"y", 7.0}};
  });
  ASSERT_EQ(r.seeds, (std::vector<uint64_t>{1, 2, 3, 4}));
  const MetricSpread& x = r.metrics.at("x");
  EXPECT_DOUBLE_EQ(x.mean, 2.5);
  EXPECT_NEAR(x.ci95, 3.182 * std::sqrt(5.0 / 3.0) / 2.0, 1e-12);
  EXPECT_EQ(x.values, (std::vector<double>{1, 2, 3, 4}));  // in seed order whatever the threads
  EXPECT_DOUBLE_EQ(x.min, 1);
  EXPECT_DOUBLE_EQ(x.max, 4);
  EXPECT_DOUBLE_EQ(r.metrics.at("y").ci95, 0.0);
  EXPECT_EQ(r.order, (std::vector<std::string>{"x", "y"}));
  EXPECT_THROW(
      replicate(1, 1, 1, [](uint64_t) { return std::vector<std::pair<std::string, double>>{}; }),
      std::invalid_argument);
}

}  // namespace
}  // namespace fleetsim::app
