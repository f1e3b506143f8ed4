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
  side_served.resize(std::max(side_served.size(), o.side_served.size()), 0);
  side_good.resize(side_served.size(), 0);
  for (size_t k = 0; k < o.side_served.size(); ++k) {
    side_served[k] += o.side_served[k];
    side_good[k] += o.side_good[k];
  }
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

SplitSides split_sides(const FleetResult& res) {
  SplitSides ss;
  for (const auto& r : res.regions) {
    ss.served.resize(std::max(ss.served.size(), r.side_served.size()), 0);
    ss.good.resize(ss.served.size(), 0);
    for (size_t k = 0; k < r.side_served.size(); ++k) {
      ss.served[k] += r.side_served[k];
      ss.good[k] += r.side_good[k];
    }
  }
  return ss;
}

}  // namespace fleetsim::fleet
