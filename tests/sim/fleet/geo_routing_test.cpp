// Across regions: spill by load.
#include "sim/fleet/geo_routing.h"

#include <gtest/gtest.h>

#include <vector>

namespace fleetsim::fleet {
namespace geo_routing_test {

struct Load {
  int64_t outstanding = 0, slots = 0;
};

// Three regions on a line: 0 —10 ms— 1 —10 ms— 2 (0 to 2: 20 ms).
const std::vector<std::vector<double>> kRtt = {{0, 0.01, 0.02}, {0.01, 0, 0.01}, {0.02, 0.01, 0}};

TEST(SpillRouting, RegionsByRoundTripHomeFirstTiesByIndex) {
  const SpillRouting g(kRtt, 1.0);
  EXPECT_EQ(g.by_distance(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(g.by_distance(1), (std::vector<int>{1, 0, 2}));  // 0 and 2 tie at 10 ms
  EXPECT_EQ(g.by_distance(2), (std::vector<int>{2, 1, 0}));
}

TEST(SpillRouting, HomeUnlessSaturatedThenNearestThenLeastLoaded) {
  // spill_load 0.5: a region with 8 batch slots is saturated at 4 outstanding calls.
  const SpillRouting g(kRtt, 0.5);
  std::vector<Load> l = {{3, 8}, {0, 8}, {0, 8}};
  auto at = [&](int r) -> const Load& { return l[static_cast<size_t>(r)]; };
  EXPECT_EQ(g.pick(0, at), 0);  // 3 < 0.5 · 8
  l[0].outstanding = 4;
  EXPECT_EQ(g.pick(0, at), 1);  // home saturated: the nearest that is not
  l[1].outstanding = 4;
  EXPECT_EQ(g.pick(0, at), 2);
  // All saturated: the least loaded (6/8 in region 2 against 7/8); of equals, the nearest.
  l = {{7, 8}, {7, 8}, {6, 8}};
  EXPECT_EQ(g.pick(0, at), 2);
  l = {{7, 8}, {6, 8}, {6, 8}};
  EXPECT_EQ(g.pick(2, at), 2);
  // A region without active replicas is never chosen; none anywhere: -1.
  l = {{0, 0}, {9, 8}, {0, 0}};
  EXPECT_EQ(g.pick(0, at), 1);
  l = {{0, 0}, {0, 0}, {0, 0}};
  EXPECT_EQ(g.pick(1, at), -1);
}

}  // namespace geo_routing_test
}  // namespace fleetsim::fleet
