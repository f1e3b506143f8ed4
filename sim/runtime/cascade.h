// A cascade (FrugalGPT): the small model answers first, and a share of the requests is
// escalated to the large model, which answers again. Which requests: chosen per request id
// with one hash, so a request escalates in every simulation, thread count and partition.
#pragma once

#include <cstdint>

#include "sim/core/rng.h"

namespace fleetsim::runtime {

/// True when the small model's answer to request `id` is escalated; `share` in [0, 1].
inline bool escalates(uint64_t id, double share) { return unit_hash(id, 0xca5cade) < share; }

}  // namespace fleetsim::runtime
