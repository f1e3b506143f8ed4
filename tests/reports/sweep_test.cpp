// Tests for reports/sweep: the knee of a sweep's latency curve, checked by hand.
#include "reports/sweep.h"

#include <gtest/gtest.h>

namespace fleetsim::reports {
namespace {

TEST(SweepKnee, IsThePointFarthestBelowTheChord) {
  // x = 1..5, y = 1, 1.1, 1.3, 2, 10. Scaled to [0, 1]: x' = 0, .25, .5, .75, 1 and
  // y' = (y − 1) / 9 = 0, .011, .033, .111, 1; below the diagonal by x' − y' = 0, .239, .467,
  // .639, 0: the knee is the 4th point (x = 4), the last before latency runs away.
  EXPECT_EQ(knee_index({1, 2, 3, 4, 5}, {1, 1.1, 1.3, 2, 10}), 3);
  // Unevenly spaced x: 10, 20, 40, 80 with y = 1, 1.2, 2, 9. x' = 0, .143, .429, 1 and
  // y' = 0, .025, .125, 1: gaps .118 and .304, so the knee is x = 40.
  EXPECT_EQ(knee_index({10, 20, 40, 80}, {1, 1.2, 2, 9}), 2);
}

TEST(SweepKnee, NoneForStraightFlatOrShortCurves) {
  EXPECT_EQ(knee_index({1, 2, 3}, {1, 2, 3}), -1);        // on the chord everywhere
  EXPECT_EQ(knee_index({1, 2, 3}, {1, 5, 6}), -1);        // above it (concave)
  EXPECT_EQ(knee_index({1, 2, 3, 4}, {2, 2, 2, 2}), -1);  // flat: no rise
  EXPECT_EQ(knee_index({1, 2}, {1, 10}), -1);             // two points
}

}  // namespace
}  // namespace fleetsim::reports
