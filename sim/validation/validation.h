// The validation suite: published end-to-end measurements and fleetsim's predictions of
// them (case format in scenarios/validation/README.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "hw_models/perf_model.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::validation {

struct Case {
  std::string file, id;  ///< id = file stem
  std::string description, citation, system;
  std::string metric;                              ///< e.g. "output_tokens_per_s", "tpot"
  std::string unit;                                ///< "tokens/s", "s", "requests/s"
  std::string category;                            ///< throughput | ttft | tpot
  std::string setup;                               ///< step | simulate
  std::string model, gpu, gpu_family, model_kind;  ///< model_kind: dense | moe
  std::string engine;  ///< serving engine profile ("none" for collectives)
  std::string source;  ///< publication/table id (leave-one-source-out)
  int gpus = 1;        ///< GPUs in the measured system
  bool heldout = false;
  double measured = 0;
  double predicted = 0;
  double error = 0;  ///< (predicted − measured) / measured
};

/// Loads every *.yaml under `dir` (sorted) and predicts each. Any malformed case is an
/// InputError naming the file, line and field.
std::vector<Case> run_suite(const std::string& dir, const hw::Catalog& catalog,
                            std::shared_ptr<const hw::CalibrationSet> calibration);
/// What a case ran, for `validate --explain`: its scenario, and for a step case the one
/// iteration it timed.
struct CaseSetup {
  std::optional<scenario::Scenario> scenario;
  std::optional<hw::BatchShape> step;
  double mean_decode_batch = 0;  ///< simulated cases: the run's mean decode batch
};
/// One case file (and, if `setup` is given, what it ran).
Case run_case(const std::string& file, const hw::Catalog& catalog,
              std::shared_ptr<const hw::CalibrationSet> calibration, CaseSetup* setup = nullptr);
/// The case files of a folder, sorted.
std::vector<std::string> case_files(const std::string& dir);
/// Runs `files` on `threads` threads (results in file order, identical for any count).
std::vector<Case> run_cases(const std::vector<std::string>& files, const hw::Catalog& catalog,
                            std::shared_ptr<const hw::CalibrationSet> calibration, int threads);

/// Median and worst absolute error of a group of cases.
struct GroupStats {
  std::string group;
  int n = 0;
  double median_abs = 0, worst_abs = 0;
  double median_signed = 0;  ///< > 0: the model predicts more throughput / less time (optimistic)
  double p75_abs = 0;        ///< 75th percentile of |error|
};
/// Signed error with "optimistic" positive for every metric: (predicted − measured)/measured
/// for throughputs, (measured − predicted)/predicted for times (a time predicted too short).
double optimism(const Case& c);
/// Groups: all, by category, dense/moe, GPU family, engine, single/multi-GPU, tuned/held-out.
std::vector<GroupStats> group_stats(const std::vector<Case>& cases);

/// The printed report: one line per case, then the group table.
std::string format_report(const std::vector<Case>& cases);

/// Baseline file (scenarios/validation/baseline.json): the committed median absolute errors
/// per category. Returns "" when every category is at or below its baseline (plus `slack`),
/// else a message naming each that got worse.
std::string check_baseline(const std::vector<Case>& cases, const std::string& baseline_file,
                           double slack = 1e-9);
/// Writes the current per-category medians as the new baseline.
void write_baseline(const std::vector<Case>& cases, const std::string& baseline_file);
/// Writes every end-to-end case's error (sim/validation/error_band.h) for the error bands
/// that runs, plans and fleet reports print.
void write_error_bands(const std::vector<Case>& cases, const std::string& file);
/// `validate --json FILE`: every case in full (id, file, metric, unit, category, setup,
/// model, GPU, GPUs, engine, source, held out, measured, predicted, error, optimism) and
/// the group table, for analysis outside fleetsim (the printed report truncates ids).
void write_results_json(const std::vector<Case>& cases, const std::string& file);

}  // namespace fleetsim::validation
