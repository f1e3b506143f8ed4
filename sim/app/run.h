// Running a loaded scenario: one entry point for single-pool and fleet scenarios, the step
// that builds what a run needs and loading does not, and the record a run returns.
//
// The app layer sits above the simulator (sim/simulation.h, sim/simulation.h) and
// below reports/, which formats its records and never loads or runs a scenario.
#pragma once

#include <optional>

#include "sim/fleet/cost.h"
#include "sim/fleet/fleet_result.h"
#include "sim/metrics/time_buckets.h"
#include "sim/run_result.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::app {

/// What one run of a scenario gives: a single pool's result or a fleet's (exactly one of
/// `pool` and `fleet` is set). The basic figures (summary, events, wall time) are the same
/// for both and read through the accessors; a fleet adds its regions, pools and answer.
struct RunRecord {
  std::optional<RunResult> pool;                  ///< a single-pool scenario
  std::optional<metrics::TimeBuckets> over_time;  ///< the pool over time (run() only)
  std::optional<fleet::FleetResult> fleet;        ///< a fleet scenario
  std::optional<fleet::FleetAnswer> answer;       ///< the fleet's answer (sim/fleet/cost.h)

  /// What every run returns, one pool or a fleet (a FleetResult is a RunResult).
  const RunResult& result() const { return fleet ? static_cast<const RunResult&>(*fleet) : *pool; }
  /// Every request (call) of the run: counts, latency, throughput, techniques' counters.
  const metrics::Summary& summary() const { return result().summary; }
  uint64_t events() const { return result().events; }
  double wall_s() const { return result().wall_s; }
};

/// Builds what running `sc` needs that loading leaves out — the SimGrid collective tables
/// of its deployments (a helper process, a file in the table cache; nothing for the
/// analytic network) — so that a run reports a problem before it starts or writes
/// anything. Idempotent: copies of `sc` share what it builds. Errors are InputErrors at
/// the scenario's network.model field.
void prepare_network(const scenario::Scenario& sc);

/// Runs `sc` once in this process, with the observers and progress of `options`; a fleet's
/// pools run on up to `threads` threads (extra observers force one; the result does not
/// depend on it). A single pool's record has its time buckets, observed after `options`'
/// observers. With options.distribute under MPI, every rank calls it and the fleet's
/// partitions run on all of them; rank 0's record has the result, the others' are empty.
RunRecord run(const scenario::Scenario& sc, const RunOptions& options = {}, int threads = 1);

/// One run among many (a sweep item, a replication), which run side by side on threads:
/// one thread, no observers, and a single pool whose transfers run live on SimGrid's
/// engine in a process of its own (one engine per process).
RunRecord run_one_of_many(const scenario::Scenario& sc);

}  // namespace fleetsim::app
