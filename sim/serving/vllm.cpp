#include "sim/serving/vllm.h"

#include <algorithm>
#include <stdexcept>

namespace fleetsim::serving {

namespace vllm_policy {
EngineRules rules(const EngineConfig& cfg, const VllmConfig& own) {
  EngineRules r;
  r.max_prompt_tokens = own.split_prompts ? 0 : cfg.max_batched_tokens;
  return r;
}
}  // namespace vllm_policy

Vllm::Vllm(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
           const EngineConfig& cfg, VllmConfig own)
    : ReplicaEngine(index, engine, observer, steps, cfg, vllm_policy::rules(cfg, own)), own_(own) {
  if (cfg.max_batched_tokens < 1) throw std::logic_error("Vllm: invalid configuration");
}

void Vllm::schedule(SimTime now) {
  // Admit what fits; if anything was admitted, run a prefill-only iteration. Split prompts:
  // the rest of a prompt cut at the budget goes first, then new prompts, the last one cut.
  const int64_t budget = config().max_batched_tokens;
  int64_t tokens = 0;
  const auto chunk = [&](uint32_t slot) {
    const int64_t left = seq(slot).target - seq(slot).prefilled;
    return static_cast<int32_t>(own_.split_prompts ? std::min<int64_t>(left, budget - tokens)
                                                   : left);
  };
  for (uint32_t slot : prefilling()) {
    if (tokens >= budget) break;
    const int32_t c = chunk(slot);
    add_chunk(slot, c);
    tokens += c;
  }
  uint32_t slot = 0;
  while (tokens < budget &&
         next_admissible(free_blocks(), own_.split_prompts ? 0 : tokens, &slot)) {
    admit(slot, now, 0);
    const int32_t c = chunk(slot);
    add_chunk(slot, c);
    tokens += c;
  }
  if (has_chunks()) return start_mixed(now, false);
  if (decoding() == 0) return;
  reserve_decode_blocks(now);
  if (decoding() > 0) return start_stretch(now);
  boundary(now);  // everything was preempted: admit again
}

}  // namespace fleetsim::serving
