// The routers of a run. A run may need several (one per fleet group of replicas, one for a
// disaggregated decode pool): each gets its own random stream, so adding one does not move
// another's choices.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/core/rng.h"
#include "sim/serving/registry.h"
#include "sim/serving/router.h"

namespace fleetsim::runtime {

/// Router number `k` of a run seeded `seed`: the registry's router `name` on the streams of
/// seed (k = 0) or of seed ^ (k · 0x9e3779b97f4a7c15, the 64-bit golden ratio) for k ≥ 1.
inline std::unique_ptr<serving::Router> numbered_router(const std::string& name, uint64_t seed,
                                                        uint64_t k,
                                                        const serving::RouterParams& params) {
  return serving::make_router(name, RngStreams(k == 0 ? seed : seed ^ (0x9e3779b97f4a7c15ULL * k)),
                              params);
}

}  // namespace fleetsim::runtime
