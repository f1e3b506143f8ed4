// metrics::TimeBuckets against hand arithmetic: bucketing, coarsening past the limit,
// segments split over buckets, held time, and merging partitions of different widths.
#include "sim/metrics/time_buckets.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace fleetsim::metrics {
namespace {

TEST(TimeBuckets, CoarsensPastTheLimit) {
  TimeBuckets tb(10, 4);    // 10 ns buckets, at most 4
  tb.add_latency(0, 1.0);   // bucket 0 = [0, 10)
  tb.add_latency(15, 2.0);  // bucket 1 = [10, 20)
  tb.add_latency(39, 3.0);  // bucket 3 = [30, 40); bucket 2 stays empty
  ASSERT_EQ(tb.buckets().size(), 4u);
  EXPECT_EQ(tb.width_ns(), 10);
  EXPECT_EQ(tb.buckets()[2].latency.count(), 0u);
  // t = 45 would be bucket 4 (a fifth): widths double to 20 ns, buckets 0+1 → [0, 20) with
  // 2 samples, 2+3 → [20, 40) with 1, and t = 45 lands in [40, 60).
  tb.add_latency(45, 4.0);
  EXPECT_EQ(tb.width_ns(), 20);
  ASSERT_EQ(tb.buckets().size(), 3u);
  EXPECT_EQ(tb.buckets()[0].latency.count(), 2u);
  EXPECT_EQ(tb.buckets()[1].latency.count(), 1u);
  EXPECT_EQ(tb.buckets()[2].latency.count(), 1u);
  EXPECT_DOUBLE_EQ(tb.buckets()[0].latency.max(), 2.0);
  // t = 1000 is bucket 50 at 20 ns; 40 ns → 25, 80 ns → 12, 160 ns → 6, 320 ns → 3 < 4.
  tb.add_latency(1000, 5.0);
  EXPECT_EQ(tb.width_ns(), 320);
  ASSERT_EQ(tb.buckets().size(), 4u);
  EXPECT_EQ(tb.buckets()[0].latency.count(), 4u);  // everything up to 60 ns
  EXPECT_EQ(tb.buckets()[3].latency.count(), 1u);
  EXPECT_EQ(tb.total_latency().count(), 5u);
}

TEST(TimeBuckets, SegmentsAndHeldTimeAreSplitByTime) {
  TimeBuckets tb(10, 4);
  // [5, 25): 5 ns in bucket 0, 10 in bucket 1, 5 in bucket 2, i.e. shares 1/4, 1/2, 1/4 of
  // its 4 iterations and 40 decode tokens.
  tb.add_segment(5, 25, 4, 40);
  // Two replicas held over [0, 40): 2 × 10 ns = 20 ns per bucket.
  tb.add_held(0, 40, 2);
  ASSERT_EQ(tb.buckets().size(), 4u);
  const double ns = 1e-9;
  EXPECT_DOUBLE_EQ(tb.buckets()[0].busy_s, 5 * ns);
  EXPECT_DOUBLE_EQ(tb.buckets()[1].busy_s, 10 * ns);
  EXPECT_DOUBLE_EQ(tb.buckets()[2].busy_s, 5 * ns);
  EXPECT_DOUBLE_EQ(tb.buckets()[3].busy_s, 0);
  EXPECT_DOUBLE_EQ(tb.buckets()[0].iterations, 1);
  EXPECT_DOUBLE_EQ(tb.buckets()[1].iterations, 2);
  EXPECT_DOUBLE_EQ(tb.buckets()[1].decode_tokens, 20);
  EXPECT_DOUBLE_EQ(tb.buckets()[2].decode_tokens, 10);
  for (const auto& b : tb.buckets()) EXPECT_DOUBLE_EQ(b.held_s, 20 * ns);
}

TEST(TimeBuckets, MergeCoarsensTheFinerPartition) {
  TimeBuckets a(10, 4), b(10, 4);
  a.add_latency(45, 1.0);  // coarsens a to 20 ns: bucket 2 = [40, 60)
  b.add_latency(5, 2.0);   // b stays at 10 ns: bucket 0
  b.add_segment(10, 20, 1, 1);
  a.merge(b);  // b coarsened to 20 ns first: both its entries in [0, 20)
  EXPECT_EQ(a.width_ns(), 20);
  ASSERT_EQ(a.buckets().size(), 3u);
  EXPECT_EQ(a.buckets()[0].latency.count(), 1u);
  EXPECT_DOUBLE_EQ(a.buckets()[0].busy_s, 10e-9);
  EXPECT_EQ(a.buckets()[2].latency.count(), 1u);
  EXPECT_THROW(a.merge(TimeBuckets(10, 8)), std::invalid_argument);
}

TEST(TimeBuckets, RejectsBadArguments) {
  EXPECT_THROW(TimeBuckets(0, 4), std::invalid_argument);
  EXPECT_THROW(TimeBuckets(10, 3), std::invalid_argument);
  TimeBuckets tb(10, 4);
  EXPECT_THROW(tb.add_latency(-1, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace fleetsim::metrics
