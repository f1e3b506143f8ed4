// The event loop every simulation runs: the engine to the end, with the run's invariant
// checks and its progress reports.
#pragma once

#include <chrono>

#include "sim/core/engine.h"
#include "sim/metrics/collector.h"
#include "sim/run_result.h"

namespace fleetsim::runtime {

/// Steps `engine` until no event is left. With options.check_invariants, calls `check()`
/// after every event; calls options.progress about once per wall-second once the run has
/// taken more than 2 s since `t0`. The wall clock is read every 64k events only, so the
/// hot loop stays free of system calls.
template <class Check>
void drive(core::Engine& engine, const RunOptions& options, const metrics::Collector& collector,
           std::chrono::steady_clock::time_point t0, Check&& check) {
  using Clock = std::chrono::steady_clock;
  auto last_report = t0;
  const bool checking = options.check_invariants;
  bool more = true;
  while (more) {
    for (int i = 0; i < 65536 && (more = engine.step()); ++i)
      if (checking) check();
    if (more && options.progress) {
      const auto now = Clock::now();
      const double wall = std::chrono::duration<double>(now - t0).count();
      if (wall > 2.0 && std::chrono::duration<double>(now - last_report).count() >= 1.0) {
        last_report = now;
        options.progress(
            {ns_to_seconds(engine.now()), collector.arrived(), collector.completed(), wall});
      }
    }
  }
}

}  // namespace fleetsim::runtime
