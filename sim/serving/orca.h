// Iteration-level scheduling with selective batching, after Orca (Yu et al., "Orca: A
// Distributed Serving System for Transformer-Based Generative Models", OSDI 2022, §4,
// Algorithm 1):
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
//   needing more KV blocks than the replica has) are rejected on arrival, as in Vllm.
//
// Cost per event: decode progress is lazy (a request stores the iteration at which it
// joined; its completion iteration is known), the attended-context sum is kept
// incrementally, completions come from a heap, and a run of decode-only iterations with an
// unchanged batch (until the first completion, or the first boundary after an arrival that
// could be admitted) is advanced in one event in closed form. KV use is fixed between
// admissions and completions, so a waiting request that does not fit at the start of a run
// cannot fit before its end. `fast_forward: false` runs one iteration per event with
// identical per-request results (tested).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim/serving/replica.h"
#include "sim/serving/step_model.h"
#include "sim/serving/vllm.h"

namespace fleetsim::serving {

class Orca final : public Replica {
 public:
  /// Uses cfg.kv_blocks, block_tokens, max_num_seqs, max_context_tokens, fast_forward.
  /// Preconditions: kv_blocks >= 1, block_tokens >= 1, 1 <= max_num_seqs <= steps.max_seqs().
  Orca(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
       VllmConfig cfg);

  void submit(const workload::RequestSpec& request) override;
  int64_t outstanding() const override { return outstanding_; }
  int64_t kv_blocks_used() const override { return used_blocks_; }
  int64_t kv_blocks_total() const override { return cfg_.kv_blocks; }
  void check_invariants() const override;
  void on_event(const core::Event& event) override;

  /// Iterations executed so far, and the most requests running at once (for tests).
  int64_t iterations() const { return iter_; }
  int64_t peak_running() const { return peak_running_; }

 private:
  struct Seq {
    workload::RequestSpec spec;
    int64_t blocks = 0;          // KV reservation: ⌈(prompt + output) / block_tokens⌉
    int64_t join_iter = 0;       // iter_ when it joined decode (its prefill's end)
    int64_t finish_iter = 0;     // iter_ at which it has all its tokens
    uint32_t pos = 0;            // index in running_
    bool live = false;
    SimTime scheduled_ns = -1, first_token_ns = -1;
  };
  struct Finish {
    int64_t iter;
    uint64_t id;
    uint32_t slot;
    bool operator<(const Finish& o) const {  // max-heap on "later", so front() is the earliest
      return iter != o.iter ? iter > o.iter : id > o.id;
    }
  };
  enum class Segment : uint8_t { kNone, kKick, kMixed, kStretch };

  void schedule_next(SimTime now);
  bool can_admit(const Seq& s, int64_t running) const {
    return running < cfg_.max_num_seqs && used_blocks_ + s.blocks <= cfg_.kv_blocks;
  }
  void start_mixed(SimTime now);
  void start_stretch(SimTime now);
  void finish_mixed(SimTime now);
  void finish_stretch(SimTime now);
  void join_decode(uint32_t slot);
  void complete_due(SimTime now);
  void complete(uint32_t slot, SimTime now);
  // Σ over decoding requests of the tokens attended at iteration d: prompt + (d − join) + 1.
  int64_t attended_ctx(int64_t d) const {
    const auto n = static_cast<int64_t>(running_.size());
    return ctx_offset_sum_ + n * d + n;
  }
  int64_t blocks_for(int64_t tokens) const {
    return (tokens + cfg_.block_tokens - 1) / cfg_.block_tokens;
  }
  uint32_t new_slot();

  const StepModel& steps_;
  VllmConfig cfg_;

  std::vector<Seq> seqs_;
  std::vector<uint32_t> free_slots_;
  std::deque<uint32_t> waiting_;
  std::vector<uint32_t> running_;      // decoding
  std::vector<uint32_t> admitted_;     // prefilling in the current mixed iteration
  std::vector<Finish> finish_heap_;
  int64_t ctx_offset_sum_ = 0;         // Σ (prompt − join_iter) over running_
  int64_t used_blocks_ = 0;
  int64_t outstanding_ = 0;
  int64_t iter_ = 0;                   // iterations completed
  int64_t peak_running_ = 0;

  Segment segment_ = Segment::kNone;
  SimTime seg_start_ns_ = 0;
  int64_t seg_k_ = 0, seg_n_ = 0, seg_ctx0_ = 0, seg_prefill_tokens_ = 0;
};

}  // namespace fleetsim::serving
