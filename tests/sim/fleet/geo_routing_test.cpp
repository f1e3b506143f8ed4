// Across regions: spill by load.
#include "sim/fleet/geo_routing.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace fleetsim::fleet {
namespace geo_routing_test {

struct Load {
  int64_t outstanding = 0, slots = 0;
};

// Three regions on a line: 0 —10 ms— 1 —10 ms— 2 (0 to 2: 20 ms).
const std::vector<std::vector<double>> kRtt = {{0, 0.01, 0.02}, {0.01, 0, 0.01}, {0.02, 0.01, 0}};

TEST(RegionRouting, RegionsByRoundTripHomeFirstTiesByIndex) {
  const RegionRouting g(kRtt, 1.0);
  EXPECT_EQ(g.by_distance(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(g.by_distance(1), (std::vector<int>{1, 0, 2}));  // 0 and 2 tie at 10 ms
  EXPECT_EQ(g.by_distance(2), (std::vector<int>{2, 1, 0}));
}

TEST(RegionRouting, HomeUnlessSaturatedThenNearestThenLeastLoaded) {
  // spill_load 0.5: a region with 8 batch slots is saturated at 4 outstanding calls.
  RegionRouting g(kRtt, 0.5);
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

TEST(RegionRouting, RouterRulesChooseAmongRegionsWithReplicas) {
  // Region 1 has no replicas of the model (0 slots): no rule ever picks it.
  std::vector<Load> l = {{6, 8}, {0, 0}, {2, 8}};
  auto at = [&](int r) -> const Load& { return l[static_cast<size_t>(r)]; };
  // round-robin: regions 0, 2, 0, 2, ... whatever the home and the load.
  RegionRouting rr(kRtt, 1.0, "round-robin");
  EXPECT_EQ(rr.rule(), RegionRouting::Rule::kRoundRobin);
  EXPECT_EQ(rr.pick(1, at), 0);
  EXPECT_EQ(rr.pick(1, at), 2);
  EXPECT_EQ(rr.pick(0, at), 0);
  // least-outstanding: per batch slot, 2/8 in region 2 against 6/8 in region 0, even for
  // users in region 0 (spill would keep them home: 6 < 1.0 · 8).
  RegionRouting lo(kRtt, 1.0, "least-outstanding");
  EXPECT_EQ(lo.pick(0, at), 2);
  RegionRouting spill(kRtt, 1.0);
  EXPECT_EQ(spill.pick(0, at), 0);
  // Of equals, the nearest: 4/8 in both, from region 2's users region 2, from 0's 0.
  l = {{4, 8}, {0, 0}, {4, 8}};
  EXPECT_EQ(lo.pick(2, at), 2);
  EXPECT_EQ(lo.pick(0, at), 0);
  // random: about half of 4,000 picks each (2,000 ± 4σ, σ = √(4000 · ¼) ≈ 31.6), never 1.
  RegionRouting rnd(kRtt, 1.0, "random", Rng(7));
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 4000; ++i) ++counts[rnd.pick(0, at)];
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(counts[0], 2000, 127);
  // power-of-two: two draws, the less loaded per slot. With region 0 at 7/8 and region 2 at
  // 1/8, region 0 wins only when both draws are 0: a quarter of picks, 1,000 ± 4σ
  // (σ = √(4000 · ¼ · ¾) ≈ 27.4).
  l = {{7, 8}, {0, 0}, {1, 8}};
  RegionRouting p2(kRtt, 1.0, "power-of-two", Rng(7));
  int zero = 0;
  for (int i = 0; i < 4000; ++i) zero += p2.pick(0, at) == 0;
  EXPECT_NEAR(zero, 1000, 110);
  // No region with replicas: -1 under every rule.
  l = {{0, 0}, {0, 0}, {0, 0}};
  for (const std::string& rule : region_router_names()) {
    RegionRouting g(kRtt, 1.0, rule, Rng(1));
    EXPECT_EQ(g.pick(0, at), -1) << rule;
  }
  EXPECT_THROW(RegionRouting(kRtt, 1.0, "prefix-aware"), std::out_of_range);
}

}  // namespace geo_routing_test
}  // namespace fleetsim::fleet
