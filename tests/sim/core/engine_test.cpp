#include "sim/core/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
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

// Random schedules: every dispatched event is the least pending one in (time, phase,
// insertion order), checked against a shadow set that predicts the insertion counter
// (one per schedule call, from 0). Each of the first `left` events schedules `follow_ups`
// more (1 + a draw below `extra_follow_ups`), `delay` after itself, in one of `phases`.
struct Rescheduler final : EventTarget {
  Engine* eng = nullptr;
  fleetsim::Rng rng{7};
  int left = 20000;
  int follow_ups = 2;
  uint64_t extra_follow_ups = 1;  // draws below 1 are 0: exactly follow_ups
  uint64_t phases = 3;
  SimTime (*delay)(fleetsim::Rng&) = [](fleetsim::Rng& g) {
    return static_cast<SimTime>(g.uniform_u64(3));  // 0, 1 or 2 ns: many ties
  };
  uint64_t scheduled = 0;
  std::set<std::tuple<SimTime, uint32_t, uint64_t>> shadow;
  size_t checked = 0;
  void add(SimTime t, uint32_t phase) {
    eng->schedule(t, phase, this);
    shadow.emplace(t, phase, scheduled++);
  }
  void on_event(const Event& e) override {
    ASSERT_FALSE(shadow.empty());
    ASSERT_EQ(*shadow.begin(), std::make_tuple(e.time, e.phase(), e.seq()));
    shadow.erase(shadow.begin());
    ++checked;
    if (left-- > 0) {
      const int n = follow_ups + static_cast<int>(rng.uniform_u64(extra_follow_ups));
      for (int i = 0; i < n; ++i)
        add(e.time + delay(rng), static_cast<uint32_t>(rng.uniform_u64(phases)));
    }
  }
};

TEST(Engine, RandomScheduleIsTotallyOrdered) {
  Engine eng;
  Rescheduler r;
  r.eng = &eng;
  r.add(0, 0);
  eng.run();
  EXPECT_GT(r.checked, 20000u);
  EXPECT_TRUE(r.shadow.empty());
}

// The same check with delays spread over many powers of two (0 to ~1 s, so the queue holds
// events both tied and far apart), and run_until horizons between events: after each
// horizon the engine's time is the horizon, and events scheduled from there on (at or
// after it, possibly earlier than every pending event) still come out in order.
TEST(Engine, SpreadScheduleWithHorizonsIsTotallyOrdered) {
  Engine eng;
  Rescheduler r;
  r.eng = &eng;
  r.rng = fleetsim::Rng{11};
  r.left = 30000;
  r.follow_ups = 1;
  r.extra_follow_ups = 2;  // 1 or 2 follow-ups
  r.phases = 4;
  r.delay = [](fleetsim::Rng& g) {
    const auto bits = static_cast<int>(g.uniform_u64(31));  // 0..30: up to ~1.07 s
    return bits == 0 ? SimTime{0} : static_cast<SimTime>(g.uniform_u64(uint64_t{1} << bits));
  };
  for (int i = 0; i < 64; ++i) r.add(r.delay(r.rng), 0);
  SimTime horizon = 0;
  while (eng.pending() > 0) {
    horizon += static_cast<SimTime>(r.rng.uniform_u64(uint64_t{1} << 26));  // up to ~67 ms
    eng.run_until(horizon);
    ASSERT_EQ(eng.now(), horizon);  // horizons only grow, and run_until ends at its own
    // Every pending event is after the horizon (run_until ran all those at or before it).
    if (!r.shadow.empty()) {
      ASSERT_GT(std::get<0>(*r.shadow.begin()), horizon);
    }
    // A new event at the horizon itself: earlier than all pending ones, yet legal.
    if (r.left > 0 && r.rng.uniform_u64(4) == 0) r.add(horizon, 1);
  }
  EXPECT_GT(r.checked, 30000u);  // each of the first 30,000 events schedules 1 or 2 more
  EXPECT_TRUE(r.shadow.empty());
  EXPECT_EQ(eng.events_dispatched(), r.checked);
}

TEST(Engine, EventCarriesKindAndData) {
  Engine eng;
  Recorder r;
  eng.schedule(1, 2, &r, 7, 99);
  struct KindTarget final : EventTarget {
    uint32_t kind = 0;
    uint32_t phase = 0;
    void on_event(const Event& e) override {
      kind = e.kind();
      phase = e.phase();
    }
  } k;
  eng.schedule(1, 3, &k, 200, 5);
  eng.run();
  EXPECT_EQ(k.kind, 200u);
  EXPECT_EQ(k.phase, 3u);
  EXPECT_EQ(std::get<2>(r.seen.at(0)), 99u);
  EXPECT_THROW(eng.schedule(2, 256, &r), std::logic_error);  // phase must fit 8 bits
}

}  // namespace
