#include "sim/app/fleet_search.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>

#include "hw_models/error.h"
#include "sim/app/run.h"
#include "sim/core/parallel.h"
#include "sim/core/time.h"
#include "sim/fleet/population.h"
#include "sim/plan/planner.h"

namespace fleetsim::app {

namespace {

struct Evaluation {
  int n = 0;  // simulated replicas of the largest pool
  RunRecord record;
  bool met = false;
};

// The fleet at pool_replicas(b, k), no spares.
RunRecord run_scaled(const FleetConfig& b, const std::vector<double>& k) {
  scenario::Scenario sc = b.sc;
  const std::vector<int> replicas = pool_replicas(b, k);
  size_t j = 0;
  for (auto& region : sc.fleet->regions)
    for (auto& fp : region.pools) {
      fp.pool.replicas = replicas[j++];
      fp.spares = 0;
    }
  return run(sc, {}, 1);
}

Evaluation evaluate(const FleetConfig& b, int n, double target) {
  Evaluation e;
  e.n = n;
  e.record = run_scaled(b, std::vector<double>(b.replicas.size(), n / (b.sample * b.largest)));
  e.met = e.record.answer->slo_attainment >= target;
  return e;
}

// The search both climb and size_regions run: the fewest n (simulated replicas of a pool)
// for which try_n(n).met, taking more replicas never to hurt. From `start`, halve or double
// until the answer is bracketed (at most kMaxSimulated), then bisect to 5 % (or one). On
// return `hi` holds the answer (empty: not met even at the cap) and `lo` the largest miss.
constexpr int kMaxSimulated = 1 << 16;
template <class T, class F>
void fewest(int start, F&& try_n, std::optional<T>& hi, std::optional<T>& lo) {
  T first = try_n(start);
  if (first.met) {
    hi = std::move(first);
    while (hi->n > 1) {
      T t = try_n(std::max(1, hi->n / 2));
      if (!t.met) {
        lo = std::move(t);
        break;
      }
      hi = std::move(t);
    }
  } else {
    lo = std::move(first);
    while (!hi && lo->n < kMaxSimulated) {
      T t = try_n(std::min(kMaxSimulated, lo->n * 2));
      if (t.met)
        hi = std::move(t);
      else
        lo = std::move(t);
    }
  }
  while (hi && lo && hi->n - lo->n > std::max(1, hi->n / 20)) {
    T t = try_n(lo->n + (hi->n - lo->n) / 2);
    if (t.met)
      hi = std::move(t);
    else
      lo = std::move(t);
  }
}

// The rung of the search's answer `e` (a run of `b`'s stretch) at the day's mean load.
LadderRung rung_of(const FleetConfig& b, const Evaluation& e, double rho, LadderRung rung);
LadderRung balance_sides(const FleetConfig& b, double target, double rho, LadderRung rung,
                         Evaluation at_one);

// The share of region r's calls (served there) that met the SLO.
double region_attainment(const RunRecord& rec, size_t r) {
  const auto& g = rec.fleet->regions[r];
  return g.served ? static_cast<double>(g.good) / static_cast<double>(g.served) : 0.0;
}

// users.start moved to `at_s` seconds after Monday 00:00 UTC, as --set overrides.
std::vector<std::string> start_overrides(double at_s, double duration_s) {
  static const char* kDays[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
  constexpr double kWeek = 7 * 86400.0;
  at_s = std::fmod(std::fmod(at_s, kWeek) + kWeek, kWeek);
  const int day = std::min(6, static_cast<int>(at_s / 86400.0));
  const double hour = std::min(23.999, (at_s - day * 86400.0) / 3600.0);
  char h[32], d[32];
  std::snprintf(h, sizeof h, "%.6g", hour);
  std::snprintf(d, sizeof d, "%.6gs", duration_s);
  return {std::string("users.start.weekday=") + kDays[day],
          std::string("users.start.hour_utc=") + h, std::string("users.duration=") + d};
}

}  // namespace

std::vector<int> pool_replicas(const FleetConfig& b, const std::vector<double>& k) {
  std::vector<int> out(b.replicas.size());
  for (size_t j = 0; j < out.size(); ++j)
    out[j] = std::max(1, static_cast<int>(std::llround(k[j] * b.replicas[j])));
  return out;
}

void searches_side_by_side(int n, int threads, const std::function<void(int)>& search,
                           const std::function<void(int, int)>& progress) {
  std::atomic<int> done{0};
  std::mutex progress_mutex;
  parallel_for(n, threads, [&](int i) {
    search(i);
    const int d = ++done;
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(d, n);
    }
  });
}

std::string flow_text(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

BusiestWindow busiest_window(const std::string& file, const std::vector<std::string>& sets,
                             std::optional<uint64_t> seed, const hw::Catalog& catalog,
                             const std::shared_ptr<const hw::CalibrationSet>& calibration,
                             double warmup_s, double window_s, const std::string& command) {
  const scenario::Scenario day = scenario::load(file, sets, seed, catalog, calibration);
  if (!day.fleet)
    throw InputError(command + " runs on fleet scenarios (users: and fleet:)",
                     "give the scenario a users: section and a fleet: section (scenarios/"
                     "chatgpt-700m.yaml), or compare single-pool setups with fleetsim sweep",
                     file, 0, command);
  BusiestWindow w;
  w.scenario_name = day.name;
  const auto pop = day.make_population(day.seed);
  w.sample = pop->sample();
  w.peak_hour = pop->peak_hour();
  w.calls_per_day = pop->calls_per_day();
  w.weekly_active = pop->weekly_active();
  const double start_s = w.peak_hour * 3600.0 - warmup_s;
  w.overrides = start_overrides(pop->start_s() + start_s, warmup_s + window_s);
  for (size_t r = 0; r < pop->regions().size(); ++r) {
    const int best = pop->peak_hour(r);  // the region's own busiest hour
    w.region_names.push_back(pop->regions()[r].name);
    w.region_peak_hours.push_back(best);
    w.region_overrides.push_back(
        start_overrides(pop->start_s() + best * 3600.0 - warmup_s, warmup_s + window_s));
  }
  // ρ: the session starts (summed over regions) in the simulated stretch over their mean
  // over the day, from the population's curves (minute by minute).
  auto starts_per_s = [&](double t_s) {
    double rate = 0;
    for (size_t r = 0; r < pop->regions().size(); ++r)
      rate += pop->session_rate(r, seconds_to_ns(t_s));
    return rate;
  };
  auto mean_rate = [&](double from_s, double span_s) {
    const int steps = std::max(1, static_cast<int>(std::lround(span_s / 60.0)));
    double sum = 0;
    for (int i = 0; i < steps; ++i) sum += starts_per_s(from_s + (i + 0.5) * span_s / steps);
    return sum / steps;
  };
  const double day_mean = mean_rate(0, ns_to_seconds(pop->duration_ns()));
  w.window_to_mean = day_mean > 0 ? mean_rate(start_s, warmup_s + window_s) / day_mean : 1;
  return w;
}

FleetConfig fleet_config(const std::string& file, const std::vector<std::string>& overrides,
                         std::optional<uint64_t> seed, const hw::Catalog& catalog,
                         const std::shared_ptr<const hw::CalibrationSet>& calibration,
                         double sample, const std::string& what) {
  FleetConfig b{scenario::load(file, overrides, seed, catalog, calibration), {}, 1, sample};
  if (!b.sc.fleet)
    throw InputError(what + " turns the fleet into a single pool",
                     "it may change the fleet, not remove it", file, 0, "");
  b.sc.fleet->failures.enabled = false;
  b.sc.fleet->autoscaling.mode = fleet::Autoscaling::Mode::kOff;
  for (const auto& region : b.sc.fleet->regions)
    for (const auto& fp : region.pools) {
      b.replicas.push_back(std::max(1, fp.pool.replicas));
      b.largest = std::max(b.largest, b.replicas.back());
    }
  prepare_network(b.sc);
  return b;
}

LadderRung climb(const FleetConfig& b, double target, double rho, LadderRung rung) {
  // The fewest replicas of the largest pool (sampled) that meet the target, from the
  // scenario's own size.
  const int start =
      std::max(1, static_cast<int>(std::llround(b.sample * static_cast<double>(b.largest))));
  std::optional<Evaluation> hi, lo;
  fewest(
      start,
      [&](int n) {
        ++rung.simulations;
        return evaluate(b, n, target);
      },
      hi, lo);
  if (!hi) {
    rung.reason = "the SLO target is not met even with " + std::to_string(lo->n) +
                  " simulated replicas of the largest pool";
    return rung;
  }
  rung.replicas_simulated = hi->n;
  rung.scale = hi->n / (b.sample * b.largest);
  return balance_sides(b, target, rho, rung, std::move(*hi));
}

WindowTraffic window_traffic(const FleetConfig& config) {
  const RunRecord rec = run_scaled(config, std::vector<double>(config.replicas.size(), 1.0));
  const metrics::Summary& s = rec.summary();
  WindowTraffic t;
  if (s.sim_duration_s > 0)
    t.calls_per_s = static_cast<double>(s.requests_arrived) / s.sim_duration_s / config.sample;
  if (s.requests_completed > 0) {
    t.mean_prompt = static_cast<double>(s.input_tokens) / static_cast<double>(s.requests_completed);
    t.mean_output =
        static_cast<double>(s.output_tokens) / static_cast<double>(s.requests_completed);
  }
  return t;
}

std::optional<double> analytic_usd_per_day(const FleetConfig& config, const WindowTraffic& traffic,
                                           std::string* why) {
  const fleet::FleetSpec& f = *config.sc.fleet;
  auto no = [&](const std::string& reason) -> std::optional<double> {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  };
  if (f.models.size() > 1) return no("the fleet serves more than one model");
  if (f.split != fleet::FleetSpec::Split::kNone)
    return no(f.split == fleet::FleetSpec::Split::kLength ? "its pools are split by prompt length"
                                                          : "its pools are split by class");
  if (traffic.calls_per_s <= 0) return no("no calls in the measured stretch");
  const double P = traffic.mean_prompt, O = std::max(1.0, traffic.mean_output);
  double capacity = 0, gpus = 0, usd_per_hour = 0;  // at the configuration's own size
  size_t j = 0;
  for (const auto& region : f.regions)
    for (const auto& fp : region.pools) {
      const scenario::Pool& pool = fp.pool;
      const double replicas = config.replicas[j++];
      if (pool.vllm.role != serving::EngineConfig::Role::kBoth)
        return no("pool " + fp.name + " is disaggregated");
      if (pool.spec) return no("pool " + fp.name + " decodes speculatively");
      if (fp.usd_per_gpu_hour <= 0) return no("pool " + fp.name + " has no price");
      const double per_replica =
          plan::estimate_replica(
              pool.dep, P, O, pool.vllm.max_num_seqs,
              static_cast<double>(pool.memory.kv_blocks) * pool.vllm.block_tokens,
              config.sc.slo_tpot_s ? 0.8 * *config.sc.slo_tpot_s : 1e30)
              .calls_per_s;
      capacity += replicas * per_replica;
      gpus += replicas * pool.par.gpus();
      usd_per_hour += replicas * pool.par.gpus() * fp.usd_per_gpu_hour;
    }
  if (capacity <= 0 || gpus <= 0) return no("no pool");
  const double k = traffic.calls_per_s / (0.9 * capacity);
  return k * usd_per_hour * 24.0;
}

std::vector<double> pool_factors(const LadderRung& rung, size_t pools) {
  return rung.pool_factors.size() == pools ? rung.pool_factors
                                           : std::vector<double>(pools, rung.scale);
}

namespace {

LadderRung balance_sides(const FleetConfig& b, double target, double rho, LadderRung rung,
                         Evaluation at_one) {
  // Per pool: its side of the fleet's split (-1 neither), and each side's largest pool.
  const fleet::FleetSpec& f = *b.sc.fleet;
  const size_t n_sides = f.side_names.size();
  std::vector<int> side;
  std::vector<int> largest(n_sides, 0);
  for (const auto& region : f.regions)
    for (const auto& fp : region.pools) {
      if (fp.side >= 0) {
        auto& l = largest[static_cast<size_t>(fp.side)];
        l = std::max(l, b.replicas[side.size()]);
      }
      side.push_back(fp.side);
    }
  size_t sided = 0;
  for (const int l : largest) sided += l > 0 ? 1 : 0;
  if (sided < 2) return rung_of(b, at_one, rho, rung);
  // Each side in turn (the last first: long, then medium, then short; by class, the named
  // classes before the others) gets the fewest replicas with which the fleet's calls and
  // each side's own meet the target, the other sides as they stand: a side is not starved
  // to pay for another. Pools on no side keep the one-factor size.
  std::vector<double> k(n_sides, rung.scale);
  auto factors = [&] {
    std::vector<double> fs(side.size(), rung.scale);
    for (size_t j = 0; j < fs.size(); ++j)
      if (side[j] >= 0) fs[j] = k[static_cast<size_t>(side[j])];
    return fs;
  };
  auto met = [&](const RunRecord& rec) {
    if (rec.answer->slo_attainment < target) return false;
    const fleet::SplitSides ss = fleet::split_sides(*rec.fleet);
    for (size_t u = 0; u < ss.served.size(); ++u)
      if (ss.attainment(u, 1.0) < target) return false;  // a side without calls misses nothing
    return true;
  };
  Evaluation best = std::move(at_one);
  best.met = met(best.record);
  int sims = 0;
  for (size_t u = n_sides; u-- > 0;) {
    if (largest[u] == 0) continue;
    const double per_n = 1.0 / (b.sample * largest[u]);  // factor per simulated replica
    const double k0 = k[u];
    std::optional<Evaluation> hi, lo;
    fewest(
        std::max(1, static_cast<int>(std::llround(k0 / per_n))),
        [&](int n) {
          ++sims;
          k[u] = n * per_n;
          Evaluation e;
          e.n = n;
          e.record = run_scaled(b, factors());
          e.met = met(e.record);
          return e;
        },
        hi, lo);
    if (!hi) {
      k[u] = k0;
      rung.simulations += sims;
      rung.reason = "the " + f.side_names[u] + " side misses the SLO target even with " +
                    std::to_string(lo->n) + " simulated replicas of its largest pool";
      return rung;
    }
    k[u] = hi->n * per_n;
    best = std::move(*hi);
  }
  rung.simulations += sims;
  rung.pool_factors = factors();
  std::string text = std::string("The ") +
                     (f.split == fleet::FleetSpec::Split::kClass ? "class" : "length") +
                     " split's sides were sized apart (each side's calls and the fleet's meet "
                     "the target):";
  for (size_t u = 0; u < n_sides; ++u) {
    if (largest[u] == 0) continue;
    char part[160];
    std::snprintf(part, sizeof part, "%s %s pools %.3gx", u == 0 ? "" : ",",
                  f.side_names[u].c_str(), k[u] / rung.scale);
    text += part;
  }
  rung.sizing = text + " the one-factor size (" + std::to_string(sims) + " simulations)";
  return rung_of(b, best, rho, rung);
}

}  // namespace

namespace {

LadderRung rung_of(const FleetConfig& b, const Evaluation& e, double rho, LadderRung rung) {
  const fleet::FleetAnswer& a = *e.record.answer;
  const metrics::Summary& s = e.record.summary();
  rung.met = true;
  rung.gpus = a.gpus_configured;
  rung.attainment = a.slo_attainment;
  rung.attainment_ci95 = a.slo_ci95;
  rung.ttft_p99_s = s.ttft.p99_s;
  rung.tpot_p99_s = s.tpot.p99_s;
  rung.busy = a.busy_fraction;
  rung.price_missing = a.price_missing;
  // A day: the window's calls, tokens and energy at the day's mean load (ρ times less).
  rung.window_to_mean = rho;
  rung.calls_per_day = a.calls_per_day / rho;
  rung.tokens_per_day = a.tokens_per_day / rho;
  rung.wh_per_call_window = a.calls_per_day > 0 ? a.energy_kwh_per_day * 1e3 / a.calls_per_day : 0;
  double energy_kwh_day = 0;
  if (rung.autoscaling) {
    // The fleet follows the load: the busiest window's GPU-hours and energy per call, all day.
    rung.gpu_hours_per_day = a.gpu_hours_per_day / rho;
    energy_kwh_day = a.energy_kwh_per_day / rho;
  } else {
    // Held all day: idle draw all day, busy draw for the day's work (ρ times less than the
    // window's).
    rung.gpu_hours_per_day = a.gpu_hours_per_day;
    energy_kwh_day =
        a.energy_kwh_per_day_idle + (a.energy_kwh_per_day - a.energy_kwh_per_day_idle) / rho;
  }
  rung.wh_per_call = rung.calls_per_day > 0 ? energy_kwh_day * 1e3 / rung.calls_per_day : 0;
  const fleet::CostModel& cm = b.sc.fleet->cost;
  if (a.owned) {
    rung.usd_per_day = a.capital_usd / (cm.depreciation_years * 365.0) +
                       energy_kwh_day * cm.electricity_usd_per_kwh;
  } else {
    rung.usd_per_day =
        a.usd_per_day * (1 - cm.reserved_discount) * (rung.autoscaling ? 1.0 / rho : 1.0);
  }
  rung.usd_per_mtok = rung.tokens_per_day > 0 ? rung.usd_per_day / rung.tokens_per_day * 1e6 : 0;
  return rung;
}

}  // namespace

std::vector<PoolSpares> failure_spares(const fleet::FleetSpec& spec,
                                       const std::vector<int>& replicas, double availability) {
  const fleet::Failures& f = spec.failures;
  auto ratio = [](double mttr, double mtbf) { return mtbf > 0 ? mttr / mtbf : 0.0; };
  const double gpu = ratio(f.gpu_mttr_s, f.gpu_mtbf_s), node = ratio(f.node_mttr_s, f.node_mtbf_s),
               link = ratio(f.link_mttr_s, f.link_mtbf_s),
               rack = ratio(f.rack_mttr_s, f.rack_mtbf_s);
  std::vector<PoolSpares> out;
  if (gpu == 0 && node == 0 && link == 0 && rack == 0) return out;
  size_t j = 0;
  for (const auto& region : spec.regions)
    for (const auto& fp : region.pools) {
      PoolSpares ps;
      ps.name = fp.name;
      ps.replicas = std::max(1, replicas[j++]);
      ps.gpus_per_replica = fp.pool.par.gpus();
      ps.usd_per_gpu_hour = fp.usd_per_gpu_hour;
      const int n = ps.replicas, g = ps.gpus_per_replica;
      // Replicas down at once: Σ over kinds of (replicas one unit takes down) × Poisson(mean).
      const bool shared = g < fp.gpus_per_server;
      const double per_server = shared ? std::max(1, fp.gpus_per_server / g) : 1;
      const double servers = shared ? std::ceil(n / per_server - 1e-9)
                                    : static_cast<double>(n) * fp.servers_per_replica;
      const double racks = std::ceil(fp.servers_for(n) / std::max(1, fp.servers_per_rack) - 1e-9);
      struct Kind {
        double mean;
        int takes;  // replicas one failed unit takes down
      };
      const Kind kinds[] = {
          {static_cast<double>(n) * g * gpu, 1},
          {servers * (node + link), static_cast<int>(per_server)},
          {racks * rack, static_cast<int>(std::ceil(n / std::max(1.0, racks) - 1e-9))},
      };
      // The distribution of replicas down, 0..n (more cannot be down), by convolution.
      std::vector<double> pmf(static_cast<size_t>(n) + 1, 0.0);
      pmf[0] = 1;
      for (const Kind& k : kinds) {
        if (k.mean <= 0) continue;
        ps.mean_down += k.mean * k.takes;
        std::vector<double> next(pmf.size(), 0.0);
        double p = std::exp(-k.mean);  // P(units down = u), u = 0, 1, ...
        for (int u = 0; p > 0; ++u) {
          const size_t shift = static_cast<size_t>(u) * static_cast<size_t>(k.takes);
          for (size_t x = 0; x < pmf.size(); ++x)
            next[std::min(pmf.size() - 1, x + shift)] += pmf[x] * p;
          // Past the mean, stop when the rest is negligible or could only land on n.
          if (u > k.mean && (p < 1e-18 || shift >= pmf.size() - 1)) break;
          p *= k.mean / (u + 1);
        }
        pmf = std::move(next);
      }
      ps.mean_down = std::min(ps.mean_down, static_cast<double>(n));
      double cdf = 0;
      ps.spares = n;
      for (size_t x = 0; x < pmf.size(); ++x) {
        cdf += pmf[x];
        if (cdf >= availability - 1e-12) {
          ps.spares = static_cast<int>(x);
          break;
        }
      }
      out.push_back(ps);
    }
  return out;
}

RegionalAnswer size_regions(const FleetConfig& base,
                            const std::function<FleetConfig(size_t region)>& region_config,
                            double target, double rho, const LadderRung& answer) {
  RegionalAnswer out;
  const auto& regions = base.sc.fleet->regions;
  // Pool j's region, and each region's largest pool (full scale, as the scenario gives it).
  std::vector<size_t> region_of;
  std::vector<int> largest(regions.size(), 1);
  for (size_t r = 0; r < regions.size(); ++r)
    for (size_t p = 0; p < regions[r].pools.size(); ++p) {
      largest[r] = std::max(largest[r], base.replicas[region_of.size()]);
      region_of.push_back(r);
    }
  std::vector<double> scale(regions.size(), 1.0);  // × the one-factor answer, per region
  const std::vector<double> k1 = pool_factors(answer, region_of.size());
  auto factors = [&] {
    std::vector<double> k(region_of.size());
    for (size_t j = 0; j < k.size(); ++j) k[j] = k1[j] * scale[region_of[j]];
    return k;
  };
  for (size_t r = 0; r < regions.size(); ++r) {
    const FleetConfig cfg = region_config(r);
    RegionSize rs;
    rs.name = regions[r].traffic.name;
    // n: simulated replicas of the region's largest pool; the region's factor is n / n1.
    double k_largest = answer.scale;  // the one-factor answer's factor of that pool
    for (size_t j = 0; j < region_of.size(); ++j)
      if (region_of[j] == r && base.replicas[j] == largest[r]) {
        k_largest = k1[j];
        break;
      }
    const double n1 = base.sample * k_largest * largest[r];
    struct Try {
      int n = 0;
      bool met = false;
      double attainment = 0;
    };
    auto attempt = [&](int n) {
      scale[r] = n / n1;
      const RunRecord rec = run_scaled(cfg, factors());
      const double own = region_attainment(rec, r);
      const Try t{n, own >= target && rec.answer->slo_attainment >= target, own};
      if (++rs.simulations == 1) {  // at the one-factor size
        rs.attainment_one_factor = t.attainment;
        rs.one_factor_met = t.met;
      }
      return t;
    };
    std::optional<Try> hi, lo;
    fewest(std::max(1, static_cast<int>(std::llround(n1))), attempt, hi, lo);
    out.simulations += rs.simulations;
    if (!hi) {
      scale[r] = 1.0;
      out.reason = "region " + rs.name + " misses the target in its own busiest hour even with " +
                   std::to_string(lo->n) + " simulated replicas of its largest pool";
      out.regions.push_back(rs);
      return out;
    }
    scale[r] = hi->n / n1;
    rs.scale = scale[r];
    rs.attainment = hi->attainment;
    rs.met = true;
    out.regions.push_back(rs);
  }
  // The fleet at the regions' sizes, in the fleet's busiest stretch: its cost and SLO.
  Evaluation e;
  e.record = run_scaled(base, factors());
  ++out.simulations;
  out.replicas = pool_replicas(base, factors());
  LadderRung rung = answer;
  rung.simulations = out.simulations;
  out.rung = rung_of(base, e, rho, rung);
  out.rung.scale = answer.scale;
  const fleet::FleetAnswer& a = *e.record.answer;
  for (const auto& p : e.record.fleet->pools)
    out.regions[static_cast<size_t>(p.region)].gpus +=
        static_cast<double>(p.replicas_configured) * p.gpus_per_replica;
  out.met = a.slo_attainment >= target;
  if (!out.met) {
    out.rung.met = false;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f %%", 100 * a.slo_attainment);
    out.reason = std::string("sized apart, the fleet meets the SLO for ") + pct +
                 " of calls in its busiest hour, under the target";
  }
  return out;
}

}  // namespace fleetsim::app
