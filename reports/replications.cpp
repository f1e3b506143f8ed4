#include "reports/replications.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace fleetsim::reports {

std::string replications_table(const app::Replications& r) {
  std::ostringstream o;
  o << "\n  replications: " << r.seeds.size() << " seeds (" << r.seeds.front() << " … "
    << r.seeds.back() << "), mean ± 95 % confidence half-width of the mean\n";
  char buf[200];
  for (const auto& name : r.order) {
    const app::MetricSpread& m = r.metrics.at(name);
    std::snprintf(buf, sizeof buf, "  %-30s %12.4g ± %-10.3g (%.1f %%)   min %.4g  max %.4g\n",
                  name.c_str(), m.mean, m.ci95,
                  m.mean != 0 ? 100 * m.ci95 / std::fabs(m.mean) : 0.0, m.min, m.max);
    o << buf;
  }
  return o.str();
}

nlohmann::json replications_json(const app::Replications& r) {
  nlohmann::json j;
  j["n"] = r.seeds.size();
  j["seeds"] = r.seeds;
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& name : r.order) {
    const app::MetricSpread& m = r.metrics.at(name);
    metrics[name] = {{"mean", m.mean},
                     {"ci95_half_width", m.ci95},
                     {"min", m.min},
                     {"max", m.max},
                     {"values", m.values}};
  }
  j["metrics"] = metrics;
  return j;
}

}  // namespace fleetsim::reports
