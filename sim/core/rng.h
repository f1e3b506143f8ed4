// Seeded random streams. One stream per component (arrivals, lengths, routing, ...), each
// derived from the scenario seed and the component's name, so adding a component or
// drawing more numbers in one does not change the draws of another.
//
// The generator (xoshiro256**) and every sampler here are our own code, not <random>'s
// distributions, whose algorithms differ between standard libraries: the same seed gives
// the same numbers on every platform.
#pragma once

#include <cstdint>
#include <string_view>

namespace fleetsim {

class Rng {
 public:
  /// Seeds the four state words from `seed` with splitmix64.
  explicit Rng(uint64_t seed = 0);

  uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform01();
  /// Uniform in (0, 1]: safe for log().
  double uniform01_open_low();
  /// Uniform integer in [0, n). Precondition: n > 0. Unbiased (Lemire's method).
  uint64_t uniform_u64(uint64_t n);
  /// Standard normal (Marsaglia polar method; the spare value is cached).
  double normal();
  /// Exponential with the given mean (> 0).
  double exponential(double mean);
  /// Gamma(shape k > 0, scale θ > 0): mean kθ, variance kθ². Marsaglia–Tsang, with the
  /// k < 1 boost U^(1/k).
  double gamma(double shape, double scale);

 private:
  uint64_t s_[4];
  double spare_normal_ = 0;
  bool has_spare_ = false;
};

/// Derives independent streams from one scenario seed.
class RngStreams {
 public:
  explicit RngStreams(uint64_t seed) : seed_(seed) {}
  /// The stream for `component` (e.g. "arrivals", "lengths", "router"): seeded with
  /// splitmix64(seed ^ fnv1a64(component)).
  Rng stream(std::string_view component) const;
  uint64_t seed() const { return seed_; }

 private:
  uint64_t seed_;
};

/// A uniform number in [0, 1) determined by (key, salt) alone, from two splitmix64 rounds:
/// for per-request choices (speculative acceptance, cascade escalation, cache hits) that
/// must not depend on the order in which events happen or streams are drawn.
double unit_hash(uint64_t key, uint64_t salt);

}  // namespace fleetsim
