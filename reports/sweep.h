// What `fleetsim sweep` writes and prints (the sweep itself: sim/app/sweep.h): sweep.csv,
// one row per simulation, and a table of one row per point.
#pragma once

#include <cstdint>
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

}  // namespace fleetsim::reports
