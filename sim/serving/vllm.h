// Continuous batching in the manner of vLLM (Kwon et al., "Efficient Memory Management for
// Large Language Model Serving with PagedAttention", SOSP 2023; scheduler of vLLM v0
// without chunked prefill), on the shared replica engine (replica_engine.h: paged KV,
// preemption by recompute or swap, automatic prefix caching, closed-form decode stretches):
//
// - Iteration-level scheduling with limits on running sequences (max_num_seqs) and on
//   tokens per iteration (max_batched_tokens).
// - Prefill-first: when a waiting request can be admitted, the iteration is prefill-only
//   (whole prompts, first come first served by priority, within the token budget) and the
//   running decodes wait. Otherwise the decodes run, after preemption has made room for
//   their next blocks.
// - Prompts longer than max_batched_tokens can never run and are rejected on arrival (vLLM
//   V0: prompt_limit = min(max_model_len, max_num_batched_tokens), FINISHED_IGNORED) — or,
//   with `split_prompts` (SGLang: prefill batches of at most chunked_prefill_size tokens),
//   a prompt is cut at the budget and its rest runs first in the next prefill iterations,
//   still apart from the decodes.
//
// Chunked prefill (`chunked_prefill: true`) is the Sarathi policy (sarathi.h).
#pragma once

#include "sim/serving/replica_engine.h"

namespace fleetsim::serving {

struct VllmConfig {
  /// Cut a prompt longer than the token budget into prefill iterations (true) instead of
  /// rejecting it (false).
  bool split_prompts = false;
};

class Vllm final : public ReplicaEngine {
 public:
  /// Preconditions: as ReplicaEngine, and max_batched_tokens >= 1.
  Vllm(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
       const EngineConfig& cfg, VllmConfig own = {});

 private:
  void schedule(SimTime now) override;
  VllmConfig own_;
};

}  // namespace fleetsim::serving
