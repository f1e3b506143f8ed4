#include "reports/fleet_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "hw_models/error.h"
#include "hw_models/files.h"
#include "hw_models/units.h"
#include "reports/format.h"
#include "reports/summary.h"

namespace fleetsim::reports {

using json = nlohmann::json;
using units::Dim;

namespace {

// Every line of `text` indented by two spaces.
// "37 of 256": a pool's mean decode batch (decode tokens per iteration) of its slots.
std::string batch_text(const fleet::PoolResult& p) {
  if (p.iterations == 0) return "-";
  const double mean = static_cast<double>(p.decode_tokens) / static_cast<double>(p.iterations);
  std::string s = human(mean);
  s += " of ";
  s += std::to_string(p.spec->pool.vllm.max_num_seqs);
  return s;
}

std::string indent(const std::string& text) {
  std::string o;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    o += "  " + text.substr(start, nl + 1 - start);
  return o;
}

}  // namespace

FleetProse fleet_prose(const scenario::Scenario& sc, const fleet::FleetResult& res,
                       const fleet::FleetAnswer& a) {
  const auto& spec = *sc.fleet;
  const auto pop = sc.make_population(sc.seed);
  FleetProse p;
  std::ostringstream ans;
  ans << human(pop->weekly_active()) << " weekly users ("
      << human(pop->weekly_active() * pop->daily_active_fraction()) << " a day) send "
      << human(a.calls_per_day) << " model calls a day, " << human(a.mean_calls_per_s)
      << "/s on average and " << human(a.peak_calls_per_s)
      << "/s in the busiest hour. Serving them took " << human(a.gpus) << " GPUs at the most ("
      << human(a.servers) << " servers in " << human(a.racks) << " racks, "
      << units::format(a.it_power_w, Dim::kPower) << " of IT load, "
      << units::format(a.facility_power_w, Dim::kPower) << " at PUE " << spec.pue << ", "
      << human(a.floor_m2) << " m² of floor), " << human(a.gpu_hours_per_day) << " GPU-hours a day";
  if (a.cost_usd_per_day > 0)
    ans << ", $" << human(a.cost_usd_per_day) << " a day "
        << (a.owned ? "owning the hardware" : "at cloud prices")
        << (!a.owned && a.price_missing ? " (pools without a price left out)" : "");
  ans << ". " << pct(a.slo_attainment) << " of calls met their latency target.";
  p.answer = ans.str();
  // Why not at home: the largest model's weights against a 24 GB card.
  {
    const fleet::PoolResult* big = nullptr;
    double big_bytes = 0;
    for (const auto& pr : res.pools) {
      const auto& m = pr.spec->pool.memory;
      const double bytes = (m.weight_bytes + m.host_weight_bytes) * pr.gpus_per_replica;
      if (bytes > big_bytes) {
        big_bytes = bytes;
        big = &pr;
      }
    }
    if (big) {
      const double per_user_day = a.usd_per_daily_user_day;
      double held_s = 0;
      for (const auto& pr : res.pools) held_s += pr.replica_hours * 3600.0;
      const double in_flight =
          held_s > 0 ? res.summary.e2e.mean_s *
                           static_cast<double>(res.summary.requests_completed) / held_s
                     : 0;
      std::ostringstream why;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%.0f", std::ceil(big_bytes / 24e9));
      why << "One copy of " << big->spec->pool.model.name << " is "
          << units::format(big_bytes, Dim::kBytes) << " of weights ("
          << big->spec->pool.dep.prec.weight_bytes * 8 << "-bit): " << buf
          << " graphics cards of 24 GB just to hold it, before any KV cache.";
      p.why_not_at_home.push_back(why.str());
      why.str("");
      std::snprintf(buf, sizeof buf, "%.1f", in_flight);
      why << "Batching: a replica here had " << buf
          << " calls in flight on average (running a batch " << pct(a.busy_fraction)
          << " of its time), so every GPU-hour is shared by many users";
      if (per_user_day > 0) {
        std::snprintf(buf, sizeof buf, "$%.3f", per_user_day);
        why << ": " << buf << " per daily user per day";
      }
      why << ". One person sends one call at a time for minutes a day: a machine of their own "
             "waits idle"
             " almost all day (scenarios/local-vs-datacenter.yaml puts numbers on it).";
      p.why_not_at_home.push_back(why.str());
    }
  }
  if (a.cost_usd_per_day > 0) {
    const fleet::CostModel& cm = spec.cost;
    char cb[200];
    std::ostringstream c;
    if (a.owned) {
      std::snprintf(cb, sizeof cb, "%.3g", cm.depreciation_years);
      c << "Owned: $" << human(a.capital_usd) << " of servers, network and racks over " << cb
        << " years, plus $" << human(a.electricity_usd_per_day) << " of electricity a day: ";
    } else {
      c << "Cloud prices"
        << (cm.reserved_discount > 0
                ? " less a " + pct(cm.reserved_discount) + " reservation discount"
                : "")
        << ": ";
    }
    std::snprintf(cb, sizeof cb, "$%.3g per million tokens ($%.3g per million output tokens)",
                  a.usd_per_mtok, a.usd_per_mtok_output);
    c << "$" << human(a.cost_usd_per_day) << " a day, $" << human(a.cost_usd_per_day * 30.44)
      << " a month; " << cb << ".";
    std::snprintf(cb, sizeof cb, "$%.3g", a.breakeven_usd_per_mtok);
    c << " Break-even price at a " << pct(cm.margin) << " margin: " << cb << " per million tokens.";
    std::snprintf(cb, sizeof cb, "$%.3g per daily user and $%.3g per weekly user a month",
                  a.usd_per_daily_user_month, a.usd_per_weekly_user_month);
    c << " That is " << cb << ".";
    std::snprintf(cb, sizeof cb, "%.3g J", a.joules_per_token);
    c << " Energy: " << units::format(a.energy_kwh_per_day * 1e3, Dim::kPower)
      << "h a day at the facility, " << cb << " per token"
      << (a.idle_power_assumed
              ? " (idle GPU draw assumed at 20 % of TDP where the catalog has none)"
              : "")
      << ".";
    c << " Served at a smaller share of this load, the same fleet costs per million tokens:";
    for (const auto& [u, cost] : a.usd_per_mtok_at_load) {
      std::snprintf(cb, sizeof cb, " %s → $%.3g%s", pct(u).c_str(), cost, u < 1 ? "," : ".");
      c << cb;
    }
    p.cost = c.str();
  }
  return p;
}

std::string fleet_users_notes(const scenario::Scenario& sc, const fleet::FleetResult& res,
                              const fleet::FleetAnswer& a) {
  const auto pop = sc.make_population(sc.seed);
  std::ostringstream o;
  o << "USERS    " << pop->describe() << "\n";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "         expected %s calls/day (measured %s); peak-to-mean %.2f (peak at hour %d "
                "UTC of the run)\n",
                human(a.calls_per_day_expected).c_str(), human(a.calls_per_day).c_str(),
                pop->peak_to_mean(), pop->peak_hour());
  o << buf;
  if (std::fabs(ns_to_seconds(pop->duration_ns()) - 86400.0) > 1.0)
    o << "         the run covers " << duration(ns_to_seconds(pop->duration_ns()))
      << ": figures \"a day\" scale that span to 24 h (expected: the day's average)\n";
  if (res.sample < 1) {
    std::snprintf(buf, sizeof buf,
                  "SAMPLED  %.3g %% of the users and of every pool's replicas simulated; counts "
                  "scaled by %.4g.\n"
                  "         sampling error: call counts ±%.2f %% (1 s.e., %llu sessions); SLO "
                  "attainment ±%.2f pp (95 %%)\n",
                  100 * res.sample, 1 / res.sample, 100 * a.count_rel_error,
                  static_cast<unsigned long long>(res.sessions), 100 * a.slo_ci95);
    o << buf;
    for (const auto& p : res.pools) {
      const double want = p.replicas_configured * res.sample;
      if (p.replicas_simulated > 0 && std::fabs(p.replicas_simulated / want - 1) > 0.05) {
        std::snprintf(buf, sizeof buf,
                      "         note: %s runs %d replicas for %.2f at this sample: its capacity is "
                      "off by %+.0f %%\n",
                      p.name.c_str(), p.replicas_simulated, want,
                      100 * (p.replicas_simulated / want - 1));
        o << buf;
      }
    }
  }
  return o.str();
}

std::vector<Table> fleet_tables(const scenario::Scenario& sc, const fleet::FleetResult& res) {
  const auto& spec = *sc.fleet;
  const auto pop = sc.make_population(sc.seed);
  const double per_day = 86400.0 / ns_to_seconds(pop->duration_ns());
  auto share = [](uint64_t n, uint64_t of) {
    return of ? pct(static_cast<double>(n) / static_cast<double>(of)) : "-";
  };
  std::vector<Table> tables;
  Table regions{{"regions", "users", "calls/day", "served here", "spilled out", "TTFT p50",
                 "TTFT p99", "SLO met"},
                {}};
  for (size_t r = 0; r < res.regions.size(); ++r) {
    const auto& g = res.regions[r];
    regions.rows.push_back({g.name, pct(pop->regions()[r].user_share),
                            human(static_cast<double>(g.arrivals) / res.sample * per_day),
                            human(static_cast<double>(g.served) / res.sample * per_day),
                            share(g.spilled_out, g.arrivals), duration(g.ttft.p50_s),
                            duration(g.ttft.p99_s), share(g.good, g.served)});
  }
  tables.push_back(std::move(regions));
  // What each region's datacenter holds (full scale, at the most held at once).
  Table dcs{
      {"datacenters (full scale)", "GPUs", "servers", "racks", "IT power", "facility", "floor"},
      {}};
  for (size_t r = 0; r < res.regions.size(); ++r) {
    if (spec.regions[r].pools.empty()) continue;
    const fleet::Layout sum = fleet::region_layout(spec, res, r);
    dcs.rows.push_back({res.regions[r].name, human(sum.gpus), human(sum.servers), human(sum.racks),
                        units::format(sum.it_power_w, Dim::kPower),
                        units::format(sum.facility_power_w, Dim::kPower),
                        human(sum.floor_m2) + " m²"});
  }
  tables.push_back(std::move(dcs));
  // Load against capacity over the run, all regions together.
  if (!res.regions.empty() && res.regions[0].series.size() > 1) {
    Table run{
        {"over the run (UTC)", "calls/s", "GPUs active", "calls/s per GPU", "SLO met", "failures"},
        {}};
    const auto& first = res.regions[0].series;
    const std::vector<double> gpu_scale = fleet::region_gpu_scale(res);
    char buf[64];
    for (size_t k = 0; k < first.size(); ++k) {
      double arrivals = 0, gpus = 0, gpus_full = 0, served = 0, good = 0, failures = 0;
      for (size_t r = 0; r < res.regions.size(); ++r) {
        const auto& g = res.regions[r];
        if (k >= g.series.size()) continue;
        arrivals += static_cast<double>(g.series[k].arrivals);
        gpus += g.series[k].gpus_mean;
        gpus_full += g.series[k].gpus_mean * gpu_scale[r];
        served += static_cast<double>(g.series[k].served);
        good += static_cast<double>(g.series[k].good);
        failures += static_cast<double>(g.series[k].failures);
      }
      const double end_s =
          k + 1 < first.size() ? first[k + 1].t_s : ns_to_seconds(pop->duration_ns());
      const double len = end_s - first[k].t_s;
      if (len <= 0) continue;
      const double clock_h = std::fmod(pop->start_s() + first[k].t_s, 86400.0) / 3600.0;
      std::snprintf(buf, sizeof buf, "%02d:%02d %+8.1f h", static_cast<int>(clock_h),
                    static_cast<int>(std::fmod(clock_h * 60, 60)), first[k].t_s / 3600);
      char per_gpu[32], fail[32];
      std::snprintf(per_gpu, sizeof per_gpu, "%.2f", gpus > 0 ? arrivals / len / gpus : 0.0);
      std::snprintf(fail, sizeof fail, "%.0f", failures / res.sample);
      run.rows.push_back({buf, human(arrivals / res.sample / len), human(gpus_full), per_gpu,
                          served > 0 ? pct(good / served) : "-", fail});
    }
    tables.push_back(std::move(run));
  }
  // "running": time with any batch running (a load of 2 sequences counts); "batch": the
  // mean decode batch against max_num_seqs, which is how full the replicas are.
  Table pools{{"pools (full scale)", "GPUs/rep", "replicas", "peak held", "GPUs peak", "running",
               "batch", "racks", "kW/rack", "$/GPU-h"},
              {}};
  for (const auto& p : res.pools) {
    const fleet::FleetPool& fp = *p.spec;
    const fleet::Layout l = fleet::pool_layout(p);
    const fleet::PoolDay day = fleet::pool_day(p, res.sample, per_day);
    char kw[32];
    std::snprintf(kw, sizeof kw, "%.1f", day.rack_power_w / 1e3);
    pools.rows.push_back({p.name, std::to_string(p.gpus_per_replica),
                          std::to_string(p.replicas_configured), human(l.replicas), human(l.gpus),
                          p.replica_hours > 0 ? pct(p.busy_hours / p.replica_hours) : "-",
                          batch_text(p), human(l.racks), kw,
                          fp.usd_per_gpu_hour > 0 ? usd(fp.usd_per_gpu_hour) : "n/a"});
  }
  tables.push_back(std::move(pools));
  Table service{{"pools: service", "calls/day", "output tok/day", "tok/s per call", "TPOT p99",
                 "$/M out tok", "$/M tok"},
                {}};
  for (const auto& p : res.pools) {
    const fleet::PoolDay day = fleet::pool_day(p, res.sample, per_day);
    service.rows.push_back({p.name, human(day.calls), human(day.output_tokens),
                            p.tpot.p50_s > 0 ? human(1.0 / p.tpot.p50_s) : "-",
                            duration(p.tpot.p99_s),
                            day.run_usd_per_mtok_output ? usd(*day.run_usd_per_mtok_output) : "n/a",
                            day.run_usd_per_mtok ? usd(*day.run_usd_per_mtok) : "n/a"});
  }
  tables.push_back(std::move(service));
  const auto& s = res.summary;
  Table lat{{"latency (all calls)", "mean", "p50", "p90", "p99"}, {}};
  for (const auto& [name, l] : {std::pair{"TTFT", s.ttft}, {"TPOT", s.tpot}, {"end-to-end", s.e2e}})
    lat.rows.push_back(
        {name, duration(l.mean_s), duration(l.p50_s), duration(l.p90_s), duration(l.p99_s)});
  tables.push_back(std::move(lat));
  if (!s.classes.empty()) {
    Table cls{{"classes", "completed", "TTFT p99", "TPOT p99", "SLO met"}, {}};
    for (const auto& c : s.classes)
      cls.rows.push_back({c.name, human(static_cast<double>(c.completed) / res.sample),
                          duration(c.ttft.p99_s), duration(c.tpot.p99_s), pct(c.slo_attainment)});
    tables.push_back(std::move(cls));
  }
  return tables;
}

json fleet_techniques_json(const scenario::Scenario& sc, const fleet::FleetResult& res) {
  const auto& s = res.summary;
  const fleet::FleetSpec& f = *sc.fleet;
  json j;
  j["router_in_region"] = f.router.empty() ? "power-of-two-per-slot" : f.router;
  j["prefix_caching"] = {{"enabled", sc.vllm.prefix_caching},
                         {"block_tokens", sc.vllm.prefix_block_tokens},
                         {"lookup_tokens", s.prefix_lookup_tokens},
                         {"hit_tokens", s.prefix_hit_tokens},
                         {"hit_rate", s.prefix_hit_rate}};
  json spec = json::array(), roles = json::object();
  for (const auto& p : res.pools) {
    const scenario::Pool& pool = p.spec->pool;
    if (pool.spec)
      spec.push_back({{"pool", p.name},
                      {"draft", pool.spec->draft.model->id},
                      {"k", pool.vllm.spec_k},
                      {"acceptance", pool.vllm.spec_acceptance}});
    if (pool.vllm.role != serving::ServingConfig::Role::kBoth)
      roles[p.name] =
          pool.vllm.role == serving::ServingConfig::Role::kPrefill ? "prefill" : "decode";
  }
  j["speculative_pools"] = spec;
  j["cascade"] = {{"small_model", sc.cascade_small_model},
                  {"escalation", f.cascade_model >= 0 ? f.escalation : 0.0},
                  {"escalations", s.escalations}};
  j["response_cache"] = {{"hit_rate", sc.response_cache ? sc.response_cache_hit_rate : 0.0},
                         {"hits", s.response_cache_hits}};
  j["disaggregated_pools"] = roles;
  j["kv_transfers"] = s.kv_transfers;
  j["kv_transfer_mean_s"] = s.kv_transfer_mean_s;
  if (f.split != fleet::FleetSpec::Split::kNone) {
    const fleet::SplitSides ss = fleet::split_sides(res);
    json sides = json::array();
    for (size_t u = 0; u < f.side_names.size(); ++u) {
      json pools = json::array();
      for (const auto& p : res.pools)
        if (p.spec->side == static_cast<int>(u)) pools.push_back(p.name);
      sides.push_back({{"name", f.side_names[u]},
                       {"pools", pools},
                       {"calls", u < ss.served.size() ? ss.served[u] : 0},
                       {"slo_attainment", u < ss.served.size() ? ss.attainment(u, 0.0) : 0.0}});
    }
    json split = {{"by", f.split == fleet::FleetSpec::Split::kLength ? "prompt length" : "class"},
                  {"sides", sides}};
    if (f.split == fleet::FleetSpec::Split::kLength) {
      split["long_prompt_tokens"] = f.long_prompt_tokens;
      if (f.medium_prompt_tokens > 0) split["medium_prompt_tokens"] = f.medium_prompt_tokens;
    }
    j["split"] = split;
  }
  return j;
}

std::string fleet_techniques_notes(const scenario::Scenario& sc, const fleet::FleetResult& res) {
  const auto& s = res.summary;
  const fleet::FleetSpec& f = *sc.fleet;
  std::vector<std::string> parts;
  char b[256];
  if (sc.vllm.prefix_caching) {
    std::snprintf(b, sizeof b,
                  "prefix caching: %.1f %% of prompt tokens found cached (%d-token blocks)",
                  100 * s.prefix_hit_rate, sc.vllm.prefix_block_tokens);
    parts.push_back(b);
  }
  int spec_pools = 0, prefill = 0, decode = 0;
  std::string draft;
  for (const auto& p : res.pools) {
    const scenario::Pool& pool = p.spec->pool;
    if (pool.spec) {
      ++spec_pools;
      draft = pool.spec->draft.model->id + ", k " + std::to_string(pool.vllm.spec_k);
    }
    prefill += pool.vllm.role == serving::ServingConfig::Role::kPrefill;
    decode += pool.vllm.role == serving::ServingConfig::Role::kDecode;
  }
  if (spec_pools > 0)
    parts.push_back("speculative decoding in " + std::to_string(spec_pools) + " pool" +
                    (spec_pools > 1 ? "s" : "") + " (draft " + draft + ")");
  if (f.cascade_model >= 0) {
    std::snprintf(b, sizeof b, "cascade: %s answers first, %.1f %% of all calls escalated to %s",
                  sc.cascade_small_model.c_str(),
                  100.0 * static_cast<double>(s.escalations) /
                      static_cast<double>(std::max<uint64_t>(1, s.requests_completed)),
                  sc.model.id.c_str());
    parts.push_back(b);
  }
  if (sc.response_cache) {
    std::snprintf(b, sizeof b, "response cache: %.1f %% of calls answered without a model call",
                  100.0 * static_cast<double>(s.response_cache_hits) /
                      static_cast<double>(std::max<uint64_t>(1, s.requests_completed)));
    parts.push_back(b);
  }
  if (prefill > 0) {
    std::snprintf(b, sizeof b, "disaggregated: %d prefill and %d decode pools, KV transfer mean %s",
                  prefill, decode, duration(s.kv_transfer_mean_s).c_str());
    parts.push_back(b);
  }
  if (f.split != fleet::FleetSpec::Split::kNone) {
    const fleet::SplitSides ss = fleet::split_sides(res);
    uint64_t all = 0;
    for (const uint64_t n : ss.served) all += n;
    std::string t = f.split == fleet::FleetSpec::Split::kClass ? "split by class:"
                                                               : "split by prompt length at ";
    if (f.split == fleet::FleetSpec::Split::kLength) {
      if (f.medium_prompt_tokens > 0) t += std::to_string(f.medium_prompt_tokens) + " and ";
      t += std::to_string(f.long_prompt_tokens) + " tokens:";
    }
    for (size_t u = 0; u < ss.served.size(); ++u) {
      std::snprintf(b, sizeof b,
                    u == 0 ? "%s %s side %.1f %% of calls (%.1f %% of them met their SLO)"
                           : "%s %s side %.1f %% (%.1f %%)",
                    u == 0 ? "" : ",", f.side_names[u].c_str(),
                    100.0 * static_cast<double>(ss.served[u]) /
                        static_cast<double>(std::max<uint64_t>(1, all)),
                    100 * ss.attainment(u, 0.0));
      t += b;
    }
    parts.push_back(t);
  }
  if (!f.router.empty()) parts.push_back("router inside regions: " + f.router);
  std::string o = "techniques ";
  if (parts.empty()) return o + "continuous batching and a KV cache per replica only\n";
  for (size_t i = 0; i < parts.size(); ++i) o += (i == 0 ? "" : ";\n           ") + parts[i];
  return o + "\n";
}

std::string fleet_events_notes(const fleet::FleetResult& res) {
  uint64_t failures = 0, ups = 0, downs = 0;
  for (const auto& p : res.pools) {
    failures += p.failures;
    ups += p.scale_ups;
    downs += p.scale_downs;
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "events   %llu replica failures, %llu calls retried (%llu then completed), %llu "
                "calls failed, "
                "%llu unfinished at the end;\n         autoscaling: %llu replicas started, %llu "
                "drained (sampled counts)\n",
                static_cast<unsigned long long>(failures),
                static_cast<unsigned long long>(res.retried),
                static_cast<unsigned long long>(res.retried_completed),
                static_cast<unsigned long long>(res.failed_calls),
                static_cast<unsigned long long>(res.unfinished),
                static_cast<unsigned long long>(ups), static_cast<unsigned long long>(downs));
  std::string o = buf;
  const auto& s = res.summary;
  if (res.retried_completed > 0)
    o += "         retried calls, end to end: p50 " + duration(res.retried_e2e.p50_s) + ", p99 " +
         duration(res.retried_e2e.p99_s) + " (all calls: p50 " + duration(s.e2e.p50_s) + ", p99 " +
         duration(s.e2e.p99_s) + ")\n";
  return o + fleet_failure_notes(res);
}

namespace {
// The replicas a sampled pool runs beyond its share of `replicas`: its simulated spares.
int simulated_spares(const fleet::PoolResult& p, double sample) {
  const int base =
      p.spec->pool.replicas == 0
          ? 0
          : std::max(1, static_cast<int>(std::llround(p.spec->pool.replicas * sample)));
  return std::max(0, p.replicas_simulated - base);
}
}  // namespace

std::string fleet_failure_notes(const fleet::FleetResult& res) {
  bool any = !res.outages.empty();
  for (const auto& c : res.failure_classes) any = any || c.events > 0;
  if (!any) return "";
  // Per class (sampled counts): what failed, what it took down, the calls it cost.
  std::string o =
      "failures by class (sampled): events, replicas down, calls retried (met SLO after), "
      "calls failed\n";
  char buf[512];
  for (int k = 1; k < fleet::kFailureClasses; ++k) {
    const fleet::FailureClassResult& c = res.failure_classes[static_cast<size_t>(k)];
    if (c.events == 0) continue;
    const std::string met =
        c.retried_completed > 0
            ? pct(static_cast<double>(c.retried_good) / static_cast<double>(c.retried_completed))
            : std::string("-");
    std::snprintf(buf, sizeof buf, "         %-7s %llu, %llu, %llu (%s), %llu\n",
                  fleet::failure_class_name(k), static_cast<unsigned long long>(c.events),
                  static_cast<unsigned long long>(c.replicas_down),
                  static_cast<unsigned long long>(c.calls_retried), met.c_str(),
                  static_cast<unsigned long long>(c.calls_failed));
    o += buf;
  }
  // Spares: the most replicas a pool had down at once (hardware, not region outages),
  // against the spares it simulated (a sampled pool's peak is not scaled up: the peak of a
  // few replicas overstates a large pool's).
  for (const auto& p : res.pools) {
    if (p.down_peak == 0) continue;
    const int spares = simulated_spares(p, res.sample);
    std::snprintf(buf, sizeof buf,
                  "         %s: at most %d of %d replicas down at once vs %d spares%s "
                  "(simulated)\n",
                  p.name.c_str(), p.down_peak, p.replicas_simulated, spares,
                  p.down_peak > spares ? ": short" : "");
    o += buf;
  }
  for (const auto& out : res.outages) {
    const std::string& name = res.regions[static_cast<size_t>(out.region)].name;
    std::snprintf(
        buf, sizeof buf,
        "         region outage %s %s to %s: %llu calls of its users (%s met SLO, "
        "fastest TTFT %s), %llu replicas down, %llu calls retried\n",
        name.c_str(), duration(out.start_s).c_str(), duration(out.end_s).c_str(),
        static_cast<unsigned long long>(out.calls),
        out.completed > 0
            ? pct(static_cast<double>(out.good) / static_cast<double>(out.completed)).c_str()
            : "-",
        out.ttft_min_s >= 0 ? duration(out.ttft_min_s).c_str() : "-",
        static_cast<unsigned long long>(out.replicas_down),
        static_cast<unsigned long long>(out.calls_retried));
    o += buf;
    for (const auto& l : out.surviving) {
      std::snprintf(
          buf, sizeof buf,
          "           %s (%s): peak %s of its batch slots, %d more replicas (%d at full scale)\n",
          res.regions[static_cast<size_t>(l.region)].name.c_str(), l.model_id.c_str(),
          pct(static_cast<double>(l.outstanding_peak) /
              static_cast<double>(std::max<int64_t>(1, l.slots_at_peak)))
              .c_str(),
          l.extra_replicas, static_cast<int>(std::ceil(l.extra_replicas / res.sample - 1e-9)));
      o += buf;
    }
  }
  return o;
}

json fleet_failures_json(const fleet::FleetResult& res) {
  json classes = json::object();
  for (int k = 1; k < fleet::kFailureClasses; ++k) {
    const fleet::FailureClassResult& c = res.failure_classes[static_cast<size_t>(k)];
    classes[fleet::failure_class_name(k)] = {
        {"events", c.events},
        {"replicas_down", c.replicas_down},
        {"calls_retried", c.calls_retried},
        {"calls_retried_completed", c.retried_completed},
        {"calls_retried_meeting_slo", c.retried_good},
        {"retried_slo_attainment",
         c.retried_completed > 0
             ? static_cast<double>(c.retried_good) / static_cast<double>(c.retried_completed)
             : 0.0},
        {"calls_failed", c.calls_failed}};
  }
  json spares = json::array();
  for (const auto& p : res.pools) {
    const int sim = simulated_spares(p, res.sample);
    spares.push_back({{"pool", p.name},
                      {"spares", p.spec->spares},
                      {"spares_simulated", sim},
                      {"replicas_down_peak_simulated", p.down_peak},
                      {"spares_short_simulated", std::max(0, p.down_peak - sim)}});
  }
  json outages = json::array();
  for (const auto& out : res.outages) {
    json surviving = json::array();
    for (const auto& l : out.surviving)
      surviving.push_back(
          {{"region", res.regions[static_cast<size_t>(l.region)].name},
           {"model", l.model_id},
           {"outstanding_peak", l.outstanding_peak},
           {"batch_slots_at_peak", l.slots_at_peak},
           {"replicas_at_peak", l.replicas_at_peak},
           {"slot_utilization_peak",
            static_cast<double>(l.outstanding_peak) /
                static_cast<double>(std::max<int64_t>(1, l.slots_at_peak))},
           {"extra_replicas_simulated", l.extra_replicas},
           {"extra_replicas", static_cast<int>(std::ceil(l.extra_replicas / res.sample - 1e-9))}});
    outages.push_back({{"region", res.regions[static_cast<size_t>(out.region)].name},
                       {"start_s", out.start_s},
                       {"end_s", out.end_s},
                       {"calls", out.calls},
                       {"calls_completed", out.completed},
                       {"calls_meeting_slo", out.good},
                       {"ttft_min_s", out.ttft_min_s},
                       {"replicas_down", out.replicas_down},
                       {"calls_retried", out.calls_retried},
                       {"surviving", surviving}});
  }
  return {{"classes", classes}, {"spares", spares}, {"region_outages", outages}};
}

std::string fleet_report(const scenario::Scenario& sc, const fleet::FleetResult& res) {
  const fleet::FleetAnswer a = fleet::fleet_answer(sc, res);
  const FleetProse prose = fleet_prose(sc, res, a);
  std::ostringstream o;
  o << "fleetsim " << FLEETSIM_VERSION << " — " << sc.name << " (seed " << sc.seed << ")\n";
  if (!sc.description.empty()) o << "  " << sc.description << "\n";
  o << "\n  THE ANSWER\n" << wrap(prose.answer);
  if (!prose.why_not_at_home.empty()) {
    o << "\n  WHY NOT AT HOME\n";
    for (const auto& p : prose.why_not_at_home) o << wrap(p);
  }
  if (!prose.cost.empty()) o << "\n  COST AND ENERGY\n" << wrap(prose.cost);
  o << "\n  ACCURACY\n"
    << wrap("Serving engine: " + engine_line(sc) + ". " +
            (sc.error_band ? accuracy_line(sc, a.gpus)
                           : std::string("No validation error band is available "
                                         "(scenarios/validation/error_bands.json is missing).")));
  o << "\n" << indent(fleet_users_notes(sc, res, a));
  for (const auto& tb : fleet_tables(sc, res)) o << "\n" << table_text(tb);
  o << "\n" << indent(fleet_techniques_notes(sc, res));
  o << indent(fleet_events_notes(res));
  o << "  simulated " << duration(res.sim_end_s) << " in " << duration(res.wall_s) << " wall, "
    << human(static_cast<double>(res.events)) << " events, "
    << human(static_cast<double>(res.summary.requests_arrived)) << " calls"
    << (res.mpi_ranks > 1 ? " on " + std::to_string(res.mpi_ranks) + " MPI ranks" : "")
    << ", peak memory " << units::format(res.peak_rss_bytes, Dim::kBytes)
    << (res.mpi_ranks > 1 ? " (rank 0)" : "") << "\n";
  return o.str();
}
json fleet_json(const scenario::Scenario& sc, const fleet::FleetResult& res) {
  const fleet::FleetAnswer a = fleet::fleet_answer(sc, res);
  json j;
  j["fleetsim_version"] = FLEETSIM_VERSION;
  j["scenario_file"] = sc.file;
  j["scenario_name"] = sc.name;
  j["seed"] = sc.seed;
  j["overrides"] = sc.overrides;
  j["users"] = sc.workload_description;
  j["engine"] = sc.engine.id;
  j["validation_error"] = accuracy_json(sc, a.gpus);
  j["sample"] = res.sample;
  j["techniques"] = fleet_techniques_json(sc, res);
  j["answer"] = {{"calls_per_day", a.calls_per_day},
                 {"calls_per_day_expected", a.calls_per_day_expected},
                 {"calls_per_s_mean", a.mean_calls_per_s},
                 {"calls_per_s_peak_interval", a.peak_calls_per_s},
                 {"gpus_peak", a.gpus},
                 {"gpus_configured", a.gpus_configured},
                 {"servers", a.servers},
                 {"racks", a.racks},
                 {"it_power_w", a.it_power_w},
                 {"facility_power_w", a.facility_power_w},
                 {"floor_m2", a.floor_m2},
                 {"gpu_hours_per_day", a.gpu_hours_per_day},
                 {"cloud_usd_per_day", a.usd_per_day},
                 {"cost_price_missing", a.price_missing},
                 {"cost_basis", a.owned ? "owned" : "cloud"},
                 {"cost_usd_per_day", a.cost_usd_per_day},
                 {"cost_usd_per_month", a.cost_usd_per_day * 30.44},
                 {"capital_usd", a.capital_usd},
                 {"electricity_usd_per_day", a.electricity_usd_per_day},
                 {"cost_usd_per_mtok", a.usd_per_mtok},
                 {"cost_usd_per_mtok_output", a.usd_per_mtok_output},
                 {"breakeven_usd_per_mtok", a.breakeven_usd_per_mtok},
                 {"cost_usd_per_daily_user_month", a.usd_per_daily_user_month},
                 {"cost_usd_per_weekly_user_month", a.usd_per_weekly_user_month},
                 {"energy_kwh_per_day", a.energy_kwh_per_day},
                 {"energy_j_per_token", a.joules_per_token},
                 {"tokens_per_day", a.tokens_per_day},
                 {"slo_attainment", a.slo_attainment},
                 {"slo_attainment_ci95", a.slo_ci95},
                 {"call_count_rel_std_error", a.count_rel_error},
                 {"busy_fraction", a.busy_fraction}};
  json regions = json::array();
  for (const auto& r : res.regions)
    regions.push_back({{"name", r.name},
                       {"calls_arrived", r.arrivals},
                       {"calls_served", r.served},
                       {"calls_meeting_slo", r.good},
                       {"spilled_out", r.spilled_out},
                       {"spilled_in", r.spilled_in},
                       {"ttft_p50_s", r.ttft.p50_s},
                       {"ttft_p99_s", r.ttft.p99_s}});
  j["regions"] = regions;
  json pools = json::array();
  for (const auto& p : res.pools)
    pools.push_back({{"name", p.name},
                     {"model", p.model},
                     {"gpu", p.gpu},
                     {"gpus_per_replica", p.gpus_per_replica},
                     {"replicas_configured", p.replicas_configured},
                     {"replicas_simulated", p.replicas_simulated},
                     {"replicas_peak_simulated", p.replicas_peak},
                     {"replica_hours_simulated", p.replica_hours},
                     {"busy_hours_simulated", p.busy_hours},
                     {"mean_decode_batch", p.iterations > 0 ? static_cast<double>(p.decode_tokens) /
                                                                  static_cast<double>(p.iterations)
                                                            : 0.0},
                     {"calls_completed", p.completed},
                     {"input_tokens", p.input_tokens},
                     {"output_tokens", p.output_tokens},
                     {"tpot_p50_s", p.tpot.p50_s},
                     {"tpot_p99_s", p.tpot.p99_s},
                     {"failures", p.failures},
                     {"replicas_down_peak_simulated", p.down_peak},
                     {"scale_ups", p.scale_ups},
                     {"scale_downs", p.scale_downs},
                     {"load_time_s", p.load_time_s},
                     {"usd_per_gpu_hour", p.spec->usd_per_gpu_hour}});
  j["pools"] = pools;
  const auto& s = res.summary;
  j["calls_arrived"] = s.requests_arrived;
  j["calls_completed"] = s.requests_completed;
  j["calls_rejected"] = s.requests_rejected;
  j["calls_retried"] = res.retried;
  j["calls_retried_completed"] = res.retried_completed;
  j["retried_e2e_p50_s"] = res.retried_e2e.p50_s;
  j["retried_e2e_p99_s"] = res.retried_e2e.p99_s;
  j["calls_failed"] = res.failed_calls;
  j["failures"] = fleet_failures_json(res);
  j["calls_unfinished"] = res.unfinished;
  j["sessions"] = res.sessions;
  put_common_metrics(j, s);
  j["sim_end_s"] = res.sim_end_s;
  j["events"] = res.events;
  j["wall_s"] = res.wall_s;
  j["peak_rss_bytes"] = res.peak_rss_bytes;
  j["mpi_ranks"] = res.mpi_ranks;
  return j;
}

void write_fleet_tables_csv(const scenario::Scenario& sc, const fleet::FleetResult& res,
                            const std::string& dir) {
  const auto& spec = *sc.fleet;
  const auto pop = sc.make_population(sc.seed);
  const double per_day = 86400.0 / ns_to_seconds(pop->duration_ns());
  auto open = [&](const std::string& name) {
    const std::string path = dir + "/" + name;
    auto file = std::make_unique<files::AtomicFile>(path);
    file->stream().precision(10);
    return file;
  };
  {
    const auto file = open("pools.csv");
    std::ostream& out = file->stream();
    out << "pool,region,model,gpu,gpus_per_replica,replicas_configured,replicas_peak,gpus_peak,"
           "servers,racks,"
           "it_power_w,busy_fraction,calls_per_day,output_tokens_per_day,tpot_p50_s,tpot_p99_s,usd_"
           "per_gpu_hour,"
           "gpu_hours_per_day,usd_per_mtok_output\n";
    for (const auto& p : res.pools) {
      const fleet::Layout l = fleet::pool_layout(p);
      const fleet::PoolDay day = fleet::pool_day(p, res.sample, per_day);
      out << p.name << ',' << res.regions[static_cast<size_t>(p.region)].name << ',' << p.model
          << ',' << p.gpu << ',' << p.gpus_per_replica << ',' << p.replicas_configured << ','
          << l.replicas << ',' << l.gpus << ',' << l.servers << ',' << l.racks << ','
          << l.it_power_w << ',' << (p.replica_hours > 0 ? p.busy_hours / p.replica_hours : 0.0)
          << ',' << day.calls << ',' << day.output_tokens << ',' << p.tpot.p50_s << ','
          << p.tpot.p99_s << ',' << p.spec->usd_per_gpu_hour << ',' << day.gpu_hours << ','
          << day.list_usd_per_mtok_output << '\n';
    }
    file->commit();
  }
  {
    const auto file = open("datacenters.csv");
    std::ostream& out = file->stream();
    out << "region,user_share,calls_arrived_per_day,calls_served_per_day,spilled_out_share,ttft_"
           "p50_s,ttft_p99_s,"
           "slo_attainment,gpus_peak,servers,racks,it_power_w,facility_power_w,floor_m2\n";
    for (size_t r = 0; r < res.regions.size(); ++r) {
      const auto& g = res.regions[r];
      const fleet::Layout sum = fleet::region_layout(spec, res, r);
      const double arrivals = static_cast<double>(g.arrivals),
                   served = static_cast<double>(g.served);
      out << g.name << ',' << pop->regions()[r].user_share << ',' << arrivals / res.sample * per_day
          << ',' << served / res.sample * per_day << ','
          << (arrivals > 0 ? static_cast<double>(g.spilled_out) / arrivals : 0.0) << ','
          << g.ttft.p50_s << ',' << g.ttft.p99_s << ','
          << (served > 0 ? static_cast<double>(g.good) / served : 0.0) << ',' << sum.gpus << ','
          << sum.servers << ',' << sum.racks << ',' << sum.it_power_w << ',' << sum.facility_power_w
          << ',' << sum.floor_m2 << '\n';
    }
    file->commit();
  }
}

std::string fleet_series_csv(const fleet::FleetResult& res) {
  std::ostringstream out;
  out << "region,start_s,calls_arrived_sampled,calls_served_sampled,calls_meeting_slo_sampled,"
         "replicas_active_mean_sampled,gpus_active_mean_sampled,batch_slots_end_sampled,"
         "outstanding_peak_sampled,"
         "failures_sampled\n";
  for (const auto& r : res.regions)
    for (const auto& s : r.series)
      out << r.name << ',' << s.t_s << ',' << s.arrivals << ',' << s.served << ',' << s.good << ','
          << s.replicas_mean << ',' << s.gpus_mean << ',' << s.capacity_slots << ','
          << s.outstanding_peak << ',' << s.failures << '\n';
  return out.str();
}

void write_fleet_series_csv(const fleet::FleetResult& res, const std::string& path) {
  files::write_file_atomically(path, fleet_series_csv(res));
}

}  // namespace fleetsim::reports
