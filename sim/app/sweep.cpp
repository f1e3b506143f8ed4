#include "sim/app/sweep.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "hw_models/error.h"
#include "hw_models/yaml_reader.h"
#include "sim/app/metrics.h"
#include "sim/app/run.h"

namespace fleetsim::app {

std::size_t SweepSpec::points() const {
  std::size_t n = 1;
  for (const auto& [k, v] : vary) n *= v.size();
  return n;
}

std::vector<std::string> SweepSpec::point_overrides(std::size_t p) const {
  std::vector<std::string> out(vary.size());
  for (std::size_t a = vary.size(); a-- > 0;) {
    out[a] = vary[a].first + "=" + vary[a].second[p % vary[a].second.size()];
    p /= vary[a].second.size();
  }
  return out;
}

std::pair<std::string, std::vector<std::string>> parse_vary(const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    throw InputError("--vary '" + arg + "' is not KEY=V1,V2,...",
                     "e.g. --vary serving.replicas=1,2,4", "--vary");
  std::vector<std::string> values;
  std::stringstream ss(arg.substr(eq + 1));
  for (std::string v; std::getline(ss, v, ',');) {
    if (v.empty())
      throw InputError("--vary '" + arg + "' has an empty value",
                       "e.g. --vary serving.replicas=1,2,4", "--vary");
    values.push_back(v);
  }
  return {arg.substr(0, eq), values};
}

void check_sweep_spec(const SweepSpec& spec) {
  std::map<std::string, std::size_t> seen;
  double items = spec.seeds;
  std::string product;
  for (std::size_t a = 0; a < spec.vary.size(); ++a) {
    const auto& [key, values] = spec.vary[a];
    if (!seen.emplace(key, a).second)
      throw InputError("the sweep names the axis '" + key + "' twice",
                       "give each field once, with all its values (the scenario's sweep: "
                       "section and --vary add up)",
                       "--vary", 0, key);
    items *= static_cast<double>(values.size());
    product += std::to_string(values.size()) + " × ";
  }
  if (items > kMaxSweepItems) {
    char b[64];
    std::snprintf(b, sizeof b, "%.4g", items);
    throw InputError("the sweep asks for " + product + std::to_string(spec.seeds) + " seed" +
                         (spec.seeds == 1 ? "" : "s") + " = " + b +
                         " simulations, more than the limit of " +
                         std::to_string(static_cast<long>(kMaxSweepItems)),
                     "sweep fewer values per axis or fewer seeds, or split the sweep into "
                     "several runs",
                     "--vary");
  }
}

void check_sweep_result(const std::string& result) {
  const nlohmann::json j = nlohmann::json::parse(result);
  if (!j.is_object()) throw std::invalid_argument("not a JSON object");
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_number()) throw std::invalid_argument("'" + k + "' is not a number");
    keys.insert(k);
  }
  auto names = [](bool fleet) {
    const std::vector<std::string> n = metric_names(fleet, kSweep);
    return std::set<std::string>(n.begin(), n.end());
  };
  if (keys != names(false) && keys != names(true))
    throw std::invalid_argument("its metrics are not those of a sweep item");
}

SweepSpec read_sweep_section(const std::string& file, const std::vector<std::string>& sets) {
  SweepSpec spec;
  yaml::Map root = yaml::load_file_with_overrides(file, sets);
  std::optional<yaml::Map> sw = root.map_opt("sweep");
  if (!sw) return spec;
  if (auto vary = sw->map_opt("vary")) {
    for (const auto& kv : vary->node()) {
      const std::string key = kv.first.as<std::string>();
      std::vector<std::string> values = vary->str_list_or(key, {});
      if (values.empty())
        vary->fail(key, "an axis needs at least one value", "e.g. serving.replicas: [1, 2, 4]");
      spec.vary.emplace_back(key, values);
    }
    vary->finish();
  }
  spec.seeds = static_cast<int>(sw->integer_or("seeds", 1, 10000, 1));
  sw->finish();
  return spec;
}

scenario::Scenario check_sweep_points(const std::string& file, const std::vector<std::string>& sets,
                                      std::optional<uint64_t> seed, const SweepSpec& spec,
                                      const hw::Catalog& catalog,
                                      const std::shared_ptr<const hw::CalibrationSet>& calibration,
                                      bool quiet) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point next_note = start + std::chrono::seconds(2);
  const std::size_t n = spec.points();
  for (std::size_t pt = 0; pt < n; ++pt) {
    std::vector<std::string> o = sets;
    for (const auto& x : spec.point_overrides(pt)) o.push_back(x);
    prepare_network(scenario::load(file, o, seed, catalog, calibration));
    if (!quiet && Clock::now() >= next_note) {
      std::fprintf(stderr, "  ... checked %zu of %zu sweep points\n", pt + 1, n);
      next_note = Clock::now() + std::chrono::seconds(1);
    }
  }
  return scenario::load(file, sets, seed, catalog, calibration);
}

std::string run_sweep_item(const std::string& file, const std::vector<std::string>& sets,
                           uint64_t base_seed, const SweepSpec& spec, std::size_t i,
                           const hw::Catalog& catalog,
                           std::shared_ptr<const hw::CalibrationSet> calibration) {
  std::vector<std::string> overrides = sets;
  for (const auto& o : spec.point_overrides(i / static_cast<std::size_t>(spec.seeds)))
    overrides.push_back(o);
  const uint64_t seed = base_seed + i % static_cast<std::size_t>(spec.seeds);
  const scenario::Scenario sc =
      scenario::load(file, overrides, seed, catalog, std::move(calibration));
  const RunRecord r = run_one_of_many(sc);
  const bool is_fleet = r.fleet.has_value();
  nlohmann::ordered_json j;
  for (const RunMetric& m : run_metrics()) {
    if (m.fleet != is_fleet || (m.uses & kSweep) == 0) continue;
    const double v = m.value(r);
    if (m.count)
      j[m.name] = static_cast<uint64_t>(v);
    else
      j[m.name] = v;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace fleetsim::app
