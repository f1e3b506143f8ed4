// The replica engine: the mechanism every batching policy shares. A policy (vllm.h,
// sarathi.h, orca.h, static.h, dynamic.h) is a small subclass that decides, at each
// iteration boundary, which requests run in the next iteration; the engine does the rest:
//
// - Requests: arrival checks (context window, KV capacity, load shedding), the waiting
//   queue (by priority, or first come, first served), sequence slots, completion records.
// - Segments: one iteration with prefill work (a mixed iteration: prompt chunks, with or
//   without the running decodes), a stretch of decode-only iterations, or an idle wait; a
//   newer segment end supersedes an older one (Replica::schedule_segment_end).
// - Closed-form decode stretches: decode progress is lazy (a sequence stores the decode
//   iteration at which it joined), batch aggregates (count, Σ context, KV blocks needed per
//   iteration phase) are kept incrementally, and a stretch during which the batch does not
//   change is advanced in one event: it ends at the first completion, the first iteration
//   whose KV blocks would not fit, or the first iteration boundary at or after an arrival
//   that could be admitted. With `fast_forward: false` the same code runs one iteration per
//   event; both give identical per-request results (tested for every policy).
// - KV blocks: paged (blocks of `block_tokens` tokens allocated as a context grows, vLLM)
//   or reserved for a request's whole life at admission (Orca, static batching); automatic
//   prefix caching with an optional host tier (prefix_cache.h).
// - Preemption (vLLM): when a decode step needs a block and none is free, the running
//   request of the lowest priority that arrived last is evicted, by recompute (its blocks
//   freed, its prompt and generated tokens prefilled again on readmission) or by swap (its
//   KV to host memory over the host link, back when it is readmitted).
// - Speculative decoding and forced tokens (τ tokens per decode iteration), multi-LoRA
//   adapter slots, and prefill/decode disaggregation (a prefill-role replica hands a
//   request over when its prompt is done; a decode-role replica takes handed-over requests
//   with submit_prefilled).
//
// What a policy fixes about the mechanism is an EngineRules value given at construction
// (constants, so the hot loop only branches on them).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <iterator>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/serving/prefix_cache.h"
#include "sim/serving/replica.h"
#include "sim/serving/step_model.h"

namespace fleetsim::serving {

/// The engine's settings: KV cache, limits and the serving techniques it implements.
struct EngineConfig {
  int block_tokens = 16;
  int64_t kv_blocks = 0;  ///< KV-cache capacity of the replica, in blocks
  int64_t max_num_seqs = 256;
  int64_t max_batched_tokens = 8192;
  bool fast_forward = true;
  int64_t max_context_tokens = 0;  ///< the model's context window (0: unlimited)
  /// Admission that never evicts (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity
  /// scheduler): a request is admitted only if the KV blocks of its whole life (prompt +
  /// output, less the cached prefix it reuses) fit beside what the running requests may
  /// still claim of theirs and the pinned prefix entries. Blocks are still allocated as the
  /// context grows and the token budget still applies, so no running request is ever
  /// preempted. Policies with whole-life reservations (EngineRules::reserve_whole_life)
  /// do not read it.
  bool reserve_at_admission = false;
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

/// What a batching policy fixes about the engine's mechanism.
struct EngineRules {
  /// Each request reserves KV for its whole life, ⌈(prompt + output) / block_tokens⌉
  /// blocks, at admission (Orca, static batching), instead of paged blocks allocated as its
  /// context grows (vLLM). Nothing is then ever preempted.
  bool reserve_whole_life = false;
  /// Waiting requests are ordered by priority level, first come, first served within a
  /// level; false: first come, first served only.
  bool priorities = true;
  /// Prompts longer than this are rejected on arrival (kTooLongForBatch); 0: no limit.
  int64_t max_prompt_tokens = 0;
  /// Admissions at a boundary run in the same iteration as the running decodes, after the
  /// decodes' blocks (chunked prefill, Orca's selective batching): a stretch stays closed
  /// to the queue only if its head cannot be admitted after those blocks too.
  bool prefill_with_decodes = false;
  /// Iterations run back to back while sequences run, so every decoding sequence's token
  /// gap in an iteration is that iteration's duration: the gaps are reported in one call
  /// per iteration instead of per newly joined sequence (Orca, static batching).
  bool back_to_back = false;
  /// A batch runs to completion (static batching): no request joins a running decode
  /// stretch, and a sequence that has all its tokens keeps its row (it is still computed,
  /// as padding) and its KV until the policy completes it with complete_held.
  bool closed_batches = false;
};

/// The part of `cfg` that a policy with whole-life KV reservations uses (Orca, static
/// batching): KV size and block size, limits, context window, fast_forward. The paged-KV
/// techniques (prefix caching, preemption by swap, speculative decoding, forced tokens,
/// LoRA slots, load shedding, disaggregation roles) are left off: those policies do not
/// model them.
EngineConfig reservation_config(const EngineConfig& cfg);

/// Tokens per decode iteration of request `id` under `cfg`'s speculative decoding and
/// forced-token share (1 when both are off).
int32_t tokens_per_iteration(const EngineConfig& cfg, uint64_t id);
/// The most tokens one iteration can advance a sequence: ceil((k + 1) / (1 − share)).
int32_t max_tokens_per_iteration(const EngineConfig& cfg);

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
    settle();
  }
  void push_back(uint32_t slot, int priority) {
    q_[static_cast<size_t>(priority)].push_back(slot);
    ++size_;
    top_ = std::max(top_, priority);
  }
  void push_front(uint32_t slot, int priority) {
    q_[static_cast<size_t>(priority)].push_front(slot);
    ++size_;
    top_ = std::max(top_, priority);
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
        settle();
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
        settle();
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
  // The highest non-empty level (0 when empty).
  int top() const { return top_; }
  void settle() {
    while (top_ > 0 && q_[static_cast<size_t>(top_)].empty()) --top_;
  }
  std::array<std::deque<uint32_t>, kLevels> q_;
  size_t size_ = 0;
  int top_ = 0;
};

class ReplicaEngine : public Replica {
 public:
  void submit(const workload::RequestSpec& request) override;
  void submit_prefilled(const Handoff& h) override;
  int64_t outstanding() const override { return outstanding_; }
  int64_t kv_blocks_used() const override { return used_blocks_; }
  int64_t host_blocks_used() const { return host_used_blocks_; }
  int64_t adapter_loads() const { return adapter_loads_; }
  int64_t kv_blocks_total() const override { return cfg_.kv_blocks; }
  void check_invariants() const override;
  void on_event(const core::Event& event) final;

  /// Prompt tokens of `r` this replica holds in its prefix cache now (prefix-aware routing).
  int64_t cached_prefix_tokens(const workload::RequestSpec& r) const override;
  const PrefixCache& prefix_cache() const { return cache_; }

  /// Decode iterations executed so far, and all iterations (for tests).
  int64_t decode_iterations() const { return decode_iter_; }
  int64_t iterations() const { return iterations_; }

 protected:
  /// Preconditions: kv_blocks >= 1, block_tokens >= 1, 1 <= max_num_seqs <= steps.max_seqs().
  ReplicaEngine(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
                EngineConfig cfg, EngineRules rules);

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
    bool held = false;        // closed batches: has all its tokens, keeps its row and KV
    int32_t preemptions = 0;
    int32_t pinned = 0;                // prefix-cache entries this sequence holds a reference to
    int32_t tau = 1;                   // tokens per decode iteration (speculative decoding)
    bool prefilled_elsewhere = false;  // has its KV (handed over, or swapped): join decode directly
    int32_t swapped_blocks = 0;        // KV blocks held in host memory while swapped out
    int32_t claim = 0;  // reserve_at_admission: KV blocks claimed for its whole life, less hits
    SimTime scheduled_ns = -1, first_token_ns = -1, last_token_ns = -1;
  };
  enum class Segment : uint8_t { kNone, kKick, kWait, kMixed, kStretch };

  // ---- the policy ----

  /// At an iteration boundary with no segment in progress (chunks empty, handed-over and
  /// swapped-out requests already rejoined): start the next segment with start_mixed,
  /// start_stretch or wait_until, or leave the replica idle.
  virtual void schedule(SimTime now) = 0;
  /// A request joined the queue at `now`; `may_admit`: it is the queue's head now (or may
  /// be admitted past a head that waits for an adapter slot). The engine's rule: start a
  /// segment at once if idle, or end a decode stretch at the first boundary at or after
  /// now if may_admit (end_stretch_early).
  virtual void queued(const Seq& s, bool may_admit, SimTime now);

  // ---- what a policy uses ----

  /// Runs the boundary again (schedule after the handed-over requests), e.g. after every
  /// running request was preempted.
  void boundary(SimTime now);
  /// Ends the running decode stretch at the first iteration boundary at or after `now`.
  void end_stretch_early(SimTime now);
  /// The next request to admit with `free_blocks` and `batch_tokens` already in the batch (0:
  /// no token budget check): the queue's head, or — when the head waits only for a LoRA
  /// adapter slot — the first of the next kLoraScan requests that can go (vLLM's scheduler
  /// skips such requests too). Removes it from the queue.
  bool next_admissible(int64_t free_blocks, int64_t batch_tokens, uint32_t* slot);
  /// Whether `s` could be admitted now with `free_blocks` free and `batch_tokens` taken.
  bool can_admit(const Seq& s, int64_t free_blocks, int64_t batch_tokens) const;
  /// Admits `slot` (allocating its KV, keeping `keep_free` blocks free when evicting cached
  /// prefixes); it is prefilling until the chunks given by add_chunk cover its target.
  void admit(uint32_t slot, SimTime now, int64_t keep_free);
  /// Preempts running requests until the decodes' next-iteration blocks fit.
  void reserve_decode_blocks(SimTime now);
  /// `tokens` of `slot`'s prompt run in the next mixed iteration.
  void add_chunk(uint32_t slot, int32_t tokens) { seg_chunks_.push_back({slot, tokens}); }
  bool has_chunks() const { return !seg_chunks_.empty(); }
  size_t chunk_count() const { return seg_chunks_.size(); }
  /// One iteration with the chunks added, and one decode step of every decoding sequence
  /// if `decodes`.
  void start_mixed(SimTime now, bool decodes);
  /// Decode-only iterations of the unchanged batch: one, or (fast_forward) as many as the
  /// closed form allows.
  void start_stretch(SimTime now);
  /// Idle until `t`; queued() may shorten the wait with shorten_wait.
  void wait_until(SimTime t);
  void shorten_wait(SimTime t) {
    if (t < seg_end_ns_) schedule_end(t);
  }
  /// Closed batches: completes a held sequence (frees its row and KV).
  void complete_held(uint32_t slot, SimTime now);

  const Seq& seq(uint32_t slot) const { return seqs_[slot]; }
  const std::vector<uint32_t>& prefilling() const { return prefilling_; }
  int64_t decoding() const { return static_cast<int64_t>(decoding_.size()); }
  /// Decoding sequences that still emit tokens (all but the held ones).
  int64_t emitting() const { return decoding() - held_; }
  int64_t running() const { return static_cast<int64_t>(decoding_.size() + prefilling_.size()); }
  size_t waiting() const { return waiting_.size(); }
  int64_t free_blocks() const { return cfg_.kv_blocks - used_blocks_; }
  int64_t decode_iter() const { return decode_iter_; }
  int64_t decode_blocks_needed(int64_t d0, int64_t k) const;
  /// KV blocks a request needs for its whole life (its final context; τ − 1 more with
  /// speculative decoding, whose last iteration may write past it).
  int64_t life_blocks(const workload::RequestSpec& r) const;
  Segment segment() const { return segment_; }
  const WaitQueue& queue() const { return waiting_; }
  const EngineConfig& config() const { return cfg_; }

  // Checks shared by the policies' own check_invariants.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  struct Finish {
    int64_t iter;
    uint64_t id;
    uint32_t slot, gen;
    bool operator<(const Finish& o) const {  // max-heap on "later", so top() is the earliest
      return iter != o.iter ? iter > o.iter : id > o.id;
    }
  };
  struct Chunk {
    uint32_t slot;
    int32_t tokens;
  };

  // Prefix caching: entries of s's prompt already cached (at most (target − 1) / prefix
  // block tokens, so one token is always computed), and KV blocks that eviction could
  // free without touching them.
  struct Lookup {
    int64_t hits = 0, host_hits = 0, need_blocks = 0, evictable_blocks = 0;
    int64_t load_blocks = 0;  // GPU blocks for the entries loaded back from the host tier
  };
  Lookup lookup(const Seq& s) const;
  /// reserve_at_admission: the KV blocks s claims for its whole life, less its prefix hits.
  int64_t claim_of(const Seq& s, const Lookup& l) const {
    return life_blocks(s.spec) - l.hits * blocks_per_hash_;
  }
  static constexpr size_t kLoraScan = 64;
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
  /// A sequence is done: its answer's whole hash blocks are cached, then release(s, tokens).
  void finish(Seq& s, int64_t tokens);
  int64_t own_blocks(const Seq& s, int64_t tokens) const {
    if (rules_.reserve_whole_life) return life_blocks(s.spec);
    return blocks_for(tokens) - static_cast<int64_t>(s.pinned) * blocks_per_hash_;
  }
  int level(const workload::RequestSpec& r) const { return rules_.priorities ? r.priority : 0; }
  void preempt_one(SimTime now);
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
  int64_t max_stretch_for_blocks(int64_t d0, int64_t free_blocks) const;
  int64_t attended_ctx(int64_t d) const;  // Σ (ctx + 1) over decoding seqs at iteration d
  int32_t ctx_of(const Seq& s) const {
    return s.ctx_at_join + s.tau * static_cast<int32_t>(decode_iter_ - s.join_iter);
  }
  // Adds `delta` per new KV block to the phase counts of the iterations (mod block_tokens)
  // at which s needs one: a block per boundary its τ written positions cross.
  void add_phases(const Seq& s, int64_t delta, std::vector<int64_t>& counts) const;
  int64_t blocks_for(int64_t tokens) const {
    return (tokens + cfg_.block_tokens - 1) / cfg_.block_tokens;
  }
  int phase_of(int64_t join_iter, int32_t ctx) const;
  uint32_t new_slot();
  void free_slot(uint32_t slot);
  /// A fresh slot holding `r` as a waiting sequence (prompt to prefill, nothing generated).
  uint32_t waiting_seq(const workload::RequestSpec& r);
  /// Puts `slot` at the back of its priority level and lets the policy react.
  void enqueue(uint32_t slot, SimTime now);

  const StepModel& steps_;
  EngineConfig cfg_;
  EngineRules rules_;
  PrefixCache cache_;
  int64_t blocks_per_hash_ = 0;  // KV blocks per prefix-cache entry

  std::vector<Seq> seqs_;
  std::vector<uint32_t> free_slots_;
  WaitQueue waiting_;
  std::vector<uint32_t> prefilling_;  // admitted, prompt not yet fully computed; by id
  std::vector<uint32_t> decoding_;
  std::vector<Finish> finish_heap_;
  std::vector<int64_t> phase_count_;  // blocks the decoding seqs need when d % bs == phase
  std::vector<uint32_t> joined_;      // slots that joined decode since the last decode iteration
  int64_t ctx_offset_sum_ = 0;        // Σ (ctx_at_join - τ·join_iter) over decoding seqs
  int64_t tau_sum_ = 0;               // Σ τ over decoding seqs: context growth per iteration
  int64_t held_ = 0;                  // closed batches: decoding seqs that have all their tokens
  int64_t used_blocks_ = 0;
  int64_t outstanding_ = 0;
  int64_t decode_iter_ = 0;  // decode iterations completed
  int64_t iterations_ = 0;   // all iterations completed
  SimTime last_decode_end_ns_ = 0;

  // The segment in progress.
  Segment segment_ = Segment::kNone;
  SimTime seg_start_ns_ = 0, seg_end_ns_ = 0;
  int64_t seg_k_ = 0, seg_n_ = 0, seg_emit_ = 0, seg_g_ = 0, seg_ctx0_ = 0, seg_kv_start_ = 0;
  SimTime seg_stall_ns_ = 0;      // swap transfers at the start of the segment
  SimTime pending_stall_ns_ = 0;  // swap transfers waiting for the next segment
  int64_t host_used_blocks_ = 0;  // swapped-out KV in host memory
  int64_t claimed_blocks_ = 0;    // Σ Seq::claim over the running requests
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
