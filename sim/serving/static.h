// Static batching (request-level scheduling, run to completion), the scheme of serving
// systems built on NVIDIA FasterTransformer (Triton's FasterTransformer backend) and of
// Hugging Face generate() before continuous batching. Described, with its costs, as the
// baseline of Yu et al., "Orca: A Distributed Serving System for Transformer-Based
// Generative Models", OSDI 2022, §3 (C1, "early-finished and late-joining requests").
// On the shared replica engine (replica_engine.h) with closed batches:
//
// - When the replica is idle, it takes up to `max_num_seqs` waiting requests, first come
//   first served, as one batch. Every member reserves KV for its whole life, prompt +
//   output tokens (⌈(prompt + output) / block_tokens⌉ blocks), at admission; the batch
//   stops at the first waiting request whose reservation does not fit (no skipping).
// - One prefill iteration computes every member's whole prompt and samples each one's
//   first token. (`max_batched_tokens` does not split it: the batch is prefilled together,
//   as in FasterTransformer's context phase; it still sizes activation memory.)
// - Then the batch decodes one token per member per iteration until its longest request
//   has all its tokens. A member that is done earlier stops emitting tokens but keeps its
//   slot and its KV, and the dense batch keeps its shape: every decode iteration costs a
//   batch of the full size, every row's context growing (finished rows are padding).
// - The engine returns the whole batch at once (Orca §3: "requests that have finished
//   earlier than others in the batch cannot return to the client"), so every member
//   completes when the batch ends. Tokens are reported as they are generated (first token
//   at the prefill's end, one gap per decode iteration), as a streaming front end would
//   see them; a short request's end-to-end latency and TPOT include its wait for the
//   longest member.
// - Requests that arrive while a batch runs wait for it to end; only then is the next
//   batch formed.
// - Requests that can never run (prompt + output longer than the model's context, or
//   needing more KV blocks than the replica has) are rejected on arrival.
//
// Dynamic batching (dynamic.h) is this policy with a different launch rule.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim/serving/replica_engine.h"

namespace fleetsim::serving {

class Static : public ReplicaEngine {
 public:
  /// Uses reservation_config(cfg). Preconditions: as ReplicaEngine.
  Static(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
         const EngineConfig& cfg);

  void check_invariants() const override;

  /// Batches executed so far (for tests).
  int64_t batches() const { return batches_; }

 protected:
  /// When the next batch may start, for an idle replica with a non-empty queue: at once
  /// for static batching. A result after `now` makes the replica wait; the rule is asked
  /// again at every arrival during the wait.
  virtual SimTime launch_time(SimTime now) const { return now; }
  /// True when the next batch can take no more requests: max_num_seqs are waiting, or the
  /// waiting requests' reservations together exceed the KV cache.
  bool next_batch_full() const;
  /// When the request at the head of the queue arrived. Precondition: the queue is not empty.
  SimTime oldest_queued_ns() const { return queued_ns_.front(); }

 private:
  void schedule(SimTime now) override;
  void queued(const Seq& s, bool may_admit, SimTime now) override;

  // The running batch, sorted by output tokens (then arrival): the order in which its
  // members stop emitting, and in which they are reported complete.
  std::vector<uint32_t> batch_;
  std::deque<SimTime> queued_ns_;  // when each waiting request was queued, in queue order
  int64_t waiting_blocks_ = 0;     // Σ reservations of the waiting requests
  int64_t batches_ = 0;
};

}  // namespace fleetsim::serving
