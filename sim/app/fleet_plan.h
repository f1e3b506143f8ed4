// `fleetsim plan` on a fleet scenario: how many GPUs to buy and how to arrange them, for the
// whole fleet over its diurnal day. The scenario's `fleet_plan:` section lists alternative
// fleets (options: GPU types per pool, pool splits, prefill/decode pools, regions, engine
// settings — any overrides) and axes tried with every option:
//
//   fleet_plan:
//     target: 0.99            # share of calls that must meet every SLO target
//     window: 1h              # the busiest stretch simulated per configuration ...
//     warmup: 15min           # ... after this much of the traffic before it
//     autoscaling: false      # true: GPUs follow the day's load (derived, an upper bound)
//     perturb_traffic: 0.2    # the answer searched again with 1.2 x the users
//     options:
//       - {name: "B200, FP4", set: {hardware.gpu: b200, ...}}
//       - {name: "H200 + MI300X 8:2", set: {fleet.regions[0].pools: [...]}}
//     axes: {serving.max_num_seqs: [256, 512]}
//
// An option may have axes of its own, tried with it only (a split pool's threshold,
// fleet.routing.long_prompt_tokens: [2048, 8192]). Every option × every combination of the
// plan's and its own axes is a configuration; each is a search of
// sim/app/fleet_search.h (the fewest replicas, every pool resized by one factor, with which
// the day's busiest stretch meets the target; a split's sides then sized apart). Every
// configuration that meets the target gets spares against the scenario's failure rates
// (failure_spares, at fleet_plan.availability), and they are ranked by $ a day with them.
// The cheapest is the answer; it carries its validation error band and, with
// perturb_traffic, the GPUs the same search needs with that much more traffic. With
// per_region (the default) and two or more regions, the answer's regions are then sized
// apart, each for its own busiest hour (size_regions), its spares again at those sizes.
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
#include "sim/app/fleet_search.h"
#include "sim/app/ladder.h"

namespace fleetsim::app {

using PlanAxes = std::vector<std::pair<std::string, std::vector<std::string>>>;  ///< path → values

struct FleetPlanOption {
  std::string name, note;
  std::vector<std::string> set;  ///< "path=value"
  PlanAxes axes;  ///< tried with this option only, after the plan's (e.g. its split threshold)
  /// The product of the plan's and this option's axes' value counts.
  size_t combinations(const PlanAxes& plan_axes) const;
};

struct FleetPlanSpec {
  double target = 0.99, window_s = 3600, warmup_s = 900, perturb_traffic = 0.2;
  bool autoscaling = false;
  bool per_region = true;  ///< size the answer's regions apart, each for its own peak
  /// Size every configuration that meets the target region by region before ranking, and
  /// rank by that (fleets of two or more regions; about 9 more simulations each).
  bool rank_per_region = false;
  double availability = 0.999;  ///< spares cover the replicas down at once this share of time
  int max_configurations = 256;
  /// The analytic pre-screen: only configurations whose analytic $ a day is within
  /// (1 + slack) × the cheapest estimate are simulated; empty = every one.
  std::optional<double> slack;
  std::vector<FleetPlanOption> options;
  PlanAxes axes;  ///< tried with every option
  /// Σ over the options of their combinations of axis values.
  size_t configurations() const;
};

/// The scenario file's `fleet_plan:` section (with `sets` applied to the file first).
/// InputError (file, line, field, hint) when it is missing or wrong.
FleetPlanSpec read_fleet_plan_section(const std::string& file,
                                      const std::vector<std::string>& sets);

struct FleetPlanCandidate {
  std::string option;  ///< its option's name
  std::vector<std::pair<std::string, std::string>> axis_values;
  std::string label;       ///< option, then "path=value" of each axis
  LadderRung answer;       ///< the search's answer (met false: reason)
  std::string error_band;  ///< the validation error of configurations like this one
  double gpus_at_p75 = 0;  ///< GPUs if the model is as optimistic as that group's p75
  bool perturbed = false;  ///< searched again with perturb_traffic more users
  LadderRung perturbed_answer;
  /// The pre-screen's estimate (fleet_plan.slack; empty: not estimated, see analytic_note),
  /// and whether it kept the configuration from being simulated.
  std::optional<double> analytic_usd_per_day;
  std::string analytic_note;
  bool pruned = false;
  /// Sized region by region before ranking (fleet_plan.rank_per_region).
  std::optional<RegionalAnswer> regional;
  /// What it is ranked by: the region-by-region answer where one was found, else `answer`.
  const LadderRung& ranked() const { return regional && regional->met ? regional->rung : answer; }
  /// Its failure headroom at the sizes it is ranked by (fleet_plan.availability; empty
  /// without failure rates or when it missed the target). The ranking is by $ a day with
  /// these spares, so a configuration whose failures take down more GPUs pays for them.
  std::vector<PoolSpares> spares;
  double spares_gpus = 0;
  double spares_usd_per_day = 0;  ///< cloud basis; 0 when owned or a price is missing
  double ranked_usd_per_day() const { return ranked().usd_per_day + spares_usd_per_day; }
};

struct FleetPlanResult {
  std::string scenario_name, scenario_file;
  FleetPlanSpec spec;
  BusiestWindow window;
  std::vector<FleetPlanCandidate> candidates;  ///< in enumeration order
  std::vector<int> ranking;  ///< candidates that met the target, cheapest $ a day first
  int chosen = -1;
  /// The answer with its regions sized apart (fleet_plan.per_region, fleets of 2 or more
  /// regions): sim/app/fleet_search.h, size_regions.
  std::optional<RegionalAnswer> regional;
  /// The answer's failure headroom (fleet_plan.availability; fleet.failures' rates), per pool
  /// at the answer's sizes (sized apart when that met the target); empty without rates.
  /// (Every configuration that met the target has its own: FleetPlanCandidate::spares.)
  std::vector<PoolSpares> spares;
  double spares_gpus = 0;
  double spares_usd_per_day = 0;  ///< cloud basis; 0 when owned or a price is missing
  /// The answer's serving replicas per pool (full scale, the fleet's pool order): sized
  /// region by region when that met the target, else at its one factor; spares not included.
  std::vector<int> answer_replicas;
  /// answer_replicas with each pool's spares added: what to deploy.
  std::vector<int> deploy_replicas() const {
    std::vector<int> n = answer_replicas;
    for (size_t j = 0; j < n.size() && j < spares.size(); ++j) n[j] += spares[j].spares;
    return n;
  }
  /// The pre-screen's traffic (fleet_plan.slack), measured on `traffic_from`.
  std::optional<WindowTraffic> traffic;
  std::string traffic_from;
  int pruned = 0;
  int simulations = 0;
  double wall_s = 0;
  int threads = 1;
};

/// Runs every configuration's search (side by side on `threads` threads; the result does not
/// depend on it), ranks them, and searches the answer again under the traffic perturbation.
FleetPlanResult run_fleet_plan(const std::string& file, const std::vector<std::string>& sets,
                               std::optional<uint64_t> seed, const hw::Catalog& catalog,
                               std::shared_ptr<const hw::CalibrationSet> calibration, int threads,
                               const std::function<void(int, int)>& progress = {});

}  // namespace fleetsim::app
