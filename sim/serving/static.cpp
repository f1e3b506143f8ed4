#include "sim/serving/static.h"

#include <algorithm>

namespace fleetsim::serving {

namespace static_policy {
EngineRules rules() {
  EngineRules r;
  r.reserve_whole_life = true;
  r.priorities = false;
  r.back_to_back = true;
  r.closed_batches = true;
  return r;
}
}  // namespace static_policy

Static::Static(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
               const EngineConfig& cfg)
    : ReplicaEngine(index, engine, observer, steps, reservation_config(cfg),
                    static_policy::rules()) {}

bool Static::next_batch_full() const {
  // The batch is the longest queue prefix within max_num_seqs whose reservations fit the
  // (then empty) cache; an arrival can join it only if the whole queue is that prefix.
  return static_cast<int64_t>(waiting()) >= config().max_num_seqs ||
         waiting_blocks_ > config().kv_blocks;
}

void Static::queued(const Seq& s, bool /*may_admit*/, SimTime now) {
  queued_ns_.push_back(now);
  waiting_blocks_ += life_blocks(s.spec);
  // The arrival may complete the batch: launch earlier than the pending deadline. A running
  // batch is closed: the request waits for it to end.
  if (segment() == Segment::kWait)
    shorten_wait(std::max(now, launch_time(now)));
  else
    ReplicaEngine::queued(s, false, now);
}

void Static::schedule(SimTime now) {
  if (!batch_.empty()) {
    if (emitting() > 0) return start_stretch(now);
    for (uint32_t slot : batch_) complete_held(slot, now);  // the batch returns at once
    batch_.clear();
  }
  if (waiting() == 0) return;
  const SimTime t = launch_time(now);
  if (t > now) return wait_until(t);
  // First come, first served, up to max_num_seqs and the KV cache; each request fits an
  // empty cache alone (else it was rejected), so the batch is never empty.
  uint32_t slot = 0;
  while (next_admissible(free_blocks(), 0, &slot)) {
    admit(slot, now, 0);
    batch_.push_back(slot);
    waiting_blocks_ -= life_blocks(seq(slot).spec);
    queued_ns_.pop_front();
  }
  // Members stop emitting in order of output length; arrival order breaks ties.
  std::stable_sort(batch_.begin(), batch_.end(), [&](uint32_t a, uint32_t b) {
    return seq(a).spec.output_tokens < seq(b).spec.output_tokens;
  });
  // One prefill iteration over every whole prompt.
  for (uint32_t m : batch_) add_chunk(m, seq(m).spec.prompt_tokens);
  ++batches_;
  start_mixed(now, false);
}

void Static::check_invariants() const {
  ReplicaEngine::check_invariants();
  int64_t queued = 0;
  queue().for_each([&](uint32_t slot) { queued += life_blocks(seq(slot).spec); });
  if (queued != waiting_blocks_) fail("waiting reservations drifted");
  if (queued_ns_.size() != waiting()) fail("queue times drifted");
  if (static_cast<int64_t>(batch_.size()) != running()) fail("batch drifted");
  for (size_t i = 1; i < batch_.size(); ++i)
    if (seq(batch_[i - 1]).spec.output_tokens > seq(batch_[i]).spec.output_tokens)
      fail("batch not sorted");
  const bool busy = segment() == Segment::kMixed || segment() == Segment::kStretch;
  if (busy != !batch_.empty()) fail("a batch without an iteration, or an iteration without one");
  if (waiting() > 0 && segment() == Segment::kNone) fail("requests waiting on an idle replica");
}

}  // namespace fleetsim::serving
