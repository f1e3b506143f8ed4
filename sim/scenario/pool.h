// A pool of replicas with its own deployment (model, GPU, parallelism) and serving limits.
#pragma once

#include <optional>
#include <string>

#include "hw_models/catalog.h"
#include "hw_models/perf_model.h"
#include "sim/serving/serving_config.h"
#include "sim/serving/step_model.h"

namespace fleetsim::scenario {

/// A pool of replicas. As a second pool: the prefill pool of a disaggregated deployment (the
/// scenario's own hardware and serving.replicas are then the decode pool), or the small
/// model of a cascade (the scenario's model is then the large one).
struct Pool {
  int replicas = 0;
  hw::ModelSpec model;
  hw::GpuSpec gpu;
  std::optional<hw::NodeSpec> node;
  hw::Parallelism par;
  hw::Deployment dep;
  hw::MemoryFit memory;
  serving::ServingConfig vllm;
  std::string efficiency_source;
  /// Speculative decoding in this pool (fleet pools of the scenario's model when the
  /// scenario has serving.speculative); the draft's memory is in dep and the fit.
  std::optional<serving::Speculative> spec;
  int64_t prefix_host_blocks = 0;  ///< host tier of the prefix cache, in this pool's KV blocks
  int lora_rank = 0;  ///< multi-LoRA: adapter rank (0 = none; slots in vllm.lora_slots)
  std::string weights_dtype = "bf16", kv_dtype = "bf16";  ///< its precision, as written
};

}  // namespace fleetsim::scenario
