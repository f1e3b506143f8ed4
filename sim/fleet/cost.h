// What a fleet costs: from a (possibly sampled) fleet run to the full-scale answer — GPUs,
// servers, racks, power and floor; GPU-hours, energy and dollars a day; $ per million
// tokens, the break-even price and the idle-cost curve.
//
// Layout: a pool holds, at full scale, its most replicas held at once × the sample's scale;
// replicas smaller than a server share servers (FleetPool::servers_for), racks hold
// servers_per_rack servers, and a server draws its nameplate power at full load.
// Energy: a GPU draws idle + (TDP − idle) × its pool's busy share; the rest of a server draws
// its nameplate power less its GPUs' TDP; the facility adds the PUE.
// Cost basis (`cost:`): cloud = GPU-hours × the pool's price × (1 − reservation discount),
// power included; owned = capital (servers, network share, racks) straight-line over the
// depreciation years + facility energy × the electricity price.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/fleet/fleet_result.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::fleet {

/// One pool's cost a day at full scale, by the cost basis: cloud (GPU-hours at its price
/// less the reservation discount) or owned (hardware depreciation and electricity).
struct PoolCost {
  std::string pool;
  double cloud_usd_per_day = 0, hardware_usd_per_day = 0, electricity_usd_per_day = 0;
};

/// Full-scale figures derived from a (possibly sampled) fleet run.
struct FleetAnswer {
  double calls_per_day = 0;  ///< measured arrivals scaled to full scale and to 24 h
  double calls_per_day_expected = 0;
  double peak_calls_per_s = 0;  ///< busiest report interval, full scale
  double mean_calls_per_s = 0;
  double gpus = 0;             ///< full scale, at the most held at once
  double gpus_configured = 0;  ///< replicas (+ spares) × GPUs per replica, full scale
  double servers = 0, racks = 0;
  double it_power_w = 0, facility_power_w = 0, floor_m2 = 0;
  double gpu_hours_per_day = 0;
  double usd_per_day = 0;      ///< GPU-hours × cloud price, pools with a price
  bool price_missing = false;  ///< a pool has no price: usd_per_day leaves it out
  /// usd_per_day over the daily users: what a daily user costs a day at list prices.
  double usd_per_daily_user_day = 0;
  double slo_attainment = 0, slo_ci95 = 0;
  double count_rel_error = 0;  ///< sampling: relative standard error of call counts
  double busy_fraction = 0;    ///< replica time with an iteration running / held time
  // Cost and energy (cost: section; full scale, per day).
  bool owned = false;
  double energy_kwh_per_day =
      0;  ///< facility energy: GPUs idle→TDP with their busy share, hosts, PUE
  /// The same with every GPU idle all day (held replicas doing no work): energy a day is
  /// linear in the busy share between this and energy_kwh_per_day.
  double energy_kwh_per_day_idle = 0;
  double joules_per_token = 0;  ///< facility energy per token (input + output)
  double capital_usd = 0;       ///< owned: servers, network share and racks at the peak count
  double electricity_usd_per_day = 0;
  double cost_usd_per_day = 0;  ///< by the cost basis (cloud: usd_per_day less the discount)
  double tokens_per_day = 0, output_tokens_per_day = 0;
  double usd_per_mtok = 0, usd_per_mtok_output = 0;
  double breakeven_usd_per_mtok = 0;  ///< usd_per_mtok / (1 − margin)
  double usd_per_daily_user_month = 0, usd_per_weekly_user_month = 0;
  /// $/M tokens if the same fleet served this share of its tokens (the idle-cost curve).
  std::vector<std::pair<double, double>> usd_per_mtok_at_load;
  bool idle_power_assumed = false;
  std::vector<PoolCost> pool_costs;  ///< per pool, in the scenario's order
};

/// The answer of the run `res` of the fleet scenario `sc` (sc.fleet set).
FleetAnswer fleet_answer(const scenario::Scenario& sc, const FleetResult& res);

/// Full-scale replicas per simulated replica of a pool (0 when none was simulated).
double pool_scale(const PoolResult& p);

/// A footprint at full scale, at the most replicas held at once.
struct Layout {
  double replicas = 0, gpus = 0, servers = 0, racks = 0, it_power_w = 0;
  double facility_power_w = 0;  ///< it_power_w × PUE (region_layout only)
  double floor_m2 = 0;          ///< racks × floor per rack (region_layout only)
};

/// One pool's footprint.
Layout pool_layout(const PoolResult& p);
/// The datacenter of region `region`: its pools' footprints summed, with the facility power
/// and floor of `spec`.
Layout region_layout(const FleetSpec& spec, const FleetResult& res, std::size_t region);

/// Per region, full-scale GPUs per simulated GPU (pool sizes are rounded when sampled).
std::vector<double> region_gpu_scale(const FleetResult& res);

/// One pool's day at full scale, with `per_day` = 24 h over the run's length.
struct PoolDay {
  double gpu_hours = 0;      ///< held GPU-hours a day
  double calls = 0;          ///< completed calls a day
  double output_tokens = 0;  ///< output tokens of the completed calls a day
  /// gpu_hours × the pool's list price (no discount) per million output tokens; 0 without
  /// output tokens.
  double list_usd_per_mtok_output = 0;
  /// The run's own held GPU-hours at the list price per million (output) tokens it
  /// served; none without a price or tokens.
  std::optional<double> run_usd_per_mtok, run_usd_per_mtok_output;
  double rack_power_w = 0;  ///< a full rack of the pool's servers at full load
};
PoolDay pool_day(const PoolResult& p, double sample, double per_day);

}  // namespace fleetsim::fleet
