// A scenario file, read strictly and resolved against the catalog.
//
// Schema (documented in scenarios/README.md):
//   name: default                  # output folder name (default: the file's stem)
//   description: "..."
//   seed: 1
//   model: llama-3.1-8b            # catalog id
//   hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1, pp: 1, dp_attention: 1,
//              expert_parallel: false}
//   precision: {weights: bf16, activations: bf16, kv: bf16}      # optional
//   efficiency: {compute: 0.8, memory: 0.85, iteration_overhead: 0s, kernel_launch: 0s,
//                cuda_graphs: true, moe_imbalance: 1.0, calibration: true}  # optional
//   offload: {layers_on_host: 0, experts_on_host: 0.0, expert_popularity_zipf: 0,
//             mode: stream}                                     # optional
//   serving:
//     replicas: 4
//     router: least-outstanding
//     engine: vllm-v1              # serving engine profile (default vllm-v1, said in reports)
//     policy: vllm
//     chunked_prefill: false
//     block_tokens: 16
//     max_num_seqs: 256
//     max_batched_tokens: 8192
//     gpu_memory_utilization: 0.9
//     runtime_reserve: 1GiB
//     fast_forward: true
//   workload: ...                   # see sim/workload/workload.h
//   slo: {ttft: 2s, tpot: 100ms}     # optional; goodput counts requests meeting both; or at
//                                    # percentiles: {ttft: {p99: 1s}, itl: {p99.9: 500ms}}
//   network: {model: analytic, oversubscription: 1, nodes_per_leaf: 32}   # optional
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "hw_models/perf_model.h"
#include "hw_models/yaml_reader.h"
#include "sim/fleet/spec.h"
#include "sim/scenario/pool.h"
#include "sim/serving/registry.h"
#include "sim/serving/serving_config.h"
#include "sim/validation/error_band.h"
#include "sim/workload/workload.h"

namespace fleetsim::scenario {

struct Scenario {
  std::string file;
  /// What it was loaded from, so that another process can load the same scenario
  /// (run_in_own_process): the YAML document after overrides, the catalog's folder and the
  /// calibration folder ("" for none).
  std::string document;
  std::string catalog_dir, calibration_dir;
  std::string name;
  std::string description;
  uint64_t seed = 1;

  hw::ModelSpec model;
  hw::GpuSpec gpu;
  std::optional<hw::NodeSpec> node;  ///< the server type (catalog default for the GPU)
  hw::Parallelism par;
  hw::Precision prec;
  std::string weights_dtype = "bf16", activations_dtype = "bf16", kv_dtype = "bf16";
  hw::Efficiency eff;
  std::string efficiency_source;  ///< where compute/memory efficiency came from
  /// serving.engine: the serving engine profile (hw_models/catalog/engines) whose overheads,
  /// kernel efficiency and scheduler defaults apply; hw::kDefaultEngine when not named.
  hw::EngineSpec engine;
  bool engine_defaulted = false;  ///< the scenario named no engine
  /// serving.max_num_seqs / max_batched_tokens left to an engine whose limits hold per
  /// attention-DP rank (EngineSpec::limits_per_dp_rank): each pool takes its dp_attention
  /// times these. 0: the file set the limit (or the engine's is the replica's).
  int64_t engine_seqs_per_rank = 0, engine_tokens_per_rank = 0;
  /// How far fleetsim was from published measurements of scenarios like this one (model
  /// kind × GPU family × engine, sim/validation/error_band.h); empty without a bands file.
  std::optional<validation::ErrorBand> error_band;
  std::string calibration_used;  ///< calibration tables used for this GPU ("" = none)
  hw::Offload offload;
  /// Everything the performance model needs, built from the fields above.
  hw::Deployment dep;
  /// network: {model: analytic | simgrid, ...}: the model, and the fabric of the whole run
  /// (gpus: every replica's GPUs, pool by pool on whole nodes; simgrid only).
  std::string network_model = "analytic";
  hw::Fabric fabric;
  /// network.live_alltoall (simgrid only): the expert-parallel all-to-all of every pool
  /// whose EP group leaves the scale-up domain runs live on the fabric, iteration by
  /// iteration, contending with the KV transfers and the other replicas' all-to-alls.
  bool live_alltoall = false;
  /// network simgrid: the decode pool's first GPU on the fabric (the prefill pool starts at
  /// 0; pools start on node boundaries, domain boundaries with live_alltoall, and in
  /// different regions when there are two).
  int decode_gpu_base = 0;

  int replicas = 1;
  std::string router = "round-robin";
  serving::RouterParams router_params;
  std::string policy = "vllm";
  serving::ServingConfig vllm;  ///< kv_blocks filled from the memory fit
  double gpu_memory_utilization = 0.9;
  double runtime_reserve_bytes = 0;
  hw::MemoryFit memory;

  std::optional<Pool> prefill_pool;  ///< set when disaggregated
  std::optional<Pool> small_pool;    ///< set for a cascade
  /// Replicas of every pool of a single-pool run (main, prefill and small pools).
  int replicas_all_pools() const {
    return replicas + (prefill_pool ? prefill_pool->replicas : 0) +
           (small_pool ? small_pool->replicas : 0);
  }
  int64_t prefix_host_blocks = 0;   ///< host-memory tier of the prefix cache, in KV blocks
  double prefix_host_bytes = 0;     ///< the same in bytes (each pool's blocks from it)
  int lora_rank = 0;                ///< multi-LoRA: adapter rank (0 = none)
  double escalation = 0;            ///< cascade: share of requests sent on to the large model
  std::string cascade_small_model;  ///< fleet cascade: the small model (its pools are the fleet's)
  /// Response cache: identical prompts answered without a model call.
  bool response_cache = false;
  double response_cache_hit_rate = -1;  ///< fixed share of hits (synthetic workloads), or
  int64_t response_cache_capacity = 0;  ///< exact matching of trace prompts, LRU entries
  double response_cache_latency_s = 0;
  std::optional<serving::Speculative> spec;  ///< speculative decoding (draft deployment)
  std::string draft_model;                   ///< catalog id, or "mtp"

  /// slo: the per-request bounds (goodput: plain, or the highest percentile's), whether
  /// ttft or tpot was written plainly, and the percentile targets (sim/workload/slo.h).
  std::optional<double> slo_ttft_s, slo_tpot_s;
  bool slo_plain = false;
  std::vector<workload::SloTarget> slo_targets;

  /// A fleet (`users:` and `fleet:` sections) instead of `workload:` and serving.replicas.
  std::optional<fleet::FleetSpec> fleet;
  /// A new population of this fleet's users for `seed`.
  std::unique_ptr<fleet::Population> make_population(uint64_t seed_value) const;

  /// The workload section, kept to build a fresh generator for any seed.
  std::optional<yaml::Map> workload_section;
  std::string base_dir;  ///< the scenario file's folder (relative trace paths)
  std::string workload_description;
  std::vector<std::string> overrides;

  /// The vLLM replica (policy vllm, or sarathi: the same with chunked prefill).
  bool vllm_family() const { return policy == "vllm" || policy == "sarathi"; }
  /// A new generator of this scenario's requests for `seed`.
  std::unique_ptr<workload::Workload> make_workload(uint64_t seed_value) const;
};

/// Reads, validates and resolves a scenario. All problems are InputErrors naming the file,
/// line and field (or the --set override). `seed` replaces the file's seed when given.
/// `calibration` (may be null) holds the measured kernel tables the performance model uses
/// for this GPU unless the scenario says `efficiency: {calibration: false}`.
Scenario load(const std::string& file, const std::vector<std::string>& overrides,
              std::optional<uint64_t> seed, const hw::Catalog& catalog,
              std::shared_ptr<const hw::CalibrationSet> calibration = nullptr);

/// The same from a mapping already read (e.g. a scenario inline in a validation case);
/// `file` names where it came from for the name default and relative paths.
Scenario load_map(yaml::Map root, const std::string& file,
                  const std::vector<std::string>& overrides, std::optional<uint64_t> seed,
                  const hw::Catalog& catalog,
                  std::shared_ptr<const hw::CalibrationSet> calibration = nullptr);

/// The hardware, precision, efficiency and offload sections of a scenario (also used by
/// validation cases): reads them from `root` into `sc` and builds sc.dep. `sc.model` must
/// be set. Reads keys "hardware", "precision", "efficiency", "offload".
void load_deployment(yaml::Map& root, Scenario& sc, const hw::Catalog& catalog,
                     std::shared_ptr<const hw::CalibrationSet> calibration);

/// A pool's deployment: the scenario's hardware/precision/efficiency/offload sections with
/// `hardware` fields overridden by section[override_key] (when given), for `model`, with
/// its memory fit. `what` names the pool in errors. (Used by the scenario loader.)
/// Speculative decoding as a `speculative:` section gives it: the draft (a catalog model, or
/// the target's own MTP head), k draft tokens, acceptance and its spread.
struct DraftSettings {
  hw::ModelSpec draft;
  bool mtp = false;
  int k = 0;
  double acceptance = 0, spread = 0;
};
/// Reads a `speculative:` section for `model` at tensor parallelism `tp`; nullopt for k: 0
/// (off). Errors name the field.
std::optional<DraftSettings> read_speculative(yaml::Map& sp, const hw::ModelSpec& model, int tp,
                                              int block_tokens, const hw::Catalog& catalog);

/// A pool with `draft` carries it (its memory before the fit); a pool without one runs
/// without speculative decoding.
Pool load_pool(const yaml::Map& root, yaml::Map& section, const std::string& override_key,
               const hw::ModelSpec& model, const Scenario& sc, const hw::Catalog& catalog,
               const std::shared_ptr<const hw::CalibrationSet>& calibration, const char* what,
               const DraftSettings* draft = nullptr);

/// Speculative decoding with `draft` (an MTP head when `mtp`) and k draft tokens on `dep`'s
/// GPUs: sets dep's extra weight and KV memory for the draft and returns the step model's
/// Speculative.
serving::Speculative attach_speculative(const hw::ModelSpec& draft, bool mtp, int k,
                                        hw::Deployment& dep);

/// The `fleet:` and `users:` sections into sc.fleet (sim/scenario/fleet_section.cpp).
void load_fleet(yaml::Map& root, Scenario& sc, const hw::Catalog& catalog,
                const std::shared_ptr<const hw::CalibrationSet>& calibration);

}  // namespace fleetsim::scenario
