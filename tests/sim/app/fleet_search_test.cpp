// Tests for sim/app/fleet_search: the failure headroom of a fleet's pools (failure_spares),
// against Poisson quantiles worked out by hand. (The searches themselves are tested through
// the ladder and the fleet plan: ladder_test.cpp, fleet_plan_test.cpp.)
#include "sim/app/fleet_search.h"

#include <gtest/gtest.h>

namespace fleetsim::app {
namespace {

constexpr double kHour = 3600.0;

// One region, one pool of `tp`-GPU replicas on 8-GPU servers, 4 servers a rack.
fleet::FleetSpec one_pool(int tp) {
  fleet::FleetSpec spec;
  fleet::FleetRegion region;
  fleet::FleetPool fp;
  fp.name = "r/main";
  fp.pool.par.tp = tp;
  fp.gpus_per_server = 8;
  fp.servers_per_replica = (tp + 7) / 8;
  fp.servers_per_rack = 4;
  fp.usd_per_gpu_hour = 2.0;
  region.pools.push_back(fp);
  spec.regions.push_back(region);
  return spec;
}

TEST(FailureSpares, GpuFailuresArePoissonPerGpu) {
  // 10 one-GPU replicas, GPU MTBF 1,000 h, MTTR 10 h: GPUs down ~ Poisson(10 · 10/1000 =
  // 0.1). P(0) = e^-0.1 = 0.904837, P(≤ 1) = 0.904837 · 1.1 = 0.995321, P(≤ 2) = 0.904837 ·
  // (1 + 0.1 + 0.005) = 0.999845.
  fleet::FleetSpec spec = one_pool(1);
  spec.failures.gpu_mtbf_s = 1000 * kHour;
  spec.failures.gpu_mttr_s = 10 * kHour;
  for (const auto& [availability, spares] :
       {std::pair{0.9, 0}, std::pair{0.99, 1}, std::pair{0.999, 2}}) {
    const auto s = failure_spares(spec, {10}, availability);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].spares, spares) << availability;
    EXPECT_EQ(s[0].name, "r/main");
    EXPECT_EQ(s[0].replicas, 10);
    EXPECT_NEAR(s[0].mean_down, 0.1, 1e-12);
  }
}

TEST(FailureSpares, AServerTakesDownEveryReplicaOnIt) {
  // 16 one-GPU replicas fill 2 eight-GPU servers; server MTBF 1,000 h, MTTR 10 h: servers
  // down ~ Poisson(2 · 0.01 = 0.02), each taking 8 replicas. P(0) = e^-0.02 = 0.980199,
  // P(≤ 1 server) = 0.980199 · 1.02 = 0.999803: 0 spares at 90 %, 8 at 99 %, all 16 at
  // 99.99 % (P(≤ 2) = 0.980199 · (1.02 + 0.0002) = 0.999999).
  fleet::FleetSpec spec = one_pool(1);
  spec.failures.node_mtbf_s = 1000 * kHour;
  spec.failures.node_mttr_s = 10 * kHour;
  EXPECT_EQ(failure_spares(spec, {16}, 0.9)[0].spares, 0);
  EXPECT_EQ(failure_spares(spec, {16}, 0.99)[0].spares, 8);
  EXPECT_EQ(failure_spares(spec, {16}, 0.9999)[0].spares, 16);
  // Links fail like servers (their rates add): link MTBF 1,000 h, MTTR 10 h doubles the
  // mean to 0.04: P(0) = e^-0.04 = 0.960789 < 0.99, P(≤ 1) = 0.960789 · 1.04 = 0.999221.
  spec.failures.link_mtbf_s = 1000 * kHour;
  spec.failures.link_mttr_s = 10 * kHour;
  EXPECT_EQ(failure_spares(spec, {16}, 0.99)[0].spares, 8);
  EXPECT_EQ(failure_spares(spec, {16}, 0.95)[0].spares, 0);
  EXPECT_NEAR(failure_spares(spec, {16}, 0.99)[0].mean_down, 0.04 * 8, 1e-12);
}

TEST(FailureSpares, AReplicaSpanningServersFallsWithAnyOfThem) {
  // 3 replicas of TP 16 (2 servers each): 6 servers, each failure takes one replica:
  // Poisson(6 · 0.01 = 0.06). P(0) = 0.941765, P(≤ 1) = 0.941765 · 1.06 = 0.998270.
  fleet::FleetSpec spec = one_pool(16);
  spec.failures.node_mtbf_s = 1000 * kHour;
  spec.failures.node_mttr_s = 10 * kHour;
  EXPECT_EQ(failure_spares(spec, {3}, 0.99)[0].spares, 1);
  EXPECT_EQ(failure_spares(spec, {3}, 0.9)[0].spares, 0);
  EXPECT_EQ(failure_spares(spec, {3}, 0.999)[0].spares, 2);
}

TEST(FailureSpares, ARackTakesDownItsReplicasAndNoRatesMeanNoSpares) {
  // 32 one-GPU replicas: 4 servers, one rack of 4; rack MTBF 1,000 h, MTTR 10 h: Poisson(0.01)
  // racks down, each taking all 32. P(0) = e^-0.01 = 0.990050: 0 spares at 99 %, 32 at 99.5 %.
  fleet::FleetSpec spec = one_pool(1);
  spec.failures.rack_mtbf_s = 1000 * kHour;
  spec.failures.rack_mttr_s = 10 * kHour;
  EXPECT_EQ(failure_spares(spec, {32}, 0.99)[0].spares, 0);
  EXPECT_EQ(failure_spares(spec, {32}, 0.995)[0].spares, 32);
  // Region outages alone are not covered by spares; no rate at all: nothing sized.
  fleet::FleetSpec none = one_pool(1);
  none.failures.region_mtbf_s = 1000 * kHour;
  none.failures.region_mttr_s = 10 * kHour;
  EXPECT_TRUE(failure_spares(none, {32}, 0.999).empty());
}

}  // namespace
}  // namespace fleetsim::app
