#include "sim/workload/distribution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "hw_models/error.h"
#include "sim/workload/fmt.h"
#include "sim/workload/trace.h"

namespace fleetsim::workload {

namespace {

using detail::fmt;
using detail::kInf;
constexpr int kMaxRedraws = 64;

// ", min=1, max=4096" for the bounds that are finite.
std::string bounds_text(double lo, double hi) {
  std::string s;
  if (std::isfinite(lo)) s += ", min=" + fmt(lo);
  if (std::isfinite(hi)) s += ", max=" + fmt(hi);
  return s;
}

class Fixed final : public Distribution {
 public:
  explicit Fixed(double v) : v_(v) {}
  double sample(Rng&) const override { return v_; }
  double mean() const override { return v_; }
  std::string describe() const override { return "fixed(" + fmt(v_) + ")"; }

 private:
  double v_;
};

class Uniform final : public Distribution {
 public:
  Uniform(double lo, double hi, bool integer) : lo_(lo), hi_(hi), integer_(integer) {
    if (integer_) {
      lo_ = std::round(lo_);
      hi_ = std::round(hi_);
    }
  }
  double sample(Rng& rng) const override {
    // Integers: lo + U{0, ..., hi - lo}, inclusive of both ends (hi - lo + 1 outcomes).
    if (integer_)
      return lo_ + static_cast<double>(rng.uniform_u64(static_cast<uint64_t>(hi_ - lo_) + 1));
    return lo_ + (hi_ - lo_) * rng.uniform01();
  }
  double mean() const override { return 0.5 * (lo_ + hi_); }
  std::string describe() const override { return "uniform(" + fmt(lo_) + ".." + fmt(hi_) + ")"; }

 private:
  double lo_, hi_;
  bool integer_;
};

// Normal and lognormal share the redraw-then-clamp rule for their bounds.
class Normal final : public Distribution {
 public:
  /// `lo_implicit`: the lower bound is a default the user did not write (kept out of
  /// describe()).
  Normal(double mean, double std, double lo, double hi, bool log, bool lo_implicit = false)
      : mean_(mean), std_(std), lo_(lo), hi_(hi), log_(log), lo_implicit_(lo_implicit) {}
  double sample(Rng& rng) const override {
    double x = 0;
    for (int i = 0; i < kMaxRedraws; ++i) {
      x = draw(rng);
      if (x >= lo_ && x <= hi_) return x;
    }
    return std::clamp(x, lo_, hi_);
  }
  // Lognormal: E[exp(N(μ, σ))] = exp(μ + σ²/2) = median·exp(σ²/2).
  double mean() const override { return log_ ? std::exp(mean_ + 0.5 * std_ * std_) : mean_; }
  std::string describe() const override {
    const std::string b = bounds_text(lo_implicit_ ? -kInf : lo_, hi_);
    if (log_) return "lognormal(median=" + fmt(std::exp(mean_)) + ", sigma=" + fmt(std_) + b + ")";
    return "normal(mean=" + fmt(mean_) + ", std=" + fmt(std_) + b + ")";
  }

 private:
  double draw(Rng& rng) const {
    const double z = mean_ + std_ * rng.normal();
    return log_ ? std::exp(z) : z;
  }
  double mean_, std_, lo_, hi_;  // lognormal: mean_ = ln(median), std_ = sigma
  bool log_, lo_implicit_;
};

class Exponential final : public Distribution {
 public:
  explicit Exponential(double mean) : mean_(mean) {}
  double sample(Rng& rng) const override { return rng.exponential(mean_); }
  double mean() const override { return mean_; }
  std::string describe() const override { return "exponential(mean=" + fmt(mean_) + ")"; }

 private:
  double mean_;
};

class Empirical final : public Distribution {
 public:
  explicit Empirical(std::vector<double> values) : values_(std::move(values)) {
    double sum = 0;
    for (double v : values_) sum += v;
    mean_ = sum / static_cast<double>(values_.size());
  }
  // Each recorded value with probability 1/n.
  double sample(Rng& rng) const override {
    return values_[static_cast<size_t>(rng.uniform_u64(values_.size()))];
  }
  double mean() const override { return mean_; }
  std::string describe() const override {
    return "empirical(" + std::to_string(values_.size()) + " values, mean=" + fmt(mean_) + ")";
  }

 private:
  std::vector<double> values_;
  double mean_ = 0;
};

// Optional min/max on forms that have no bounds of their own: clamp each draw.
class Clamped final : public Distribution {
 public:
  Clamped(std::unique_ptr<Distribution> inner, double lo, double hi)
      : inner_(std::move(inner)), lo_(lo), hi_(hi) {}
  double sample(Rng& rng) const override { return std::clamp(inner_->sample(rng), lo_, hi_); }
  double mean() const override { return inner_->mean(); }
  std::string describe() const override {
    std::string d = inner_->describe();
    d.pop_back();  // ")"
    return d + bounds_text(lo_, hi_) + ")";
  }

 private:
  std::unique_ptr<Distribution> inner_;
  double lo_, hi_;
};

// A parameter in the distribution's unit: a bare number of tokens, or a duration with a
// unit. Range checks are left to the caller so the messages can say what is wrong.
double read_param(yaml::Map& m, const std::string& key, Quantity q) {
  if (q == Quantity::kTokens)
    return m.number(key, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
  return m.quantity(key, units::Dim::kTime, -kInf);
}

std::string unit_text(Quantity q) { return q == Quantity::kTokens ? "" : " s"; }

}  // namespace

std::unique_ptr<Distribution> make_fixed(double value) { return std::make_unique<Fixed>(value); }

std::unique_ptr<Distribution> make_uniform(double lo, double hi, bool integer) {
  if (!(lo <= hi)) throw std::invalid_argument("make_uniform: need lo <= hi");
  return std::make_unique<Uniform>(lo, hi, integer);
}

std::unique_ptr<Distribution> make_normal(double mean, double std, double lo, double hi) {
  if (!(std >= 0) || !(lo <= hi)) throw std::invalid_argument("make_normal: bad parameters");
  return std::make_unique<Normal>(mean, std, lo, hi, false);
}

std::unique_ptr<Distribution> make_lognormal(double median, double sigma, double lo, double hi) {
  if (!(median > 0) || !(sigma > 0) || !(lo <= hi))
    throw std::invalid_argument("make_lognormal: bad parameters");
  return std::make_unique<Normal>(std::log(median), sigma, lo, hi, true);
}

std::unique_ptr<Distribution> make_exponential(double mean) {
  if (!(mean > 0)) throw std::invalid_argument("make_exponential: need mean > 0");
  return std::make_unique<Exponential>(mean);
}

std::unique_ptr<Distribution> make_empirical(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("make_empirical: no values");
  return std::make_unique<Empirical>(std::move(values));
}

int32_t to_tokens(double draw) {
  if (!(draw >= 1.0)) return 1;  // also NaN
  if (draw >= static_cast<double>(INT32_MAX)) return INT32_MAX;
  return static_cast<int32_t>(std::llround(draw));
}

std::unique_ptr<Distribution> parse_distribution(yaml::Map& parent, const std::string& key,
                                                 Quantity q, const std::string& base_dir) {
  const bool tokens = q == Quantity::kTokens;
  if (!parent.has(key))
    parent.fail(key, "missing required field",
                tokens ? "e.g. '" + key + ": 512' or '{dist: lognormal, median: 400, sigma: 1}'"
                       : "e.g. '" + key + ": 2s' or '{dist: exponential, mean: 2s}'");

  // Scalar shorthand: a fixed value.
  if (!parent.node()[key].IsMap()) {
    const double v = tokens ? parent.number(key, -std::numeric_limits<double>::max(),
                                            std::numeric_limits<double>::max())
                            : parent.quantity(key, units::Dim::kTime, -kInf);
    if (tokens && v < 1) parent.fail(key, "a token count must be >= 1, got " + fmt(v));
    if (!tokens && v < 0) parent.fail(key, "a duration must be >= 0, got " + fmt(v) + " s");
    return make_fixed(v);
  }

  yaml::Map m = parent.map(key);
  const std::string dist =
      m.choice("dist", {"fixed", "uniform", "normal", "lognormal", "exponential", "empirical"});

  // Bounds: required for uniform, optional clamps for the rest. Durations are never
  // negative; token draws are floored at 1 by to_tokens, and normal/lognormal redraw below
  // 1 token so a truncated normal keeps its shape instead of piling up at 1.
  const double default_lo = tokens && (dist == "normal" || dist == "lognormal") ? 1.0
                            : tokens                                            ? -kInf
                                                                                : 0.0;
  const bool has_lo = m.has("min"), has_hi = m.has("max");
  if (dist == "uniform" && !has_lo) m.fail("min", "uniform needs min and max");
  if (dist == "uniform" && !has_hi) m.fail("max", "uniform needs min and max");
  const double lo = has_lo ? read_param(m, "min", q) : default_lo;
  const double hi = has_hi ? read_param(m, "max", q) : kInf;
  if (!tokens && has_lo && lo < 0) m.fail("min", "min must be >= 0, got " + fmt(lo) + " s");
  if (lo > hi)
    m.fail("max",
           "max (" + fmt(hi) + unit_text(q) + ") must be >= min (" + fmt(lo) + unit_text(q) + ")");

  std::unique_ptr<Distribution> d;
  bool self_bounded = false;  // normal/lognormal/uniform handle min/max themselves
  if (dist == "fixed") {
    const double v = read_param(m, "value", q);
    if (tokens && v < 1) m.fail("value", "a token count must be >= 1, got " + fmt(v));
    if (!tokens && v < 0) m.fail("value", "a duration must be >= 0, got " + fmt(v) + " s");
    d = make_fixed(v);
  } else if (dist == "uniform") {
    d = make_uniform(lo, hi, tokens);
    self_bounded = true;
  } else if (dist == "normal") {
    const double mean = read_param(m, "mean", q);
    const double sd = read_param(m, "std", q);
    if (sd < 0) m.fail("std", "std must be >= 0, got " + fmt(sd) + unit_text(q));
    d = std::make_unique<Normal>(mean, sd, lo, hi, false, !has_lo);
    self_bounded = true;
  } else if (dist == "lognormal") {
    const double median = read_param(m, "median", q);
    const double sigma =
        m.number("sigma", -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
    if (median <= 0) m.fail("median", "median must be > 0, got " + fmt(median) + unit_text(q));
    if (sigma <= 0)
      m.fail("sigma", "sigma must be > 0, got " + fmt(sigma),
             "sigma is the standard deviation of ln(x); 1.0 is a wide spread");
    d = std::make_unique<Normal>(std::log(median), sigma, lo, hi, true, !has_lo);
    self_bounded = true;
  } else if (dist == "exponential") {
    const double mean = read_param(m, "mean", q);
    if (mean <= 0) m.fail("mean", "mean must be > 0, got " + fmt(mean) + unit_text(q));
    d = make_exponential(mean);
  } else {  // empirical
    if (!tokens)
      m.fail("dist",
             "empirical takes token counts from a trace; it is not available for "
             "durations",
             "use exponential, lognormal, normal, uniform or fixed");
    const std::string file = m.str("trace");
    const std::string column = m.choice("column", {"input", "output"});
    const std::string format = m.choice_or("format", {"auto", "azure", "mooncake"}, "auto");
    const std::string path = resolve_path(base_dir, file);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      m.fail("trace", "cannot open trace file '" + path + "'",
             "relative paths are relative to the scenario file's folder");
    const Trace t = load_trace(path, format);
    std::vector<double> values;
    values.reserve(t.records.size());
    for (const auto& r : t.records)
      values.push_back(column == "input" ? r.input_tokens : r.output_tokens);
    d = make_empirical(std::move(values));
  }
  m.finish();

  if (!self_bounded && (has_lo || has_hi))
    d = std::make_unique<Clamped>(std::move(d), has_lo ? lo : -kInf, hi);
  return d;
}

}  // namespace fleetsim::workload
