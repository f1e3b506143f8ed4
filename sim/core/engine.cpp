#include "sim/core/engine.h"

#include <string>

namespace fleetsim::core {

void Engine::schedule(SimTime time, uint32_t phase, EventTarget* target, uint32_t kind,
                      uint64_t data) {
  if (time < now_) {
    throw std::logic_error("event scheduled in the past: t=" + std::to_string(time) +
                           " ns < now=" + std::to_string(now_) + " ns");
  }
  if (phase > 0xff || kind > 0xff) throw std::logic_error("event phase or kind out of range");
  const uint64_t order = (uint64_t{phase} << 56) | ((next_seq_++ & ((uint64_t{1} << 48) - 1)) << 8) | kind;
  queue_.push(Event{time, order, target, data});
}

bool Engine::step() {
  if (queue_.empty()) return false;
  const Event e = queue_.top();
  queue_.pop();
  now_ = e.time;
  ++dispatched_;
  for (auto* o : observers_) o->on_dispatch(e);
  e.target->on_event(e);
  return true;
}

void Engine::run() {
  stopped_ = false;
  while (!stopped_ && step()) {
  }
}

void Engine::run_until(SimTime until) {
  stopped_ = false;
  while (!stopped_ && !queue_.empty() && queue_.top().time <= until) step();
  if (!stopped_ && until > now_) now_ = until;
}

}  // namespace fleetsim::core
