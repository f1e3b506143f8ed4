#include "reports/sweep.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "hw_models/error.h"
#include "hw_models/files.h"
#include "hw_models/units.h"
#include "hw_models/yaml_reader.h"
#include "reports/fleet_report.h"
#include "reports/format.h"
#include "reports/replications.h"
#include "sim/fleet/fleet_sim.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

namespace fleetsim::reports {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Metric names in the order of the first result (every item of a sweep has the same).
std::vector<std::string> metric_names(const std::vector<std::string>& results) {
  std::vector<std::string> names;
  if (results.empty()) return names;
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(results.front());
  for (const auto& [k, v] : j.items()) names.push_back(k);
  return names;
}

}  // namespace

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
  static const std::set<std::string> kSingle = {
      "requests_completed", "ttft_p50_s",        "ttft_p99_s",     "tpot_p99_s",   "e2e_p50_s",
      "output_tok_per_s",   "goodput_req_per_s", "slo_attainment", "busy_fraction"};
  static const std::set<std::string> kFleet = {
      "calls_per_day",  "gpus",       "gpu_hours_per_day", "cost_usd_per_day", "usd_per_mtok",
      "slo_attainment", "ttft_p99_s", "tpot_p99_s",        "busy_fraction"};
  const nlohmann::json j = nlohmann::json::parse(result);
  if (!j.is_object()) throw std::invalid_argument("not a JSON object");
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_number()) throw std::invalid_argument("'" + k + "' is not a number");
    keys.insert(k);
  }
  if (keys != kSingle && keys != kFleet)
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
    (void)scenario::load(file, o, seed, catalog, calibration);
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
  nlohmann::ordered_json j;
  if (sc.fleet) {
    const fleet::FleetResult r = fleet::run_fleet(sc, {}, 1);
    const fleet::FleetAnswer a = fleet::fleet_answer(sc, r);
    j["calls_per_day"] = a.calls_per_day;
    j["gpus"] = a.gpus;
    j["gpu_hours_per_day"] = a.gpu_hours_per_day;
    j["cost_usd_per_day"] = a.cost_usd_per_day;
    j["usd_per_mtok"] = a.usd_per_mtok;
    j["slo_attainment"] = a.slo_attainment;
    j["ttft_p99_s"] = r.summary.ttft.p99_s;
    j["tpot_p99_s"] = r.summary.tpot.p99_s;
    j["busy_fraction"] = a.busy_fraction;
  } else {
    const metrics::Summary m = run_in_own_process(sc).summary;  // SimGrid: its own process
    j["requests_completed"] = m.requests_completed;
    j["ttft_p50_s"] = m.ttft.p50_s;
    j["ttft_p99_s"] = m.ttft.p99_s;
    j["tpot_p99_s"] = m.tpot.p99_s;
    j["e2e_p50_s"] = m.e2e.p50_s;
    j["output_tok_per_s"] = m.output_tok_per_s;
    j["goodput_req_per_s"] = m.goodput_req_per_s;
    j["slo_attainment"] = m.slo_attainment;
    j["busy_fraction"] = m.replica_busy_fraction;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string write_sweep_csv(const SweepSpec& spec, uint64_t base_seed,
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
    for (const auto& n : names) f << ',' << num(j.at(n).get<double>());
    f << '\n';
  }
  file.commit();
  return path;
}

Table sweep_table(const SweepSpec& spec, const std::vector<std::string>& results) {
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
        row.push_back(num(vals[n][0]));
      } else {
        const MetricSpread m = spread_of(vals[n]);
        row.push_back(num(m.mean) + " ± " + num(m.ci95));
      }
    }
    t.rows.push_back(row);
  }
  return t;
}

}  // namespace fleetsim::reports
