#include "sim/core/engine.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "sim/core/rng.h"

using fleetsim::SimTime;
using fleetsim::core::Engine;
using fleetsim::core::Event;
using fleetsim::core::EventTarget;

namespace {

struct Recorder final : EventTarget {
  std::vector<std::tuple<SimTime, uint32_t, uint64_t>> seen;  // time, phase, data
  void on_event(const Event& e) override { seen.emplace_back(e.time, e.phase(), e.data); }
};

TEST(Engine, OrdersByTimeThenPhaseThenInsertion) {
  Engine eng;
  Recorder r;
  eng.schedule(20, 0, &r, 0, 1);
  eng.schedule(10, 1, &r, 0, 2);
  eng.schedule(10, 0, &r, 0, 3);
  eng.schedule(10, 1, &r, 0, 4);  // same (time, phase) as data 2: after it (FIFO)
  eng.run();
  // Expected order: (10,0,3), (10,1,2), (10,1,4), (20,0,1).
  ASSERT_EQ(r.seen.size(), 4u);
  EXPECT_EQ(std::get<2>(r.seen[0]), 3u);
  EXPECT_EQ(std::get<2>(r.seen[1]), 2u);
  EXPECT_EQ(std::get<2>(r.seen[2]), 4u);
  EXPECT_EQ(std::get<2>(r.seen[3]), 1u);
  EXPECT_EQ(eng.now(), 20);
  EXPECT_EQ(eng.events_dispatched(), 4u);
}

TEST(Engine, RejectsEventsInThePast) {
  Engine eng;
  Recorder r;
  eng.schedule(100, 0, &r);
  eng.run();
  EXPECT_THROW(eng.schedule(99, 0, &r), std::logic_error);
  EXPECT_NO_THROW(eng.schedule(100, 0, &r));  // "now" is allowed
}

TEST(Engine, RunUntilStopsAtTheHorizon) {
  Engine eng;
  Recorder r;
  eng.schedule(5, 0, &r, 0, 1);
  eng.schedule(15, 0, &r, 0, 2);
  eng.run_until(10);
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(eng.now(), 10);  // advanced to the horizon
  EXPECT_EQ(eng.pending(), 1u);
  eng.run();
  EXPECT_EQ(r.seen.size(), 2u);
}

// Random schedules: time never goes back and the order is the total (time, phase, seq) one.
struct Rescheduler final : EventTarget {
  Engine* eng;
  fleetsim::Rng rng{7};
  int left = 20000;
  std::vector<std::tuple<SimTime, uint32_t, uint64_t>> seen;
  void on_event(const Event& e) override {
    seen.emplace_back(e.time, e.phase(), e.seq());
    if (left-- > 0) {
      for (int i = 0; i < 2; ++i) {
        eng->schedule(e.time + static_cast<SimTime>(rng.uniform_u64(3)),
                      static_cast<uint32_t>(rng.uniform_u64(3)), this);
      }
    }
  }
};

TEST(Engine, RandomScheduleIsTotallyOrdered) {
  Engine eng;
  Rescheduler r;
  r.eng = &eng;
  eng.schedule(0, 0, &r);
  eng.run();
  ASSERT_GT(r.seen.size(), 20000u);
  for (size_t i = 1; i < r.seen.size(); ++i) {
    // Each dispatched event is at or after the previous one in (time, phase) order — except
    // that an event scheduled *now* with a lower phase may run after a higher phase at the
    // same time, since it did not exist yet. Time itself never goes back.
    ASSERT_LE(std::get<0>(r.seen[i - 1]), std::get<0>(r.seen[i]));
  }
}

}  // namespace
