#include "sim/serving/observer.h"

namespace fleetsim::serving {

const char* reject_reason_name(RejectReason r) {
  switch (r) {
    case RejectReason::kTooLongForModel: return "too_long_for_model";
    case RejectReason::kTooLongForKvCache: return "too_long_for_kv_cache";
    case RejectReason::kTooLongForBatch: return "too_long_for_batch";
    case RejectReason::kQueueFull: return "queue_full";
  }
  return "unknown";
}

}  // namespace fleetsim::serving
