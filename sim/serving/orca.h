// Iteration-level scheduling with selective batching, after Orca (Yu et al., "Orca: A
// Distributed Serving System for Transformer-Based Generative Models", OSDI 2022, §4,
// Algorithm 1), on the shared replica engine (replica_engine.h):
//
// - Iteration-level scheduling: at every iteration boundary, new requests join the batch
//   and finished ones leave it (continuous batching). Selection is first come, first
//   served with at most `max_num_seqs` requests running (Orca's max_bs); the running ones
//   arrived first, so they always stay in the batch and decode one token per iteration.
// - Selective batching: a newly admitted request's whole prompt runs in the same iteration
//   as the running decodes (one mixed iteration: the token-wise operations are batched,
//   attention is per request). There is no token budget and no chunking:
//   `max_batched_tokens` does not limit an iteration (it still sizes activation memory).
// - No paged KV: Orca reserves, at admission, KV slots for the request's maximum context,
//   prompt + max_tokens (Algorithm 1: n_rsrv + req.max_tokens ≤ n_slots). The simulator
//   knows each request's output length and uses it as max_tokens, so a request reserves
//   ⌈(prompt + output) / block_tokens⌉ blocks for its whole life; it is admitted only when
//   the whole reservation fits, and its blocks are freed when it completes. Fewer requests
//   run at once than with paged KV (vllm.h), which allocates blocks as the context grows,
//   but nothing is ever preempted.
// - Requests that can never run (prompt + output longer than the model's context, or
//   needing more KV blocks than the replica has) are rejected on arrival.
//
// KV use is fixed between admissions and completions, so a waiting request that does not
// fit at the start of a decode stretch cannot fit before its end; an arrival ends a
// stretch early only if it could be admitted.
#pragma once

#include "sim/serving/replica_engine.h"

namespace fleetsim::serving {

class Orca final : public ReplicaEngine {
 public:
  /// Uses reservation_config(cfg). Preconditions: as ReplicaEngine.
  Orca(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
       const EngineConfig& cfg);

  /// The most requests running at once (for tests).
  int64_t peak_running() const { return peak_running_; }

 private:
  void schedule(SimTime now) override;
  void queued(const Seq& s, bool may_admit, SimTime now) override;

  int64_t peak_running_ = 0;
};

}  // namespace fleetsim::serving
