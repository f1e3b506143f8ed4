#include "sim/app/replicate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/app/metrics.h"
#include "sim/app/run.h"
#include "sim/core/parallel.h"

namespace fleetsim::app {

double t_quantile_95(int df) {
  // t_{0.975, df}, df = 1 … 30 (standard tables, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
  static const double table[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                   2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                   2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                   2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) throw std::invalid_argument("t_quantile_95: df must be >= 1");
  return df <= 30 ? table[df - 1] : 1.960;
}

Replications replicate(
    int n, uint64_t first_seed, int threads,
    const std::function<std::vector<std::pair<std::string, double>>(uint64_t)>& run) {
  if (n < 2) throw std::invalid_argument("replicate: at least 2 replications");
  std::vector<std::vector<std::pair<std::string, double>>> results(static_cast<size_t>(n));
  parallel_for(n, threads, [&](int i) {
    results[static_cast<size_t>(i)] = run(first_seed + static_cast<uint64_t>(i));
  });
  Replications r;
  for (int i = 0; i < n; ++i) r.seeds.push_back(first_seed + static_cast<uint64_t>(i));
  for (const auto& [name, value] : results[0]) r.order.push_back(name);
  for (const auto& res : results)
    for (const auto& [name, value] : res) r.metrics[name].values.push_back(value);
  for (auto& [name, m] : r.metrics) m = spread_of(m.values);
  return r;
}

MetricSpread spread_of(std::vector<double> values) {
  if (values.size() < 2) throw std::invalid_argument("spread_of: at least 2 values");
  MetricSpread m;
  m.values = std::move(values);
  double sum = 0;
  for (double v : m.values) sum += v;
  m.mean = sum / static_cast<double>(m.values.size());
  double ss = 0;
  for (double v : m.values) ss += (v - m.mean) * (v - m.mean);
  const double sd = std::sqrt(ss / static_cast<double>(m.values.size() - 1));
  m.ci95 = t_quantile_95(static_cast<int>(m.values.size()) - 1) * sd /
           std::sqrt(static_cast<double>(m.values.size()));
  m.min = *std::min_element(m.values.begin(), m.values.end());
  m.max = *std::max_element(m.values.begin(), m.values.end());
  return m;
}

Replications replicate_scenario(const scenario::Scenario& sc, int n, int threads) {
  prepare_network(sc);  // once, before the threads share it
  return replicate(n, sc.seed, threads, [&sc](uint64_t seed) {
    scenario::Scenario s = sc;
    s.seed = seed;
    return metrics_of(run_one_of_many(s), kReplications);
  });
}

}  // namespace fleetsim::app
