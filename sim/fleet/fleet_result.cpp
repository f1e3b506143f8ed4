#include "sim/fleet/fleet_result.h"

#include <algorithm>

namespace fleetsim::fleet {

void RegionSample::add(const RegionSample& o) {
  arrivals += o.arrivals;
  served += o.served;
  good += o.good;
  replicas_mean += o.replicas_mean;
  gpus_mean += o.gpus_mean;
  capacity_slots += o.capacity_slots;
  outstanding_peak = std::max(outstanding_peak, o.outstanding_peak);
  failures += o.failures;
}

void RegionResult::add(const RegionResult& o) {
  arrivals += o.arrivals;
  served += o.served;
  good += o.good;
  served_long += o.served_long;
  good_long += o.good_long;
  spilled_out += o.spilled_out;
  spilled_in += o.spilled_in;
  for (size_t k = 0; k < series.size() && k < o.series.size(); ++k) series[k].add(o.series[k]);
  over_time.merge(o.over_time);
  ttft = metrics::stats_of(over_time.total_latency());
}

void FailureClassResult::add(const FailureClassResult& o) {
  events += o.events;
  replicas_down += o.replicas_down;
  calls_retried += o.calls_retried;
  retried_completed += o.retried_completed;
  retried_good += o.retried_good;
  calls_failed += o.calls_failed;
}

void OutageResult::add(const OutageResult& o) {
  calls += o.calls;
  completed += o.completed;
  good += o.good;
  if (o.ttft_min_s >= 0 && (ttft_min_s < 0 || o.ttft_min_s < ttft_min_s)) ttft_min_s = o.ttft_min_s;
  replicas_down += o.replicas_down;
  calls_retried += o.calls_retried;
  surviving.insert(surviving.end(), o.surviving.begin(), o.surviving.end());
}

std::vector<std::vector<int>> FleetSpec::partitions() const {
  std::vector<std::vector<int>> parts;
  for (int m = 0; m < static_cast<int>(models.size()); ++m) {
    if (m == cascade_model) continue;  // with models[0]
    parts.push_back({m});
    if (m == 0 && cascade_model >= 0) parts.back().push_back(cascade_model);
  }
  return parts;
}

LengthSides length_sides(const FleetResult& res) {
  LengthSides ls;
  for (const auto& r : res.regions) {
    ls.served[1] += r.served_long;
    ls.good[1] += r.good_long;
    ls.served[0] += r.served - r.served_long;
    ls.good[0] += r.good - r.good_long;
  }
  return ls;
}

}  // namespace fleetsim::fleet
