// The search `fleetsim ladder` and a fleet's `fleetsim plan` share: a fleet scenario's
// busiest stretch of the day, and the fewest replicas (every pool resized by one factor,
// keeping their ratios) with which that stretch meets an SLO target.
//
// - The stretch is the population's peak hour (UTC, from its diurnal curves), after a
//   warm-up: users.start and users.duration are overridden to simulate only it, with
//   failures and autoscaling off and no spares.
// - A search starts at the scenario's own size, halves or doubles until the answer is
//   bracketed, then bisects to 5 % (or one replica) of the largest pool (sampled).
// - A day's calls, tokens and energy are the stretch's at the day's mean load: divided by
//   ρ, the population's session starts in the stretch over their day's mean. Without
//   autoscaling the GPUs are held all day ($ a day = GPUs × 24 h × price; energy = idle
//   draw all day + the busy draw of the day's work); with it, GPU-hours and energy follow
//   the load (the stretch's ÷ ρ: an upper bound on what autoscaling saves). Owned hardware
//   keeps its capital cost.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "sim/app/ladder.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::app {

/// A YAML value on one line, as --set takes it ("[{name: a, replicas: 2}]", "fp8").
std::string flow_text(const YAML::Node& n);

/// The day's busiest stretch of a fleet scenario.
struct BusiestWindow {
  std::string scenario_name;
  double sample = 1;
  int peak_hour = 0;                   ///< hour of the run (from users.start) whose load is highest
  double calls_per_day = 0;            ///< the population's expectation (before turns cut short)
  double window_to_mean = 1;           ///< ρ
  double weekly_active = 0;            ///< users.weekly_active as loaded
  std::vector<std::string> overrides;  ///< users.start and users.duration of the stretch
  /// Per region (in the scenario's order): its name, the hour of the run when its own
  /// session starts peak, and the overrides of that stretch (warm-up, then window).
  std::vector<std::string> region_names;
  std::vector<int> region_peak_hours;
  std::vector<std::vector<std::string>> region_overrides;
};

/// The busiest stretch (warm-up, then window) of `file` with `sets` applied. InputError when
/// it is not a fleet scenario (`command` names who asks, for the message).
BusiestWindow busiest_window(const std::string& file, const std::vector<std::string>& sets,
                             std::optional<uint64_t> seed, const hw::Catalog& catalog,
                             const std::shared_ptr<const hw::CalibrationSet>& calibration,
                             double warmup_s, double window_s, const std::string& command);

/// One configuration ready to search: its scenario over the stretch.
struct FleetConfig {
  scenario::Scenario sc;
  std::vector<int> replicas;  ///< full scale, per pool in order
  int largest = 1;
  double sample = 1;
};

/// `file` with `overrides` (the configuration's, then the stretch's) loaded and prepared.
/// InputError when the overrides turn the fleet into a single pool (`what` names them).
FleetConfig fleet_config(const std::string& file, const std::vector<std::string>& overrides,
                         std::optional<uint64_t> seed, const hw::Catalog& catalog,
                         const std::shared_ptr<const hw::CalibrationSet>& calibration,
                         double sample, const std::string& what);

/// Pool j's replicas (full scale) at factor k[j] of the configuration's own:
/// max(1, round(k[j] · replicas[j])), as every search simulates them.
std::vector<int> pool_replicas(const FleetConfig& config, const std::vector<double>& k);

/// The busiest stretch's traffic, measured by simulating `config` once at its own size:
/// calls arrived per second over the stretch (warm-up included) and the completed calls'
/// mean prompt and output tokens.
struct WindowTraffic {
  double calls_per_s = 0, mean_prompt = 0, mean_output = 0;
};
WindowTraffic window_traffic(const FleetConfig& config);

/// An analytic estimate of `config`'s $ a day (GPUs held all day at the pools' cloud prices)
/// for `traffic`, from the step model alone, as the single-pool planner estimates (README,
/// "Capacity planning"): per pool, a replica serves 1 / (prefill of the mean prompt + mean
/// output × step(B) / B) calls a second, B the largest decode batch whose step keeps TPOT
/// within 0.8 × the SLO and whose mean contexts fit the KV cache; the pools, resized by one
/// factor, carry the calls at 90 % of that. Empty, with the reason in `why`, where the
/// estimate does not apply: more than one model, disaggregated or split pools, speculative
/// decoding, a pool without a price.
std::optional<double> analytic_usd_per_day(const FleetConfig& config, const WindowTraffic& traffic,
                                           std::string* why);

/// Runs search(i) for every i in [0, n) side by side on `threads` threads (the results must
/// not depend on the order); `progress` (may be empty) is called after each, one call at a
/// time, with (searches done, n).
void searches_side_by_side(int n, int threads, const std::function<void(int)>& search,
                           const std::function<void(int, int)>& progress);

/// The search: `rung` (name, note, overrides, autoscaling as given) filled with the
/// answer, or with met = false and the reason.
LadderRung climb(const FleetConfig& config, double target, double rho, LadderRung rung);

/// One region of a fleet sized on its own (size_regions).
struct RegionSize {
  std::string name;
  int peak_hour = 0;      ///< hour of the run when its own sessions peak
  double scale = 1;       ///< its pools' replicas × this against the one-factor answer
  double attainment = 0;  ///< its calls meeting the SLO in its own busiest stretch
  /// The same at the one-factor answer's size (the search's first simulation), and whether
  /// that size met the target there (region and fleet).
  double attainment_one_factor = 0;
  bool one_factor_met = false;
  double gpus = 0;  ///< full scale
  bool met = false;
  int simulations = 0;
};

/// A fleet whose regions were sized apart, each for its own busiest stretch.
struct RegionalAnswer {
  bool met = false;
  std::string reason;  ///< why not (when !met)
  std::vector<RegionSize> regions;
  std::vector<int> replicas;  ///< per pool, full scale, at the regions' sizes
  LadderRung rung;  ///< the fleet at these sizes in the fleet's busiest stretch (cost, SLO)
  int simulations = 0;
};

/// After the one-factor search (`answer`, from climb on `base`, the fleet's busiest stretch):
/// each region in turn, in its own busiest stretch (`region_config(r)`: the configuration
/// over that stretch), gets the fewest replicas with which its calls, and the whole fleet's,
/// meet `target` — halving or doubling its factor from 1 and bisecting to 5 % (or one
/// replica) of its largest pool (sampled) — with the regions before it at their new size and
/// those after at the answer's. The fleet at those sizes is then simulated in its busiest
/// stretch for its cost and SLO (met false, with the reason, when it misses `target` there).
/// A region's GPUs may come out above the one-factor answer's: its own peak can be busier
/// than its share of the fleet's.
/// Failure headroom of one pool (failure_spares).
struct PoolSpares {
  std::string name;  ///< "<region>/<pool>"
  int replicas = 0;  ///< serving replicas, full scale
  int spares = 0;    ///< N+k: this k
  int gpus_per_replica = 0;
  double mean_down = 0;         ///< replicas down at once on average
  double usd_per_gpu_hour = 0;  ///< the pool's cloud price (0 = unknown)
};

/// Spares for pools of `replicas` serving replicas (full scale, per pool in the scenario's
/// order): for each pool the fewest k such that at most k of its replicas are down at once
/// `availability` of the time, in steady state under `spec.failures`' rates (whether or not
/// failures are simulated). Each kind of failure is an independent Poisson count of units
/// down, mean units × MTTR / MTBF: GPUs (each takes down its replica), servers and their
/// links (every replica on the server; a replica spanning servers is down with any of
/// them), racks (every replica in the rack, the pool's replicas spread evenly). Region
/// outages are left out: a region's spares fail with it. Empty when no kind has a rate.
std::vector<PoolSpares> failure_spares(const fleet::FleetSpec& spec,
                                       const std::vector<int>& replicas, double availability);

RegionalAnswer size_regions(const FleetConfig& base,
                            const std::function<FleetConfig(size_t region)>& region_config,
                            double target, double rho, const LadderRung& answer);

}  // namespace fleetsim::app
