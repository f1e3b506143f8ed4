#include "sim/core/time.h"

#include <cstdio>

#include "hw_models/error.h"

namespace fleetsim {

void throw_time_overflow(double seconds) {
  char b[160];
  std::snprintf(b, sizeof b,
                "simulated time would reach %.3g s, beyond the %.3g s (about 292 years) that "
                "fleetsim represents",
                seconds, kMaxSimSeconds);
  throw InputError(b,
                   "check the scenario's rates, durations, think times, time scales and trace "
                   "timestamps: a rate of 1e-300/s, for example, puts arrivals 1e300 s apart");
}

}  // namespace fleetsim
