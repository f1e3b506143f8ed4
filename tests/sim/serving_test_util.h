// Shared pieces of the replica tests: a hand-checkable step model, a driver that submits
// requests at their arrival times, and an engine observer that checks a replica's
// invariants before every event.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "sim/core/engine.h"
#include "sim/serving/replica.h"
#include "sim/serving/step_model.h"

namespace fleetsim::serving::testing {

constexpr SimTime kMs = 1'000'000;

// Decode: `decode_ms` per iteration for any batch size, no per-context cost. Any iteration
// with prefill: 1 ms per prompt token, plus `decode_ms` when it also runs decodes.
inline StepModel simple_steps(int64_t max_seqs, SimTime decode_ms) {
  std::vector<SimTime> fixed(static_cast<size_t>(max_seqs) + 1, decode_ms * kMs);
  fixed[0] = 0;
  return StepModel(fixed, 0.0, [decode_ms](const hw::BatchShape& b) {
    return b.prefill_tokens * kMs + (b.decode_seqs > 0 ? decode_ms * kMs : 0);
  });
}

inline workload::RequestSpec req(uint64_t id, SimTime arrival, int32_t prompt, int32_t output) {
  workload::RequestSpec r;
  r.id = id;
  r.arrival_ns = arrival;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  return r;
}

// Checks the replica's invariants before every event, and that time never goes back.
struct Checker final : core::EngineObserver {
  const Replica* rep = nullptr;
  SimTime last = 0;
  void on_dispatch(const core::Event& e) override {
    ASSERT_GE(e.time, last) << "time went back";
    last = e.time;
    rep->check_invariants();
  }
};

// Submits requests to the replica at their arrival times.
struct Driver final : core::EventTarget {
  Replica* rep = nullptr;
  std::vector<workload::RequestSpec> reqs;
  void start(core::Engine& eng) {
    for (size_t i = 0; i < reqs.size(); ++i)
      eng.schedule(reqs[i].arrival_ns, kPhaseArrival, this, 0, i);
  }
  void on_event(const core::Event& e) override { rep->submit(reqs[e.data]); }
};

// Submits `reqs` to `rep` at their arrival times, runs `eng` to the end with the replica's
// invariants checked at every event, and expects every request done.
inline void drive(core::Engine& eng, Replica& rep, std::vector<workload::RequestSpec> reqs) {
  Checker check;
  check.rep = &rep;
  eng.add_observer(&check);
  Driver d;
  d.rep = &rep;
  d.reqs = std::move(reqs);
  d.start(eng);
  eng.run();
  rep.check_invariants();
  EXPECT_EQ(rep.outstanding(), 0);
}

// drive(), and then every KV block free (no prefix cache holds any).
inline void run_to_completion(core::Engine& eng, Replica& rep,
                              std::vector<workload::RequestSpec> reqs) {
  drive(eng, rep, std::move(reqs));
  EXPECT_EQ(rep.kv_blocks_used(), 0);
}

}  // namespace fleetsim::serving::testing
