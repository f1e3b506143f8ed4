// Dynamic batching: the dynamic batcher of NVIDIA Triton Inference Server
// (`dynamic_batching { max_queue_delay_microseconds }`) and TorchServe's `batch_size` /
// `max_batch_delay`, applied to whole generation requests (Triton's dynamic batcher in front
// of a run-to-completion engine such as FasterTransformer). Triton documentation,
// "Batchers — Dynamic Batcher":
// https://docs.nvidia.com/deeplearning/triton-inference-server/user-guide/docs/batcher.html
//
// Everything is as in static batching (static.h: a batch runs to completion, members reserve
// prompt + output tokens of KV, the batch returns at once), except when a batch starts. An
// idle replica with waiting requests launches the next batch as soon as either
// - the batch is full: `max_num_seqs` requests are waiting, or the waiting requests'
//   reservations together exceed the KV cache (the next one could not join anyway), or
// - the oldest waiting request has waited `batch_timeout` (serving.batch_timeout, default
//   10 ms),
// whichever comes first; until then it waits for more requests. While a batch runs,
// arrivals queue; when it ends, the same rule decides at once (a request that has already
// waited `batch_timeout` launches the next batch immediately). `batch_timeout: 0s` is
// static batching.
#pragma once

#include "sim/serving/static.h"

namespace fleetsim::serving {

struct DynamicConfig {
  /// Launch a partial batch once the oldest waiting request has waited this long (>= 0).
  SimTime batch_timeout_ns = 10'000'000;
};

class Dynamic final : public Static {
 public:
  /// As Static, plus own.batch_timeout_ns (>= 0).
  Dynamic(int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
          const EngineConfig& cfg, DynamicConfig own);

 protected:
  SimTime launch_time(SimTime now) const override;

 private:
  SimTime timeout_ns_;
};

}  // namespace fleetsim::serving
