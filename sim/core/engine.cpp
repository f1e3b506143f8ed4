#include "sim/core/engine.h"

#include <algorithm>
#include <string>

namespace fleetsim::core {

void Engine::schedule(SimTime time, uint32_t phase, EventTarget* target, uint32_t kind,
                      uint64_t data) {
  if (time < now_) {
    // Simulated time starts at 0, so a negative time is a sum that wrapped past the range of
    // SimTime (inputs that reach beyond ~292 years): an input problem, not a logic error.
    if (time < 0) throw_time_overflow(ns_to_seconds(now_) + ns_to_seconds(kSimTimeMax));
    throw std::logic_error("event scheduled in the past: t=" + std::to_string(time) +
                           " ns < now=" + std::to_string(now_) + " ns");
  }
  if (phase > 0xff || kind > 0xff) throw std::logic_error("event phase or kind out of range");
  const uint64_t order =
      (uint64_t{phase} << 56) | ((next_seq_++ & ((uint64_t{1} << 48) - 1)) << 8) | kind;
  heap_.push_back(Event{time, order, target, data});
  sift_up(heap_.size() - 1);
}

void Engine::sift_up(size_t i) {
  const Event e = heap_[i];
  while (i > kRoot) {
    const size_t parent = i / 4 + 2;  // logical (i - kRoot - 1) / 4, stored at + kRoot
    if (!earlier(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void Engine::sift_down(size_t i) {
  const size_t n = heap_.size();
  const Event e = heap_[i];
  for (;;) {
    const size_t first = 4 * i - 8;  // logical 4 (i - kRoot) + 1, stored at + kRoot
    if (first >= n) break;
    size_t best = first;
    const size_t last = std::min(first + 4, n);
    for (size_t c = first + 1; c < last; ++c)
      if (earlier(heap_[c], heap_[best])) best = c;
    if (!earlier(heap_[best], e)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = e;
}

bool Engine::step() {
  if (idle()) return false;
  const Event e = heap_[kRoot];
  heap_[kRoot] = heap_.back();
  heap_.pop_back();
  if (!idle()) sift_down(kRoot);
  now_ = e.time;
  ++dispatched_;
  // At fleet scale the targets (thousands of replicas) are rarely in cache, and loading the
  // target is the largest single stall of a dispatch: start loading the next event's target
  // while this one runs (a hint only: this event may schedule an earlier one).
  if (!idle()) __builtin_prefetch(heap_[kRoot].target);
  for (auto* o : observers_) o->on_dispatch(e);
  e.target->on_event(e);
  return true;
}

void Engine::run() {
  stopped_ = false;
  while (!stopped_ && step()) {}
}

void Engine::run_until(SimTime until) {
  stopped_ = false;
  while (!stopped_ && !idle() && heap_[kRoot].time <= until) step();
  if (!stopped_ && until > now_) now_ = until;
}

}  // namespace fleetsim::core
