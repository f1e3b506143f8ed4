// Notifications from the serving layer. Metrics, the per-request CSV and invariant checks
// are observers; policies never compute statistics themselves.
#pragma once

#include <cstdint>

#include "sim/core/time.h"
#include "sim/workload/request.h"

namespace fleetsim::serving {

enum class RejectReason : uint8_t {
  kTooLongForModel,     ///< prompt + output exceeds the model's context window
  kTooLongForKvCache,   ///< one request needs more KV blocks than the replica has
  kTooLongForBatch,     ///< prompt exceeds max_batched_tokens without chunked prefill
  kQueueFull,           ///< load shedding: the waiting queue was at max_queue
};
const char* reject_reason_name(RejectReason r);

/// One request's outcome, reported at completion.
struct RequestRecord {
  const workload::RequestSpec* spec = nullptr;
  int replica = -1;
  SimTime scheduled_ns = 0;    ///< first admission to a batch (queueing delay ends)
  SimTime first_token_ns = 0;
  SimTime done_ns = 0;
  int32_t preemptions = 0;
};

/// A request whose prefill finished on a prefill-pool replica, handed to the decode pool
/// (prefill/decode disaggregation). Its KV cache travels with it.
struct Handoff {
  workload::RequestSpec spec;
  SimTime scheduled_ns = 0;   ///< admission on the prefill replica
  SimTime prefill_done_ns = 0;
  SimTime first_token_ns = 0; ///< set by the simulation: the KV transfer's end
  int32_t preemptions = 0;
};

/// A replica's aggregate activity over a segment of one or more iterations.
struct SegmentRecord {
  int replica = -1;
  SimTime start_ns = 0, end_ns = 0;
  int64_t iterations = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;     ///< tokens emitted by decoding sequences
  int64_t kv_blocks_start = 0;   ///< KV blocks in use when the segment started
  int64_t kv_blocks_end = 0;     ///< ... and when it ended (use is monotone within a segment)
  int64_t kv_blocks_total = 0;
};

class ServingObserver {
 public:
  virtual ~ServingObserver() = default;
  virtual void on_arrival(const workload::RequestSpec&, int /*replica*/, SimTime) {}
  virtual void on_reject(const workload::RequestSpec&, int /*replica*/, RejectReason, SimTime) {}
  virtual void on_first_token(const workload::RequestSpec&, int /*replica*/, SimTime) {}
  virtual void on_preemption(const workload::RequestSpec&, int /*replica*/, SimTime) {}
  /// A request was admitted needing `prefill_tokens` of KV, of which `hit_tokens` were found
  /// in the prefix cache and are not computed.
  virtual void on_prefix_lookup(int /*replica*/, int64_t /*prefill_tokens*/, int64_t /*hit_tokens*/) {}
  /// Of those hits, `tokens` were loaded back from the host-memory tier.
  virtual void on_prefix_host_load(int /*replica*/, int64_t /*tokens*/) {}
  virtual void on_completion(const RequestRecord&) {}
  /// Disaggregation: a prefill-pool replica finished `h`'s prompt; the KV cache must now be
  /// moved to a decode replica.
  virtual void on_prefill_done(const Handoff& /*h*/, int /*replica*/) {}
  /// `count` inter-token gaps of the same value.
  virtual void on_token_gaps(SimTime /*gap_ns*/, uint64_t /*count*/) {}
  /// Gaps step(j) for j = 1..k-1 of a decode stretch, each `per_iteration` times; step(j)
  /// is non-decreasing in j. `step` returns ns. (The first iteration's gaps come through
  /// on_token_gaps.) Observers may expand it or add it bucket by bucket.
  class StepSeries {
   public:
    virtual ~StepSeries() = default;
    virtual SimTime step_ns(int64_t j) const = 0;
    virtual SimTime sum_ns(int64_t j_begin, int64_t j_end) const = 0;  ///< Σ step(j), j in [b, e)
  };
  virtual void on_token_gap_series(const StepSeries&, int64_t /*k*/, uint64_t /*per_iteration*/) {}
  virtual void on_segment(const SegmentRecord&) {}
};

}  // namespace fleetsim::serving
