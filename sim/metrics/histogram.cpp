#include "sim/metrics/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace fleetsim::metrics {

// Bucket b >= 0 covers [m·γ^b, m·γ^(b+1)) with m = min_value and γ = 1 + 2e (e = rel_error).
// A quantile is reported as the bucket's geometric midpoint r = m·γ^(b+1/2). For any x in
// the bucket, r/x ∈ (γ^-1/2, γ^1/2], and
//   γ^1/2 = sqrt(1 + 2e) <= 1 + e          (since (1 + e)² = 1 + 2e + e²)
//   γ^-1/2 = 1/sqrt(1 + 2e) >= 1 - e       (since (1 - e)²(1 + 2e) = 1 - 3e² + 2e³ <= 1)
// so |r - x| <= e·x: the reported value is within rel_error of a value in the sample.
namespace {
// log2(x) for normal positive x with absolute error below 2e-5: the exponent from the bits,
// and log2 of the mantissa m ∈ [1, 2) from the series 2/ln2 · (t + t³/3 + t⁵/5 + t⁷/7) with
// t = (m-1)/(m+1) ≤ 1/3 (the first omitted term, 2/ln2 · t⁹/9, is below 1.7e-5). The
// caller corrects the bucket against exact edges, so the approximation only has to land
// within one bucket.
double approx_log2(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  double m;
  std::memcpy(&m, &bits, sizeof m);
  const double t = (m - 1.0) / (m + 1.0), t2 = t * t;
  constexpr double k2OverLn2 = 2.8853900817779268;  // 2 / ln 2
  return exponent + k2OverLn2 * t * (1.0 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7))));
}

// A positive double's bits shifted right by kKeyShift: its exponent and the top 8 bits of
// its mantissa, so one key covers a factor of at most 2^(1/256) = 1.0027 — less than one
// bucket at the default 0.5 % (γ = 1.01), so a key's values span at most two buckets.
constexpr int kKeyShift = 52 - 8;
uint64_t key_of(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits >> kKeyShift;
}
}  // namespace

struct Histogram::Layout {
  double rel_error = 0, min_value = 0;
  std::vector<double> edges;  // bucket_lower(b) for b < edges.size(), up to past 1e5
  // first[key - key_lo]: the bucket of the smallest value with that key (clamped to 0).
  // A value's bucket is then that one or a few above it, found against the exact edges.
  uint64_t key_lo = 0;
  std::vector<int32_t> first;
};

std::shared_ptr<const Histogram::Layout> Histogram::layout_for(double rel_error, double min_value) {
  // Few distinct layouts exist (the collectors use two or three), while fleet runs make
  // thousands of histograms (per region, pool and interval): share them. Histograms are
  // made on several threads (one per partition), hence the lock; look-ups need none.
  static std::mutex mu;
  static std::vector<std::shared_ptr<const Layout>> made;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& l : made)
    if (l->rel_error == rel_error && l->min_value == min_value) return l;
  auto l = std::make_shared<Layout>();
  l->rel_error = rel_error;
  l->min_value = min_value;
  const double log_base_inv = 1.0 / std::log1p(2.0 * rel_error);
  for (int64_t b = 0;; ++b) {
    // m·γ^b = m·exp(b·ln γ): the same formula bucket_lower uses past the table.
    const double edge = min_value * std::exp(static_cast<double>(b) / log_base_inv);
    l->edges.push_back(edge);
    if (edge > 1e5 || b >= 100000) break;
  }
  l->key_lo = key_of(min_value);
  const uint64_t key_hi = key_of(l->edges.back());
  l->first.resize(static_cast<size_t>(key_hi - l->key_lo + 1));
  size_t b = 0;
  for (uint64_t k = l->key_lo; k <= key_hi; ++k) {
    uint64_t bits = k << kKeyShift;
    double lo;
    std::memcpy(&lo, &bits, sizeof lo);
    while (b + 1 < l->edges.size() && lo >= l->edges[b + 1]) ++b;
    l->first[static_cast<size_t>(k - l->key_lo)] = static_cast<int32_t>(b);
  }
  made.push_back(l);
  return l;
}

// Bucket b >= 0 covers [m·γ^b, m·γ^(b+1)) with m = min_value and γ = 1 + 2e (e = rel_error).
// A quantile is reported as the bucket's geometric midpoint r = m·γ^(b+1/2). For any x in
// the bucket, r/x ∈ (γ^-1/2, γ^1/2], and
//   γ^1/2 = sqrt(1 + 2e) <= 1 + e          (since (1 + e)² = 1 + 2e + e²)
//   γ^-1/2 = 1/sqrt(1 + 2e) >= 1 - e       (since (1 - e)²(1 + 2e) = 1 - 3e² + 2e³ <= 1)
// so |r - x| <= e·x: the reported value is within rel_error of a value in the sample.
Histogram::Histogram(double rel_error, double min_value)
    : rel_error_(rel_error),
      min_value_(min_value),
      log_base_inv_(1.0 / std::log1p(2.0 * rel_error)) {
  if (!(rel_error > 0 && rel_error <= 0.1))
    throw std::invalid_argument("Histogram: rel_error must be in (0, 0.1]");
  if (!(min_value > 0) || !std::isfinite(min_value))
    throw std::invalid_argument("Histogram: min_value must be > 0");
  layout_ = layout_for(rel_error, min_value);
}

void Histogram::write(core::ByteWriter& w) const {
  w.put(rel_error_);
  w.put(min_value_);
  w.put_vector(buckets_);
  w.put(underflow_);
  w.put(count_);
  w.put(sum_);
  w.put(min_);
  w.put(max_);
}

Histogram Histogram::read(core::ByteReader& r) {
  const auto rel_error = r.get<double>();
  const auto min_value = r.get<double>();
  Histogram h(rel_error, min_value);
  h.buckets_ = r.get_vector<uint64_t>();
  h.underflow_ = r.get<uint64_t>();
  h.count_ = r.get<uint64_t>();
  h.sum_ = r.get<double>();
  h.min_ = r.get<double>();
  h.max_ = r.get<double>();
  return h;
}

int64_t Histogram::bucket_of(double value) const {
  if (value >= last_lo_ && value < last_hi_) return last_bucket_;
  if (!(value >= min_value_)) return -1;
  const Layout& l = *layout_;
  int64_t b;
  if (value < l.edges.back()) {
    // The table's bucket for the value's key, then up to the one whose edges hold it (the
    // last edge is above the value, so the scan stops inside the table).
    const size_t k = static_cast<size_t>(key_of(value) - l.key_lo);
    size_t i = static_cast<size_t>(l.first[k]);
    while (value >= l.edges[i + 1]) ++i;
    b = static_cast<int64_t>(i);
    last_lo_ = l.edges[i];
    last_hi_ = l.edges[i + 1];
  } else {
    b = bucket_slow(value);
    last_lo_ = bucket_lower(b);
    last_hi_ = bucket_lower(b + 1);
  }
  last_bucket_ = b;
  return b;
}

int64_t Histogram::bucket_slow(double value) const {
  // b = floor(log_γ(value / m)), computed approximately, then nudged until
  // bucket_lower(b) <= value < bucket_lower(b + 1) holds exactly.
  const double ln2 = 0.6931471805599453;
  auto b =
      static_cast<int64_t>((approx_log2(value) - approx_log2(min_value_)) * ln2 * log_base_inv_);
  if (b < 0) b = 0;
  while (b > 0 && value < bucket_lower(b)) --b;
  while (value >= bucket_lower(b + 1)) ++b;
  return b;
}

double Histogram::bucket_lower(int64_t bucket) const {
  if (bucket < 0) return 0.0;
  const std::vector<double>& edges = layout_->edges;
  if (static_cast<size_t>(bucket) < edges.size()) return edges[static_cast<size_t>(bucket)];
  // m·γ^b = m·exp(b·ln γ), with ln γ = 1 / log_base_inv_.
  return min_value_ * std::exp(static_cast<double>(bucket) / log_base_inv_);
}

void Histogram::add(double value, uint64_t count) {
  if (!(value >= 0) || !std::isfinite(value))
    throw std::invalid_argument("Histogram::add: value must be finite and >= 0");
  if (count == 0) return;
  const int64_t b = bucket_of(value);
  if (b < 0) {
    underflow_ += count;
  } else {
    const auto idx = static_cast<size_t>(b);
    if (idx >= buckets_.size()) buckets_.resize(idx + 1, 0);
    buckets_[idx] += count;
  }
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  count_ += count;
  sum_ += value * static_cast<double>(count);
}

void Histogram::add_bulk(double value, uint64_t count, double sum, double min_value,
                         double max_value) {
  if (count == 0) return;
  add(value, count);  // bucket, count, min/max of `value`
  // Replace the sum and extremes `add` assumed (count copies of value) by the exact ones.
  sum_ += sum - value * static_cast<double>(count);
  min_ = std::min(min_, min_value);
  max_ = std::max(max_, max_value);
}

void Histogram::merge(const Histogram& other) {
  if (other.rel_error_ != rel_error_ || other.min_value_ != min_value_)
    throw std::invalid_argument("Histogram::merge: rel_error and min_value must match");
  if (other.count_ == 0) return;
  if (other.buckets_.size() > buckets_.size()) buckets_.resize(other.buckets_.size(), 0);
  for (size_t i = 0; i < other.buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  underflow_ += other.underflow_;
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ += other.sum_;
}

double Histogram::mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
double Histogram::min() const { return min_; }
double Histogram::max() const { return max_; }

double Histogram::quantile(double q) const {
  if (count_ == 0) return 0.0;
  if (q <= 0.0) return min_;
  if (q >= 1.0) return max_;
  // The rank wanted is the smallest integer k >= q·n. q·n carries rounding error (0.07·100
  // is 7.000000000000001 in binary), so a product within 1e-9 of an integer is that integer.
  const double n = static_cast<double>(count_);
  double qn = q * n;
  const double nearest = std::round(qn);
  if (std::fabs(qn - nearest) <= 1e-9 * std::max(1.0, qn)) qn = nearest;
  const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(qn)));

  uint64_t seen = underflow_;
  if (seen >= rank) return min_;  // the underflow bucket reports the exact minimum
  for (size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      // Geometric midpoint m·γ^(b + 1/2), clamped to the exact extremes.
      const double mid = min_value_ * std::exp((static_cast<double>(b) + 0.5) / log_base_inv_);
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;  // unreachable: the buckets hold count_ samples
}

}  // namespace fleetsim::metrics
