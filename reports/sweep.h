// What `fleetsim sweep` writes and prints (the sweep itself: sim/app/sweep.h): sweep.csv,
// one row per simulation, and a table of one row per point.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/document.h"
#include "sim/app/sweep.h"

namespace fleetsim::reports {

/// sweep.csv: one row per item (the varied values, seed, metrics). Returns its path.
std::string write_sweep_csv(const app::SweepSpec& spec, uint64_t base_seed,
                            const std::vector<std::string>& results, const std::string& dir);
/// sweep.csv's rows as objects, one per item (points in order, each point's seeds in
/// order): the varied values as written (strings), "seed", then the item's metrics
/// (sim/app/metrics.h) at full precision.
nlohmann::ordered_json sweep_rows(const app::SweepSpec& spec, uint64_t base_seed,
                                  const std::vector<std::string>& results);
/// One row per point: the varied values and each metric (mean ± 95 % CI over the seeds
/// when there are several).
Table sweep_table(const app::SweepSpec& spec, const std::vector<std::string>& results);

/// The knee of a rising curve (x ascending): the index of the point farthest below the chord
/// from the first point to the last, with both axes scaled to [0, 1] (Kneedle: Satopää et
/// al., "Finding a 'Kneedle' in a Haystack", ICDCS Workshops 2011). -1 for fewer than 3
/// points, or when no point lies below the chord.
int knee_index(const std::vector<double>& x, const std::vector<double>& y);

/// A sweep over one numeric axis (≥ 3 points): where its tail latency turns up.
struct SweepKnee {
  std::string axis, value;  ///< the axis and its value at the knee, as written
  std::string metric;       ///< the curve: ttft_p99_s, else e2e_p99_s, else tpot_p99_s
};
/// The knee of the sweep's curve (mean over seeds), when the sweep has one axis whose values
/// are numbers (with one unit: "10/s", "20/s") and the curve has one.
std::optional<SweepKnee> sweep_knee(const app::SweepSpec& spec,
                                    const std::vector<std::string>& results);

/// report.md and report.html in `dir`: the table, and for a sweep over one numeric axis a
/// plot of the tail latencies against it with the knee marked (sweep_latency.svg). Returns
/// the files written.
std::vector<std::string> write_sweep_report(const app::SweepSpec& spec,
                                            const std::vector<std::string>& results,
                                            const std::string& name, const std::string& dir);

}  // namespace fleetsim::reports
