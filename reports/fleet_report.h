// What a fleet run answers — GPUs, racks, megawatts and dollars for the users, with the
// latency they get, per region and over the day — as a terminal report, summary.json and
// CSV files. The figures come from the cost model (sim/fleet/cost.h); this only formats.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/document.h"
#include "sim/fleet/cost.h"
#include "sim/fleet/fleet_result.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::reports {

/// The report's prose, each paragraph unwrapped: the answer; why one cannot run it at home
/// (none without pools); cost and energy (empty without a cost).
struct FleetProse {
  std::string answer;
  std::vector<std::string> why_not_at_home;
  std::string cost;
};
FleetProse fleet_prose(const scenario::Scenario& sc, const fleet::FleetResult& res,
                       const fleet::FleetAnswer& a);

/// The USERS and SAMPLED lines: users, expected calls, sampling and its error.
std::string fleet_users_notes(const scenario::Scenario& sc, const fleet::FleetResult& res,
                              const fleet::FleetAnswer& a);

/// The report's tables: regions, datacenters, over the run (with more than one interval),
/// pools, pools: service, latency, classes (with request classes).
std::vector<Table> fleet_tables(const scenario::Scenario& sc, const fleet::FleetResult& res);

/// The serving techniques the fleet runs and what they did: prefix caching (hit rate),
/// speculative pools, cascade escalations, response-cache hits, prefill/decode pools, the
/// router inside regions; summary.json's "techniques".
std::string fleet_techniques_notes(const scenario::Scenario& sc, const fleet::FleetResult& res);
nlohmann::json fleet_techniques_json(const scenario::Scenario& sc, const fleet::FleetResult& res);

/// The events lines: failures, retries, autoscaling (no wall-clock figures).
std::string fleet_events_notes(const fleet::FleetResult& res);
/// Failures by class (GPU, node, link, rack, region: events, replicas down, calls retried,
/// their SLO attainment, calls failed), each pool's peak of replicas down against its
/// spares, and each region outage with the load it put on the other regions. Empty when
/// nothing failed. Part of fleet_events_notes.
std::string fleet_failure_notes(const fleet::FleetResult& res);
/// The same as summary.json's `failures` section.
nlohmann::json fleet_failures_json(const fleet::FleetResult& res);

/// The readable report; it opens with the answer.
std::string fleet_report(const scenario::Scenario& sc, const fleet::FleetResult& res);

/// summary.json of a fleet run: answer, regions, pools, latency, run facts.
nlohmann::json fleet_json(const scenario::Scenario& sc, const fleet::FleetResult& res);

/// pools.csv and datacenters.csv in `dir`: the report's pool and region tables at full
/// scale, units in the column names.
void write_fleet_tables_csv(const scenario::Scenario& sc, const fleet::FleetResult& res,
                            const std::string& dir);

/// regions.csv: one row per region and report interval, units in the column names.
std::string fleet_series_csv(const fleet::FleetResult& res);
void write_fleet_series_csv(const fleet::FleetResult& res, const std::string& path);

}  // namespace fleetsim::reports
