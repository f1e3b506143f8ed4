// Simulated time: an int64 count of nanoseconds (±292 years of range).
// Performance models compute in double seconds; convert once, when an event is scheduled.
#pragma once

#include <cmath>
#include <cstdint>

namespace fleetsim {

using SimTime = int64_t;  ///< nanoseconds since the start of the simulation

constexpr SimTime kNsPerSecond = 1'000'000'000;
constexpr SimTime kSimTimeMax = INT64_MAX;

/// Seconds → ns, rounded to nearest (half away from zero). Precondition: finite, |s| < 9.2e9.
inline SimTime seconds_to_ns(double s) { return static_cast<SimTime>(std::llround(s * 1e9)); }
inline double ns_to_seconds(SimTime ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace fleetsim
