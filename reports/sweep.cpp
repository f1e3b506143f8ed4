#include "reports/sweep.h"

#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "hw_models/files.h"
#include "reports/format.h"
#include "sim/app/replicate.h"

namespace fleetsim::reports {

namespace {

// Metric names in the order of the first result (every item of a sweep has the same).
std::vector<std::string> metric_names(const std::vector<std::string>& results) {
  std::vector<std::string> names;
  if (results.empty()) return names;
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(results.front());
  for (const auto& [k, v] : j.items()) names.push_back(k);
  return names;
}

}  // namespace

std::string write_sweep_csv(const app::SweepSpec& spec, uint64_t base_seed,
                            const std::vector<std::string>& results, const std::string& dir) {
  const std::string path = dir + "/sweep.csv";
  files::AtomicFile file(path);
  std::ostream& f = file.stream();
  const std::vector<std::string> names = metric_names(results);
  for (const auto& [k, v] : spec.vary) f << csv_field(k) << ',';
  f << "seed";
  for (const auto& n : names) f << ',' << n;
  f << '\n';
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::size_t p = i / static_cast<std::size_t>(spec.seeds);
    for (const auto& o : spec.point_overrides(p)) f << csv_field(o.substr(o.find('=') + 1)) << ',';
    f << base_seed + i % static_cast<std::size_t>(spec.seeds);
    const nlohmann::json j = nlohmann::json::parse(results[i]);
    for (const auto& n : names) f << ',' << general(j.at(n).get<double>(), 6);
    f << '\n';
  }
  file.commit();
  return path;
}

nlohmann::ordered_json sweep_rows(const app::SweepSpec& spec, uint64_t base_seed,
                                  const std::vector<std::string>& results) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::size_t p = i / static_cast<std::size_t>(spec.seeds);
    nlohmann::ordered_json row;
    const std::vector<std::string> sets = spec.point_overrides(p);  // "key=value"
    for (std::size_t a = 0; a < spec.vary.size(); ++a)
      row[spec.vary[a].first] = sets[a].substr(spec.vary[a].first.size() + 1);
    row["seed"] = base_seed + i % static_cast<std::size_t>(spec.seeds);
    const nlohmann::ordered_json metrics = nlohmann::ordered_json::parse(results[i]);
    for (const auto& [k, v] : metrics.items()) row[k] = v;
    rows.push_back(std::move(row));
  }
  return rows;
}

Table sweep_table(const app::SweepSpec& spec, const std::vector<std::string>& results) {
  const std::vector<std::string> names = metric_names(results);
  Table t;
  std::string first;
  for (const auto& [k, v] : spec.vary) first += (first.empty() ? "" : ", ") + k;
  t.header.push_back(first.empty() ? "point" : first);
  for (const auto& n : names) t.header.push_back(n);
  for (std::size_t p = 0; p < spec.points(); ++p) {
    std::vector<std::string> row;
    std::string label;
    for (const auto& o : spec.point_overrides(p))
      label += (label.empty() ? "" : ", ") + o.substr(o.find('=') + 1);
    row.push_back(label.empty() ? "as written" : label);
    std::map<std::string, std::vector<double>> vals;
    for (int s = 0; s < spec.seeds; ++s) {
      const nlohmann::json j = nlohmann::json::parse(
          results[p * static_cast<std::size_t>(spec.seeds) + static_cast<std::size_t>(s)]);
      for (const auto& n : names) vals[n].push_back(j.at(n).get<double>());
    }
    for (const auto& n : names) {
      if (spec.seeds == 1) {
        row.push_back(general(vals[n][0], 6));
      } else {
        const app::MetricSpread m = app::spread_of(vals[n]);
        row.push_back(general(m.mean, 6) + " ± " + general(m.ci95, 6));
      }
    }
    t.rows.push_back(row);
  }
  return t;
}

}  // namespace fleetsim::reports
