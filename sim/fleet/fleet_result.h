// What a run of a fleet scenario returns: per region and pool, counts, latency and held
// replica-time. Apart from sim/simulation.h so that code which only reads results
// (the cost model, reports/) does not see the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/fleet/spec.h"
#include "sim/metrics/collector.h"
#include "sim/metrics/time_buckets.h"
#include "sim/run_result.h"

namespace fleetsim::fleet {

/// One report interval of one region.
struct RegionSample {
  double t_s = 0;             ///< start of the interval (run time)
  uint64_t arrivals = 0;      ///< calls from this region's users (sampled counts)
  uint64_t served = 0;        ///< calls completed in this region's datacenter
  uint64_t good = 0;          ///< ... meeting their SLO
  double replicas_mean = 0;   ///< time-averaged active replicas (sampled)
  double gpus_mean = 0;       ///< time-averaged GPUs in active replicas (sampled)
  double capacity_slots = 0;  ///< active replicas × max_num_seqs at the end
  int64_t outstanding_peak = 0;
  uint64_t failures = 0;
  /// Adds another partition's interval (peaks: the larger).
  void add(const RegionSample& o);
};

struct PoolResult {
  int index = 0;  ///< in the scenario's order (regions, then pools)
  int region = 0;
  std::string name, model, gpu;
  int gpus_per_replica = 0;
  int replicas_configured = 0;  ///< full scale, spares included
  int replicas_simulated = 0;   ///< at the start of the run
  int replicas_peak =
      0;  ///< most replicas held at once (active + starting + draining + in repair), sampled
  double replica_hours = 0;  ///< held replica-hours (sampled)
  double busy_hours = 0;     ///< replica-hours with an iteration running (sampled)
  uint64_t iterations = 0,
           decode_tokens = 0;  ///< their decode tokens per iteration: the mean batch
  uint64_t completed = 0, failures = 0, scale_ups = 0, scale_downs = 0;
  uint64_t input_tokens = 0, output_tokens = 0;  ///< of completed calls (sampled)
  metrics::LatencyStats tpot;  ///< of completed calls with more than one output token
  double load_time_s = 0;
  const FleetPool* spec = nullptr;
};

struct RegionResult {
  std::string name;
  uint64_t arrivals = 0, served = 0, good = 0, spilled_out = 0, spilled_in = 0;
  metrics::LatencyStats ttft;  ///< of the calls served here (over_time's latency, merged)
  std::vector<RegionSample> series;
  /// Over the run, in buckets of the report interval (coarsened past 96): TTFT of the calls
  /// served here by first-token time, busy and held replica-time of its pools (sampled).
  metrics::TimeBuckets over_time;
  /// Adds another partition's counts, series and buckets, and recomputes ttft.
  void add(const RegionResult& o);
};

/// A fleet run's result: what every run returns (RunResult: the summary of all calls, in
/// sampled counts; events; wall time), and the fleet's own sections.
struct FleetResult : RunResult {
  std::vector<RegionResult> regions;
  std::vector<PoolResult> pools;
  uint64_t retried = 0;  ///< calls retried after a replica failed
  uint64_t retried_completed = 0;
  metrics::LatencyStats retried_e2e;  ///< end-to-end latency of the retried calls that completed
  uint64_t failed_calls = 0;          ///< calls given up (rejected by a replica)
  uint64_t unfinished = 0;            ///< calls still in flight when the run stopped
  uint64_t sessions = 0;
  double sample = 1;
  double sim_end_s = 0;
  double peak_rss_bytes = 0;
};

}  // namespace fleetsim::fleet
