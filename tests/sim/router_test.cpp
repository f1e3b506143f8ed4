// Routers on stand-in replicas whose load and cache contents the test sets directly.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sim/core/engine.h"
#include "sim/serving/registry.h"
#include "sim/serving/router.h"

namespace fleetsim::serving {
namespace {

struct Fake final : Replica {
  Fake(int i, core::Engine& e, ServingObserver& o) : Replica(i, e, o) {}
  void submit(const workload::RequestSpec&) override {}
  int64_t outstanding() const override { return load; }
  int64_t kv_blocks_used() const override { return kv_used; }
  int64_t kv_blocks_total() const override { return 100; }
  int64_t cached_prefix_tokens(const workload::RequestSpec&) const override { return cached; }
  void check_invariants() const override {}
  void on_event(const core::Event&) override {}
  int64_t load = 0, kv_used = 0, cached = 0;
};

struct Pool {
  core::Engine engine;
  ServingObserver observer;
  std::vector<std::unique_ptr<Replica>> reps;
  explicit Pool(int n) {
    for (int i = 0; i < n; ++i) reps.push_back(std::make_unique<Fake>(i, engine, observer));
  }
  Fake& at(size_t i) { return static_cast<Fake&>(*reps[i]); }
};

TEST(Routers, LeastKvAndLeastOutstanding) {
  Pool p(3);
  p.at(0).kv_used = 50;
  p.at(1).kv_used = 20;
  p.at(2).kv_used = 30;
  p.at(0).load = 1;
  p.at(1).load = 5;
  p.at(2).load = 1;
  const workload::RequestSpec r;
  EXPECT_EQ(LeastKvLoad().route(r, p.reps), 1u);
  EXPECT_EQ(LeastOutstanding().route(r, p.reps), 0u);  // tie 0/2 → lowest index
}

TEST(Routers, PowerOfTwoPicksTheLessLoadedOfTwoDistinct) {
  Pool p(4);
  for (size_t i = 0; i < 4; ++i) p.at(i).load = static_cast<int64_t>(10 * i);
  PowerOfTwo a(RngStreams(7)), b(RngStreams(7));
  const workload::RequestSpec r;
  int never_worst = 0;
  for (int i = 0; i < 1000; ++i) {
    const size_t x = a.route(r, p.reps);
    EXPECT_EQ(x, b.route(r, p.reps));  // deterministic for a seed
    // Two distinct replicas, the less loaded one: the most loaded (3) can never win.
    never_worst += x != 3;
  }
  EXPECT_EQ(never_worst, 1000);
}

TEST(Routers, PrefixAwarePrefersTheCacheWithinTheLoadSlack) {
  Pool p(3);
  p.at(0).load = 2;
  p.at(1).load = 9;  // holds the longest prefix but is 7 requests busier than replica 0
  p.at(1).cached = 4096;
  p.at(2).load = 12;
  p.at(2).cached = 8192;  // 10 busier: beyond a slack of 8
  const workload::RequestSpec r;
  EXPECT_EQ(PrefixAware(8).route(r, p.reps), 1u);
  EXPECT_EQ(PrefixAware(5).route(r, p.reps), 0u);   // 7 > 5: load wins
  EXPECT_EQ(PrefixAware(20).route(r, p.reps), 2u);  // all within: the longest prefix
}

}  // namespace
}  // namespace fleetsim::serving
