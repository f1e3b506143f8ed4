#include "sim/serving/dynamic.h"

#include <algorithm>
#include <stdexcept>

namespace fleetsim::serving {

Dynamic::Dynamic(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
                 const EngineConfig& cfg, DynamicConfig own)
    : Static(index, engine, observer, steps, cfg), timeout_ns_(own.batch_timeout_ns) {
  if (timeout_ns_ < 0) throw std::logic_error("Dynamic: negative batch timeout");
}

SimTime Dynamic::launch_time(SimTime now) const {
  if (next_batch_full()) return now;
  // The oldest request is at the head of the queue (first come, first served).
  return std::max(now, oldest_queued_ns() + timeout_ns_);
}

}  // namespace fleetsim::serving
