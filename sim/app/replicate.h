// Error bars from independent replications: the same scenario run with N seeds (in
// parallel), each metric summarised as mean ± the 95 % confidence half-width of the mean
// (Student's t with N − 1 degrees of freedom).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/scenario.h"

namespace fleetsim::app {

/// Two-sided 95 % quantile of Student's t with `df` degrees of freedom (df ≥ 1; the normal
/// 1.960 beyond 30).
double t_quantile_95(int df);

struct MetricSpread {
  double mean = 0, ci95 = 0, min = 0, max = 0;
  std::vector<double> values;  ///< one per seed, in seed order
};

/// Mean, 95 % confidence half-width of the mean (Student's t), min and max of ≥ 2 values.
MetricSpread spread_of(std::vector<double> values);

struct Replications {
  std::vector<uint64_t> seeds;
  std::vector<std::string> order;  ///< metric names in the order given
  std::map<std::string, MetricSpread> metrics;
};

/// Runs `run(seed)` for seeds first_seed … first_seed + n − 1 on up to `threads` threads
/// and summarises the metrics it returns (name, value pairs, the same names every time).
Replications replicate(
    int n, uint64_t first_seed, int threads,
    const std::function<std::vector<std::pair<std::string, double>>(uint64_t)>& run);

/// `sc` run with seeds sc.seed … sc.seed + n − 1 (run_one_of_many, sim/app/run.h), each
/// run's replication metrics (sim/app/metrics.h) summarised.
Replications replicate_scenario(const scenario::Scenario& sc, int n, int threads);

}  // namespace fleetsim::app
