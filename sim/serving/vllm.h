// Continuous batching in the manner of vLLM (Kwon et al., "Efficient Memory Management for
// Large Language Model Serving with PagedAttention", SOSP 2023; scheduler of vLLM v0):
//
// - Paged KV cache: blocks of `block_tokens` tokens. Admission allocates blocks for the
//   whole prompt; a decoding sequence takes a new block when its context crosses a block
//   boundary.
// - Iteration-level scheduling with limits on running sequences (max_num_seqs) and on
//   tokens per iteration (max_batched_tokens).
// - Prefill-first (default): when a waiting request can be admitted, the iteration is
//   prefill-only and running decodes wait (vLLM v0 without chunked prefill).
// - Chunked prefill (`chunked_prefill: true`, vLLM's enable_chunked_prefill / Sarathi-Serve
//   style): every iteration runs all decodes first, then fills the rest of the token
//   budget with prompt chunks, in-progress prompts before new ones. With
//   `split_prompts: false` the budget takes whole prompts only (the first one of an
//   iteration even if it alone exceeds the budget), as TensorRT-LLM's in-flight batching
//   does without chunked context.
// - Preemption by recompute: when a decode step needs a block and none is free, the most
//   recently arrived running request is evicted (its blocks freed) and put back at the
//   head of the queue; on readmission it prefills prompt + tokens generated so far.
// - Automatic prefix caching (`prefix_caching: true`, vLLM APC): a prompt's full prefix
//   blocks (the trace's hash blocks) are kept in a PrefixCache when its prefill completes,
//   shared by running requests, and evicted least recently used when blocks run out (before
//   any preemption). An admitted request skips the cached part of its prompt: its prefill
//   starts after the cached tokens (at least one token is always computed).
// - Requests that can never run (longer than the model's context, than the whole KV
//   cache, or — without chunked prefill — than max_batched_tokens) are rejected on arrival.
//
// Cost per event (DESIGN.md): decode progress is lazy (a sequence stores the decode
// iteration at which it joined), batch aggregates (count, Σ context, KV blocks needed per
// iteration phase) are kept incrementally, and a stretch of decode iterations during which
// the batch does not change is advanced in one event in closed form: the stretch ends at
// the first completion, the first iteration whose KV blocks would not fit, or the first
// iteration boundary at or after an arrival that could be admitted. With
// `fast_forward: false` the same code runs one iteration per event; both give identical
// per-request results (tested).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <iterator>
#include <list>
#include <unordered_map>
#include <vector>

#include "sim/serving/prefix_cache.h"
#include "sim/serving/replica.h"
#include "sim/serving/step_model.h"

namespace fleetsim::serving {

struct VllmConfig {
  int block_tokens = 16;
  int64_t kv_blocks = 0;  ///< KV-cache capacity of the replica, in blocks
  int64_t max_num_seqs = 256;
  int64_t max_batched_tokens = 8192;
  bool chunked_prefill = false;
  /// With chunked prefill: a prompt may be split across iterations (vLLM, SGLang). When
  /// false, whole prompts join the decodes in the token budget and only the first prompt of
  /// an iteration may exceed it (TensorRT-LLM in-flight batching without
  /// enable_chunked_context).
  bool split_prompts = true;
  bool fast_forward = true;
  int64_t max_context_tokens = 0;  ///< the model's context window (0: unlimited)
  bool prefix_caching = false;
  int prefix_block_tokens = 0;  ///< tokens per prefix hash (a multiple of block_tokens)
  const std::vector<uint64_t>* hashes = nullptr;  ///< the trace's hashes (RequestSpec ranges)
  /// Generated conversation hashes instead (fleet users, HashSpan): a request's owner is
  /// its hash_begin and its first `generated_shared_blocks` blocks are the shared system
  /// prompt's. -1: the hashes are stored in `hashes`.
  int64_t generated_shared_blocks = -1;
  /// Prefill/decode disaggregation (DistServe, Splitwise): a `prefill` replica hands each
  /// request over when its prompt is done (on_prefill_done) and frees its KV; a `decode`
  /// replica takes handed-over requests (submit_prefilled) and only decodes them (it still
  /// recomputes a preempted request itself).
  enum class Role : uint8_t { kBoth, kPrefill, kDecode };
  Role role = Role::kBoth;
  /// Speculative decoding: k draft tokens per iteration (0 = off) and the per-token
  /// acceptance rate α, per request uniform in [α − spread, α + spread]. A request emits
  /// τ = (1 − α^(k+1)) / (1 − α) tokens per decode iteration on average (Leviathan et al.,
  /// ICML 2023); the replica uses an integer τ per request, rounded up or down at random
  /// (deterministically from the request id) so that the mean over requests is exact.
  /// Dynamic batching (policy `dynamic`): launch a partial batch once the oldest waiting
  /// request has waited this long.
  SimTime batch_timeout_ns = 10'000'000;
  int spec_k = 0;
  double spec_acceptance = 0;
  double spec_acceptance_spread = 0;
  /// Structured output with forced tokens (SGLang's jump-forward decoding): this share of
  /// the output tokens is dictated by the grammar and appended without a decode step, so a
  /// sequence advances 1 / (1 − share) tokens per decode iteration (times the speculative
  /// gain). The appended tokens' KV is written with the next iteration; their few extra
  /// GEMM rows are not charged.
  double forced_token_share = 0;
  /// Preemption by swap (vLLM --preemption-mode swap): a decoding victim's KV blocks go to
  /// host memory (`host_blocks` of them fit) over the host link, and come back when it is
  /// readmitted; each transfer stalls the GPU for latency + blocks · swap_ns_per_block.
  /// Without room on the host, or for a prefilling victim, recompute as before.
  bool swap = false;
  int64_t host_blocks = 0;
  double swap_ns_per_block = 0;
  SimTime swap_latency_ns = 0;
  /// Load shedding: arrivals are rejected while this many requests wait (0 = no limit).
  int64_t max_queue = 0;
  /// Prefix caching with a host-memory tier: entries the GPU evicts are kept there (this
  /// many) and loaded back over the host link (swap_latency_ns, swap_ns_per_block).
  int64_t prefix_host_entries = 0;
  /// Multi-LoRA (S-LoRA): `lora_slots` adapters fit in GPU memory at once; a request whose
  /// adapter is not resident waits for a slot with no running request (the least recently
  /// used is evicted) and loading it stalls the GPU lora_load_ns. 0 slots = no adapters.
  int lora_slots = 0;
  SimTime lora_load_ns = 0;
};

/// Tokens per decode iteration of request `id` under `cfg`'s speculative decoding and
/// forced-token share (1 when both are off).
int32_t tokens_per_iteration(const VllmConfig& cfg, uint64_t id);
/// The most tokens one iteration can advance a sequence: ceil((k + 1) / (1 − share)).
int32_t max_tokens_per_iteration(const VllmConfig& cfg);

/// The waiting queue, by priority: first come first served within a level, higher levels
/// first. (One level when the workload has no classes.)
class WaitQueue {
 public:
  static constexpr int kLevels = 8;
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  uint32_t front() const { return q_[static_cast<size_t>(top())].front(); }
  int front_priority() const { return top(); }
  void pop_front() {
    q_[static_cast<size_t>(top())].pop_front();
    --size_;
  }
  void push_back(uint32_t slot, int priority) {
    q_[static_cast<size_t>(priority)].push_back(slot);
    ++size_;
  }
  void push_front(uint32_t slot, int priority) {
    q_[static_cast<size_t>(priority)].push_front(slot);
    ++size_;
  }
  /// Removes and returns (in *slot) the most recently queued entry of the lowest level
  /// below `below` for which ok(slot) holds; false if none.
  template <class Ok>
  bool remove_lowest(int below, Ok ok, uint32_t* slot) {
    for (int l = 0; l < below; ++l) {
      auto& d = q_[static_cast<size_t>(l)];
      for (auto it = d.rbegin(); it != d.rend(); ++it) {
        if (!ok(*it)) continue;
        *slot = *it;
        d.erase(std::next(it).base());
        --size_;
        return true;
      }
    }
    return false;
  }
  /// Removes and returns (in *slot) the first entry, in queue order, among the first
  /// `max_scan` for which ok(slot) holds; false if none.
  template <class Ok>
  bool remove_first(size_t max_scan, Ok ok, uint32_t* slot) {
    size_t seen = 0;
    for (int l = kLevels - 1; l >= 0; --l) {
      auto& d = q_[static_cast<size_t>(l)];
      for (auto it = d.begin(); it != d.end() && seen < max_scan; ++it, ++seen) {
        if (!ok(*it)) continue;
        *slot = *it;
        d.erase(it);
        --size_;
        return true;
      }
    }
    return false;
  }
  template <class F>
  void for_each(F f) const {
    for (const auto& d : q_)
      for (uint32_t s : d) f(s);
  }

 private:
  int top() const {
    for (int l = kLevels - 1; l > 0; --l)
      if (!q_[static_cast<size_t>(l)].empty()) return l;
    return 0;
  }
  std::array<std::deque<uint32_t>, kLevels> q_;
  size_t size_ = 0;
};

class Vllm final : public Replica {
 public:
  /// Preconditions: kv_blocks >= 1, max_batched_tokens >= max_num_seqs when chunked.
  Vllm(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
       VllmConfig cfg);

  void submit(const workload::RequestSpec& request) override;
  void submit_prefilled(const Handoff& h) override;
  int64_t outstanding() const override { return outstanding_; }
  int64_t kv_blocks_used() const override { return used_blocks_; }
  int64_t host_blocks_used() const { return host_used_blocks_; }
  int64_t adapter_loads() const { return adapter_loads_; }
  int64_t kv_blocks_total() const override { return cfg_.kv_blocks; }
  void check_invariants() const override;
  void on_event(const core::Event& event) override;

  /// Prompt tokens of `r` this replica holds in its prefix cache now (prefix-aware routing).
  int64_t cached_prefix_tokens(const workload::RequestSpec& r) const override;
  const PrefixCache& prefix_cache() const { return cache_; }

  /// Decode iterations executed so far (for tests).
  int64_t decode_iterations() const { return decode_iter_; }
  int64_t iterations() const { return iterations_; }

 private:
  enum class State : uint8_t { kFree, kWaiting, kPrefilling, kDecoding };
  struct Seq {
    workload::RequestSpec spec;
    State state = State::kFree;
    uint32_t gen = 0;         // bumped on reuse and on leaving decode (heap validity)
    int32_t generated = 0;    // tokens emitted, as of joining decode (lazy afterwards)
    int32_t target = 0;       // prefill tokens for the current admission
    int32_t prefilled = 0;    // of target
    int64_t join_iter = 0;    // decode_iter_ when it joined decode
    int32_t ctx_at_join = 0;  // KV tokens when it joined decode
    int64_t finish_iter = 0;  // decode_iter_ value at which it is complete
    uint32_t pos = 0;         // index in decoding_ (while decoding)
    bool in_joined = false;   // in joined_ (joined decode since the last decode iteration)
    int32_t preemptions = 0;
    int32_t pinned = 0;                // prefix-cache entries this sequence holds a reference to
    int32_t tau = 1;                   // tokens per decode iteration (speculative decoding)
    bool prefilled_elsewhere = false;  // has its KV (handed over, or swapped): join decode directly
    int32_t swapped_blocks = 0;        // KV blocks held in host memory while swapped out
    SimTime scheduled_ns = -1, first_token_ns = -1, last_token_ns = -1;
  };
  struct Finish {
    int64_t iter;
    uint64_t id;
    uint32_t slot, gen;
    bool operator<(const Finish& o) const {  // max-heap on "later", so top() is the earliest
      return iter != o.iter ? iter > o.iter : id > o.id;
    }
  };
  enum class Segment : uint8_t { kNone, kKick, kMixed, kStretch };
  struct Chunk {
    uint32_t slot;
    int32_t tokens;
  };

  // A request joined the queue at `now`: start a segment if idle, or end a decode stretch
  // at the next boundary when the request may be admitted there.
  void queued(bool may_admit, SimTime now);
  // Scheduling at an iteration boundary.
  void schedule_next(SimTime now);
  // Prefix caching: entries of s's prompt already cached (at most (target − 1) / prefix
  // block tokens, so one token is always computed), and KV blocks that eviction could
  // free without touching them.
  struct Lookup {
    int64_t hits = 0, host_hits = 0, need_blocks = 0, evictable_blocks = 0;
    int64_t load_blocks = 0;  // GPU blocks for the entries loaded back from the host tier
  };
  Lookup lookup(const Seq& s) const;
  bool can_admit(const Seq& s, int64_t free_blocks, int64_t batch_tokens) const;
  // The next request to admit with `free_blocks` and `batch_tokens` already in the batch: the
  // queue's head, or — when the head waits only for a LoRA adapter slot — the first of the
  // next kLoraScan requests that can go (vLLM's scheduler skips such requests too).
  static constexpr size_t kLoraScan = 64;
  bool next_admissible(int64_t free_blocks, int64_t batch_tokens, uint32_t* slot);
  void admit(uint32_t slot, SimTime now, int64_t keep_free);
  void cache_prompt(Seq& s);
  void admit_prefilled(SimTime now);     // decode pool: handed-over requests join decode
  void release(Seq& s, int64_t tokens);  // free own blocks for `tokens` of KV, unpin
  HashSpan hashes_of(const workload::RequestSpec& r) const {
    if (cfg_.generated_shared_blocks >= 0)
      return HashSpan(r.hash_begin, cfg_.generated_shared_blocks);
    return HashSpan(cfg_.hashes->data() + r.hash_begin);
  }
  HashSpan hashes_of(const Seq& s) const { return hashes_of(s.spec); }
  int64_t full_hash_blocks(const Seq& s) const;
  int64_t own_blocks(const Seq& s, int64_t tokens) const {
    return blocks_for(tokens) - static_cast<int64_t>(s.pinned) * blocks_per_hash_;
  }
  void reserve_decode_blocks(SimTime now);
  void preempt_one(SimTime now);
  void start_mixed(SimTime now, bool decodes);
  void start_stretch(SimTime now);
  void finish_mixed(SimTime now);
  void finish_stretch(SimTime now);
  // Records seg_end_ns_, then schedule_segment_end (with the iteration's work).
  void schedule_end(SimTime end, int64_t prefill_tokens = 0, int64_t decode_seqs = 0);

  // Decode-set bookkeeping.
  void join_decode(uint32_t slot);
  void remove_prefilling(uint32_t slot);
  void leave_decode(uint32_t slot);
  void complete(uint32_t slot, SimTime now);
  void complete_due(SimTime now);
  void record_first_decode_gaps(SimTime end, SimTime step_ns);
  int64_t decode_blocks_needed(int64_t d0, int64_t k) const;
  int64_t max_stretch_for_blocks(int64_t d0, int64_t free_blocks) const;
  int64_t attended_ctx(int64_t d) const;  // Σ (ctx + 1) over decoding seqs at iteration d
  int32_t ctx_of(const Seq& s) const {
    return s.ctx_at_join + s.tau * static_cast<int32_t>(decode_iter_ - s.join_iter);
  }
  // Adds `delta` to the phase counts of the iterations (mod block_tokens) at which s needs
  // a new KV block: those whose τ written positions cross a block boundary.
  void add_phases(const Seq& s, int64_t delta, std::vector<int64_t>& counts) const;
  int64_t blocks_for(int64_t tokens) const {
    return (tokens + cfg_.block_tokens - 1) / cfg_.block_tokens;
  }
  int phase_of(int64_t join_iter, int32_t ctx) const;
  uint32_t new_slot();
  void free_slot(uint32_t slot);
  int64_t running() const { return static_cast<int64_t>(decoding_.size() + prefilling_.size()); }

  const StepModel& steps_;
  VllmConfig cfg_;
  PrefixCache cache_;
  int64_t blocks_per_hash_ = 0;  // KV blocks per prefix-cache entry

  std::vector<Seq> seqs_;
  std::vector<uint32_t> free_slots_;
  WaitQueue waiting_;
  std::vector<uint32_t> prefilling_;  // admitted, prompt not yet fully computed; arrival order
  std::vector<uint32_t> decoding_;
  std::vector<Finish> finish_heap_;
  std::vector<int64_t> phase_count_;  // decoding seqs needing a block when d % bs == phase
  std::vector<uint32_t> joined_;      // slots that joined decode since the last decode iteration
  int64_t ctx_offset_sum_ = 0;        // Σ (ctx_at_join - τ·join_iter) over decoding seqs
  int64_t tau_sum_ = 0;               // Σ τ over decoding seqs: context growth per iteration
  int64_t used_blocks_ = 0;
  int64_t outstanding_ = 0;
  int64_t decode_iter_ = 0;  // decode iterations completed
  int64_t iterations_ = 0;   // all iterations completed
  SimTime last_decode_end_ns_ = 0;

  // The segment in progress.
  Segment segment_ = Segment::kNone;
  SimTime seg_start_ns_ = 0, seg_end_ns_ = 0;
  int64_t seg_k_ = 0, seg_n_ = 0, seg_g_ = 0, seg_ctx0_ = 0, seg_kv_start_ = 0;
  SimTime seg_stall_ns_ = 0;      // swap transfers at the start of the segment
  SimTime pending_stall_ns_ = 0;  // swap transfers waiting for the next segment
  int64_t host_used_blocks_ = 0;  // swapped-out KV in host memory
  // LoRA adapters resident on the GPU: running requests using each, and recency of the
  // idle ones (front = least recently used).
  struct Adapter {
    int32_t running = 0;
    std::list<uint32_t>::iterator idle;
  };
  std::unordered_map<uint32_t, Adapter> adapters_;
  std::list<uint32_t> idle_adapters_;
  int64_t adapter_loads_ = 0;
  bool adapter_ready(uint32_t adapter) const;  // resident, or a slot can be had
  void acquire_adapter(uint32_t adapter);
  void release_adapter(uint32_t adapter);
  SimTime swap_ns(int64_t blocks) const {
    return cfg_.swap_latency_ns +
           static_cast<SimTime>(static_cast<double>(blocks) * cfg_.swap_ns_per_block);
  }
  bool seg_decodes_ = false;
  std::vector<Chunk> seg_chunks_;
};

}  // namespace fleetsim::serving
