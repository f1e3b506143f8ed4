// What a run of a fleet scenario returns: per region and pool, counts, latency and held
// replica-time. Apart from sim/simulation.h so that code which only reads results
// (the cost model, reports/) does not see the simulator.
#pragma once

#include <array>
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
  /// Most replicas down at once for GPU, server, link and rack failures (region outages
  /// excluded: spares in the region cannot cover those), sampled: the spares it needed.
  int down_peak = 0;
  const FleetPool* spec = nullptr;
};

/// One class of failure over the run (sampled counts).
struct FailureClassResult {
  uint64_t events = 0;         ///< failures (a server failure is one, whatever it holds)
  uint64_t replicas_down = 0;  ///< replicas they took down
  uint64_t calls_retried = 0;  ///< calls in flight on those replicas, retried
  uint64_t retried_completed = 0, retried_good = 0;  ///< ... then completed, meeting the SLO
  uint64_t calls_failed = 0;  ///< ... then given up (no replica anywhere, or rejected)
  void add(const FailureClassResult& o);
};

/// The load on a surviving region during another region's outage, for one model.
struct OutageLoad {
  int region = 0, model = 0;  ///< model: index into FleetSpec::models
  std::string model_id;
  int64_t outstanding_peak = 0;  ///< most calls in flight in the region's active replicas
  int64_t slots_at_peak = 0;     ///< their batch slots then
  int replicas_at_peak = 0;      ///< active replicas then
  /// More replicas it would have needed to stay below the spill threshold at the peak:
  /// ceil(outstanding_peak / (spill_load × slots per replica)) − replicas_at_peak, ≥ 0.
  int extra_replicas = 0;
};

/// One region outage (scheduled or drawn from the region MTBF), sampled counts.
struct OutageResult {
  int region = 0;
  double start_s = 0, end_s = 0;
  uint64_t calls = 0;      ///< calls of the region's users that arrived during the outage
  uint64_t completed = 0;  ///< ... completed (elsewhere)
  uint64_t good = 0;       ///< ... meeting their SLO
  double ttft_min_s = -1;  ///< the fastest of them (-1: none completed)
  uint64_t replicas_down = 0, calls_retried = 0;  ///< replicas lost, their calls in flight
  std::vector<OutageLoad> surviving;              ///< the other regions' peak load
  void add(const OutageResult& o);
};

struct RegionResult {
  std::string name;
  uint64_t arrivals = 0, served = 0, good = 0, spilled_out = 0, spilled_in = 0;
  /// Of served and good, by side of the fleet's split (FleetSpec::side_names; empty with no
  /// split): the calls served here on that side (a region that does not split: side 0).
  std::vector<uint64_t> side_served, side_good;
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
  /// By FailureClass (index 0, "none", stays empty).
  std::array<FailureClassResult, kFailureClasses> failure_classes{};
  std::vector<OutageResult> outages;  ///< in order of start
  uint64_t sessions = 0;
  double sample = 1;
  double sim_end_s = 0;
  double peak_rss_bytes = 0;  ///< of this process (rank 0's under MPI)
  int mpi_ranks = 1;          ///< processes the partitions ran on (options.distribute)
};

/// The calls served on each side of the fleet's split (FleetSpec::split, side_names), over
/// the regions (a region that does not split counts on side 0); empty with no split.
struct SplitSides {
  std::vector<uint64_t> served, good;
  /// The side's share of its calls meeting the SLO; `if_empty` when it served none.
  double attainment(size_t side, double if_empty) const {
    return served[side] ? static_cast<double>(good[side]) / static_cast<double>(served[side])
                        : if_empty;
  }
};
SplitSides split_sides(const FleetResult& res);

}  // namespace fleetsim::fleet
