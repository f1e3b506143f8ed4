// The event loop every simulation runs.
#include "sim/runtime/drive.h"

#include <gtest/gtest.h>

namespace fleetsim::runtime {
namespace drive_test {

// Schedules `left` more events, 1 ms apart, one after another.
struct Chain final : core::EventTarget {
  core::Engine& engine;
  int left;
  Chain(core::Engine& e, int n) : engine(e), left(n) {}
  void on_event(const core::Event& e) override {
    if (--left > 0) engine.schedule(e.time + 1'000'000, 0, this);
  }
};

TEST(Drive, RunsEveryEventAndChecksAfterEachOnlyWhenAsked) {
  for (const bool checking : {false, true}) {
    core::Engine engine;
    Chain chain(engine, 100000);  // more than one 64k-event batch
    engine.schedule(0, 0, &chain);
    metrics::Collector collector(1, std::nullopt, std::nullopt);
    RunOptions options;
    options.check_invariants = checking;
    int progress_calls = 0;
    options.progress = [&](const Progress&) { ++progress_calls; };
    uint64_t checks = 0;
    drive(engine, options, collector, std::chrono::steady_clock::now(), [&] { ++checks; });
    EXPECT_EQ(engine.events_dispatched(), 100000u);
    EXPECT_EQ(chain.left, 0);
    EXPECT_EQ(engine.now(), 99999 * SimTime{1'000'000});  // the last of 100000 events, 1 ms apart
    EXPECT_EQ(checks, checking ? 100000u : 0u);
    EXPECT_EQ(progress_calls, 0);  // a run shorter than 2 s reports no progress
  }
}

}  // namespace drive_test
}  // namespace fleetsim::runtime
