#include "sim/app/capacity.h"

#include <cmath>
#include <cstdio>

#include <yaml-cpp/yaml.h>

#include "hw_models/error.h"
#include "hw_models/units.h"
#include "hw_models/yaml_reader.h"
#include "sim/app/run.h"
#include "sim/workload/slo.h"

namespace fleetsim::app {

namespace {

std::string share_text(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g %%", 100.0 * x);
  return b;
}

}  // namespace

std::pair<bool, std::string> meets_slo(const scenario::Scenario& sc, const metrics::Summary& s,
                                       double target) {
  std::string misses;
  if (sc.slo_plain) {
    // slo_attainment is over completed requests; rejected and unfinished ones are misses.
    const double met = s.slo_attainment * static_cast<double>(s.requests_completed);
    const double share =
        s.requests_arrived > 0 ? met / static_cast<double>(s.requests_arrived) : 0.0;
    if (share < target)
      misses = share_text(share) + " of requests within the SLO (< " + share_text(target) + ")";
  }
  for (const auto& c : s.slo_checks) {
    if (c.target.plain || c.met) continue;
    if (!misses.empty()) misses += ", ";
    misses += std::string(workload::slo_label(c.target.metric)) + " " +
              workload::percentile_name(c.target.quantile);
    if (!c.target.cls.empty()) misses += " of " + c.target.cls;
    misses += c.beyond ? std::string(" beyond its bound (too many rejected)")
                       : " " + units::format(c.value_s, units::Dim::kTime) + " > " +
                             units::format(c.target.bound_s, units::Dim::kTime);
  }
  return {misses.empty(), misses};
}

Capacity search_capacity(const std::function<CapacityProbe(double)>& probe, double target,
                         double max_scale, double resolution) {
  Capacity c;
  c.target = target;
  auto run = [&](double s) {
    c.probes.push_back(probe(s));
    c.probes.back().scale = s;
    return c.probes.back();
  };
  double lo = 0, hi = 0;  // largest known to meet, smallest known to miss (0: none yet)
  double lo_tput = 0;
  const CapacityProbe first = run(1.0);
  if (first.met) {
    lo = 1.0;
    lo_tput = first.throughput_per_s;
    for (double s = 2.0; s <= max_scale; s *= 2.0) {
      const CapacityProbe p = run(s);
      if (!p.met) {
        hi = s;
        break;
      }
      lo = s;
      lo_tput = p.throughput_per_s;
    }
  } else {
    hi = 1.0;
    for (double s = 0.5; s >= 1.0 / max_scale; s /= 2.0) {
      const CapacityProbe p = run(s);
      if (p.met) {
        lo = s;
        lo_tput = p.throughput_per_s;
        break;
      }
      hi = s;
    }
  }
  while (lo > 0 && hi > 0 && hi / lo - 1.0 > resolution) {
    const double mid = std::sqrt(lo * hi);
    const CapacityProbe p = run(mid);
    if (p.met) {
      lo = mid;
      lo_tput = p.throughput_per_s;
    } else {
      hi = mid;
    }
  }
  c.scale_met = lo;
  c.scale_missed = hi;
  c.throughput_at_capacity_per_s = lo_tput;
  return c;
}

void check_capacity_applies(const scenario::Scenario& sc, const std::string& file) {
  if (sc.fleet)
    throw InputError("--capacity is for a single pool; " + file + " is a fleet",
                     "a fleet's GPUs at its SLO: fleetsim plan (fleet_plan:) or fleetsim ladder");
  if (!sc.slo_plain && sc.slo_targets.empty())
    throw InputError("--capacity needs an SLO to meet, and " + file + " has no slo: section",
                     "add e.g. slo: {ttft: {p99: 2s}, tpot: {p99: 100ms}}, or --set "
                     "'slo={ttft: 2s}'");
}

Capacity find_capacity(const std::string& file, const std::vector<std::string>& sets,
                       std::optional<uint64_t> seed, const hw::Catalog& catalog,
                       const std::shared_ptr<const hw::CalibrationSet>& calibration,
                       double target) {
  check_capacity_applies(scenario::load(file, sets, seed, catalog, calibration), file);
  // The file's own traffic_scale (after --set), which each probe multiplies.
  double own = 1.0;
  {
    const yaml::Map root = yaml::load_file_with_overrides(file, sets);
    const YAML::Node w = root.node()["workload"];
    if (w && w.IsMap() && w["traffic_scale"]) own = w["traffic_scale"].as<double>();
  }
  auto probe = [&](double s) {
    std::vector<std::string> o = sets;
    char buf[64];
    std::snprintf(buf, sizeof buf, "workload.traffic_scale=%.17g", own * s);
    o.emplace_back(buf);
    const scenario::Scenario sc = [&] {
      try {
        return scenario::load(file, o, seed, catalog, calibration);
      } catch (const InputError& e) {
        throw InputError("--capacity scales the workload's arrival rates: " + e.message(),
                         "a closed loop of users (workload.clients) has no rate to scale; "
                         "give the workload an arrival rate or a trace");
      }
    }();
    const RunRecord r = run_one_of_many(sc);
    CapacityProbe p;
    const auto [met, misses] = meets_slo(sc, r.summary(), target);
    p.met = met;
    p.misses = misses;
    p.throughput_per_s = r.summary().requests_per_s;
    return p;
  };
  return search_capacity(probe, target);
}

}  // namespace fleetsim::app
