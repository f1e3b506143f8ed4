// A request as the workload generates it (before any serving state).
#pragma once

#include <cstdint>

#include "sim/core/time.h"

namespace fleetsim::workload {

struct RequestSpec {
  uint64_t id = 0;              ///< 0, 1, 2, ... in generation order
  SimTime arrival_ns = 0;
  int32_t prompt_tokens = 0;    ///< >= 1
  int32_t output_tokens = 0;    ///< >= 1 (the first comes out of prefill)
  int32_t client = -1;          ///< closed-loop user index, -1 for open-loop/trace
  uint32_t hash_begin = 0;      ///< prefix-block hashes: [hash_begin, hash_begin + hash_count)
  uint32_t hash_count = 0;      ///< into Trace::hashes (Mooncake traces), 0 otherwise
};

}  // namespace fleetsim::workload
