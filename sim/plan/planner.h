// Capacity planner (`fleetsim plan`): the cheapest deployment that meets the SLOs.
//
// A single-pool scenario (model, workload at its peak hour, slo) carries a `plan:` section
// that lists the values to try on each axis of the configuration space:
//
//   plan:
//     gpu: [h100-sxm, h200-sxm, b200]     # hardware.gpu (node: the catalog default for it)
//     tp: [1, 2, 4, 8]                    # hardware.tp
//     pp: [1, 2]                          # hardware.pp
//     expert_parallel: [false, true]      # hardware.expert_parallel (MoE models only)
//     weights: [bf16, fp8]                # precision.weights (activations follow the
//                                         #   scenario's rule: FP8 weights run W8A8 where the GPU has FP8)
//     kv: [bf16, fp8]                     # precision.kv
//     policy: [vllm, sarathi]             # serving.policy
//     max_num_seqs: [128, 256]            # serving.max_num_seqs
//     max_batched_tokens: [2048, 8192]    # serving.max_batched_tokens
//     prefill_share: [0, 0.25]            # prefill/decode split: 0 = colocated; s > 0 =
//                                         #   disaggregated, ceil(s·replicas) prefill replicas
//     target: 0.99                        # share of requests that must meet every SLO
//     spares: 1                           # failure headroom: N+k replicas on top ...
//     spare_fraction: 0.0                 # ... and/or this share of the replicas (rounded up)
//     replicas: {min: 1, max: 512}        # serving replicas searched per configuration
//     simulate: 32                        # at most this many configurations are simulated,
//     slack: 0.5                          #   those within +50 % of the best analytic cost
//     usd_per_gpu_hour: {h200-sxm: 4.0}   # prices (default: the catalog's cloud price)
//     tie_tolerance: 0.01                 # costs within 1 % of the cheapest are equally cheap
//     perturb: {traffic: 0.2, iteration_overhead: 3ms}   # each answer re-simulated with +20 %
//                                         #   traffic and +3 ms engine overhead per iteration
//                                         #   (0 skips one)
//
// An axis that is absent keeps the scenario's own value. The search:
//  1. enumerates the cartesian product; each configuration is resolved by the scenario
//     loader (so every rule of `fleetsim run` applies) and fitted in memory: "does not fit"
//     and invalid combinations (tp not dividing the heads, ...) are recorded with the
//     loader's message;
//  2. estimates each survivor analytically from the performance model (decode batch that
//     keeps TPOT within the SLO, prefill time of the mean prompt, KV capacity) → requests/s
//     per replica → replicas → $/hour; configurations that cannot meet the SLO even at
//     batch 1 are dropped with the reason;
//  3. simulates, in order of analytic cost, the configurations within `slack` of the best
//     estimate (at most `simulate`), each with a search over the replica count for the
//     fewest replicas that meet the SLO: every percentile target of slo: holds and, when
//     the SLO has plain targets (ttft: 2s), the simulated SLO attainment (requests meeting
//     every per-request target ÷ requests arrived) reaches `target`; these run in parallel,
//     one configuration per thread, and the result does not depend on the thread count;
//  4. adds the failure headroom; the answers are the configurations whose cost is within
//     `tie_tolerance` of the cheapest, smoothest streaming first (lower ITL p99, then TPOT
//     p99, then TTFT p99, then fewer GPUs, then enumeration order); the first is chosen.
//     Every other configuration keeps the reason it lost;
//  5. re-simulates every answer under the `perturb:` perturbations at its replica count:
//     "still meets", or the fewest replicas that meet the SLO again (found by search).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "sim/metrics/collector.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::plan {

struct PlanSpec {
  std::map<std::string, std::vector<std::string>> axes;  ///< scenario path → values to try
  double target = 0.99;
  int spares = 0;
  double spare_fraction = 0;
  int min_replicas = 1, max_replicas = 512;
  int simulate = 32;
  double slack = 0.5;
  std::map<std::string, double> usd_per_gpu_hour;  ///< overrides of the catalog price
  double tie_tolerance = 0.01;        ///< costs ≤ cheapest × (1 + this) are equally cheap
  double perturb_traffic = 0.2;       ///< robustness: traffic × (1 + this); 0 = not run
  double perturb_overhead_s = 0.003;  ///< robustness: + this per engine iteration; 0 = not run
  std::size_t configurations() const;
};

/// The workload as the analytic model sees it (sampled from the scenario's generator).
struct WorkloadStats {
  double rate_per_s = 0;
  double mean_prompt = 0, mean_output = 0;
  uint64_t sampled = 0;
  std::vector<int32_t> prompts_sorted;  ///< the sampled prompt lengths, ascending
};

/// One simulation of a configuration at a replica count.
struct Outcome {
  int replicas = 0;          ///< serving replicas (decode pool when disaggregated)
  int prefill_replicas = 0;  ///< disaggregated prefill pool (0 when colocated)
  double attainment = 0;     ///< requests meeting every SLO ÷ requests arrived
  double ttft_p99_s = 0, tpot_p99_s = 0, e2e_p50_s = 0;
  double itl_p99_s = 0;  ///< inter-token gaps (stalls included)
  double busy = 0;       ///< mean replica busy fraction
  double output_tok_per_s = 0;
  uint64_t arrived = 0, events = 0;
  double wall_s = 0;
  bool met = false;  ///< meets the SLO (Planner::meets)
  /// The SLO's percentile targets, and each plain target at the plan's target share
  /// (target.plain), against this run: the margins.
  std::vector<metrics::SloCheck> slo_checks;
};

/// A stated change to the workload or the engine, to see how fragile an answer is.
struct Perturbation {
  double traffic_scale = 1.0;             ///< every arrival rate × this
  double extra_iteration_overhead_s = 0;  ///< added to the engine's overhead per iteration
  /// "traffic +20 %", "engine overhead +3.00 ms per iteration".
  std::string describe() const;
  /// For table headings: "traffic +20 %", "overhead +3.00 ms".
  std::string short_name() const;
};

/// An answer re-simulated under a perturbation.
struct PerturbedAnswer {
  Perturbation perturbation;
  Outcome at_answer;  ///< at the answer's replica count
  bool still_meets = false;
  /// The fewest serving replicas that meet the SLO under the perturbation (the answer's own
  /// count when it still meets; 0 when none up to replicas.max does), and that deployment's
  /// GPUs and cost with its prefill replicas and spares.
  int replicas_needed = 0;
  int gpus_needed = 0;
  double usd_per_hour_needed = 0;
  std::vector<Outcome> tried;  ///< the runs of the search, in order
};

/// Two replica counts of a search where the SLO did not improve with replicas: `met` met it
/// and the larger `missed` did not. The SLO then sits on a plateau of the configuration
/// (e.g. a TTFT p99 set by the step length, not by queueing), where noise decides, and
/// the search's answer is fragile. `met` is the smallest such count, `missed` the largest
/// count above it that missed.
struct NonMonotone {
  int met = 0, missed = 0;
};
/// Such a pair among the runs of a search, if the runs show one.
std::optional<NonMonotone> non_monotone(const std::vector<Outcome>& tried);

enum class Status {
  kInvalid,     ///< the loader rejected the combination (memory fit, tp vs heads, ...)
  kInfeasible,  ///< the analytic model says no replica count meets the SLO
  kPruned,      ///< analytic cost too far above the best estimate; not simulated
  kSloMissed,   ///< simulated: the SLO is not met even at the maximum replica count
  kFeasible,    ///< simulated: meets the SLO at `best.replicas`
};
const char* status_name(Status s);

/// One replica, estimated from the step model alone (Planner::estimate; the fleet plan's
/// pre-screen): the prefill of a mean prompt of `P` tokens, the largest decode batch
/// n ≤ min(max_num_seqs, kv_tokens / (P + O)) (at least 1) whose step (n sequences at the
/// mean context P + O/2) stays within `step_budget_s`, and the calls a second the replica
/// then serves, 1 / (prefill + O · step(n) / n), with O the mean output (at least 1).
struct ReplicaEstimate {
  double prefill_s = 0;
  double step_batch1_s = 0;  ///< one sequence's decode step
  int64_t batch = 1;
  double step_s = 0;  ///< the decode step at `batch`
  double calls_per_s = 0;
};
ReplicaEstimate estimate_replica(const hw::Deployment& d, double P, double O, int64_t max_num_seqs,
                                 double kv_tokens, double step_budget_s);

/// The most configurations a plan space may hold (the product of its axes' sizes).
constexpr double kMaxConfigurations = 100000;

struct Candidate {
  int index = 0;                                            ///< enumeration order
  std::vector<std::pair<std::string, std::string>> values;  ///< axis path → value
  std::string label;                                        ///< "h200-sxm tp=4 weights=fp8 ..."
  Status status = Status::kInvalid;
  std::string reason;  ///< why it was dropped (invalid, infeasible, pruned, SLO missed)
  std::string fix;     ///< invalid: the error's hint (how to make it valid), if any

  // Resolved deployment.
  int gpus_per_replica = 0;
  /// Validation error of configurations like this one (its GPU, model kind and engine).
  std::optional<validation::ErrorBand> error_band;
  double usd_per_gpu_hour = 0;
  double prefill_share = 0;

  // Analytic estimate.
  double tpot_batch1_s = 0, prefill_mean_s = 0;
  int decode_batch = 0;       ///< sequences per decode step that keep TPOT within the SLO
  double capacity_per_s = 0;  ///< requests/s one replica (group) sustains
  int analytic_replicas = 0;
  double analytic_usd_per_hour = 0;

  // Simulated.
  std::vector<Outcome> tried;   ///< in the order simulated
  std::optional<Outcome> best;  ///< fewest replicas meeting the target
  int spare_replicas = 0;
  int total_gpus = 0;       ///< (replicas + prefill replicas + spares) × GPUs per replica
  double usd_per_hour = 0;  ///< total_gpus × price

  // Robustness (answers only): the answer under each perturbation of plan.perturb.
  std::vector<PerturbedAnswer> perturbed;
};

struct PlanResult {
  std::string scenario_name, scenario_file;
  PlanSpec spec;
  WorkloadStats workload;
  std::optional<double> slo_ttft_s, slo_tpot_s;
  bool slo_plain = false;  ///< the SLO has plain targets (plan.target applies)
  std::vector<workload::SloTarget> slo_targets;  ///< its percentile targets
  std::vector<Candidate> candidates;             ///< enumeration order
  std::vector<int> to_simulate;  ///< candidates picked for simulation, analytically cheapest first
  int chosen = -1;               ///< index into candidates, -1 when none meets the SLO
  std::vector<int> ranking;      ///< feasible candidates, cheapest first (chosen first)
  /// The answers: the feasible candidates whose cost is within spec.tie_tolerance of the
  /// cheapest, smoothest first (a prefix of `ranking`; the chosen one first).
  std::vector<int> answers;
  int simulations = 0;
  double wall_s = 0;
  int threads = 1;
};

/// Everything needed to resolve and simulate configurations of one scenario file.
class Planner {
 public:
  /// Reads the scenario file (with --set overrides) and its `plan:` section. InputError
  /// (file, line, field) on any problem, including a scenario without `plan:` or a fleet
  /// scenario.
  Planner(const std::string& file, const std::vector<std::string>& overrides,
          std::optional<uint64_t> seed, const hw::Catalog& catalog,
          std::shared_ptr<const hw::CalibrationSet> calibration);

  const PlanSpec& spec() const { return spec_; }
  const scenario::Scenario& base() const { return *base_; }

  /// Steps 1–2: every configuration, resolved and estimated (no simulation).
  std::vector<Candidate> enumerate() const;
  /// The scenario of `c` with `replicas` serving replicas (and its prefill pool), under
  /// perturbation `p` (none by default).
  scenario::Scenario resolve(const Candidate& c, int replicas, std::optional<uint64_t> seed = {},
                             const Perturbation& p = {}) const;
  /// One simulation of `c` at `replicas` (seed: the scenario's unless given), under `p`.
  Outcome evaluate(const Candidate& c, int replicas, std::optional<uint64_t> seed = {},
                   const Perturbation& p = {}) const;
  /// Whether `o` meets the SLO: every percentile target holds and, when the SLO has plain
  /// targets, o.attainment ≥ spec.target.
  bool meets(const Outcome& o) const;
  /// The perturbations of plan.perturb, in order (traffic, then engine overhead).
  std::vector<Perturbation> perturbations() const;
  /// Step 5 for one answer: `c` (feasible) under `p` at its replica count, then, if it
  /// misses, the fewest replicas above that meet the SLO (double the increment, then bisect).
  PerturbedAnswer perturb(const Candidate& c, const Perturbation& p) const;
  /// Step 5 for every answer of `res`, on `threads` threads (results independent of it).
  void perturb_answers(PlanResult& res, int threads) const;
  /// Step 3 for one candidate: the replica search; sets status, tried, best, cost.
  void search_replicas(Candidate& c) const;
  /// Steps 1–5 with `threads` threads. `progress` (may be empty) is called after each
  /// simulated configuration with (done, total).
  PlanResult run(int threads, const std::function<void(int, int)>& progress = {}) const;
  /// The same in parts, for running step 3 elsewhere (MPI ranks): steps 1–2 and the
  /// choice of `to_simulate`; then search_replicas on each of those (any process: the
  /// enumeration is deterministic); then finish() ranks and chooses; then perturb_answers.
  PlanResult prepare(int threads) const;
  void finish(PlanResult& res, double started_wall_s) const;
  /// A searched candidate's outcome as one line of JSON, and back.
  static std::string encode_search(const Candidate& c);
  static void decode_search(Candidate& c, const std::string& json);

  /// Prefill replicas for `replicas` decode replicas at share `s` (0 when s = 0).
  static int prefill_replicas_for(double s, int replicas);
  int spares_for(int replicas) const;

 private:
  std::string file_;
  std::vector<std::string> overrides_;
  std::optional<uint64_t> seed_;
  const hw::Catalog* catalog_;
  std::shared_ptr<const hw::CalibrationSet> calibration_;
  std::shared_ptr<const void> root_;  ///< the scenario document without `plan:` (YAML::Node)
  PlanSpec spec_;
  std::unique_ptr<scenario::Scenario> base_;
  WorkloadStats stats_;

  bool moe_ = false;

  /// The cartesian product of the axes, labelled, not yet resolved or estimated.
  std::vector<Candidate> candidates_unresolved() const;
  void estimate(Candidate& c, const scenario::Scenario& sc) const;
  void price(Candidate& c) const;
};

}  // namespace fleetsim::plan
