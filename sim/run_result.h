// What one simulation run is asked to do besides simulating (observers, progress) and what
// it returns. Apart from sim/simulation.h so that code which only reads results (reports/)
// does not see the simulator.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/metrics/collector.h"
#include "sim/serving/observer.h"

namespace fleetsim {

struct Progress {
  double sim_time_s = 0;
  uint64_t arrived = 0, completed = 0;
  double wall_s = 0;
};

struct RunOptions {
  /// Extra observers (per-request CSV, invariant checks in tests).
  std::vector<serving::ServingObserver*> observers;
  /// Checks every replica's invariants after every event (slow; tests only).
  bool check_invariants = false;
  /// Called about once per wall-second once a run has taken more than 2 s.
  std::function<void(const Progress&)> progress;
  /// A fleet run hands its partitions (run_fleet) to the ranks of the MPI job it runs in
  /// (sim/dist/dist.h), with the same result as one process. Every rank must make the same
  /// call; only rank 0 gets the result. For `fleetsim run`'s one run, not for runs inside
  /// a search (those are already spread over the ranks).
  bool distribute = false;
};

/// What every run returns, one pool or a fleet (fleet::FleetResult adds its sections).
struct RunResult {
  metrics::Summary summary;
  uint64_t events = 0;
  double wall_s = 0;
};

}  // namespace fleetsim
