// The capacity search on probes whose verdict is known by hand: it brackets the threshold
// to within its resolution, from above and from below, and says when it never flips.
#include "sim/app/capacity.h"

#include <gtest/gtest.h>

namespace fleetsim::app {
namespace capacity_test {  // named: the tests build as one unit with other files

// A probe that meets the SLO exactly up to `threshold` times the traffic.
std::function<CapacityProbe(double)> up_to(double threshold) {
  return [threshold](double s) {
    CapacityProbe p;
    p.met = s <= threshold;
    p.misses = p.met ? "" : "too much";
    p.throughput_per_s = 10.0 * s;  // 10 req/s at the traffic as written
    return p;
  };
}

TEST(Capacity, BracketsTheThresholdWithinTheResolution) {
  // Meets up to 1.37x: 1 and 2 are tried (met, missed), then bisection between 1 and 2
  // until the ratio of the bracket is within 2 %: 1.37/1.02 ≤ met ≤ 1.37 < missed ≤
  // 1.37 · 1.02. Halving a ratio of 2 in log space: 2^(1/2^k) ≤ 1.02 needs k ≥ 6, so 2 + 6
  // probes.
  const Capacity c = search_capacity(up_to(1.37), 0.99);
  EXPECT_LE(c.scale_met, 1.37);
  EXPECT_GE(c.scale_met, 1.37 / 1.02);
  EXPECT_GT(c.scale_missed, 1.37);
  EXPECT_LE(c.scale_missed, 1.37 * 1.02);
  EXPECT_LE(c.scale_missed / c.scale_met, 1.02);
  EXPECT_EQ(c.probes.size(), 8u);
  EXPECT_NEAR(c.headroom(), c.scale_met - 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(c.throughput_at_capacity_per_s, 10.0 * c.scale_met);
  // Every probe's verdict is the probe's own.
  for (const auto& p : c.probes) EXPECT_EQ(p.met, p.scale <= 1.37) << p.scale;
}

TEST(Capacity, SearchesDownwardWhenTheTrafficAlreadyMisses) {
  // Meets up to 0.3x: 1 and 0.5 miss, 0.25 meets; then bisection between 0.25 and 0.5.
  const Capacity c = search_capacity(up_to(0.3), 0.99);
  EXPECT_LE(c.scale_met, 0.3);
  EXPECT_GE(c.scale_met, 0.3 / 1.02);
  EXPECT_GT(c.scale_missed, 0.3);
  EXPECT_LT(c.headroom(), 0);
  EXPECT_FALSE(c.probes.front().met);
}

TEST(Capacity, SaysWhenTheSloNeverFlips) {
  // Still met at 64x (1, 2, ..., 64: 7 probes): nothing missed.
  const Capacity more = search_capacity(up_to(1e9), 0.99, 64);
  EXPECT_DOUBLE_EQ(more.scale_met, 64.0);
  EXPECT_EQ(more.scale_missed, 0.0);
  EXPECT_EQ(more.probes.size(), 7u);
  // Missed even at 1/64 (1, 1/2, ..., 1/64: 7 probes): nothing met.
  const Capacity none = search_capacity(up_to(0.001), 0.99, 64);
  EXPECT_EQ(none.scale_met, 0.0);
  EXPECT_DOUBLE_EQ(none.scale_missed, 1.0 / 64);
  EXPECT_EQ(none.probes.size(), 7u);
}

}  // namespace capacity_test
}  // namespace fleetsim::app
