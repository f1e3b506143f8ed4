#include "sim/serving/vllm.h"

#include <stdexcept>

namespace fleetsim::serving {

namespace vllm_policy {
EngineRules rules(const EngineConfig& cfg) {
  EngineRules r;
  r.max_prompt_tokens = cfg.max_batched_tokens;
  return r;
}
}  // namespace vllm_policy

Vllm::Vllm(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
           const EngineConfig& cfg)
    : ReplicaEngine(index, engine, observer, steps, cfg, vllm_policy::rules(cfg)) {
  if (cfg.max_batched_tokens < 1) throw std::logic_error("Vllm: invalid configuration");
}

void Vllm::schedule(SimTime now) {
  // Admit what fits; if anything was admitted, run a prefill-only iteration.
  int64_t tokens = 0;
  uint32_t slot = 0;
  while (next_admissible(free_blocks(), tokens, &slot)) {
    admit(slot, now, 0);
    const int32_t c = seq(slot).target - seq(slot).prefilled;
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
