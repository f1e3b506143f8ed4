// A partition of a fleet run (sim/simulation.h, run_fleet) as bytes: what the merge of the
// partitions reads from each, so that partitions simulated in other processes (MPI ranks)
// merge into exactly the result of one process.
#pragma once

#include <string>

#include "sim/fleet/fleet_result.h"
#include "sim/metrics/collector.h"
#include "sim/metrics/histogram.h"

namespace fleetsim::fleet {

/// One partition's outcome: its fleet result, its metrics, and the end-to-end latency of
/// its retried calls.
struct PartitionResult {
  FleetResult result;
  metrics::Collector collector;
  metrics::Histogram retried_e2e;
};

/// Everything of `res` but its summary (the merge recomputes that from the collectors),
/// the collector's counts and histograms, and `retried_e2e`.
std::string encode_partition(const FleetResult& res, const metrics::Collector& collector,
                             const metrics::Histogram& retried_e2e);

/// The partition back: `blank` is a collector set up as the run's (same classes and SLOs),
/// `spec` the fleet the pools belong to (PoolResult::spec points into it again); `what`
/// names the message in errors. Throws std::runtime_error on damaged bytes or pools that
/// are not the fleet's.
PartitionResult decode_partition(const std::string& bytes, const metrics::Collector& blank,
                                 const FleetSpec& spec, const std::string& what);

}  // namespace fleetsim::fleet
