// A run's numbered routers: each on its own random stream.
#include "sim/runtime/routers.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sim/core/engine.h"

namespace fleetsim::runtime {
namespace routers_test {

struct Idle final : serving::Replica {
  Idle(int i, core::Engine& e, serving::ServingObserver& o) : Replica(i, e, o) {}
  void submit(const workload::RequestSpec&) override {}
  int64_t outstanding() const override { return 0; }
  int64_t kv_blocks_used() const override { return 0; }
  int64_t kv_blocks_total() const override { return 1; }
  int64_t cached_prefix_tokens(const workload::RequestSpec&) const override { return 0; }
  void check_invariants() const override {}
  void on_event(const core::Event&) override {}
};

std::vector<size_t> choices(serving::Router& r, const serving::ReplicaSet& set) {
  std::vector<size_t> out;
  for (int i = 0; i < 64; ++i) out.push_back(r.route(workload::RequestSpec{}, set));
  return out;
}

TEST(NumberedRouters, ZeroIsTheSeedsOwnStreamOthersAreMixedWithTheGoldenRatio) {
  core::Engine engine;
  serving::ServingObserver observer;
  std::vector<std::unique_ptr<serving::Replica>> reps;
  for (int i = 0; i < 16; ++i) reps.push_back(std::make_unique<Idle>(i, engine, observer));
  const serving::ReplicaSet set(reps);
  const uint64_t seed = 1234;
  auto r0 = numbered_router("random", seed, 0, {});
  auto same0 = serving::make_router("random", RngStreams(seed));
  EXPECT_EQ(choices(*r0, set), choices(*same0, set));
  // Router 3: seed ^ 3 · 0x9e3779b97f4a7c15.
  auto r3 = numbered_router("random", seed, 3, {});
  auto same3 = serving::make_router("random", RngStreams(seed ^ (3 * 0x9e3779b97f4a7c15ULL)));
  auto r0again = numbered_router("random", seed, 0, {});
  const auto c3 = choices(*r3, set);
  EXPECT_EQ(c3, choices(*same3, set));
  EXPECT_NE(c3, choices(*r0again, set));  // 64 draws among 16: equal by chance ~16^-64
}

}  // namespace routers_test
}  // namespace fleetsim::runtime
