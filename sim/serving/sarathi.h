// Chunked prefill, after Sarathi-Serve (Agrawal et al., "Taming Throughput-Latency Tradeoff
// in LLM Inference with Sarathi-Serve", OSDI 2024) and vLLM's enable_chunked_prefill, on the
// shared replica engine (replica_engine.h: paged KV, preemption, prefix caching,
// closed-form decode stretches):
//
// - Stall-free batching: every iteration runs all decodes first (after preemption has made
//   room for their next blocks), then fills the rest of the max_batched_tokens budget with
//   prompt chunks, in-progress prompts before new ones.
// - With `split_prompts: false` the budget takes whole prompts only (the first one of an
//   iteration even if it alone exceeds the budget), as TensorRT-LLM's in-flight batching
//   does without chunked context.
//
// Policies `sarathi`, and `vllm` with `chunked_prefill: true`.
#pragma once

#include "sim/serving/replica_engine.h"

namespace fleetsim::serving {

struct SarathiConfig {
  /// A prompt may be split across iterations (vLLM, SGLang). When false, whole prompts
  /// join the decodes in the token budget and only the first prompt of an iteration may
  /// exceed it (TensorRT-LLM in-flight batching without enable_chunked_context).
  bool split_prompts = true;
};

class Sarathi final : public ReplicaEngine {
 public:
  /// Preconditions: as ReplicaEngine, and max_batched_tokens >= max_num_seqs (every decode
  /// fits the budget).
  Sarathi(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
          const EngineConfig& cfg, SarathiConfig own = {});

 private:
  void schedule(SimTime now) override;

  SarathiConfig own_;
};

}  // namespace fleetsim::serving
