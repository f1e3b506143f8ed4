// What a fleet run answers: GPUs, racks, megawatts and dollars for the users, with the
// latency they get, per region and over the day; as a terminal report, summary.json and
// a CSV of the per-region time series.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/document.h"
#include "sim/fleet/fleet_sim.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::reports {

/// One pool's cost a day at full scale, by the cost basis: cloud (GPU-hours at its price
/// less the reservation discount) or owned (hardware depreciation and electricity).
struct PoolCost {
  std::string pool;
  double cloud_usd_per_day = 0, hardware_usd_per_day = 0, electricity_usd_per_day = 0;
};

/// Full-scale figures derived from a (possibly sampled) fleet run.
struct FleetAnswer {
  double calls_per_day = 0;        ///< measured arrivals scaled to full scale and to 24 h
  double calls_per_day_expected = 0;
  double peak_calls_per_s = 0;     ///< busiest report interval, full scale
  double mean_calls_per_s = 0;
  double gpus = 0;                 ///< full scale, at the most held at once
  double gpus_configured = 0;      ///< replicas (+ spares) × GPUs per replica, full scale
  double servers = 0, racks = 0;
  double it_power_w = 0, facility_power_w = 0, floor_m2 = 0;
  double gpu_hours_per_day = 0;
  double usd_per_day = 0;          ///< GPU-hours × cloud price, pools with a price
  bool price_missing = false;      ///< a pool has no price: usd_per_day leaves it out
  double slo_attainment = 0, slo_ci95 = 0;
  double count_rel_error = 0;      ///< sampling: relative standard error of call counts
  double busy_fraction = 0;        ///< replica time with an iteration running / held time
  // Cost and energy (cost: section; full scale, per day).
  bool owned = false;
  double energy_kwh_per_day = 0;   ///< facility energy: GPUs idle→TDP with their busy share, hosts, PUE
  double joules_per_token = 0;     ///< facility energy per token (input + output)
  double capital_usd = 0;          ///< owned: servers, network share and racks at the peak count
  double electricity_usd_per_day = 0;
  double cost_usd_per_day = 0;     ///< by the cost basis (cloud: usd_per_day less the discount)
  double tokens_per_day = 0, output_tokens_per_day = 0;
  double usd_per_mtok = 0, usd_per_mtok_output = 0;
  double breakeven_usd_per_mtok = 0;  ///< usd_per_mtok / (1 − margin)
  double usd_per_daily_user_month = 0, usd_per_weekly_user_month = 0;
  /// $/M tokens if the same fleet served this share of its tokens (the idle-cost curve).
  std::vector<std::pair<double, double>> usd_per_mtok_at_load;
  bool idle_power_assumed = false;
  std::vector<PoolCost> pool_costs;  ///< per pool, in the scenario's order
};

FleetAnswer fleet_answer(const scenario::Scenario& sc, const fleet::FleetResult& res);

/// The report's prose, each paragraph unwrapped: the answer; why one cannot run it at home
/// (none without pools); cost and energy (empty without a cost).
struct FleetProse {
  std::string answer;
  std::vector<std::string> why_not_at_home;
  std::string cost;
};
FleetProse fleet_prose(const scenario::Scenario& sc, const fleet::FleetResult& res, const FleetAnswer& a);

/// The USERS and SAMPLED lines: users, expected calls, sampling and its error.
std::string fleet_users_notes(const scenario::Scenario& sc, const fleet::FleetResult& res, const FleetAnswer& a);

/// The report's tables: regions, datacenters, over the run (with more than one interval),
/// pools, pools: service, latency, classes (with request classes).
std::vector<Table> fleet_tables(const scenario::Scenario& sc, const fleet::FleetResult& res);

/// The events lines: failures, retries, autoscaling (no wall-clock figures).
std::string fleet_events_notes(const fleet::FleetResult& res);

/// The readable report; it opens with the answer.
std::string fleet_report(const scenario::Scenario& sc, const fleet::FleetResult& res);

/// summary.json of a fleet run: answer, regions, pools, latency, run facts.
nlohmann::json fleet_json(const scenario::Scenario& sc, const fleet::FleetResult& res);

/// pools.csv and datacenters.csv in `dir`: the report's pool and region tables at full
/// scale, units in the column names.
void write_fleet_tables_csv(const scenario::Scenario& sc, const fleet::FleetResult& res, const std::string& dir);

/// regions.csv: one row per region and report interval, units in the column names.
std::string fleet_series_csv(const fleet::FleetResult& res);
void write_fleet_series_csv(const fleet::FleetResult& res, const std::string& path);

/// Per region, full-scale GPUs per simulated GPU (pool sizes are rounded when sampled).
std::vector<double> region_gpu_scale(const fleet::FleetResult& res);

}  // namespace fleetsim::reports
