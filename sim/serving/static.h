// Static batching (request-level scheduling, run to completion), the scheme of serving
// systems built on NVIDIA FasterTransformer (Triton's FasterTransformer backend) and of
// Hugging Face generate() before continuous batching. Described, with its costs, as the
// baseline of Yu et al., "Orca: A Distributed Serving System for Transformer-Based
// Generative Models", OSDI 2022, §3 (C1, "early-finished and late-joining requests").
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
//   needing more KV blocks than the replica has) are rejected on arrival, as in Vllm.
//
// Dynamic batching (dynamic.h) is this policy with a different launch rule.
//
// Cost per event: the batch is closed, so the decode iterations between two changes of
// the emitting set are advanced in one event in closed form (StepModel::decode_run_ns);
// members are sorted by output length once per batch (O(log batch) per request).
// `fast_forward: false` runs one iteration per event with identical per-request results
// (tested).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim/serving/replica.h"
#include "sim/serving/step_model.h"
#include "sim/serving/vllm.h"

namespace fleetsim::serving {

class Static : public Replica {
 public:
  /// Uses cfg.kv_blocks, block_tokens, max_num_seqs, max_context_tokens, fast_forward.
  /// Preconditions: kv_blocks >= 1, block_tokens >= 1, 1 <= max_num_seqs <= steps.max_seqs().
  Static(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
         VllmConfig cfg);

  void submit(const workload::RequestSpec& request) override;
  /// Waiting requests plus the running batch (its members complete together at its end).
  int64_t outstanding() const override {
    return static_cast<int64_t>(waiting_.size() + batch_.size());
  }
  /// Blocks reserved by the running batch.
  int64_t kv_blocks_used() const override { return used_blocks_; }
  int64_t kv_blocks_total() const override { return cfg_.kv_blocks; }
  void check_invariants() const override;
  void on_event(const core::Event& event) override;

  /// Iterations and batches executed so far (for tests).
  int64_t iterations() const { return iterations_; }
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
  SimTime oldest_queued_ns() const { return waiting_.front().queued_ns; }
  const VllmConfig& config() const { return cfg_; }

 private:
  struct Waiting {
    workload::RequestSpec spec;
    SimTime queued_ns = 0;
    int64_t blocks = 0;  // KV reservation: ⌈(prompt + output) / block_tokens⌉
  };
  struct Member {
    workload::RequestSpec spec;
    int64_t blocks = 0;
    SimTime scheduled_ns = 0, first_token_ns = 0;
  };
  enum class Segment : uint8_t { kNone, kKick, kWait, kPrefill, kDecode };

  void schedule_next(SimTime now);
  void form_batch(SimTime now);
  void start_decode(SimTime now);
  void finish_prefill(SimTime now);
  void finish_decode(SimTime now);
  void finish_emitting();           // advance done_ past members with all their tokens
  void complete_batch(SimTime now);
  // Records seg_end_ns_, then schedule_segment_end (with the iteration's work).
  void schedule_end(SimTime end, int64_t prefill_tokens = 0, int64_t decode_seqs = 0);
  int64_t blocks_for(int64_t tokens) const {
    return (tokens + cfg_.block_tokens - 1) / cfg_.block_tokens;
  }

  const StepModel& steps_;
  VllmConfig cfg_;

  std::deque<Waiting> waiting_;
  int64_t waiting_blocks_ = 0;     // Σ reservations of the waiting requests

  // The running batch, sorted by output tokens (then arrival): members [0, done_) have
  // all their tokens and only hold their slot and KV until the batch ends.
  std::vector<Member> batch_;
  size_t done_ = 0;
  int64_t prompt_sum_ = 0;         // Σ prompt tokens of the batch
  int64_t batch_iter_ = 0;         // decode iterations of this batch completed
  int64_t used_blocks_ = 0;
  int64_t iterations_ = 0, batches_ = 0;
  int64_t accepted_ = 0, completed_ = 0;  // requests queued, and reported complete

  Segment segment_ = Segment::kNone;
  SimTime seg_start_ns_ = 0, seg_end_ns_ = 0;
  int64_t seg_k_ = 0, seg_ctx0_ = 0;
};

}  // namespace fleetsim::serving
