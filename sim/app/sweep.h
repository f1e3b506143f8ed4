// `fleetsim sweep`: one scenario over a grid of overrides (and seeds), every point a whole
// simulation, handed out over threads or MPI ranks (sim/dist); reports/sweep.h writes sweep.csv.
//
//   fleetsim sweep scenarios/chat-service.yaml --vary serving.replicas=1,2,4
//                  --vary workload.arrival.rate=10/s,20/s --seeds 5
//
// Points are the cartesian product of the axes (the file's sweep: section, then the --vary
// lists; the last varies fastest), each run with seeds s, s+1, ..., s+N-1 (s: the
// scenario's seed). --vary values are split at commas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::app {

struct SweepSpec {
  std::vector<std::pair<std::string, std::vector<std::string>>> vary;  ///< key → values
  int seeds = 1;
  std::size_t points() const;
  std::size_t items() const { return points() * static_cast<std::size_t>(seeds); }
  /// The --set overrides of point p (without the seed).
  std::vector<std::string> point_overrides(std::size_t p) const;
};

/// The most simulations one sweep may ask for (points × seeds).
constexpr double kMaxSweepItems = 100000;

/// InputError when an axis is named twice (in the file's sweep: section and/or --vary) or
/// when points × seeds exceeds kMaxSweepItems (the message gives the product and the limit).
void check_sweep_spec(const SweepSpec& spec);

/// Throws (any exception) unless `result` is a sweep item's result: a JSON object of numbers
/// with the sweep metric names of a single-pool or a fleet run (sim/app/metrics.h). For
/// results read back from checkpoints.
void check_sweep_result(const std::string& result);

/// "key.path=v1,v2,v3" → {key.path, [v1, v2, v3]}; InputError naming the option otherwise.
std::pair<std::string, std::vector<std::string>> parse_vary(const std::string& arg);

/// The scenario file's own axes, if it has a `sweep:` section:
///   sweep:
///     vary: {serving.replicas: [1, 2, 4], workload.arrival.rate: [10/s, 20/s]}
///     seeds: 5
/// (the command line's --vary axes come after these; --seeds replaces seeds).
SweepSpec read_sweep_section(const std::string& file, const std::vector<std::string>& sets);

/// Loads the scenario at every point of `spec` and builds what its runs need
/// (prepare_network, sim/app/run.h), so that a bad value is reported before anything runs,
/// and returns it as written (with `sets` and `seed`). Unless `quiet`, a check that
/// takes more than 2 s says how far it is on stderr, at most once a second.
scenario::Scenario check_sweep_points(const std::string& file, const std::vector<std::string>& sets,
                                      std::optional<uint64_t> seed, const SweepSpec& spec,
                                      const hw::Catalog& catalog,
                                      const std::shared_ptr<const hw::CalibrationSet>& calibration,
                                      bool quiet = true);

/// Runs item i (point i / seeds, seed offset i % seeds) of the sweep: loads the scenario
/// with `sets` + the point's overrides and the seed, runs it (run_one_of_many,
/// sim/app/run.h), and returns its sweep metrics (sim/app/metrics.h) as a JSON object
/// (names with units: "ttft_p99_s", ...).
std::string run_sweep_item(const std::string& file, const std::vector<std::string>& sets,
                           uint64_t base_seed, const SweepSpec& spec, std::size_t i,
                           const hw::Catalog& catalog,
                           std::shared_ptr<const hw::CalibrationSet> calibration);

}  // namespace fleetsim::app
