// The SimGrid fabric against hand arithmetic and against the analytic α-β model.
// SimGrid allows one engine per process and CTest runs each test in its own process; run
// this binary by hand with --gtest_filter for one test (tests on another fabric skip).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "hw_models/network.h"
#include "sim/network/simgrid_network.h"
#include "tests/simgrid/fabrics.h"

using namespace fleetsim;
using net::Collective;
using net::SimGridFabric;

namespace {

// Two-level DGX-H100-like fabric: 4 nodes of 8 GPUs (tests/simgrid/fabrics.h).
hw::Fabric dgx4() { return test_fabrics::hgx_h100_like(4); }

SimGridFabric* fabric_or_skip(const hw::Fabric& f) {
  try {
    return &SimGridFabric::acquire(f);
  } catch (const std::runtime_error& e) {
    return nullptr;
  }
}
#define ACQUIRE(var, fab)                                               \
  SimGridFabric* var = fabric_or_skip(fab);                             \
  if (var == nullptr)                                                   \
  GTEST_SKIP() << "another fabric owns this process's SimGrid engine; " \
                  "run under ctest (one process per test)"

// Runs the network until `id` ends; returns its end time.
double finish_time(SimGridFabric& f, uint64_t id, std::vector<net::Completion>* others = nullptr) {
  std::vector<net::Completion> done;
  for (int guard = 0; guard < 100000; ++guard) {
    const double t = f.next_event_time();
    if (!std::isfinite(t)) break;
    f.advance_to(t, done);
    double found = -1;
    for (const auto& c : done) {
      if (c.id == id)
        found = c.time_s;
      else if (others)
        others->push_back(c);
    }
    done.clear();
    if (found >= 0) return found;
  }
  ADD_FAILURE() << "transfer " << id << " never finished";
  return -1;
}

}  // namespace

TEST(SimGridFabric, IsolatedTransfersTakeLatencyPlusBytesOverBandwidth) {
  ACQUIRE(f, dgx4());
  f->reset_origin();
  // Inside the node over NVLink: 2 µs + 1e8 / 450e9 = 224.222 µs.
  const uint64_t a = f->start_transfer(0, 1, 1e8, 0.0);
  EXPECT_NEAR(finish_time(*f, a), 2e-6 + 1e8 / 450e9, 1e-12);
  // Node 0 to node 1 on the same rail: 1 µs + 1e8 / 50e9 = 2.001 ms (starting at the end
  // of the first).
  const double t0 = f->now();
  const uint64_t b = f->start_transfer(0, 8, 1e8, t0);
  EXPECT_NEAR(finish_time(*f, b) - t0, 1e-6 + 1e8 / 50e9, 1e-12);
  // Cross-rail (GPU 0 to GPU 9) climbs to the spine and back: same time, no uplink limit.
  EXPECT_EQ(f->route(0, 9).size(), 4u);
  EXPECT_EQ(f->route(0, 8).size(), 2u);
  EXPECT_EQ(f->route(0, 1), (std::vector<std::string>{"nvlink_up0", "nvlink_dn1"}));
}

TEST(SimGridFabric, TwoFlowsSharingANicEachGetHalf) {
  ACQUIRE(f, dgx4());
  f->reset_origin();
  // GPU 0 sends 1 GB to GPU 8 and 1 GB to GPU 16 at once: both leave through GPU 0's NIC
  // (50 GB/s), so each gets 25 GB/s: 1 µs + 1e9 / 25e9 = 40.001 ms, both. Alone: 20.001 ms.
  const uint64_t a = f->start_transfer(0, 8, 1e9, 0.0);
  const uint64_t b = f->start_transfer(0, 16, 1e9, 0.0);
  std::vector<net::Completion> others;
  const double ta = finish_time(*f, a, &others);
  EXPECT_NEAR(ta, 1e-6 + 1e9 / 25e9, 1e-9);
  const double tb = others.empty() ? finish_time(*f, b) : others[0].time_s;
  EXPECT_NEAR(tb, 1e-6 + 1e9 / 25e9, 1e-9);
  // Staggered: the second starts at 10 ms. The first runs alone until 10.001 ms (the
  // second's latency) and has sent (10.001 ms − 1 µs)·50e9 = 500 MB; the two then share:
  // the first's other 500 MB at 25 GB/s end at 30.001 ms; the second has also sent 500 MB
  // by then and sends the rest alone at 50 GB/s: 40.001 ms.
  const double s0 = f->now();
  const uint64_t c = f->start_transfer(0, 8, 1e9, s0);
  std::vector<net::Completion> done;
  f->advance_to(s0 + 10e-3, done);
  EXPECT_TRUE(done.empty());
  const uint64_t d = f->start_transfer(0, 16, 1e9, s0 + 10e-3);
  EXPECT_NEAR(finish_time(*f, c) - s0, 30.001e-3, 1e-9);
  EXPECT_NEAR(finish_time(*f, d) - s0, 40.001e-3, 1e-9);
  EXPECT_EQ(f->in_flight(), 0u);
  EXPECT_EQ(f->next_event_time(), std::numeric_limits<double>::infinity());
}

TEST(SimGridFabric, OversubscribedLeafUplinkIsShared) {
  // One node per leaf, 2:1 oversubscribed: each rail's uplink carries 1 · 50 GB/s / 2 =
  // 25 GB/s. GPU 0 → GPU 8 (node 0 → node 1, same rail, different leaves): 1e9 bytes take
  // 1 µs + 1e9 / 25e9 = 40.001 ms even alone.
  hw::Fabric fab = dgx4();
  fab.nodes_per_leaf = 1;
  fab.oversubscription = 2.0;
  ACQUIRE(f, fab);
  f->reset_origin();
  EXPECT_EQ(f->route(0, 8), (std::vector<std::string>{"nic_up0_0", "leaf_up0_rail0",
                                                      "leaf_dn1_rail0", "nic_dn1_0"}));
  const uint64_t a = f->start_transfer(0, 8, 1e9, 0.0);
  EXPECT_NEAR(finish_time(*f, a), 1e-6 + 1e9 / 25e9, 1e-9);
}

TEST(SimGridFabric, CollectivesAgreeWithAnalyticWithinATenthOfAPercent) {
  const hw::Fabric fab = dgx4();
  ACQUIRE(f, fab);
  f->reset_origin();
  const hw::AnalyticNetwork a(fab);
  const std::vector<hw::CommGroup> groups{{2, 2},  {4, 4},  {8, 8}, {16, 8},
                                          {32, 8}, {16, 4}, {4, 1}};
  double worst = 0;  // largest |SimGrid − analytic| / analytic seen
  for (double bytes : {0.0, 4096.0, 1e6, 3.3e8}) {
    for (const auto& g : groups) {
      const struct {
        Collective c;
        double analytic;
      } cases[] = {
          {Collective::kRingAllReduce, a.allreduce_s(bytes, g)},
          {Collective::kTreeAllReduce, a.tree_allreduce_s(bytes, g)},
          {Collective::kReduceScatter, a.reduce_scatter_s(bytes, g)},
          {Collective::kAllGather, a.allgather_s(bytes, g)},
          {Collective::kAllToAll, a.alltoall_s(bytes, g)},
      };
      for (const auto& cs : cases) {
        const double sg = net::run_collective(*f, cs.c, bytes, g);
        worst = std::max(worst, std::fabs(sg - cs.analytic) / cs.analytic);
        EXPECT_NEAR(sg, cs.analytic, 1e-3 * cs.analytic)
            << net::collective_name(cs.c) << " of " << bytes << " B over " << g.size << " ("
            << g.per_domain << " per domain)";
      }
    }
    const double in = net::run_collective(*f, Collective::kP2p, bytes, {2, 2});
    const double out = net::run_collective(*f, Collective::kP2p, bytes, {2, 1});
    EXPECT_NEAR(in, a.p2p_s(bytes, false), 1e-3 * a.p2p_s(bytes, false));
    EXPECT_NEAR(out, a.p2p_s(bytes, true), 1e-3 * a.p2p_s(bytes, true));
    worst = std::max({worst, std::fabs(in - a.p2p_s(bytes, false)) / a.p2p_s(bytes, false),
                      std::fabs(out - a.p2p_s(bytes, true)) / a.p2p_s(bytes, true)});
  }
  std::printf("largest relative difference SimGrid vs analytic: %.3g\n", worst);
}

TEST(SimGridFabric, RegionsMeetOverOneSharedWanLink) {
  // Two regions of 2 nodes each, joined by a 100 Gb/s (12.5 GB/s), 30 ms link per
  // direction. GPU 0 (region 0) → GPU 16 (region 1) climbs node 0's NIC and leaf, crosses
  // the WAN link and comes down node 2's leaf and NIC: 30 ms + 1 µs (NIC α) + 1e9 / 12.5e9
  // = 110.001 ms alone, as the analytic model says.
  hw::Fabric fab = dgx4();
  fab.regions = 2;
  fab.wan = {30e-3, 12.5e9};
  ACQUIRE(f, fab);
  f->reset_origin();
  EXPECT_EQ(f->route(0, 16), (std::vector<std::string>{"nic_up0_0", "leaf_up0_rail0", "wan0_1",
                                                       "leaf_dn1_rail0", "nic_dn2_0"}));
  EXPECT_EQ(f->route(0, 8).size(), 2u);  // same region, same leaf: no WAN
  const hw::AnalyticNetwork a(fab);
  const uint64_t x = f->start_transfer(0, 16, 1e9, 0.0);
  EXPECT_NEAR(finish_time(*f, x), a.wan_p2p_s(1e9), 1e-9);
  EXPECT_NEAR(a.wan_p2p_s(1e9), 30e-3 + 1e-6 + 1e9 / 12.5e9, 1e-12);
  // Two flows from different nodes and rails of region 0 to region 1 share the WAN link:
  // each gets 6.25 GB/s, 30.001 ms + 1e9 / 6.25e9 = 190.001 ms.
  const double t0 = f->now();
  const uint64_t y = f->start_transfer(1, 17, 1e9, t0);
  const uint64_t z = f->start_transfer(9, 25, 1e9, t0);
  std::vector<net::Completion> others;
  EXPECT_NEAR(finish_time(*f, y, &others) - t0, 30e-3 + 1e-6 + 1e9 / 6.25e9, 1e-9);
  const double tz = others.empty() ? finish_time(*f, z) : others[0].time_s;
  EXPECT_NEAR(tz - t0, 30e-3 + 1e-6 + 1e9 / 6.25e9, 1e-9);
}

TEST(SimGridFabric, DrivingByNextEventGivesTheSameTimesAsFixedSteps) {
  // The adapter asks SimGrid's network model for its next event between run_until calls;
  // that must not change what SimGrid computes. 300 random flows (random GPU pairs, 1 MB to
  // 1 GB, starting over 50 ms) are run twice on the same engine: driven by next_event_time,
  // and by blind 1 ms steps that only call run_until (starts fall on step boundaries in
  // both). Every flow must end at the same time.
  ACQUIRE(f, dgx4());
  struct Flow {
    int src, dst;
    double bytes, start;
  };
  std::vector<Flow> flows;
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  for (int i = 0; i < 300; ++i) {
    const int a = static_cast<int>(next() * 32), b = (a + 1 + static_cast<int>(next() * 31)) % 32;
    flows.push_back({a, b, 1e6 * std::pow(1e3, next()), std::floor(next() * 50) * 1e-3});
  }
  std::sort(flows.begin(), flows.end(),
            [](const Flow& x, const Flow& y) { return x.start < y.start; });
  auto run = [&](bool by_event) {
    f->reset_origin();
    std::map<uint64_t, size_t> index;
    std::vector<double> end(flows.size(), -1);
    std::vector<net::Completion> done;
    size_t k = 0;
    double t = 0;
    int64_t step = 0;
    while (k < flows.size() || f->in_flight() > 0) {
      while (k < flows.size() && flows[k].start <= t) {
        index[f->start_transfer(flows[k].src, flows[k].dst, flows[k].bytes, t)] = k;
        ++k;
      }
      // Starts lie on the 1 ms grid, so both drivers stop at every one of them.
      double target = static_cast<double>(++step) * 1e-3;
      if (by_event && f->next_event_time() < target) {
        target = f->next_event_time();
        --step;
      }
      f->advance_to(target, done);
      t = target;
      for (const auto& c : done) end[index.at(c.id)] = c.time_s;
      done.clear();
    }
    return end;
  };
  const auto a = run(true);
  const auto b = run(false);
  for (size_t i = 0; i < flows.size(); ++i) {
    ASSERT_GT(a[i], flows[i].start) << i;
    EXPECT_NEAR(a[i], b[i], 1e-9 * std::max(1.0, b[i])) << "flow " << i;
  }
}
