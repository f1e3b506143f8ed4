// LiveTransfers: groups of parallel flows, and the rail-symmetry reduction.
#include <gtest/gtest.h>

#include <map>

#include "sim/network/live_transfers.h"
#include "tests/simgrid/fabrics.h"

using namespace fleetsim;

namespace {

// Two-level DGX-H100-like fabric: 4 nodes of 8 GPUs (tests/simgrid/fabrics.h).
hw::Fabric dgx4() { return test_fabrics::hgx_h100_like(4); }

// Runs a fixed pattern of whole-node groups (node → node, several at once, staggered,
// different sizes) and returns each group's end time.
std::map<uint64_t, SimTime> run_pattern(net::LiveTransfers& lt) {
  struct G {
    uint64_t tag;
    int src_node, dst_node;
    double bytes_per_link;
    SimTime start;
  };
  const G groups[] = {{1, 0, 1, 2e8, 0},         {2, 0, 2, 1e8, 0},
                      {3, 3, 1, 3e8, 500'000},   {4, 0, 1, 5e7, 900'000},
                      {5, 2, 3, 4e8, 1'200'000}, {6, 1, 0, 1e8, 1'200'000}};
  std::map<uint64_t, SimTime> end;
  size_t next = 0;
  SimTime now = 0;
  auto done = [&](uint64_t tag, SimTime) { end[tag] = now; };
  while (next < std::size(groups) || lt.groups_in_flight() > 0) {
    const SimTime wake = lt.next_wake();
    const SimTime start = next < std::size(groups) ? groups[next].start : -1;
    if (start >= 0 && (wake < 0 || start <= wake)) {
      now = start;
      lt.advance(now, done);
      const G& g = groups[next++];
      lt.start_group(g.tag, g.src_node * 8, g.dst_node * 8, 8, g.bytes_per_link, now);
    } else {
      now = std::max(wake, now + 1);
      lt.advance(now, done);
    }
  }
  return end;
}

}  // namespace

TEST(LiveTransfers, RailSymmetryGivesTheSameTimesWithAnEighthOfTheFlows) {
  std::map<uint64_t, SimTime> a, b;
  {
    net::LiveTransfers all(dgx4(), false);
    a = run_pattern(all);
    // One user of the engine at a time.
    EXPECT_THROW(net::LiveTransfers(dgx4(), true), std::runtime_error);
  }
  {
    net::LiveTransfers rail0(dgx4(), true);  // same engine (same fabric), origin reset
    b = run_pattern(rail0);
  }
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  for (const auto& [tag, t] : a) EXPECT_EQ(b.at(tag), t) << "group " << tag;
  // Group 2 alone at first shares node 0's NICs with group 1 (node 0 → 1 and 0 → 2 on every
  // rail): by hand, both start at 0 and get 25 GB/s per rail; group 2 (1e8 per link) ends at
  // 1 µs + 1e8/25e9 = 4.001 ms unless group 3/4 slow it: group 4 (node 0 → 1, from 0.9 ms)
  // also leaves node 0, so from 0.901 ms three flows share each NIC of node 0.
  // Sent by group 2 by 0.901 ms: 0.9 ms · 25 GB/s = 22.5 MB; then 50/3 GB/s: group 4's 5e7
  // ends first, after 3 ms (at 3.901 ms; group 2 has sent 22.5 + 50 = 72.5 MB); then 25 GB/s
  // for the last 27.5 MB: 1.1 ms → 5.001 ms.
  EXPECT_NEAR(ns_to_seconds(a.at(2)), 5.001e-3, 2e-9);
  EXPECT_NEAR(ns_to_seconds(a.at(4)), 3.901e-3, 2e-9);
}

TEST(LiveTransfers, RailSymmetryRefusesGroupsThatDoNotCoverWholeNodes) {
  net::LiveTransfers lt(dgx4(), true);
  EXPECT_THROW(lt.start_group(1, 0, 9, 8, 1e6, 0), std::logic_error);
  EXPECT_THROW(lt.start_group(2, 0, 8, 4, 1e6, 0), std::logic_error);
}
