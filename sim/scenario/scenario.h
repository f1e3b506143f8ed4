// A scenario file, read strictly and resolved against the catalog.
//
// Schema (documented in scenarios/README.md):
//   name: default                  # output folder name (default: the file's stem)
//   description: "..."
//   seed: 1
//   model: llama-3.1-8b            # catalog id
//   hardware: {gpu: h100-sxm, tp: 1}
//   precision: {weights: bf16, kv: bf16}          # optional
//   efficiency: {compute: 0.8, memory: 0.85, iteration_overhead: 0s}  # optional overrides
//   serving:
//     replicas: 4
//     router: least-outstanding
//     policy: vllm
//     chunked_prefill: false
//     block_tokens: 16
//     max_num_seqs: 256
//     max_batched_tokens: 8192
//     gpu_memory_utilization: 0.9
//     runtime_reserve: 1GiB
//     fast_forward: true
//   workload: ...                   # see sim/workload/workload.h
//   slo: {ttft: 2s, tpot: 100ms}     # optional; goodput counts requests meeting both
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/catalog.h"
#include "hw_models/perf_model.h"
#include "hw_models/yaml_reader.h"
#include "sim/serving/vllm.h"
#include "sim/workload/workload.h"

namespace fleetsim::scenario {

struct Scenario {
  std::string file;
  std::string name;
  std::string description;
  uint64_t seed = 1;

  hw::ModelSpec model;
  hw::GpuSpec gpu;
  hw::Parallelism par;
  hw::Precision prec;
  std::string weights_dtype = "bf16", kv_dtype = "bf16";
  hw::Efficiency eff;
  std::string efficiency_source;  ///< where compute/memory efficiency came from

  int replicas = 1;
  std::string router = "round-robin";
  std::string policy = "vllm";
  serving::VllmConfig vllm;        ///< kv_blocks filled from the memory fit
  double gpu_memory_utilization = 0.9;
  double runtime_reserve_bytes = 0;
  hw::MemoryFit memory;

  std::optional<double> slo_ttft_s, slo_tpot_s;

  /// The workload section, kept to build a fresh generator for any seed.
  std::optional<yaml::Map> workload_section;
  std::string base_dir;            ///< the scenario file's folder (relative trace paths)
  std::string workload_description;
  std::vector<std::string> overrides;

  /// A new generator of this scenario's requests for `seed`.
  std::unique_ptr<workload::Workload> make_workload(uint64_t seed_value) const;
};

/// Reads, validates and resolves a scenario. All problems are InputErrors naming the file,
/// line and field (or the --set override). `seed` replaces the file's seed when given.
Scenario load(const std::string& file, const std::vector<std::string>& overrides,
              std::optional<uint64_t> seed, const hw::Catalog& catalog);

/// Bytes per element of a dtype name ("bf16" → 2, "fp8" → 1, "int4" → 0.5).
double dtype_bytes(const std::string& dtype);

}  // namespace fleetsim::scenario
