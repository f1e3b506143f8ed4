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

 protected:
  int index_;
  core::Engine& engine_;
  ServingObserver& observer_;
};

}  // namespace fleetsim::serving
