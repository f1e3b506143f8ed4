#include "sim/serving/sarathi.h"

#include <algorithm>
#include <stdexcept>

namespace fleetsim::serving {

namespace sarathi_policy {
EngineRules rules() {
  EngineRules r;
  r.prefill_with_decodes = true;
  return r;
}
}  // namespace sarathi_policy

Sarathi::Sarathi(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
                 const EngineConfig& cfg, SarathiConfig own)
    : ReplicaEngine(index, engine, observer, steps, cfg, sarathi_policy::rules()), own_(own) {
  if (cfg.max_batched_tokens < 1) throw std::logic_error("Sarathi: invalid configuration");
}

void Sarathi::schedule(SimTime now) {
  // Decodes first, then prompt chunks in the remaining token budget.
  if (decoding() > 0) reserve_decode_blocks(now);
  const int64_t n = decoding();
  const int64_t decode_blocks = n > 0 ? decode_blocks_needed(decode_iter(), 1) : 0;
  const int64_t max_tokens = config().max_batched_tokens;
  int64_t budget = max_tokens - n;
  // A prompt's chunk: what is left of it, cut to the budget unless prompts run whole.
  const auto chunk = [&](uint32_t slot) {
    const int64_t left = seq(slot).target - seq(slot).prefilled;
    return static_cast<int32_t>(own_.split_prompts ? std::min<int64_t>(left, budget) : left);
  };
  for (uint32_t slot : prefilling()) {
    if (budget <= 0) break;
    const int32_t c = chunk(slot);
    add_chunk(slot, c);
    budget -= c;
  }
  // Whole prompts: can_admit checks the tokens already in the iteration once a prompt is in.
  const auto taken = [&] { return own_.split_prompts || !has_chunks() ? 0 : max_tokens - budget; };
  uint32_t slot = 0;
  while (budget > 0 && next_admissible(free_blocks() - decode_blocks, taken(), &slot)) {
    admit(slot, now, decode_blocks);
    const int32_t c = chunk(slot);
    add_chunk(slot, c);
    budget -= c;
  }
  if (has_chunks()) return start_mixed(now, n > 0);
  if (n > 0) start_stretch(now);
}

}  // namespace fleetsim::serving
