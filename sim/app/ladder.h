// `fleetsim ladder`: what each serving technique is worth, on the same traffic.
//
// A fleet scenario's `ladder:` section lists steps; the first is the naive start and each
// later step adds its overrides to those before it (cumulative --set overrides, so every
// rule of `fleetsim run` applies to every step):
//
//   ladder:
//     target: 0.99          # share of calls that must meet every SLO target, at each step
//     window: 1h            # the busiest stretch of the day simulated per step ...
//     warmup: 15min         # ... after this much of the traffic before it
//     steps:
//       - name: "naive: dense 405B in BF16, one request at a time"
//         note: "ASSUMPTION: ..."
//         set: {model: llama-3.1-405b, serving.max_num_seqs: 1, ...}
//       - name: continuous batching
//         set: {serving.max_num_seqs: 256}
//       - name: autoscaling
//         autoscaling: true   # GPUs follow the day's load (see below)
//     published:            # whole-fleet figures shown beside the answer
//       - {name: "OpenAI, average ChatGPT query", wh_per_call: 0.34, source: "..."}
//
// Each step is a search: the fleet's pools are all resized by one factor (their sizes in the
// step's scenario keep their ratios) until the busiest window meets the SLO target; the
// answer is the fewest replicas of the largest pool (sampled, users.sample) that do. A step
// reports the GPUs it needs, $ a day, $ per million tokens, the energy per call and its
// factor against the previous step and the start.
//
// What is simulated and what is derived:
// - every step simulates the day's busiest hour (the population's peak, UTC) after a
//   warm-up, with failures and autoscaling off; GPUs are provisioned for that hour;
// - a day's calls and tokens are the window's at the day's mean load: divided by ρ, the
//   population's session starts in the simulated stretch over their day's mean (from its
//   diurnal curves); without autoscaling the GPUs are held all day, so $ a day is GPUs ×
//   24 h × price and a day's energy is the idle draw all day plus the busy draw of the day's
//   work (the window's ÷ ρ);
// - `autoscaling: true` (from that step on) lets the fleet follow the load: GPU-hours and
//   energy a day are those of the busiest window divided by ρ (no start-up lag, no floor:
//   an upper bound on what autoscaling saves). Owned hardware keeps its capital cost.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"

namespace fleetsim::app {

struct LadderStep {
  std::string name, note;
  std::vector<std::string> set;  ///< this step's own overrides, "path=value"
  bool autoscaling = false;      ///< from this step on, GPUs follow the day's load
};

/// A published whole-fleet figure shown beside the ladder's answer (`ladder.published`).
struct PublishedFigure {
  std::string name, source;
  double wh_per_call = 0;
};

struct LadderSpec {
  double target = 0.99;
  double window_s = 3600, warmup_s = 900;
  std::vector<LadderStep> steps;  ///< steps[0] is the naive start
  std::vector<PublishedFigure> published;
};

/// The scenario file's `ladder:` section (with `sets` applied to the file first).
/// InputError (file, line, field) when it is missing or wrong.
LadderSpec read_ladder_section(const std::string& file, const std::vector<std::string>& sets);

/// One step's answer.
struct LadderRung {
  std::string name, note;
  std::vector<std::string> overrides;  ///< cumulative: `sets`, then steps 0..this
  bool autoscaling = false;
  bool met = false;
  std::string reason;          ///< why no size met the target (when !met)
  int replicas_simulated = 0;  ///< of the largest pool, sampled
  double scale = 0;            ///< pool sizes × this against the step's scenario
  /// Where the pools were sized apart (the sides of a split by length or class): per pool in the
  /// scenario's order, its replicas × this; empty when every pool is at `scale`.
  std::vector<double> pool_factors;
  std::string sizing;  ///< how the pools were sized apart, in words (empty: one factor)
  double gpus = 0;     ///< full scale, provisioned for the busiest window
  double gpu_hours_per_day = 0;
  double usd_per_day = 0;     ///< by the scenario's cost basis
  double calls_per_day = 0;   ///< the window's calls at the day's mean load (÷ ρ)
  double tokens_per_day = 0;  ///< the window's tokens (processed by GPUs) ÷ ρ
  double usd_per_mtok = 0;
  double wh_per_call = 0;         ///< facility energy a day ÷ calls a day
  double wh_per_call_window = 0;  ///< in the busiest window
  double attainment = 0, attainment_ci95 = 0;
  double ttft_p99_s = 0, tpot_p99_s = 0;
  double busy = 0;             ///< replica busy share in the window
  double window_to_mean = 0;   ///< ρ (LadderResult::window_to_mean)
  double factor_previous = 0;  ///< previous step's $ a day ÷ this one's
  double factor_start = 0;     ///< the start's $ a day ÷ this one's
  int simulations = 0;
  bool price_missing = false;
};

/// Per pool (`pools` of them): the rung's pool_factors, or `scale` for every pool.
std::vector<double> pool_factors(const LadderRung& rung, size_t pools);

struct LadderResult {
  std::string scenario_name, scenario_file;
  LadderSpec spec;
  double sample = 1;
  int peak_hour = 0;         ///< hour of the run (from users.start) whose load is highest
  double calls_per_day = 0;  ///< the population's expectation (before turns cut short)
  /// ρ: the population's session starts in the simulated stretch (warm-up and window) over
  /// their mean over the day, from its diurnal curves.
  double window_to_mean = 1;
  std::vector<LadderRung> rungs;
  int simulations = 0;
  double wall_s = 0;
  int threads = 1;
};

/// Runs every step of the ladder (steps side by side on `threads` threads; the result does
/// not depend on it). `progress` (may be empty) is called after each step with (done, total).
LadderResult run_ladder(const std::string& file, const std::vector<std::string>& sets,
                        std::optional<uint64_t> seed, const hw::Catalog& catalog,
                        std::shared_ptr<const hw::CalibrationSet> calibration, int threads,
                        const std::function<void(int, int)>& progress = {});

}  // namespace fleetsim::app
