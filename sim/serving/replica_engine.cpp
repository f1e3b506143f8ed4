#include "sim/serving/replica_engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/core/rng.h"
#include "sim/serving/decode_series.h"

namespace fleetsim::serving {

EngineConfig reservation_config(const EngineConfig& cfg) {
  EngineConfig c;
  c.block_tokens = cfg.block_tokens;
  c.kv_blocks = cfg.kv_blocks;
  c.max_num_seqs = cfg.max_num_seqs;
  c.max_batched_tokens = cfg.max_batched_tokens;
  c.fast_forward = cfg.fast_forward;
  c.max_context_tokens = cfg.max_context_tokens;
  return c;
}

int32_t max_tokens_per_iteration(const EngineConfig& cfg) {
  return static_cast<int32_t>(std::ceil((cfg.spec_k + 1) / (1 - cfg.forced_token_share) - 1e-9));
}

int32_t tokens_per_iteration(const EngineConfig& cfg, uint64_t id) {
  if (cfg.spec_k <= 0 && cfg.forced_token_share <= 0) return 1;
  // Two deterministic uniforms from the request id.
  const double u1 = unit_hash(id, 1), u2 = unit_hash(id, 2);
  double expected = 1;
  if (cfg.spec_k > 0) {
    const double alpha =
        std::clamp(cfg.spec_acceptance + cfg.spec_acceptance_spread * (2 * u1 - 1), 0.0, 0.999);
    expected = (1 - std::pow(alpha, cfg.spec_k + 1)) / (1 - alpha);
  }
  expected /= 1 - cfg.forced_token_share;
  const double whole = std::floor(expected);
  const int32_t tau = static_cast<int32_t>(whole) + (u2 < expected - whole ? 1 : 0);
  return std::clamp(tau, 1, max_tokens_per_iteration(cfg));
}

ReplicaEngine::ReplicaEngine(int index, core::Engine& engine, ServingObserver& observer,
                             const StepModel& steps, EngineConfig cfg, EngineRules rules)
    : Replica(index, engine, observer), steps_(steps), cfg_(cfg), rules_(rules) {
  if (cfg_.kv_blocks < 1 || cfg_.block_tokens < 1 || cfg_.max_num_seqs < 1 ||
      cfg_.max_num_seqs > steps.max_seqs()) {
    throw std::logic_error("replica engine: invalid configuration");
  }
  phase_count_.assign(static_cast<size_t>(cfg_.block_tokens), 0);
  if (cfg_.prefix_caching) {
    if ((cfg_.hashes == nullptr && cfg_.generated_shared_blocks < 0) ||
        cfg_.prefix_block_tokens < cfg_.block_tokens ||
        cfg_.prefix_block_tokens % cfg_.block_tokens != 0)
      throw std::logic_error(
          "replica engine: prefix caching needs hashes and a prefix block size that is "
          "a multiple of block_tokens");
    blocks_per_hash_ = cfg_.prefix_block_tokens / cfg_.block_tokens;
    cache_.set_host_capacity(cfg_.prefix_host_entries);
  }
}

int64_t ReplicaEngine::life_blocks(const workload::RequestSpec& r) const {
  // A reservation covers prompt + output (Orca's max_tokens, which the simulator knows).
  // Paged, the final KV length is prompt + output - 1 (the last token is never fed back);
  // with speculative decoding the last iteration may write up to τ − 1 positions past it
  // (blocks are accounted τ per iteration).
  const int64_t total = static_cast<int64_t>(r.prompt_tokens) + r.output_tokens;
  if (rules_.reserve_whole_life) return blocks_for(total);
  return blocks_for(total - 1 + tokens_per_iteration(cfg_, r.id) - 1);
}

void ReplicaEngine::fail(const std::string& what) const {
  throw std::logic_error("replica " + std::to_string(index_) + ": " + what);
}

// ---- prefix caching --------------------------------------------------------------------

int64_t ReplicaEngine::full_hash_blocks(const Seq& s) const {
  // Whole hash blocks of the prompt (at prefill; finish() adds the answer's for fleet sessions).
  return std::min<int64_t>(s.spec.hash_count, s.spec.prompt_tokens / cfg_.prefix_block_tokens);
}

ReplicaEngine::Lookup ReplicaEngine::lookup(const Seq& s) const {
  Lookup l;
  // Unreferenced cached blocks can be evicted for any request, one with no whole prompt
  // block of its own (hash_count 0) too.
  if (cfg_.prefix_caching) l.evictable_blocks = cache_.evictable() * blocks_per_hash_;
  if (cfg_.prefix_caching && s.spec.hash_count > 0) {
    const int64_t limit =
        std::min<int64_t>(full_hash_blocks(s), (s.target - 1) / cfg_.prefix_block_tokens);
    const PrefixCache::Match m = cache_.match_tiers(hashes_of(s), limit);
    l.hits = m.gpu + m.host;
    l.host_hits = m.host;
    l.load_blocks = m.host * blocks_per_hash_;
    // Matched entries that are unreferenced now are counted as evictable by the cache but
    // will be pinned by this admission.
    int64_t matched_free = 0;
    for (int64_t i = 0; i < m.gpu; ++i)
      if (cache_.refs(hashes_of(s)[i]) == 0) ++matched_free;
    l.evictable_blocks -= matched_free * blocks_per_hash_;
  }
  l.need_blocks = rules_.reserve_whole_life ? life_blocks(s.spec)
                                            : blocks_for(s.target) - l.hits * blocks_per_hash_;
  return l;
}

int64_t ReplicaEngine::cached_prefix_tokens(const workload::RequestSpec& r) const {
  if (!cfg_.prefix_caching || r.hash_count == 0) return 0;
  const int64_t n = std::min<int64_t>(r.hash_count, r.prompt_tokens / cfg_.prefix_block_tokens);
  return cache_.match(hashes_of(r), n) * cfg_.prefix_block_tokens;
}

void ReplicaEngine::cache_prompt(Seq& s) {
  if (!cfg_.prefix_caching || s.spec.hash_count == 0) return;
  const int64_t full = full_hash_blocks(s);
  const HashSpan h = hashes_of(s);
  for (int64_t i = s.pinned; i < full; ++i) {
    // A new entry takes over this sequence's blocks; an entry another request cached in the
    // meantime is shared and this sequence's duplicate blocks are freed.
    if (!cache_.insert_pinned(h[i])) used_blocks_ -= blocks_per_hash_;
  }
  s.pinned = static_cast<int32_t>(std::max<int64_t>(s.pinned, full));
}

void ReplicaEngine::finish(Seq& s, int64_t tokens) {
  // The answer's whole blocks join the cache too (vLLM v1 and SGLang's radix tree keep the
  // KV of generated tokens), so a session's next turn, whose prompt is this prompt and this
  // answer, finds them. Only generated hashes (fleet sessions) extend past the prompt: a
  // trace's hashes cover its prompts alone. With parallel calls in a turn, each answer is
  // cached as if it came first in the next prompt (the second's blocks hit falsely).
  if (cfg_.prefix_caching && (s.spec.hash_count > 0 || s.spec.hash_begin > 0) &&
      cfg_.generated_shared_blocks >= 0 && !rules_.reserve_whole_life) {
    const int64_t full = tokens / cfg_.prefix_block_tokens;
    const HashSpan h = hashes_of(s);
    for (int64_t i = s.pinned; i < full; ++i)
      if (!cache_.insert_pinned(h[i])) used_blocks_ -= blocks_per_hash_;
    s.pinned = static_cast<int32_t>(std::max<int64_t>(s.pinned, full));
  }
  release(s, tokens);
}

void ReplicaEngine::release(Seq& s, int64_t tokens) {
  release_adapter(s.spec.adapter);
  used_blocks_ -= own_blocks(s, tokens);
  claimed_blocks_ -= s.claim;
  s.claim = 0;
  if (s.pinned > 0) {
    cache_.unpin(hashes_of(s), s.pinned);
    s.pinned = 0;
  }
}

int ReplicaEngine::phase_of(int64_t join_iter, int32_t ctx) const {
  // The sequence writes context position ctx_at_join + (d - join_iter) at decode iteration
  // d and needs a new block when that position is a multiple of block_tokens, i.e. when
  // d ≡ join_iter - ctx_at_join (mod block_tokens).
  const int64_t bs = cfg_.block_tokens;
  return static_cast<int>(((join_iter - ctx) % bs + bs) % bs);
}

void ReplicaEngine::add_phases(const Seq& s, int64_t delta, std::vector<int64_t>& counts) const {
  if (rules_.reserve_whole_life) return;  // reserved KV needs no new blocks
  if (s.tau == 1) {
    counts[static_cast<size_t>(phase_of(s.join_iter, s.ctx_at_join))] += delta;
    return;
  }
  // At join iteration + e the sequence writes positions c + τe .. c + τe + τ − 1; it needs a
  // block for each multiple of block_tokens in that range (more than one when τ exceeds
  // block_tokens). The pattern repeats every block_tokens iterations.
  const int64_t bs = cfg_.block_tokens, c = s.ctx_at_join, tau = s.tau;
  for (int64_t e = 0; e < bs; ++e) {
    const int64_t lo = c + tau * e, hi = lo + tau - 1;
    const int64_t next_multiple = (lo + bs - 1) / bs * bs;
    if (next_multiple <= hi)
      counts[static_cast<size_t>((s.join_iter + e) % bs)] +=
          delta * ((hi - next_multiple) / bs + 1);
  }
}

uint32_t ReplicaEngine::new_slot() {
  if (!free_slots_.empty()) {
    const uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  seqs_.emplace_back();
  return static_cast<uint32_t>(seqs_.size() - 1);
}

void ReplicaEngine::free_slot(uint32_t slot) {
  Seq& s = seqs_[slot];
  s.state = State::kFree;
  ++s.gen;
  free_slots_.push_back(slot);
}

// ---- arrivals ------------------------------------------------------------------------

void ReplicaEngine::submit(const workload::RequestSpec& r) {
  const SimTime now = engine_.now();
  observer_.on_arrival(r, index_, now);
  const int64_t total = static_cast<int64_t>(r.prompt_tokens) + r.output_tokens;
  if (cfg_.max_context_tokens > 0 && total > cfg_.max_context_tokens) {
    observer_.on_reject(r, index_, RejectReason::kTooLongForModel, now);
    return;
  }
  if (life_blocks(r) > cfg_.kv_blocks) {
    observer_.on_reject(r, index_, RejectReason::kTooLongForKvCache, now);
    return;
  }
  if (rules_.max_prompt_tokens > 0 && r.prompt_tokens > rules_.max_prompt_tokens) {
    observer_.on_reject(r, index_, RejectReason::kTooLongForBatch, now);
    return;
  }
  if (cfg_.max_queue > 0 && static_cast<int64_t>(waiting_.size()) >= cfg_.max_queue) {
    // Load shedding by priority: a lower-priority request that never started waiting is
    // dropped for this one; otherwise this one is.
    uint32_t shed = 0;
    const bool found = waiting_.remove_lowest(
        level(r), [&](uint32_t slot) { return seqs_[slot].scheduled_ns < 0; }, &shed);
    if (!found) {
      observer_.on_reject(r, index_, RejectReason::kQueueFull, now);
      return;
    }
    const workload::RequestSpec dropped = seqs_[shed].spec;
    --outstanding_;
    free_slot(shed);
    observer_.on_reject(dropped, index_, RejectReason::kQueueFull, now);
  }
  enqueue(waiting_seq(r), now);
}

uint32_t ReplicaEngine::waiting_seq(const workload::RequestSpec& r) {
  const uint32_t slot = new_slot();
  Seq& s = seqs_[slot];
  const uint32_t gen = s.gen;
  s = Seq{};
  s.gen = gen;
  s.spec = r;
  s.state = State::kWaiting;
  s.target = r.prompt_tokens;
  s.tau = tokens_per_iteration(cfg_, r.id);
  return slot;
}

void ReplicaEngine::enqueue(uint32_t slot, SimTime now) {
  const Seq& s = seqs_[slot];
  // A request that becomes the queue's head may be admitted at the next boundary.
  const bool queue_was_empty =
      waiting_.empty() || level(s.spec) > waiting_.front_priority() || cfg_.lora_slots > 0;
  waiting_.push_back(slot, level(s.spec));
  ++outstanding_;
  queued(s, queue_was_empty, now);
}

void ReplicaEngine::queued(const Seq& /*s*/, bool may_admit, SimTime now) {
  switch (segment_) {
    case Segment::kNone:
      // Start at this instant, after every arrival of the same instant has been queued.
      segment_ = Segment::kKick;
      schedule_end(now);
      break;
    case Segment::kStretch:
      // A request behind a blocked queue head cannot be admitted before the head: nothing
      // changes. Otherwise end the stretch at the first boundary at or after now.
      if (may_admit) end_stretch_early(now);
      break;
    default: break;  // seen at the end of the current iteration
  }
}

void ReplicaEngine::end_stretch_early(SimTime now) {
  if (segment_ != Segment::kStretch || seg_k_ <= 1) return;
  SimTime run_ns = 0;
  const int64_t k = steps_.decode_iterations_to_reach(seg_n_, seg_g_, seg_ctx0_, seg_k_,
                                                      now - seg_start_ns_, &run_ns);
  if (k < seg_k_) {
    seg_k_ = k;
    schedule_end(seg_start_ns_ + run_ns);
  }
}

void ReplicaEngine::wait_until(SimTime t) {
  segment_ = Segment::kWait;
  schedule_end(t);
}

void ReplicaEngine::submit_prefilled(const Handoff& h) {
  const SimTime now = engine_.now();
  const workload::RequestSpec& r = h.spec;
  if (life_blocks(r) > cfg_.kv_blocks) {
    observer_.on_reject(r, index_, RejectReason::kTooLongForKvCache, now);
    return;
  }
  const uint32_t slot = waiting_seq(r);
  Seq& s = seqs_[slot];
  s.prefilled_elsewhere = true;
  s.generated = 1;  // the first token came out of the prefill
  s.scheduled_ns = h.scheduled_ns;
  s.first_token_ns = h.first_token_ns;
  s.last_token_ns = h.first_token_ns;
  s.preemptions = h.preemptions;
  observer_.on_first_token(r, index_, h.first_token_ns);
  enqueue(slot, now);
}

void ReplicaEngine::admit_prefilled(SimTime now) {
  // Handed-over requests at the head of the queue join the decode batch at this boundary
  // with their whole context (no prefill work), while blocks and sequence slots allow.
  while (!waiting_.empty()) {
    const uint32_t slot = waiting_.front();
    Seq& s = seqs_[slot];
    if (!s.prefilled_elsewhere) break;
    // Room for its context and its next iteration's tokens, after the running batch's next
    // iteration (as vLLM checks before swapping in), so it does not bounce straight back.
    const int64_t reserve = (decoding_.empty() ? 0 : decode_blocks_needed(decode_iter_, 1)) +
                            blocks_for(s.target + s.tau) - blocks_for(s.target);
    if (!can_admit(s, cfg_.kv_blocks - used_blocks_ - reserve, 0)) break;
    waiting_.pop_front();
    admit(slot, now, 0);
    remove_prefilling(slot);
    s.prefilled = s.target;
    s.prefilled_elsewhere = false;  // a later preemption recomputes here (or swaps again)
    if (s.swapped_blocks > 0) {
      // Swap in: the blocks come back over the host link before the next iteration.
      host_used_blocks_ -= s.swapped_blocks;
      pending_stall_ns_ += swap_ns(s.swapped_blocks);
      s.swapped_blocks = 0;
    }
    if (s.generated >= s.spec.output_tokens) {
      finish(s, s.target);
      complete(slot, now);
    } else {
      join_decode(slot);  // its last token came out at the transfer's end (last_token_ns)
    }
  }
}

void ReplicaEngine::schedule_end(SimTime end, int64_t prefill_tokens, int64_t decode_seqs) {
  seg_end_ns_ = end;
  schedule_segment_end(end, prefill_tokens, decode_seqs);
}

void ReplicaEngine::on_event(const core::Event& e) {
  if (!is_current(e)) return;  // superseded by a shorter stretch
  const SimTime now = e.time;
  switch (segment_) {
    case Segment::kMixed: finish_mixed(now); break;
    case Segment::kStretch: finish_stretch(now); break;
    default: break;
  }
  segment_ = Segment::kNone;
  boundary(now);
}

void ReplicaEngine::boundary(SimTime now) {
  seg_chunks_.clear();
  admit_prefilled(now);  // handed-over (decode pool) or swapped-out requests first
  schedule(now);
}

// ---- scheduling ----------------------------------------------------------------------

bool ReplicaEngine::adapter_ready(uint32_t adapter) const {
  if (adapter == 0 || cfg_.lora_slots <= 0) return true;
  if (adapters_.count(adapter)) return true;
  return static_cast<int>(adapters_.size()) < cfg_.lora_slots || !idle_adapters_.empty();
}

void ReplicaEngine::acquire_adapter(uint32_t adapter) {
  if (adapter == 0 || cfg_.lora_slots <= 0) return;
  auto it = adapters_.find(adapter);
  if (it == adapters_.end()) {
    if (static_cast<int>(adapters_.size()) >= cfg_.lora_slots) {
      adapters_.erase(idle_adapters_.front());  // the least recently used idle adapter
      idle_adapters_.pop_front();
    }
    it = adapters_.emplace(adapter, Adapter{}).first;
    pending_stall_ns_ += cfg_.lora_load_ns;  // loaded from host memory
    ++adapter_loads_;
  } else if (it->second.running == 0) {
    idle_adapters_.erase(it->second.idle);
  }
  ++it->second.running;
}

void ReplicaEngine::release_adapter(uint32_t adapter) {
  if (adapter == 0 || cfg_.lora_slots <= 0) return;
  Adapter& a = adapters_.at(adapter);
  if (--a.running == 0) a.idle = idle_adapters_.insert(idle_adapters_.end(), adapter);
}

bool ReplicaEngine::can_admit(const Seq& s, int64_t free_blocks, int64_t batch_tokens) const {
  if (running() >= cfg_.max_num_seqs) return false;
  // Reservations: no prefix cache, adapters or token budget (reservation_config).
  if (rules_.reserve_whole_life) return life_blocks(s.spec) <= free_blocks;
  if (!adapter_ready(s.spec.adapter)) return false;
  const Lookup l = lookup(s);
  if (l.need_blocks + l.load_blocks > free_blocks + l.evictable_blocks) return false;
  if (cfg_.reserve_at_admission) {
    // Its whole life beside the running requests' claims and every prefix entry pinned now
    // or by this admission (its unreferenced hits, the ones loaded from the host tier):
    // unreferenced entries can always be evicted, so decoding never runs out of blocks.
    const int64_t pinned = (cache_.entries() - cache_.evictable()) * blocks_per_hash_;
    const int64_t newly_pinned =
        (cfg_.prefix_caching ? cache_.evictable() * blocks_per_hash_ - l.evictable_blocks : 0) +
        l.load_blocks;
    if (claimed_blocks_ + pinned + newly_pinned + claim_of(s, l) > cfg_.kv_blocks) return false;
  }
  if (batch_tokens > 0) {
    // A whole prompt within the token budget; the first prompt of an iteration (batch_tokens
    // 0) may exceed it (a recompute, or with chunked prefill any prompt, that the budget
    // cannot hold).
    const int64_t compute = s.target - l.hits * cfg_.prefix_block_tokens;
    if (batch_tokens + compute > cfg_.max_batched_tokens) return false;
  }
  return true;
}

void ReplicaEngine::admit(uint32_t slot, SimTime now, int64_t keep_free) {
  Seq& s = seqs_[slot];
  s.state = State::kPrefilling;
  acquire_adapter(s.spec.adapter);
  const Lookup l = lookup(s);
  const int64_t gpu_hits = l.hits - l.host_hits;
  if (gpu_hits > 0) cache_.pin(hashes_of(s), gpu_hits);
  if (l.host_hits > 0) {
    // Load the rest of the prefix back from host memory: new GPU blocks, a host-link stall.
    cache_.promote(hashes_of(s) + gpu_hits, l.host_hits);
    used_blocks_ += l.load_blocks;
    pending_stall_ns_ += swap_ns(l.load_blocks);
    observer_.on_prefix_host_load(index_, l.host_hits * cfg_.prefix_block_tokens);
  }
  s.pinned = static_cast<int32_t>(l.hits);
  if (cfg_.reserve_at_admission) {
    s.claim = static_cast<int32_t>(claim_of(s, l));
    claimed_blocks_ += s.claim;
  }
  s.prefilled = static_cast<int32_t>(l.hits * cfg_.prefix_block_tokens);
  if (cfg_.prefix_caching) observer_.on_prefix_lookup(index_, s.target, s.prefilled);
  // Make room by evicting unreferenced cached prefixes, least recently used first.
  while (cfg_.kv_blocks - used_blocks_ - keep_free < l.need_blocks && cache_.evict_one())
    used_blocks_ -= blocks_per_hash_;
  // prefilling_ stays in arrival order (a readmitted preempted request goes back to its
  // place), so chunks are handed out first come, first served. It is short: at most the
  // prompts in flight within one token budget.
  const auto at =
      std::upper_bound(prefilling_.begin(), prefilling_.end(), s.spec.id,
                       [&](uint64_t id, uint32_t other) { return id < seqs_[other].spec.id; });
  prefilling_.insert(at, slot);
  used_blocks_ += l.need_blocks;
  if (s.scheduled_ns < 0) s.scheduled_ns = now;
}

bool ReplicaEngine::next_admissible(int64_t free_blocks, int64_t batch_tokens, uint32_t* slot) {
  if (waiting_.empty()) return false;
  const Seq& head = seqs_[waiting_.front()];
  if (head.prefilled_elsewhere) return false;  // waits for blocks to join decode
  if (can_admit(head, free_blocks, batch_tokens)) {
    *slot = waiting_.front();
    waiting_.pop_front();
    return true;
  }
  if (cfg_.lora_slots <= 0 || adapter_ready(head.spec.adapter)) return false;
  return waiting_.remove_first(
      kLoraScan,
      [&](uint32_t s) {
        return !seqs_[s].prefilled_elsewhere && can_admit(seqs_[s], free_blocks, batch_tokens);
      },
      slot);
}

void ReplicaEngine::reserve_decode_blocks(SimTime now) {
  // vLLM: while the running batch cannot get the blocks it needs for the next step,
  // preempt the lowest-priority (most recently arrived) running request.
  // Unreferenced cached prefixes go first.
  while (!decoding_.empty() &&
         decode_blocks_needed(decode_iter_, 1) > cfg_.kv_blocks - used_blocks_) {
    if (cache_.evict_one()) {
      used_blocks_ -= blocks_per_hash_;
      continue;
    }
    preempt_one(now);
  }
}

void ReplicaEngine::preempt_one(SimTime now) {
  // Victim: the running request (decoding or prefilling) of the lowest priority that
  // arrived last. O(batch), but preemptions are rare and each is a per-request event.
  uint32_t victim = 0;
  bool found = false;
  for (const auto* set : {&decoding_, &prefilling_}) {
    for (uint32_t slot : *set) {
      const auto& a = seqs_[slot].spec;
      const auto& v = seqs_[victim].spec;
      if (!found || a.priority < v.priority || (a.priority == v.priority && a.id > v.id)) {
        victim = slot;
        found = true;
      }
    }
  }
  Seq& s = seqs_[victim];
  if (s.state == State::kDecoding && cfg_.swap) {
    const int32_t ctx = ctx_of(s);
    const int64_t blocks = blocks_for(ctx);
    if (host_used_blocks_ + blocks <= cfg_.host_blocks) {
      // Swap out: its whole KV goes to host memory; it rejoins decode without recompute.
      s.generated = s.generated + s.tau * static_cast<int32_t>(decode_iter_ - s.join_iter);
      release(s, ctx);
      leave_decode(victim);
      host_used_blocks_ += blocks;
      pending_stall_ns_ += swap_ns(blocks);
      s.swapped_blocks = static_cast<int32_t>(blocks);
      s.state = State::kWaiting;
      s.target = ctx;
      s.prefilled = ctx;
      s.prefilled_elsewhere = true;
      ++s.preemptions;
      waiting_.push_front(victim, s.spec.priority);
      observer_.on_preemption(s.spec, index_, now);
      return;
    }
  }
  if (s.state == State::kDecoding) {
    s.generated = s.generated + s.tau * static_cast<int32_t>(decode_iter_ - s.join_iter);
    release(s, ctx_of(s));
    leave_decode(victim);
  } else {
    release(s, s.target);
    remove_prefilling(victim);
  }
  // Recompute: the prompt plus every token generated so far is prefilled again.
  s.state = State::kWaiting;
  s.target = s.spec.prompt_tokens + s.generated;
  s.prefilled = 0;
  ++s.preemptions;
  waiting_.push_front(victim, s.spec.priority);
  observer_.on_preemption(s.spec, index_, now);
}

void ReplicaEngine::start_mixed(SimTime now, bool decodes) {
  hw::BatchShape shape;
  for (const Chunk& c : seg_chunks_) {
    const Seq& s = seqs_[c.slot];
    const double p = s.prefilled;
    const double pairs = c.tokens * (p + (c.tokens + 1) / 2.0);
    shape.prefill_tokens += c.tokens;
    shape.prefill_attn_pairs += pairs;
    shape.prefill_kv_tokens += s.prefilled + c.tokens;
    if (c.tokens > shape.largest_chunk_tokens) {
      shape.largest_chunk_tokens = c.tokens;
      shape.largest_chunk_pairs = pairs;
      shape.largest_chunk_kv_tokens = s.prefilled + c.tokens;
    }
    if (s.prefilled + c.tokens == s.target) ++shape.logits_tokens;
  }
  seg_decodes_ = decodes;
  seg_kv_start_ = used_blocks_;
  seg_n_ = decodes ? static_cast<int64_t>(decoding_.size()) : 0;
  if (decodes) {
    shape.decode_seqs = seg_n_;
    shape.decode_ctx_tokens = attended_ctx(decode_iter_);
    shape.logits_tokens += seg_n_;
    used_blocks_ += decode_blocks_needed(decode_iter_, 1);
  }
  segment_ = Segment::kMixed;
  seg_start_ns_ = now;
  seg_k_ = 1;
  seg_stall_ns_ = pending_stall_ns_;
  pending_stall_ns_ = 0;
  schedule_end(now + seg_stall_ns_ + steps_.mixed_step_ns(shape), shape.prefill_tokens,
               shape.decode_seqs);
}

void ReplicaEngine::start_stretch(SimTime now) {
  const int64_t n = static_cast<int64_t>(decoding_.size());
  int64_t k = 1;
  if (cfg_.fast_forward) {
    // Until the first completion (closed batches: the next sequence to stop emitting), or
    // the last iteration whose blocks still fit (reserved KV never grows).
    k = finish_heap_.front().iter - decode_iter_;
    if (!rules_.reserve_whole_life)
      k = std::min(k, max_stretch_for_blocks(decode_iter_, cfg_.kv_blocks - used_blocks_));
    // The batch must also stay closed to the waiting queue. Free blocks only shrink during
    // a stretch and the running count is fixed, so if the head cannot be admitted at the
    // first boundary it cannot at any later one. (It can at the first after a preemption
    // freed blocks.)
    if (k > 1 && !waiting_.empty() && !rules_.closed_batches) {
      int64_t free1 = cfg_.kv_blocks - used_blocks_ - decode_blocks_needed(decode_iter_, 1);
      if (rules_.prefill_with_decodes) free1 -= decode_blocks_needed(decode_iter_ + 1, 1);
      if (can_admit(seqs_[waiting_.front()], free1, 0)) k = 1;
      // A request behind a head that waits for an adapter slot may be admissible.
      if (cfg_.lora_slots > 0) k = 1;
    }
  }
  segment_ = Segment::kStretch;
  seg_start_ns_ = now;
  seg_stall_ns_ = pending_stall_ns_;
  pending_stall_ns_ = 0;
  if (seg_stall_ns_ > 0) k = 1;  // a swap transfer first: one iteration, then reschedule
  seg_n_ = n;
  seg_emit_ = n - held_;
  seg_k_ = k;
  seg_ctx0_ = attended_ctx(decode_iter_);
  seg_g_ = tau_sum_;
  seg_kv_start_ = used_blocks_;
  seg_decodes_ = true;
  check_one_iteration(k);
  schedule_end(now + seg_stall_ns_ + steps_.decode_run_ns(n, seg_g_, seg_ctx0_, k), 0, n);
}

// ---- end of a segment ----------------------------------------------------------------

void ReplicaEngine::record_first_decode_gaps(SimTime end, SimTime step_ns) {
  // Sequences that were decoding at the previous decode iteration last emitted a token
  // then; those that joined since emitted their last token when their prefill ended.
  int64_t joined_live = 0;
  for (uint32_t slot : joined_) {
    Seq& s = seqs_[slot];
    if (!s.in_joined) continue;
    s.in_joined = false;
    ++joined_live;
    observer_.on_token_gaps(end - s.last_token_ns, 1);
  }
  joined_.clear();
  const int64_t old = seg_n_ - joined_live;
  if (old > 0) {
    const SimTime gap = (seg_start_ns_ - last_decode_end_ns_) + step_ns;
    observer_.on_token_gaps(gap, static_cast<uint64_t>(old));
  }
}

void ReplicaEngine::finish_stretch(SimTime now) {
  const int64_t k = seg_k_;
  const SimTime stall = seg_stall_ns_;
  const DecodeRunSeries series(steps_, seg_n_, seg_g_, seg_ctx0_, k, now - seg_start_ns_ - stall);
  const auto emit = static_cast<uint64_t>(seg_emit_);
  if (rules_.back_to_back)
    observer_.on_token_gaps(stall + series.step_ns(0), emit);
  else
    record_first_decode_gaps(seg_start_ns_ + stall + series.step_ns(0), stall + series.step_ns(0));
  if (k > 1) observer_.on_token_gap_series(series, k, emit);
  // Speculative decoding: the other τ − 1 tokens of each sequence arrive with the first.
  if (tau_sum_ > seg_n_) observer_.on_token_gaps(0, static_cast<uint64_t>((tau_sum_ - seg_n_) * k));
  used_blocks_ += decode_blocks_needed(decode_iter_, k);
  decode_iter_ += k;
  iterations_ += k;
  last_decode_end_ns_ = now;
  observer_.on_segment({index_, seg_start_ns_, now, k, 0, k * seg_emit_, seg_kv_start_,
                        used_blocks_, cfg_.kv_blocks});
  complete_due(now);
}

void ReplicaEngine::finish_mixed(SimTime now) {
  int64_t prefill_tokens = 0;
  if (seg_decodes_) {
    if (rules_.back_to_back)
      observer_.on_token_gaps(now - seg_start_ns_, static_cast<uint64_t>(seg_n_));
    else
      record_first_decode_gaps(now, now - seg_start_ns_);
    if (tau_sum_ > seg_n_) observer_.on_token_gaps(0, static_cast<uint64_t>(tau_sum_ - seg_n_));
    ++decode_iter_;
    last_decode_end_ns_ = now;
  }
  ++iterations_;
  const int64_t kv_after_decodes = used_blocks_;
  for (const Chunk& c : seg_chunks_) {
    Seq& s = seqs_[c.slot];
    s.prefilled += c.tokens;
    prefill_tokens += c.tokens;
  }
  observer_.on_segment({index_, seg_start_ns_, now, 1, prefill_tokens, seg_n_, seg_kv_start_,
                        kv_after_decodes, cfg_.kv_blocks});
  if (seg_decodes_) complete_due(now);
  // Prompts that finished this iteration sample a token (the first, or the next one after
  // a recompute) and join the decode batch, or complete if that was the last token (in a
  // closed batch, they join it as held rows).
  for (const Chunk& c : seg_chunks_) {
    Seq& s = seqs_[c.slot];
    if (s.prefilled < s.target) continue;
    remove_prefilling(c.slot);
    cache_prompt(s);
    if (cfg_.role == EngineConfig::Role::kPrefill && s.spec.output_tokens > 1 && s.generated == 0) {
      // Disaggregated: the prompt is done here; the KV cache goes to the decode pool, which
      // reports the first token when it arrives. This replica's blocks are freed now (the
      // transfer reads them while they are reused: an optimistic simplification).
      observer_.on_prefill_done({s.spec, s.scheduled_ns, now, -1, s.preemptions}, index_);
      release(s, s.target);
      --outstanding_;
      free_slot(c.slot);
      continue;
    }
    ++s.generated;
    if (s.first_token_ns < 0) {
      s.first_token_ns = now;
      observer_.on_first_token(s.spec, index_, now);
    } else {
      observer_.on_token_gaps(now - s.last_token_ns, 1);
    }
    s.last_token_ns = now;
    if (s.generated >= s.spec.output_tokens && !rules_.closed_batches) {
      finish(s, s.target);
      complete(c.slot, now);
    } else {
      join_decode(c.slot);
    }
  }
  if (rules_.closed_batches) complete_due(now);  // holds the rows that have all their tokens
}

// ---- decode set ----------------------------------------------------------------------

void ReplicaEngine::remove_prefilling(uint32_t slot) {
  // prefilling_ is sorted by id: a short scan, or O(log n) to find in a long one (a static
  // batch's prompts), then a short move.
  auto it = prefilling_.begin();
  if (prefilling_.size() > 16) {
    const uint64_t id = seqs_[slot].spec.id;
    it = std::lower_bound(prefilling_.begin(), prefilling_.end(), id,
                          [&](uint32_t other, uint64_t v) { return seqs_[other].spec.id < v; });
  }
  while (*it != slot) ++it;
  prefilling_.erase(it);
}

void ReplicaEngine::join_decode(uint32_t slot) {
  Seq& s = seqs_[slot];
  s.state = State::kDecoding;
  s.join_iter = decode_iter_;
  s.ctx_at_join = s.target;
  s.finish_iter = decode_iter_ + (s.spec.output_tokens - s.generated + s.tau - 1) / s.tau;
  s.pos = static_cast<uint32_t>(decoding_.size());
  decoding_.push_back(slot);
  ctx_offset_sum_ += s.ctx_at_join - static_cast<int64_t>(s.tau) * s.join_iter;
  tau_sum_ += s.tau;
  add_phases(s, +1, phase_count_);
  finish_heap_.push_back({s.finish_iter, s.spec.id, slot, s.gen});
  std::push_heap(finish_heap_.begin(), finish_heap_.end());
  if (!rules_.back_to_back) {  // back to back, the first gap needs no per-sequence start
    s.in_joined = true;
    joined_.push_back(slot);
  }
}

void ReplicaEngine::leave_decode(uint32_t slot) {
  Seq& s = seqs_[slot];
  decoding_[s.pos] = decoding_.back();
  seqs_[decoding_[s.pos]].pos = s.pos;
  decoding_.pop_back();
  ctx_offset_sum_ -= s.ctx_at_join - static_cast<int64_t>(s.tau) * s.join_iter;
  tau_sum_ -= s.tau;
  add_phases(s, -1, phase_count_);
  s.in_joined = false;
  ++s.gen;  // invalidates its finish-heap entry
  // Drop invalid entries at the top so front() is always live.
  while (!finish_heap_.empty()) {
    const Finish& f = finish_heap_.front();
    if (seqs_[f.slot].gen == f.gen && seqs_[f.slot].state == State::kDecoding) break;
    std::pop_heap(finish_heap_.begin(), finish_heap_.end());
    finish_heap_.pop_back();
  }
}

void ReplicaEngine::complete_due(SimTime now) {
  while (!finish_heap_.empty() && finish_heap_.front().iter <= decode_iter_) {
    const Finish f = finish_heap_.front();
    Seq& s = seqs_[f.slot];
    s.generated = s.spec.output_tokens;
    s.last_token_ns = now;
    if (rules_.closed_batches) {
      // It keeps its row and its KV until the policy completes the batch (no preemption
      // in a closed batch, so the next entry is live too).
      std::pop_heap(finish_heap_.begin(), finish_heap_.end());
      finish_heap_.pop_back();
      s.held = true;
      ++held_;
      continue;
    }
    finish(s, ctx_of(s));
    leave_decode(f.slot);  // pops the entry
    complete(f.slot, now);
  }
}

void ReplicaEngine::complete_held(uint32_t slot, SimTime now) {
  Seq& s = seqs_[slot];
  finish(s, ctx_of(s));
  s.held = false;
  --held_;
  leave_decode(slot);
  complete(slot, now);
}

void ReplicaEngine::complete(uint32_t slot, SimTime now) {
  Seq& s = seqs_[slot];
  RequestRecord rec;
  rec.spec = &s.spec;
  rec.replica = index_;
  rec.scheduled_ns = s.scheduled_ns;
  rec.first_token_ns = s.first_token_ns;
  rec.done_ns = now;
  rec.preemptions = s.preemptions;
  observer_.on_completion(rec);
  --outstanding_;
  free_slot(slot);
}

// ---- closed-form helpers ---------------------------------------------------------------

int64_t ReplicaEngine::attended_ctx(int64_t d) const {
  // Σ over decoding seqs of (ctx_at_join + τ·(d - join_iter) + 1): context plus the new token.
  const int64_t n = static_cast<int64_t>(decoding_.size());
  return ctx_offset_sum_ + tau_sum_ * d + n;
}

int64_t ReplicaEngine::decode_blocks_needed(int64_t d0, int64_t k) const {
  // Each full cycle of block_tokens iterations gives every sequence exactly τ new blocks;
  // the remainder is a partial sum over the phase counts.
  if (rules_.reserve_whole_life) return 0;
  const int64_t bs = cfg_.block_tokens;
  int64_t total = (k / bs) * tau_sum_;
  for (int64_t j = 0; j < k % bs; ++j) total += phase_count_[static_cast<size_t>((d0 + j) % bs)];
  return total;
}

int64_t ReplicaEngine::max_stretch_for_blocks(int64_t d0, int64_t free_blocks) const {
  // Largest k with decode_blocks_needed(d0, k) <= free_blocks (>= 1 after reservation).
  const int64_t bs = cfg_.block_tokens;
  const int64_t cycles = free_blocks / tau_sum_;
  int64_t left = free_blocks - cycles * tau_sum_;
  int64_t k = cycles * bs;
  for (int64_t j = 0; j < bs; ++j) {
    left -= phase_count_[static_cast<size_t>((d0 + j) % bs)];
    if (left < 0) break;
    ++k;
  }
  return k;
}

// ---- invariants (tests) ------------------------------------------------------------------

void ReplicaEngine::check_invariants() const {
  int64_t blocks = 0, offset = 0, tau = 0, held = 0;
  std::vector<int64_t> phases(phase_count_.size(), 0);
  for (uint32_t slot : decoding_) {
    const Seq& s = seqs_[slot];
    if (s.state != State::kDecoding) fail("decoding set holds a non-decoding request");
    blocks += own_blocks(s, ctx_of(s));
    offset += s.ctx_at_join - static_cast<int64_t>(s.tau) * s.join_iter;
    tau += s.tau;
    add_phases(s, +1, phases);
    held += s.held;
    if (!s.held && s.finish_iter <= decode_iter_) fail("overdue completion");
    if (s.first_token_ns < 0) fail("decoding before first token");
  }
  int64_t claimed = 0;
  for (uint32_t slot : decoding_) claimed += seqs_[slot].claim;
  for (uint32_t slot : prefilling_) {
    blocks += own_blocks(seqs_[slot], seqs_[slot].target);
    claimed += seqs_[slot].claim;
  }
  if (claimed != claimed_blocks_) fail("claimed KV blocks drifted");
  blocks += cache_.entries() * blocks_per_hash_;
  // A mixed iteration allocates its decode blocks when it starts; a stretch when it ends.
  if (segment_ == Segment::kMixed && seg_decodes_) blocks += decode_blocks_needed(decode_iter_, 1);
  if (blocks != used_blocks_) {
    fail("KV blocks in use " + std::to_string(used_blocks_) + " != held " + std::to_string(blocks));
  }
  if (used_blocks_ > cfg_.kv_blocks || used_blocks_ < 0) fail("KV blocks over capacity");
  if (offset != ctx_offset_sum_) fail("context aggregate drifted");
  if (tau != tau_sum_) fail("tokens-per-iteration aggregate drifted");
  std::unordered_map<uint32_t, int32_t> using_adapter;
  for (uint32_t slot : decoding_) ++using_adapter[seqs_[slot].spec.adapter];
  for (uint32_t slot : prefilling_) ++using_adapter[seqs_[slot].spec.adapter];
  if (cfg_.lora_slots > 0) {
    for (const auto& [id, a] : adapters_)
      if (a.running != (using_adapter.count(id) ? using_adapter[id] : 0))
        fail("adapter use drifted");
    if (static_cast<int>(adapters_.size()) > cfg_.lora_slots) fail("more adapters than slots");
  }
  int64_t host = 0;
  waiting_.for_each([&](uint32_t slot) { host += seqs_[slot].swapped_blocks; });
  if (host != host_used_blocks_) fail("host (swap) blocks drifted");
  if (host_used_blocks_ > cfg_.host_blocks && cfg_.swap) fail("host swap space over capacity");
  if (phases != phase_count_) fail("block phase counts drifted");
  if (held != held_) fail("held rows drifted");
  if (held_ > 0 && !rules_.closed_batches) fail("held rows outside a closed batch");
  if (outstanding_ != static_cast<int64_t>(waiting_.size()) + running())
    fail("requests not conserved");
  if (running() > cfg_.max_num_seqs) fail("more running sequences than max_num_seqs");
}

}  // namespace fleetsim::serving
