// A scenario's serving settings, as `serving:` gives them: the replica engine's (shared by
// every policy) and each policy's own. The policy table (registry.cpp) hands each policy
// its part.
#pragma once

#include "sim/core/time.h"
#include "sim/serving/replica_engine.h"

namespace fleetsim::serving {

struct ServingConfig : EngineConfig {
  /// vllm: chunked prefill (the Sarathi policy) instead of prefill-first.
  bool chunked_prefill = false;
  /// sarathi (SarathiConfig::split_prompts): split a prompt across iterations.
  bool split_prompts = true;
  /// vllm prefill-first (VllmConfig::split_prompts): cut a prompt longer than the budget
  /// into prefill iterations (SGLang) instead of rejecting it (vLLM V0).
  bool split_long_prompts = false;
  /// dynamic (DynamicConfig::batch_timeout_ns): launch a partial batch once the oldest
  /// waiting request has waited this long.
  SimTime batch_timeout_ns = 10'000'000;
};

}  // namespace fleetsim::serving
