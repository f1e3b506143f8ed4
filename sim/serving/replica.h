// A replica: one model instance on `tp` GPUs, running one batching policy.
//
// Every batching policy is a Replica implementation in its own header/source pair named
// after its published system (vllm.h → Vllm). A policy owns its batch state because only
// the policy knows when its batch stays unchanged long enough to be advanced in closed
// form (see vllm.h); the engine, the router and the observers see only this interface.
#pragma once

#include <stdexcept>

#include <cstdint>
#include <string>

#include "sim/core/engine.h"
#include "sim/serving/observer.h"
#include "sim/workload/request.h"

namespace fleetsim::serving {

/// Event phases at one instant: arrivals are seen before any replica decides its next batch.
enum Phase : uint32_t {
  kPhaseArrival = 0,
  kPhaseReplica = 1,
};

class Replica : public core::EventTarget {
 public:
  Replica(int index, core::Engine& engine, ServingObserver& observer)
      : index_(index), engine_(engine), observer_(observer) {}

  /// A request routed here at engine.now().
  virtual void submit(const workload::RequestSpec& request) = 0;

  /// Disaggregation: a request prefilled elsewhere arrives with its KV cache and first
  /// token, at engine.now(). Only decode-pool replicas accept it.
  virtual void submit_prefilled(const Handoff& /*h*/) {
    throw std::logic_error("this replica does not take prefilled requests");
  }

  /// Requests accepted and not yet completed (waiting + running).
  virtual int64_t outstanding() const = 0;
  virtual int64_t kv_blocks_used() const = 0;
  virtual int64_t kv_blocks_total() const = 0;
  /// Prompt tokens of `r` found in this replica's prefix cache (0 without one).
  virtual int64_t cached_prefix_tokens(const workload::RequestSpec& /*r*/) const { return 0; }
  /// Checks internal invariants (KV accounting, batch aggregates); throws std::logic_error.
  /// O(batch): for tests, not for the hot loop.
  virtual void check_invariants() const = 0;

  int index() const { return index_; }

  /// The replica's hardware failed: the segment in progress never ends (its event is
  /// ignored), so it emits nothing more. The owner retries its requests elsewhere.
  void halt() { ++segment_gen_; }

 protected:
  /// Schedules the end of the replica's current segment (an iteration or a run of them) at
  /// `end`, superseding any end scheduled before: a policy shortens a segment by
  /// scheduling a new end, and the old event is then ignored (is_current is false).
  void schedule_segment_end(SimTime end) {
    ++segment_gen_;
    engine_.schedule(end, kPhaseReplica, this, 0, segment_gen_);
  }
  bool is_current(const core::Event& e) const { return e.data == segment_gen_; }

  int index_;
  core::Engine& engine_;
  ServingObserver& observer_;

 private:
  uint64_t segment_gen_ = 0;
};

}  // namespace fleetsim::serving
