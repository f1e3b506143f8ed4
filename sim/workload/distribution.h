// Distributions of token counts and of durations.
//
// YAML forms (under any key that takes a distribution):
//   512                                  fixed (tokens)           | "2s" fixed (durations)
//   {dist: fixed, value: 512}
//   {dist: uniform, min: 128, max: 1024}                         (inclusive for tokens)
//   {dist: normal, mean: 512, std: 128}                          (resampled while outside [min, max])
//   {dist: lognormal, median: 400, sigma: 1.0}                   (exp(N(ln median, sigma)))
//   {dist: exponential, mean: 5s}
//   {dist: empirical, trace: data/traces/azure_llm_2023_conv.csv, column: input|output}
//                                        (optional format: auto|azure|mooncake; tokens only)
// Every form takes optional `min` and `max` (clamp bounds; for normal/lognormal a value
// outside them is redrawn, up to 64 times, then clamped). Without `min`, normal/lognormal
// redraw below 1 for tokens and below 0 for durations. Token counts are rounded to the
// nearest integer and are at least 1. Durations carry units ("5s", "150ms") and are >= 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw_models/yaml_reader.h"
#include "sim/core/rng.h"

namespace fleetsim::workload {

class Distribution {
 public:
  virtual ~Distribution() = default;
  /// One draw, in the distribution's unit (tokens, or seconds for durations).
  virtual double sample(Rng& rng) const = 0;
  /// Analytic mean before clamping (empirical: the sample mean).
  virtual double mean() const = 0;
  /// e.g. "lognormal(median=400, sigma=1)".
  virtual std::string describe() const = 0;
};

enum class Quantity { kTokens, kDuration };

/// Reads a distribution from `parent[key]` (a scalar or a mapping). Paths in `trace:` are
/// resolved relative to `base_dir` (the scenario file's folder) unless absolute.
std::unique_ptr<Distribution> parse_distribution(yaml::Map& parent, const std::string& key,
                                                 Quantity q, const std::string& base_dir);

std::unique_ptr<Distribution> make_fixed(double value);
std::unique_ptr<Distribution> make_uniform(double lo, double hi, bool integer);
std::unique_ptr<Distribution> make_normal(double mean, double std, double lo, double hi);
std::unique_ptr<Distribution> make_lognormal(double median, double sigma, double lo, double hi);
std::unique_ptr<Distribution> make_exponential(double mean);
std::unique_ptr<Distribution> make_empirical(std::vector<double> values);

/// Token count from a draw: rounded, at least 1, at most INT32_MAX.
int32_t to_tokens(double draw);

}  // namespace fleetsim::workload
