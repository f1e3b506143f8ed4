// Simulated time: an int64 count of nanoseconds (±292 years of range).
// Performance models compute in double seconds; convert once, when an event is scheduled.
#pragma once

#include <cmath>
#include <cstdint>

namespace fleetsim {

using SimTime = int64_t;  ///< nanoseconds since the start of the simulation

constexpr SimTime kNsPerSecond = 1'000'000'000;
constexpr SimTime kSimTimeMax = INT64_MAX;
/// The longest simulated span: 9.2e9 s (about 292 years), the range of SimTime less a margin.
constexpr double kMaxSimSeconds = 9.2e9;

/// Throws an InputError saying that `seconds` of simulated time cannot be represented (the
/// limit, and which inputs usually cause it).
[[noreturn]] void throw_time_overflow(double seconds);

/// Seconds → ns, rounded to nearest (half away from zero). A value that is not finite or
/// reaches ±kMaxSimSeconds (an arrival rate of 1e-300/s gives gaps of 1e300 s) is an
/// InputError, never an overflow.
inline SimTime seconds_to_ns(double s) {
  if (!(std::fabs(s) < kMaxSimSeconds)) throw_time_overflow(s);
  return static_cast<SimTime>(std::llround(s * 1e9));
}
inline double ns_to_seconds(SimTime ns) { return static_cast<double>(ns) * 1e-9; }

/// t + dt, or the InputError of throw_time_overflow when the sum leaves the simulated span.
inline SimTime add_time(SimTime t, SimTime dt) {
  SimTime sum;
  if (__builtin_add_overflow(t, dt, &sum) || std::fabs(ns_to_seconds(sum)) >= kMaxSimSeconds)
    throw_time_overflow(ns_to_seconds(t) + ns_to_seconds(dt));
  return sum;
}

}  // namespace fleetsim
