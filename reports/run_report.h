// The report of `fleetsim run` as report.md and a self-contained report.html (built with
// reports/document.h): the question, the answer in one paragraph, the terminal report's
// tables, plots over time drawn by gnuplot (reports/plot.h) and the assumptions (resolved
// scenario, calibration, version). Each plot is also written as NAME.svg and the data
// behind it as CSV, units in the column names. Deterministic: no wall-clock figures.
#pragma once

#include <string>
#include <vector>

#include "reports/document.h"
#include "sim/fleet/fleet_result.h"
#include "sim/metrics/time_buckets.h"
#include "sim/run_result.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::reports {

/// fleetsim's version and the git commit it was configured from: "0.1.0 (git 1a2b3c4)",
/// or "0.1.0" when the source was not a git checkout.
std::string version_string();
/// "Scenario FILE, seed N, overrides: ...; fleetsim VERSION (git SHA)." for the assumptions.
std::string provenance_text(const scenario::Scenario& sc);

/// over_time.csv: one row per group (region) and time bucket: region,region_index,start_s,
/// end_s,first_tokens_simulated,ttft_p50_s,ttft_p90_s,ttft_p99_s,busy_fraction,
/// decode_batch_mean (empty cells where a bucket has no sample).
std::string over_time_csv(
    const std::vector<std::pair<std::string, const metrics::TimeBuckets*>>& groups);

/// Writes the report of a fleet run into `dir`: report.md, report.html, load_capacity.svg,
/// latency_over_time.svg, utilization.svg, cost.svg (when the fleet has a cost; plots only
/// where gnuplot drew them) and their data over_time.csv and cost.csv (load_capacity's data
/// is regions.csv, written by write_fleet_series_csv). Returns the names of the files written.
std::vector<std::string> write_fleet_run_report(const scenario::Scenario& sc,
                                                const fleet::FleetResult& res,
                                                const std::string& dir);

/// Writes the report of a single-pool run into `dir`: report.md, report.html,
/// latency_over_time.svg, utilization.svg (where drawn) and over_time.csv. Returns the
/// names of the files written.
std::vector<std::string> write_single_run_report(const scenario::Scenario& sc, const RunResult& run,
                                                 const metrics::TimeBuckets& over_time,
                                                 const std::string& dir);

}  // namespace fleetsim::reports
