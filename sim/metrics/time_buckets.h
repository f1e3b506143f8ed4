// Time-bucketed metrics of a run, for plots over time: a latency histogram, busy and held
// replica-time, iterations and decode tokens per bucket of run time.
//
// Memory is bounded: a time past the last bucket that would make more than `max_buckets`
// buckets doubles the width and merges neighbouring buckets (0+1, 2+3, ...) until it fits,
// so a run of any length keeps between max_buckets/2 and max_buckets buckets once it is
// longer than max_buckets initial widths. The work per sample is O(1) amortized: an
// integer division, plus one merge pass per doubling (log2(run / initial width) passes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/core/time.h"
#include "sim/metrics/histogram.h"
#include "sim/serving/observer.h"

namespace fleetsim::metrics {

class TimeBuckets {
 public:
  struct Bucket {
    Histogram latency;         ///< latency samples whose time falls in the bucket
    double busy_s = 0;         ///< replica-seconds with an iteration running
    double held_s = 0;         ///< replica-seconds held (the denominator of utilization)
    double iterations = 0;     ///< batch iterations (a segment's split by its share of time)
    double decode_tokens = 0;  ///< tokens emitted by decoding sequences (same split)
  };

  /// width_ns > 0: the initial bucket width; max_buckets >= 2 (even); rel_error of the
  /// latency histograms (see Histogram). std::invalid_argument otherwise.
  explicit TimeBuckets(SimTime width_ns = 1'000'000'000, size_t max_buckets = 96,
                       double rel_error = 0.01);

  /// A latency sample (seconds) recorded at run time t >= 0.
  void add_latency(SimTime t, double value_s);
  /// One replica busy over [start, end): busy time, iterations and decode tokens, split
  /// over the buckets it spans in proportion to the time in each.
  void add_segment(SimTime start, SimTime end, int64_t iterations, int64_t decode_tokens);
  /// `replicas` replicas held over [start, end).
  void add_held(SimTime start, SimTime end, double replicas = 1);
  /// Adds a partition of the same run (same initial width and bucket limit; the finer of
  /// the two is coarsened to the other's width first).
  void merge(const TimeBuckets& other);

  SimTime width_ns() const { return width_ns_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  /// Every bucket's latency histogram merged: the whole run's latency distribution.
  Histogram total_latency() const;

  /// Its settings and buckets as bytes, and back (equal to the one written).
  void write(core::ByteWriter& w) const;
  static TimeBuckets read(core::ByteReader& r);

 private:
  // The bucket holding t, coarsening (and growing the vector) as needed.
  Bucket& at(SimTime t);
  void coarsen();
  static void absorb(Bucket& into, const Bucket& from);
  // Calls f(bucket, fraction of [start, end) inside it) for each bucket the span touches.
  template <class F>
  void spread(SimTime start, SimTime end, F f);

  SimTime width_ns_;
  size_t max_buckets_;
  double rel_error_;
  std::vector<Bucket> buckets_;
};

/// Feeds a TimeBuckets from a single-pool run: TTFT by first-token time, segments; call
/// finish() with the run's end to add the held replica-time (every replica is held for the
/// whole run).
class TimeBucketsObserver final : public serving::ServingObserver {
 public:
  /// `replicas`: every replica of the run (all pools); width: the initial bucket width.
  explicit TimeBucketsObserver(int replicas, SimTime width_ns = 10'000'000);
  void on_completion(const serving::RequestRecord& rec) override;
  void on_segment(const serving::SegmentRecord& seg) override;
  /// Adds the held time [0, end_ns) of every replica; call once, after the run.
  void finish(SimTime end_ns);
  const TimeBuckets& buckets() const { return buckets_; }

 private:
  int replicas_;
  TimeBuckets buckets_;
};

}  // namespace fleetsim::metrics
