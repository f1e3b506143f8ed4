// The capacity of a single-pool deployment at its SLO: the highest multiple of the
// scenario's traffic with which the same replicas still meet every target of `slo:`, so a
// run can say how much load it has room for. Busy time ("running a batch 99 % of the
// time") says only that some batch runs; a replica that is always busy with a small batch
// may carry several times its load.
//
// - A probe reruns the scenario (same seed) with workload.traffic_scale multiplied by s:
//   every arrival rate × s, a trace replayed s times as fast. A closed loop of users has no
//   rate to scale and is refused.
// - It meets the SLO when every percentile target holds (rejected requests counting as
//   misses) and, with plain targets (`ttft: 2s`), when at least `target` of the arrived
//   requests meet every per-request target (requests not finished by the run's end count
//   as misses), as `fleetsim plan` decides.
// - The search: from s = 1, double (or halve) until the SLO flips, at most `max_scale` (or
//   down to 1/max_scale), then bisect geometrically until the largest multiple that meets
//   and the smallest that misses are within `resolution` of each other (2 %: about 9 runs).
//   Meeting the SLO is assumed to be monotone in the load; each probe's verdict is listed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "sim/metrics/collector.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::app {

struct CapacityProbe {
  double scale = 1;
  bool met = false;
  std::string misses;           ///< what misses the SLO, in a few words ("" when met)
  double throughput_per_s = 0;  ///< completed requests per second of the probe's run
};

struct Capacity {
  double target = 0.99;  ///< share of requests within the plain targets
  /// The largest multiple of the traffic found to meet the SLO (0: not even 1/max_scale).
  double scale_met = 0;
  /// The smallest multiple found to miss it (0: still met at max_scale).
  double scale_missed = 0;
  /// Completed requests per second of the run at scale_met (0 when none met).
  double throughput_at_capacity_per_s = 0;
  std::vector<CapacityProbe> probes;  ///< in the order run
  /// Headroom now: scale_met − 1 (negative: the traffic as written already misses).
  double headroom() const { return scale_met - 1.0; }
};

/// Whether `s` meets `sc`'s SLO (see the header), and what misses it in a few words.
std::pair<bool, std::string> meets_slo(const scenario::Scenario& sc, const metrics::Summary& s,
                                       double target);

/// The search over `probe(s)` (see the header).
Capacity search_capacity(const std::function<CapacityProbe(double)>& probe, double target,
                         double max_scale = 64, double resolution = 0.02);

/// InputError unless `sc` (loaded from `file`) is a single pool with an SLO.
void check_capacity_applies(const scenario::Scenario& sc, const std::string& file);

/// The capacity of the single-pool scenario `file` with `sets` (the scenario as `run` loads
/// it). InputError when it is a fleet, has no `slo:`, or its workload has no rate to scale.
Capacity find_capacity(const std::string& file, const std::vector<std::string>& sets,
                       std::optional<uint64_t> seed, const hw::Catalog& catalog,
                       const std::shared_ptr<const hw::CalibrationSet>& calibration, double target);

}  // namespace fleetsim::app
