// Bounded-memory streaming histogram for latencies (HDR style, log-bucketed).
//
// Values are non-negative doubles (seconds). Buckets are geometric with ratio
// (1 + 2·rel_error), so any quantile is reported within `rel_error` relative error of a
// value in the sample (the bucket midpoint in log space is returned). Values below
// `min_value` fall in one underflow bucket reported as the exact minimum seen; memory is
// O(log(max/min) / rel_error) buckets regardless of the number of samples: ln(max/min) /
// ln(1 + 2·rel_error) counters, e.g. about 1,750 for 1 ns..1e6 s at 1 % and about 2,550
// for 1 ns..100 s at the default 0.5 %. mean, min and max are exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/core/bytes.h"

namespace fleetsim::metrics {

class Histogram {
 public:
  /// rel_error in (0, 0.1]; min_value > 0 is the smallest value resolved (default 1 ns).
  explicit Histogram(double rel_error = 0.005, double min_value = 1e-9);

  void add(double value) { add(value, 1); }
  /// Adds `count` samples equal to `value`. Precondition: value finite and >= 0
  /// (std::invalid_argument otherwise).
  void add(double value, uint64_t count);
  /// Adds `count` samples that all fall in the bucket of `value`, whose exact sum, minimum
  /// and maximum the caller knows (bulk adds of runs of values; see Collector).
  void add_bulk(double value, uint64_t count, double sum, double min_value, double max_value);
  /// Merges another histogram with the same rel_error and min_value
  /// (std::invalid_argument otherwise).
  void merge(const Histogram& other);

  uint64_t count() const { return count_; }
  double mean() const;  ///< 0 when empty
  double min() const;   ///< 0 when empty
  double max() const;   ///< 0 when empty
  double sum() const { return sum_; }
  /// q in [0, 1]: the smallest recorded value v (to within rel_error) such that at least
  /// q·count samples are ≤ v. quantile(0) == min(), quantile(1) == max(). 0 when empty.
  double quantile(double q) const;
  double rel_error() const { return rel_error_; }
  /// Counters allocated for buckets >= 0 (highest bucket used + 1): the memory bound.
  std::size_t bucket_count() const { return buckets_.size(); }

  /// Index of the bucket holding `value` and the bucket's lower edge (for bulk adds of
  /// monotone sequences: callers can add a run of values one bucket at a time).
  /// Bucket b >= 0 covers [min_value·γ^b, min_value·γ^(b+1)) with γ = 1 + 2·rel_error;
  /// bucket -1 is the underflow bucket [0, min_value) with lower edge 0.
  int64_t bucket_of(double value) const;
  double bucket_lower(int64_t bucket) const;

  /// Its settings and counts as bytes (core::ByteWriter), and back: read() returns a
  /// histogram equal to the one written (same quantiles, sum, min and max, bit for bit).
  void write(core::ByteWriter& w) const;
  static Histogram read(core::ByteReader& r);

 private:
  /// What every histogram of one (rel_error, min_value) shares, built once per process:
  /// the bucket edges up to 1e5 (27 hours in seconds) and a lookup table from a value's
  /// bits to its bucket (see histogram.cpp).
  struct Layout;
  static std::shared_ptr<const Layout> layout_for(double rel_error, double min_value);
  int64_t bucket_slow(double value) const;  // outside the table: a log, then exact edges

  double rel_error_, min_value_, log_base_inv_;
  std::shared_ptr<const Layout> layout_;
  // The last bucket looked up and its edges: serving produces runs of equal or nearby
  // values (inter-token gaps of one step time), so most look-ups hit it.
  mutable int64_t last_bucket_ = -2;
  mutable double last_lo_ = 0, last_hi_ = -1;
  std::vector<uint64_t> buckets_;  // grows to the largest bucket used
  uint64_t underflow_ = 0, count_ = 0;
  double sum_ = 0, min_ = 0, max_ = 0;
};

}  // namespace fleetsim::metrics
