// The discrete-event engine. It knows nothing about LLMs: it orders typed events and
// dispatches them to their targets.
//
// Order: events run in (time, phase, seq) order. `phase` fixes same-time semantics (a
// component with a lower phase sees the world first at a given instant, e.g. arrivals
// before scheduler decisions); `seq` is the insertion counter, so equal (time, phase)
// events run first-in first-out. The order is total, so a run is bit-identical for the
// same inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <vector>

#include "sim/core/time.h"

namespace fleetsim::core {

struct Event;

/// Something that receives events. `kind` and `data` are the target's own vocabulary.
class EventTarget {
 public:
  virtual ~EventTarget() = default;
  virtual void on_event(const Event& event) = 0;
};

/// 32 bytes, so the queue moves little memory. `order` packs the phase (top 8 bits), the
/// insertion counter (next 48 bits: 2.8e14 events per run) and the kind (low 8 bits; it
/// never decides the order because the counter is unique).
struct Event {
  SimTime time = 0;
  uint64_t order = 0;
  EventTarget* target = nullptr;
  uint64_t data = 0;

  uint32_t phase() const { return static_cast<uint32_t>(order >> 56); }
  uint64_t seq() const { return (order >> 8) & ((uint64_t{1} << 48) - 1); }
  uint32_t kind() const { return static_cast<uint32_t>(order & 0xff); }
};

/// Notified before each event is dispatched (invariant checks, tracing).
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void on_dispatch(const Event& event) = 0;
};

class Engine {
 public:
  /// Schedules an event. Preconditions: time >= now() (throws std::logic_error otherwise:
  /// time never goes back), phase < 256, kind < 256.
  void schedule(SimTime time, uint32_t phase, EventTarget* target, uint32_t kind = 0,
                uint64_t data = 0);

  /// Dispatches the earliest event; false when none is pending.
  bool step();
  /// Runs until no event is pending or stop() is called.
  void run();
  /// Runs every event with time <= `until`, then sets now() to `until` (if later).
  void run_until(SimTime until);
  /// Makes run()/run_until() return after the current event.
  void stop() { stopped_ = true; }

  SimTime now() const { return now_; }
  uint64_t events_dispatched() const { return dispatched_; }
  size_t pending() const { return heap_.size() - kRoot; }

  void add_observer(EngineObserver* o) { observers_.push_back(o); }

 private:
  static bool earlier(const Event& a, const Event& b) {
    return a.time < b.time || (a.time == b.time && a.order < b.order);  // phase, then insertion
  }
  void sift_up(size_t i);
  void sift_down(size_t i);
  bool idle() const { return heap_.size() == kRoot; }

  /// Storage aligned to 128 bytes, so that a node's four 32-byte children fill one aligned
  /// pair of cache lines.
  template <class T>
  struct Aligned {
    using value_type = T;
    static constexpr std::align_val_t kAlign{128};
    Aligned() = default;
    template <class U>
    Aligned(const Aligned<U>&) {}
    T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
    void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
    bool operator==(const Aligned&) const { return true; }
  };
  /// A 4-ary min-heap on (time, order): half the depth of a binary heap. The root sits at
  /// index kRoot = 3 (indices 0-2 unused), so the children of node i are 4i-8 .. 4i-5 and
  /// begin at a multiple of 4 events (128 bytes): each sift step reads two cache lines, not
  /// three. The order is total, so the dispatch sequence is the same as with any other
  /// correct priority queue.
  static constexpr size_t kRoot = 3;
  std::vector<Event, Aligned<Event>> heap_ = std::vector<Event, Aligned<Event>>(kRoot);
  std::vector<EngineObserver*> observers_;
  SimTime now_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t dispatched_ = 0;
  bool stopped_ = false;
};

}  // namespace fleetsim::core
