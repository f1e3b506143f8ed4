#include "sim/app/metrics.h"

namespace fleetsim::app {

namespace {

const metrics::Summary& pool(const RunRecord& r) { return r.summary(); }
const metrics::Summary& fleet_summary(const RunRecord& r) { return r.summary(); }
const fleet::FleetAnswer& answer(const RunRecord& r) { return *r.answer; }

constexpr unsigned kBoth = kReplications | kSweep;

}  // namespace

const std::vector<RunMetric>& run_metrics() {
  // The names and the two uses' selections are those the outputs have always had; the
  // sweep's $/M tokens column kept its first name (usd_per_mtok), which checkpoints of
  // earlier sweeps hold.
  static const std::vector<RunMetric> list = {
      // Single-pool runs.
      {"requests_completed", false, kSweep, true,
       [](const RunRecord& r) { return static_cast<double>(pool(r).requests_completed); }},
      {"ttft_p50_s", false, kBoth, false, [](const RunRecord& r) { return pool(r).ttft.p50_s; }},
      {"ttft_p99_s", false, kBoth, false, [](const RunRecord& r) { return pool(r).ttft.p99_s; }},
      {"tpot_p50_s", false, kReplications, false,
       [](const RunRecord& r) { return pool(r).tpot.p50_s; }},
      {"tpot_p99_s", false, kBoth, false, [](const RunRecord& r) { return pool(r).tpot.p99_s; }},
      {"e2e_p50_s", false, kBoth, false, [](const RunRecord& r) { return pool(r).e2e.p50_s; }},
      {"e2e_p99_s", false, kReplications, false,
       [](const RunRecord& r) { return pool(r).e2e.p99_s; }},
      {"output_tok_per_s", false, kBoth, false,
       [](const RunRecord& r) { return pool(r).output_tok_per_s; }},
      {"goodput_req_per_s", false, kBoth, false,
       [](const RunRecord& r) { return pool(r).goodput_req_per_s; }},
      {"slo_attainment", false, kBoth, false,
       [](const RunRecord& r) { return pool(r).slo_attainment; }},
      {"busy_fraction", false, kSweep, false,
       [](const RunRecord& r) { return pool(r).replica_busy_fraction; }},
      // Fleet runs: full-scale figures from the answer, latency of all calls.
      {"calls_per_day", true, kBoth, false,
       [](const RunRecord& r) { return answer(r).calls_per_day; }},
      {"gpus", true, kSweep, false, [](const RunRecord& r) { return answer(r).gpus; }},
      {"gpu_hours_per_day", true, kBoth, false,
       [](const RunRecord& r) { return answer(r).gpu_hours_per_day; }},
      {"cost_usd_per_day", true, kBoth, false,
       [](const RunRecord& r) { return answer(r).cost_usd_per_day; }},
      {"usd_per_mtok", true, kSweep, false,
       [](const RunRecord& r) { return answer(r).usd_per_mtok; }},
      {"cost_usd_per_mtok", true, kReplications, false,
       [](const RunRecord& r) { return answer(r).usd_per_mtok; }},
      {"slo_attainment", true, kBoth, false,
       [](const RunRecord& r) { return answer(r).slo_attainment; }},
      {"ttft_p50_s", true, kReplications, false,
       [](const RunRecord& r) { return fleet_summary(r).ttft.p50_s; }},
      {"ttft_p99_s", true, kBoth, false,
       [](const RunRecord& r) { return fleet_summary(r).ttft.p99_s; }},
      {"tpot_p99_s", true, kBoth, false,
       [](const RunRecord& r) { return fleet_summary(r).tpot.p99_s; }},
      {"e2e_p50_s", true, kReplications, false,
       [](const RunRecord& r) { return fleet_summary(r).e2e.p50_s; }},
      {"busy_fraction", true, kSweep, false,
       [](const RunRecord& r) { return answer(r).busy_fraction; }},
  };
  return list;
}

std::vector<std::pair<std::string, double>> metrics_of(const RunRecord& r, Use use) {
  const bool is_fleet = r.fleet.has_value();
  std::vector<std::pair<std::string, double>> out;
  for (const RunMetric& m : run_metrics())
    if (m.fleet == is_fleet && (m.uses & use) != 0) out.emplace_back(m.name, m.value(r));
  return out;
}

std::vector<std::string> metric_names(bool fleet, Use use) {
  std::vector<std::string> out;
  for (const RunMetric& m : run_metrics())
    if (m.fleet == fleet && (m.uses & use) != 0) out.emplace_back(m.name);
  return out;
}

}  // namespace fleetsim::app
