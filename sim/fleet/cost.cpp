#include "sim/fleet/cost.h"

#include <algorithm>
#include <cmath>

#include "sim/fleet/population.h"

namespace fleetsim::fleet {

double pool_scale(const PoolResult& p) {
  return p.replicas_simulated > 0
             ? static_cast<double>(p.replicas_configured) / p.replicas_simulated
             : 0.0;
}

Layout pool_layout(const PoolResult& p) {
  const FleetPool& fp = *p.spec;
  Layout l;
  l.replicas = p.replicas_peak * pool_scale(p);
  l.gpus = l.replicas * p.gpus_per_replica;
  l.servers = fp.servers_for(l.replicas);
  l.racks = std::ceil(l.servers / fp.servers_per_rack - 1e-9);
  l.it_power_w = l.servers * fp.server_power_w;
  return l;
}

Layout region_layout(const FleetSpec& spec, const FleetResult& res, std::size_t region) {
  Layout sum;
  for (const auto& p : res.pools) {
    if (p.region != static_cast<int>(region)) continue;
    const Layout l = pool_layout(p);
    sum.replicas += l.replicas;
    sum.gpus += l.gpus;
    sum.servers += l.servers;
    sum.racks += l.racks;
    sum.it_power_w += l.it_power_w;
  }
  sum.facility_power_w = sum.it_power_w * spec.pue;
  sum.floor_m2 = sum.racks * spec.floor_m2_per_rack;
  return sum;
}

std::vector<double> region_gpu_scale(const FleetResult& res) {
  std::vector<double> full(res.regions.size(), 0.0), simulated(res.regions.size(), 0.0),
      scale(res.regions.size(), 0.0);
  for (const auto& p : res.pools) {
    full[static_cast<size_t>(p.region)] +=
        static_cast<double>(p.replicas_configured) * p.gpus_per_replica;
    simulated[static_cast<size_t>(p.region)] +=
        static_cast<double>(p.replicas_simulated) * p.gpus_per_replica;
  }
  for (size_t r = 0; r < full.size(); ++r)
    scale[r] = simulated[r] > 0 ? full[r] / simulated[r] : 0.0;
  return scale;
}

PoolDay pool_day(const PoolResult& p, double sample, double per_day) {
  const FleetPool& fp = *p.spec;
  PoolDay d;
  d.gpu_hours = p.replica_hours * pool_scale(p) * p.gpus_per_replica * per_day;
  d.calls = static_cast<double>(p.completed) / sample * per_day;
  d.output_tokens = static_cast<double>(p.output_tokens) / sample * per_day;
  d.list_usd_per_mtok_output =
      d.output_tokens > 0 ? d.gpu_hours * fp.usd_per_gpu_hour / d.output_tokens * 1e6 : 0.0;
  // Sampled GPU-hours over sampled tokens: the sample's scale cancels.
  const double cost = p.replica_hours * p.gpus_per_replica * fp.usd_per_gpu_hour;
  const double out_tok = static_cast<double>(p.output_tokens),
               all_tok = static_cast<double>(p.input_tokens) + out_tok;
  if (fp.usd_per_gpu_hour > 0 && out_tok > 0) d.run_usd_per_mtok_output = cost / out_tok * 1e6;
  if (fp.usd_per_gpu_hour > 0 && all_tok > 0) d.run_usd_per_mtok = cost / all_tok * 1e6;
  d.rack_power_w = fp.server_power_w * fp.servers_per_rack;
  return d;
}

FleetAnswer fleet_answer(const scenario::Scenario& sc, const FleetResult& res) {
  FleetAnswer a;
  const auto& spec = *sc.fleet;
  const auto pop = sc.make_population(sc.seed);
  const double duration_s = ns_to_seconds(pop->duration_ns());
  const double per_day = 86400.0 / duration_s;
  a.calls_per_day_expected = pop->calls_per_day();
  uint64_t arrivals = 0;
  for (const auto& r : res.regions) arrivals += r.arrivals;
  a.calls_per_day = static_cast<double>(arrivals) / res.sample * per_day;
  a.mean_calls_per_s = static_cast<double>(arrivals) / res.sample / duration_s;
  // Busiest interval, all regions together.
  if (!res.regions.empty()) {
    for (size_t k = 0; k < res.regions[0].series.size(); ++k) {
      double n = 0;
      double len = 0;
      for (const auto& r : res.regions) {
        n += static_cast<double>(r.series[k].arrivals);
        const double next = k + 1 < r.series.size() ? r.series[k + 1].t_s : duration_s;
        len = next - r.series[k].t_s;
      }
      if (len > 0) a.peak_calls_per_s = std::max(a.peak_calls_per_s, n / res.sample / len);
    }
  }
  double busy = 0, held = 0;
  for (const auto& p : res.pools) {
    const FleetPool& fp = *p.spec;
    const double scale = pool_scale(p);
    const Layout l = pool_layout(p);
    a.gpus += l.gpus;
    a.gpus_configured += static_cast<double>(p.replicas_configured) * p.gpus_per_replica;
    a.servers += l.servers;
    a.racks += l.racks;
    a.it_power_w += l.it_power_w;
    a.floor_m2 += l.racks * spec.floor_m2_per_rack;
    const double gpu_hours = p.replica_hours * scale * p.gpus_per_replica * per_day;
    a.gpu_hours_per_day += gpu_hours;
    if (fp.usd_per_gpu_hour > 0)
      a.usd_per_day += gpu_hours * fp.usd_per_gpu_hour;
    else if (gpu_hours > 0)
      a.price_missing = true;
    busy += p.busy_hours;
    held += p.replica_hours;
  }
  a.facility_power_w = a.it_power_w * spec.pue;
  a.busy_fraction = held > 0 ? busy / held : 0;

  // Energy and cost. GPU draw = idle + (TDP − idle) × the pool's busy share; the rest of a
  // server draws its nameplate power less its GPUs' TDP; the facility adds the PUE.
  const CostModel& cm = spec.cost;
  a.owned = cm.basis == CostModel::Basis::kOwned;
  // For the idle-cost curve: energy and cost with every pool's busy share scaled by u.
  // A pool's IT energy a day, in Wh.
  auto pool_wh = [&](const PoolResult& p, double u) {
    const FleetPool& fp = *p.spec;
    if (p.replica_hours <= 0) return 0.0;
    const double busy_share = std::min(1.0, u * p.busy_hours / p.replica_hours);
    const double tdp = fp.pool.gpu.tdp_w;
    const double gpu_w = fp.gpu_idle_w + (tdp - fp.gpu_idle_w) * busy_share;
    const double host_w = std::max(0.0, fp.server_power_w - fp.gpus_per_server * tdp);
    const int gpus = fp.pool.par.gpus();
    const double servers_per_replica = gpus < fp.gpus_per_server
                                           ? static_cast<double>(gpus) / fp.gpus_per_server
                                           : fp.servers_per_replica;
    const double replica_w = gpus * gpu_w + servers_per_replica * host_w;
    return p.replica_hours * pool_scale(p) * per_day * replica_w;
  };
  auto energy_kwh = [&](double u) {
    double wh = 0;
    for (const auto& p : res.pools) wh += pool_wh(p, u);
    return wh / 1e3 * spec.pue;
  };
  for (const auto& p : res.pools) {
    a.tokens_per_day +=
        static_cast<double>(p.input_tokens + p.output_tokens) / res.sample * per_day;
    a.output_tokens_per_day += static_cast<double>(p.output_tokens) / res.sample * per_day;
    a.idle_power_assumed = a.idle_power_assumed || p.spec->gpu_idle_assumed;
  }
  a.energy_kwh_per_day = energy_kwh(1.0);
  a.energy_kwh_per_day_idle = energy_kwh(0.0);
  a.joules_per_token = a.tokens_per_day > 0 ? a.energy_kwh_per_day * 3.6e6 / a.tokens_per_day : 0;
  double capital = 0;
  for (const auto& p : res.pools) {
    const Layout l = pool_layout(p);
    const double pool_capital =
        l.servers * (p.spec->server_usd + cm.network_usd_per_server) + l.racks * cm.rack_usd;
    capital += pool_capital;
    PoolCost c{p.name, 0, 0, 0};
    if (a.owned) {
      c.hardware_usd_per_day = pool_capital / (cm.depreciation_years * 365.0);
      c.electricity_usd_per_day = pool_wh(p, 1.0) / 1e3 * spec.pue * cm.electricity_usd_per_kwh;
    } else {
      c.cloud_usd_per_day = p.replica_hours * pool_scale(p) * p.gpus_per_replica * per_day *
                            p.spec->usd_per_gpu_hour * (1 - cm.reserved_discount);
    }
    a.pool_costs.push_back(c);
  }
  a.capital_usd = capital;
  auto cost_at = [&](double u) {
    if (!a.owned) return a.usd_per_day * (1 - cm.reserved_discount);  // power is in the price
    return capital / (cm.depreciation_years * 365.0) + energy_kwh(u) * cm.electricity_usd_per_kwh;
  };
  a.electricity_usd_per_day = a.owned ? a.energy_kwh_per_day * cm.electricity_usd_per_kwh : 0;
  a.cost_usd_per_day = cost_at(1.0);
  if (a.tokens_per_day > 0) {
    a.usd_per_mtok = a.cost_usd_per_day / a.tokens_per_day * 1e6;
    a.usd_per_mtok_output =
        a.output_tokens_per_day > 0 ? a.cost_usd_per_day / a.output_tokens_per_day * 1e6 : 0;
    a.breakeven_usd_per_mtok = a.usd_per_mtok / (1 - cm.margin);
    for (double u : {0.01, 0.1, 0.25, 0.5, 1.0})
      a.usd_per_mtok_at_load.emplace_back(u, cost_at(u) / (u * a.tokens_per_day) * 1e6);
  }
  const double dau = pop->weekly_active() * pop->daily_active_fraction();
  a.usd_per_daily_user_day = a.usd_per_day / dau;
  a.usd_per_daily_user_month = dau > 0 ? a.cost_usd_per_day * 30.44 / dau : 0;
  a.usd_per_weekly_user_month = a.cost_usd_per_day * 30.44 / pop->weekly_active();
  uint64_t served = 0, good = 0;
  for (const auto& r : res.regions) {
    served += r.served;
    good += r.good;
  }
  a.slo_attainment = served ? static_cast<double>(good) / static_cast<double>(served) : 0;
  // Normal approximation of a binomial share (calls treated as independent).
  a.slo_ci95 = served ? 1.96 * std::sqrt(a.slo_attainment * (1 - a.slo_attainment) /
                                         static_cast<double>(served))
                      : 0;
  // A count of n session starts has relative standard error sqrt(D / n), D its variance
  // over mean: 1 for Poisson starts (tracking: rate), more when users are tracked one by
  // one (a user active on a day opens several sessions; Population::call_count_dispersion).
  a.count_rel_error =
      res.sessions ? std::sqrt(pop->call_count_dispersion() / static_cast<double>(res.sessions))
                   : 0;
  return a;
}

}  // namespace fleetsim::fleet
