// The metrics that replications (`run --replications`) and sweeps report of each run: one
// list for single-pool and fleet runs and for both uses, so that a metric is named and
// read from a run record in one place.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/app/run.h"

namespace fleetsim::app {

/// Where a metric is reported (bits of RunMetric::uses).
enum Use : unsigned {
  kReplications = 1u << 0,  ///< `run --replications`: mean ± 95 % CI over seeds
  kSweep = 1u << 1,         ///< a sweep item's result (sweep.csv, the sweep's checkpoint)
};

struct RunMetric {
  const char* name;  ///< with its unit, e.g. "ttft_p99_s"
  bool fleet;        ///< a metric of fleet runs (else of single-pool runs)
  unsigned uses;     ///< Use bits
  bool count;        ///< a whole number (written as one in a sweep item's JSON)
  double (*value)(const RunRecord&);
};

/// Every metric, in the order in which replications and sweeps list them.
const std::vector<RunMetric>& run_metrics();

/// The metrics of `r` (a single-pool or a fleet run) reported for `use`, in list order.
std::vector<std::pair<std::string, double>> metrics_of(const RunRecord& r, Use use);

/// The names of the metrics of fleet (or single-pool) runs reported for `use`.
std::vector<std::string> metric_names(bool fleet, Use use);

}  // namespace fleetsim::app
