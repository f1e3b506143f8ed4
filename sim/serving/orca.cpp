#include "sim/serving/orca.h"

#include <algorithm>

namespace fleetsim::serving {

namespace orca_policy {
EngineRules rules() {
  EngineRules r;
  r.reserve_whole_life = true;
  r.priorities = false;
  r.prefill_with_decodes = true;
  r.back_to_back = true;
  return r;
}
}  // namespace orca_policy

Orca::Orca(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
           const EngineConfig& cfg)
    : ReplicaEngine(index, engine, observer, steps, reservation_config(cfg), orca_policy::rules()) {
}

void Orca::queued(const Seq& s, bool may_admit, SimTime now) {
  // Behind a queue head that did not fit nothing can change before a completion (KV use
  // and the running count are fixed during a stretch); a new head ends it only if it fits.
  ReplicaEngine::queued(s, may_admit && can_admit(s, free_blocks(), 0), now);
}

void Orca::schedule(SimTime now) {
  // Algorithm 1: first come, first served; a new request needs its whole reservation, and
  // the first that does not fit stops the selection. Its whole prompt runs with one decode
  // step of every running request.
  const int64_t n = decoding();
  uint32_t slot = 0;
  while (next_admissible(free_blocks(), 0, &slot)) {
    admit(slot, now, 0);
    add_chunk(slot, seq(slot).spec.prompt_tokens);
  }
  peak_running_ = std::max(peak_running_, running());
  if (has_chunks()) return start_mixed(now, n > 0);
  if (n > 0) start_stretch(now);
}

}  // namespace fleetsim::serving
