// A replica: one model instance on `tp` GPUs, running one batching policy.
//
// Every batching policy is a small subclass of the shared replica engine
// (replica_engine.h) in its own header/source pair named after its published system
// (vllm.h → Vllm); the event loop, the router and the observers see only this interface.
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

class Replica;

/// Live communication inside iterations (network: {model: simgrid} with an expert-parallel
/// all-to-all that leaves the scale-up domain): told of every iteration as it starts, it
/// decides when the iteration really ends and calls Replica::end_segment_at.
class SegmentComm {
 public:
  virtual ~SegmentComm() = default;
  /// An iteration of `replica` from `start` to `end` (as the step model prices it) that
  /// prefills `prefill_tokens` and decodes `decode_seqs` sequences; `gen` names the segment.
  virtual void iteration(Replica& replica, uint64_t gen, SimTime start, SimTime end,
                         int64_t prefill_tokens, int64_t decode_seqs) = 0;
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

  /// Every iteration from now on goes through `comm` (null: none). The policy must run one
  /// iteration per segment (fast_forward: false).
  void attach_comm(SegmentComm* comm) { comm_ = comm; }
  /// For SegmentComm: segment `gen` ends at `t` (ignored when it was superseded meanwhile).
  void end_segment_at(SimTime t, uint64_t gen) { engine_.schedule(t, kPhaseReplica, this, 0, gen); }

 protected:
  /// Schedules the end of the replica's current segment (an iteration or a run of them) at
  /// `end`, superseding any end scheduled before: a policy shortens a segment by
  /// scheduling a new end, and the old event is then ignored (is_current is false).
  /// An iteration passes what it computes (`prefill_tokens`, `decode_seqs`) so that live
  /// communication can be started for it; a segment with no work passes nothing.
  void schedule_segment_end(SimTime end, int64_t prefill_tokens = 0, int64_t decode_seqs = 0) {
    ++segment_gen_;
    if (comm_ != nullptr && end > engine_.now() && (prefill_tokens > 0 || decode_seqs > 0))
      comm_->iteration(*this, segment_gen_, engine_.now(), end, prefill_tokens, decode_seqs);
    else
      engine_.schedule(end, kPhaseReplica, this, 0, segment_gen_);
  }
  /// A run of k > 1 iterations in one segment cannot carry live communication.
  void check_one_iteration(int64_t k) const {
    if (k > 1 && comm_ != nullptr)
      throw std::logic_error(
          "replica " + std::to_string(index_) +
          ": live communication needs one iteration per segment (fast_forward: false)");
  }
  bool is_current(const core::Event& e) const { return e.data == segment_gen_; }

  int index_;
  core::Engine& engine_;
  ServingObserver& observer_;

 private:
  uint64_t segment_gen_ = 0;
  SegmentComm* comm_ = nullptr;
};

}  // namespace fleetsim::serving
