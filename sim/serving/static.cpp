#include "sim/serving/static.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/serving/decode_series.h"

namespace fleetsim::serving {

Static::Static(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
               VllmConfig cfg)
    : Replica(index, engine, observer), steps_(steps), cfg_(cfg) {
  if (cfg_.kv_blocks < 1 || cfg_.block_tokens < 1 || cfg_.max_num_seqs < 1 ||
      cfg_.max_num_seqs > steps.max_seqs()) {
    throw std::logic_error("Static: invalid configuration");
  }
}

bool Static::next_batch_full() const {
  // The batch is the longest queue prefix within max_num_seqs whose reservations fit the
  // (then empty) cache; an arrival can join it only if the whole queue is that prefix.
  return static_cast<int64_t>(waiting_.size()) >= cfg_.max_num_seqs ||
         waiting_blocks_ > cfg_.kv_blocks;
}

void Static::submit(const workload::RequestSpec& r) {
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
  waiting_.push_back({r, now, blocks});
  waiting_blocks_ += blocks;
  ++accepted_;
  switch (segment_) {
    case Segment::kNone:
      // Decide at this instant, after every arrival of the same instant has been queued.
      segment_ = Segment::kKick;
      schedule_end(now);
      break;
    case Segment::kWait: {
      // The arrival may complete the batch: launch earlier than the pending deadline.
      const SimTime t = std::max(now, launch_time(now));
      if (t < seg_end_ns_) schedule_end(t);
      break;
    }
    default:
      break;  // a batch is running (or about to be decided): the request queues
  }
}

void Static::schedule_end(SimTime end, int64_t prefill_tokens, int64_t decode_seqs) {
  seg_end_ns_ = end;
  schedule_segment_end(end, prefill_tokens, decode_seqs);
}

void Static::on_event(const core::Event& e) {
  if (!is_current(e)) return;  // superseded (an earlier launch than a timeout)
  const SimTime now = e.time;
  switch (segment_) {
    case Segment::kPrefill: finish_prefill(now); break;
    case Segment::kDecode: finish_decode(now); break;
    default: break;
  }
  segment_ = Segment::kNone;
  schedule_next(now);
}

void Static::schedule_next(SimTime now) {
  if (!batch_.empty()) {
    if (done_ < batch_.size()) return start_decode(now);
    complete_batch(now);
  }
  if (waiting_.empty()) return;
  const SimTime t = launch_time(now);
  if (t > now) {
    segment_ = Segment::kWait;
    schedule_end(t);
    return;
  }
  form_batch(now);
}

void Static::form_batch(SimTime now) {
  // First come, first served, up to max_num_seqs and the KV cache; each request fits an
  // empty cache alone (else it was rejected), so the batch is never empty.
  while (!waiting_.empty() && static_cast<int64_t>(batch_.size()) < cfg_.max_num_seqs &&
         used_blocks_ + waiting_.front().blocks <= cfg_.kv_blocks) {
    const Waiting& w = waiting_.front();
    batch_.push_back({w.spec, w.blocks, now, -1});
    used_blocks_ += w.blocks;
    waiting_blocks_ -= w.blocks;
    waiting_.pop_front();
  }
  // Members stop emitting in order of output length; arrival order breaks ties.
  std::stable_sort(batch_.begin(), batch_.end(), [](const Member& a, const Member& b) {
    return a.spec.output_tokens < b.spec.output_tokens;
  });
  done_ = 0;
  batch_iter_ = 0;
  prompt_sum_ = 0;
  ++batches_;
  // One prefill iteration over every whole prompt: p tokens with causal attention attend
  // Σ_{i=1..p} i = p(p+1)/2 query-key pairs.
  hw::BatchShape shape;
  for (const Member& m : batch_) {
    const int64_t p = m.spec.prompt_tokens;
    prompt_sum_ += p;
    shape.prefill_attn_pairs += static_cast<double>(p) * (static_cast<double>(p) + 1.0) / 2.0;
  }
  shape.prefill_tokens = prompt_sum_;
  shape.prefill_kv_tokens = prompt_sum_;
  shape.logits_tokens = static_cast<int64_t>(batch_.size());
  segment_ = Segment::kPrefill;
  seg_start_ns_ = now;
  schedule_end(now + steps_.mixed_step_ns(shape), shape.prefill_tokens);
}

void Static::finish_emitting() {
  // After the prefill and batch_iter_ decode iterations a member has 1 + batch_iter_ tokens.
  while (done_ < batch_.size() && batch_[done_].spec.output_tokens - 1 <= batch_iter_) ++done_;
}

void Static::finish_prefill(SimTime now) {
  ++iterations_;
  observer_.on_segment({index_, seg_start_ns_, now, 1, prompt_sum_, 0, used_blocks_, used_blocks_,
                        cfg_.kv_blocks});
  for (Member& m : batch_) {
    m.first_token_ns = now;
    observer_.on_first_token(m.spec, index_, now);
  }
  finish_emitting();
}

void Static::start_decode(SimTime now) {
  // Every row of the batch is computed (finished rows as padding): n = batch size, and at
  // decode iteration j each row attends its prompt plus j + 1 tokens, so the attended
  // context is Σ prompts + n·(j + 1), growing by n per iteration.
  const int64_t n = static_cast<int64_t>(batch_.size());
  int64_t k = 1;
  if (cfg_.fast_forward) k = batch_[done_].spec.output_tokens - 1 - batch_iter_;  // next to stop
  segment_ = Segment::kDecode;
  seg_start_ns_ = now;
  seg_k_ = k;
  seg_ctx0_ = prompt_sum_ + n * (batch_iter_ + 1);
  check_one_iteration(k);
  schedule_end(now + steps_.decode_run_ns(n, seg_ctx0_, k), 0, n);
}

void Static::finish_decode(SimTime now) {
  const int64_t n = static_cast<int64_t>(batch_.size());
  const auto emitting = static_cast<uint64_t>(batch_.size() - done_);
  const int64_t k = seg_k_;
  // Iterations run back to back, so each emitting member's previous token came at the
  // start of this run (the prefill's end or the previous run's end).
  const DecodeRunSeries series(steps_, n, n, seg_ctx0_, k, now - seg_start_ns_);
  observer_.on_token_gaps(series.step_ns(0), emitting);
  if (k > 1) observer_.on_token_gap_series(series, k, emitting);
  batch_iter_ += k;
  iterations_ += k;
  observer_.on_segment({index_, seg_start_ns_, now, k, 0, k * static_cast<int64_t>(emitting),
                        used_blocks_, used_blocks_, cfg_.kv_blocks});
  finish_emitting();
}

void Static::complete_batch(SimTime now) {
  for (const Member& m : batch_) {
    RequestRecord rec;
    rec.spec = &m.spec;
    rec.replica = index_;
    rec.scheduled_ns = m.scheduled_ns;
    rec.first_token_ns = m.first_token_ns;
    rec.done_ns = now;
    observer_.on_completion(rec);
    ++completed_;
  }
  batch_.clear();
  done_ = 0;
  prompt_sum_ = 0;
  used_blocks_ = 0;
}

void Static::check_invariants() const {
  auto fail = [&](const std::string& what) {
    throw std::logic_error("replica " + std::to_string(index_) + ": " + what);
  };
  int64_t blocks = 0, prompts = 0, queued = 0;
  for (const Member& m : batch_) {
    blocks += m.blocks;
    prompts += m.spec.prompt_tokens;
  }
  for (const Waiting& w : waiting_) queued += w.blocks;
  if (blocks != used_blocks_)
    fail("KV blocks in use " + std::to_string(used_blocks_) + " != held " + std::to_string(blocks));
  if (used_blocks_ > cfg_.kv_blocks || used_blocks_ < 0) fail("KV blocks over capacity");
  if (queued != waiting_blocks_) fail("waiting reservations drifted");
  if (prompts != prompt_sum_) fail("prompt aggregate drifted");
  if (static_cast<int64_t>(batch_.size()) > cfg_.max_num_seqs) fail("batch larger than max_num_seqs");
  if (done_ > batch_.size()) fail("more members done than in the batch");
  for (size_t i = 1; i < batch_.size(); ++i)
    if (batch_[i - 1].spec.output_tokens > batch_[i].spec.output_tokens) fail("batch not sorted");
  const bool running = segment_ == Segment::kPrefill || segment_ == Segment::kDecode;
  if (running != !batch_.empty()) fail("a batch without an iteration, or an iteration without one");
  if (segment_ == Segment::kPrefill && done_ != 0) fail("members done before their prefill");
  if (segment_ == Segment::kDecode) {
    if (done_ >= batch_.size()) fail("decoding a batch that has all its tokens");
    for (size_t i = 0; i < batch_.size(); ++i) {
      const bool has_all = batch_[i].spec.output_tokens - 1 <= batch_iter_;
      if (has_all != (i < done_)) fail("emitting set drifted");
      if (batch_[i].first_token_ns < 0) fail("decoding before first token");
    }
  }
  if (!waiting_.empty() && segment_ == Segment::kNone) fail("requests waiting on an idle replica");
  if (accepted_ - completed_ != outstanding()) fail("requests not conserved");
}

}  // namespace fleetsim::serving
