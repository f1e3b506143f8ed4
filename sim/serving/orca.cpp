#include "sim/serving/orca.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/serving/decode_series.h"

namespace fleetsim::serving {

Orca::Orca(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
           VllmConfig cfg)
    : Replica(index, engine, observer), steps_(steps), cfg_(cfg) {
  if (cfg_.kv_blocks < 1 || cfg_.block_tokens < 1 || cfg_.max_num_seqs < 1 ||
      cfg_.max_num_seqs > steps.max_seqs()) {
    throw std::logic_error("Orca: invalid configuration");
  }
}

uint32_t Orca::new_slot() {
  if (!free_slots_.empty()) {
    const uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  seqs_.emplace_back();
  return static_cast<uint32_t>(seqs_.size() - 1);
}

// ---- arrivals ------------------------------------------------------------------------

void Orca::submit(const workload::RequestSpec& r) {
  const SimTime now = engine_.now();
  observer_.on_arrival(r, index_, now);
  const int64_t total = static_cast<int64_t>(r.prompt_tokens) + r.output_tokens;
  if (cfg_.max_context_tokens > 0 && total > cfg_.max_context_tokens) {
    observer_.on_reject(r, index_, RejectReason::kTooLongForModel, now);
    return;
  }
  const int64_t blocks = blocks_for(total);
  if (blocks > cfg_.kv_blocks) {
    observer_.on_reject(r, index_, RejectReason::kTooLongForKvCache, now);
    return;
  }
  const uint32_t slot = new_slot();
  Seq& s = seqs_[slot];
  s = Seq{};
  s.spec = r;
  s.blocks = blocks;
  s.live = true;
  const bool queue_was_empty = waiting_.empty();
  waiting_.push_back(slot);
  ++outstanding_;

  switch (segment_) {
    case Segment::kNone:
      // Start at this instant, after every arrival of the same instant has been queued.
      segment_ = Segment::kKick;
      schedule_segment_end(now);
      break;
    case Segment::kStretch: {
      // Behind a queue head that did not fit at the run's start nothing can change before
      // a completion (KV use and the running count are fixed during the run). Otherwise,
      // if this request fits, end the run at the first iteration boundary at or after now.
      if (!queue_was_empty || seg_k_ <= 1 || !can_admit(s, seg_n_)) break;
      SimTime run_ns = 0;
      const int64_t k = steps_.decode_iterations_to_reach(seg_n_, seg_ctx0_, seg_k_,
                                                          now - seg_start_ns_, &run_ns);
      if (k < seg_k_) {
        seg_k_ = k;
        schedule_segment_end(seg_start_ns_ + run_ns);
      }
      break;
    }
    default:
      break;  // seen at the end of the current iteration
  }
}

void Orca::on_event(const core::Event& e) {
  if (!is_current(e)) return;  // superseded by a shorter run
  const SimTime now = e.time;
  switch (segment_) {
    case Segment::kMixed: finish_mixed(now); break;
    case Segment::kStretch: finish_stretch(now); break;
    default: break;
  }
  segment_ = Segment::kNone;
  schedule_next(now);
}

// ---- scheduling ----------------------------------------------------------------------

void Orca::schedule_next(SimTime now) {
  // Algorithm 1: first come, first served; a new request needs its whole reservation, and
  // the first that does not fit stops the selection.
  admitted_.clear();
  const auto running = static_cast<int64_t>(running_.size());
  while (!waiting_.empty() &&
         can_admit(seqs_[waiting_.front()], running + static_cast<int64_t>(admitted_.size()))) {
    const uint32_t slot = waiting_.front();
    waiting_.pop_front();
    Seq& s = seqs_[slot];
    used_blocks_ += s.blocks;
    s.scheduled_ns = now;
    admitted_.push_back(slot);
  }
  peak_running_ = std::max(peak_running_, running + static_cast<int64_t>(admitted_.size()));
  if (!admitted_.empty()) return start_mixed(now);
  if (running > 0) return start_stretch(now);
}

void Orca::start_mixed(SimTime now) {
  // Selective batching: the new prompts (whole, no cached tokens: p(p+1)/2 causal pairs
  // each) and one decode token for every running request in one iteration.
  hw::BatchShape shape;
  for (uint32_t slot : admitted_) {
    const int64_t p = seqs_[slot].spec.prompt_tokens;
    shape.prefill_tokens += p;
    shape.prefill_attn_pairs += static_cast<double>(p) * (static_cast<double>(p) + 1.0) / 2.0;
    shape.prefill_kv_tokens += p;
  }
  seg_n_ = static_cast<int64_t>(running_.size());
  shape.decode_seqs = seg_n_;
  shape.decode_ctx_tokens = attended_ctx(iter_);
  shape.logits_tokens = static_cast<int64_t>(admitted_.size()) + seg_n_;
  seg_prefill_tokens_ = shape.prefill_tokens;
  segment_ = Segment::kMixed;
  seg_start_ns_ = now;
  seg_k_ = 1;
  schedule_segment_end(now + steps_.mixed_step_ns(shape), shape.prefill_tokens, shape.decode_seqs);
}

void Orca::start_stretch(SimTime now) {
  int64_t k = 1;
  // Until the first completion. (The waiting head, if any, did not fit just now and cannot
  // fit before a completion; an arrival into an empty queue may end the run early.)
  if (cfg_.fast_forward) k = finish_heap_.front().iter - iter_;
  segment_ = Segment::kStretch;
  seg_start_ns_ = now;
  seg_n_ = static_cast<int64_t>(running_.size());
  seg_k_ = k;
  seg_ctx0_ = attended_ctx(iter_);
  check_one_iteration(k);
  schedule_segment_end(now + steps_.decode_run_ns(seg_n_, seg_ctx0_, k), 0, seg_n_);
}

// ---- end of an iteration or a run ------------------------------------------------------

void Orca::finish_stretch(SimTime now) {
  // Iterations run back to back while requests are running, so every running request's
  // previous token came at the start of the run.
  const int64_t k = seg_k_;
  const DecodeRunSeries series(steps_, seg_n_, seg_n_, seg_ctx0_, k, now - seg_start_ns_);
  observer_.on_token_gaps(series.step_ns(0), static_cast<uint64_t>(seg_n_));
  if (k > 1) observer_.on_token_gap_series(series, k, static_cast<uint64_t>(seg_n_));
  iter_ += k;
  observer_.on_segment({index_, seg_start_ns_, now, k, 0, k * seg_n_, used_blocks_, used_blocks_,
                        cfg_.kv_blocks});
  complete_due(now);
}

void Orca::finish_mixed(SimTime now) {
  if (seg_n_ > 0) observer_.on_token_gaps(now - seg_start_ns_, static_cast<uint64_t>(seg_n_));
  ++iter_;
  observer_.on_segment({index_, seg_start_ns_, now, 1, seg_prefill_tokens_, seg_n_, used_blocks_,
                        used_blocks_, cfg_.kv_blocks});
  complete_due(now);
  // The new prompts sampled their first token; they decode from the next iteration on.
  for (uint32_t slot : admitted_) {
    Seq& s = seqs_[slot];
    s.first_token_ns = now;
    observer_.on_first_token(s.spec, index_, now);
    if (s.spec.output_tokens <= 1) {
      complete(slot, now);
    } else {
      join_decode(slot);
    }
  }
  admitted_.clear();
}

// ---- the running set ---------------------------------------------------------------------

void Orca::join_decode(uint32_t slot) {
  Seq& s = seqs_[slot];
  s.join_iter = iter_;
  // It has 1 token and emits one per iteration: all of them after output − 1 more.
  s.finish_iter = iter_ + s.spec.output_tokens - 1;
  s.pos = static_cast<uint32_t>(running_.size());
  running_.push_back(slot);
  ctx_offset_sum_ += s.spec.prompt_tokens - s.join_iter;
  finish_heap_.push_back({s.finish_iter, s.spec.id, slot});
  std::push_heap(finish_heap_.begin(), finish_heap_.end());
}

void Orca::complete_due(SimTime now) {
  // No preemption: every heap entry is live and leaves exactly when its request completes.
  while (!finish_heap_.empty() && finish_heap_.front().iter <= iter_) {
    const uint32_t slot = finish_heap_.front().slot;
    std::pop_heap(finish_heap_.begin(), finish_heap_.end());
    finish_heap_.pop_back();
    Seq& s = seqs_[slot];
    running_[s.pos] = running_.back();
    seqs_[running_[s.pos]].pos = s.pos;
    running_.pop_back();
    ctx_offset_sum_ -= s.spec.prompt_tokens - s.join_iter;
    complete(slot, now);
  }
}

void Orca::complete(uint32_t slot, SimTime now) {
  const Seq& s = seqs_[slot];
  used_blocks_ -= s.blocks;
  --outstanding_;
  RequestRecord rec;
  rec.spec = &s.spec;
  rec.replica = index_;
  rec.scheduled_ns = s.scheduled_ns;
  rec.first_token_ns = s.first_token_ns;
  rec.done_ns = now;
  observer_.on_completion(rec);
  // The slot is reused only after the observer has seen the record.
  seqs_[slot].live = false;
  free_slots_.push_back(slot);
}

// ---- invariants (tests) ------------------------------------------------------------------

void Orca::check_invariants() const {
  auto fail = [&](const std::string& what) {
    throw std::logic_error("replica " + std::to_string(index_) + ": " + what);
  };
  int64_t blocks = 0, offset = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    const Seq& s = seqs_[running_[i]];
    if (!s.live || s.pos != i) fail("running set holds a stale request");
    blocks += s.blocks;
    offset += s.spec.prompt_tokens - s.join_iter;
    if (s.finish_iter <= iter_) fail("overdue completion");
    if (s.first_token_ns < 0) fail("decoding before first token");
  }
  for (uint32_t slot : admitted_) blocks += seqs_[slot].blocks;
  if (blocks != used_blocks_)
    fail("KV blocks in use " + std::to_string(used_blocks_) + " != held " + std::to_string(blocks));
  if (used_blocks_ > cfg_.kv_blocks || used_blocks_ < 0) fail("KV blocks over capacity");
  if (offset != ctx_offset_sum_) fail("context aggregate drifted");
  if (finish_heap_.size() != running_.size()) fail("completion heap drifted");
  const auto in_batch = static_cast<int64_t>(running_.size() + admitted_.size());
  if (in_batch > cfg_.max_num_seqs) fail("more running requests than max_num_seqs");
  if (outstanding_ != static_cast<int64_t>(waiting_.size()) + in_batch) fail("requests not conserved");
  const bool busy = segment_ == Segment::kMixed || segment_ == Segment::kStretch;
  if (busy != (in_batch > 0)) fail("running requests without an iteration, or the reverse");
  if (!admitted_.empty() && segment_ != Segment::kMixed) fail("admitted outside a mixed iteration");
  if (!waiting_.empty() && segment_ == Segment::kNone) fail("requests waiting on an idle replica");
}

}  // namespace fleetsim::serving
