// Tests for sim/metrics/histogram: quantiles against exact order statistics, bulk add,
// merge, underflow, bucket edges and bounded memory.
#include "sim/metrics/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "sim/core/rng.h"

namespace fleetsim::metrics {
namespace {

// The exact quantile by the header's definition: the smallest sample v with at least q·n
// samples <= v, i.e. the ceil(q·n)-th smallest (1-based), at least the first.
double exact_quantile(std::vector<double> sorted, double q) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(q * n - 1e-9 * n));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// |got - want| <= rel·want, with a hair of float slack.
void expect_within_rel(double got, double want, double rel) {
  EXPECT_LE(std::fabs(got - want), rel * want * (1 + 1e-9)) << "got " << got << " want " << want;
}

TEST(Histogram, EmptyIsAllZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.min(), 0.0);
  EXPECT_EQ(h.max(), 0.0);
  EXPECT_EQ(h.quantile(0.5), 0.0);
}

TEST(Histogram, QuantilesOfOneToThousandMilliseconds) {
  Histogram h;  // rel_error 0.5 %
  for (int i = 1; i <= 1000; ++i) h.add(i * 1e-3);
  EXPECT_EQ(h.count(), 1000u);
  // Σ i·1e-3 for i = 1..1000 = 500.5 → mean 0.5005 s (exact up to float summation).
  EXPECT_NEAR(h.mean(), 0.5005, 1e-12);
  EXPECT_DOUBLE_EQ(h.min(), 1e-3);
  EXPECT_DOUBLE_EQ(h.max(), 1.0);
  EXPECT_DOUBLE_EQ(h.quantile(0), 1e-3);  // quantile(0) == min
  EXPECT_DOUBLE_EQ(h.quantile(1), 1.0);   // quantile(1) == max
  // Rank ceil(q·1000) → value rank·1 ms, within 0.5 %.
  expect_within_rel(h.quantile(0.5), 0.500, 0.005);
  expect_within_rel(h.quantile(0.9), 0.900, 0.005);
  expect_within_rel(h.quantile(0.99), 0.990, 0.005);
  expect_within_rel(h.quantile(0.999), 0.999, 0.005);
  expect_within_rel(h.quantile(0.0005), 0.001, 0.005);  // ceil(0.5) = rank 1
}

TEST(Histogram, RankRoundingDoesNotSkipASample) {
  // 0.07·100 is 7.000000000000001 in binary; the rank is still 7, so p7 of 1..100 is 7
  // (rank 8 would be 14 % off).
  Histogram h;
  for (int i = 1; i <= 100; ++i) h.add(i);
  expect_within_rel(h.quantile(0.07), 7.0, 0.005);
  expect_within_rel(h.quantile(0.29), 29.0, 0.005);
}

TEST(Histogram, EveryQuantileOfLognormalSampleWithinRelError) {
  // 100k lognormal latencies (median 50 ms, sigma 1.5) at rel_error 0.5 % and 1 %; every
  // quantile on a 0.001 grid must be within rel_error of the exact order statistic.
  for (double rel : {0.005, 0.01}) {
    Rng rng(11);
    Histogram h(rel);
    std::vector<double> xs;
    for (int i = 0; i < 100000; ++i) {
      const double x = 0.05 * std::exp(1.5 * rng.normal());
      xs.push_back(x);
      h.add(x);
    }
    std::sort(xs.begin(), xs.end());
    for (int k = 0; k <= 1000; ++k) {
      const double q = k / 1000.0;
      expect_within_rel(h.quantile(q), exact_quantile(xs, q), rel);
    }
  }
}

TEST(Histogram, BucketMidpointErrorIsWithinBound) {
  // A value on a bucket's lower edge L is reported as the midpoint L·sqrt(1.01) (γ = 1.01 at
  // 0.5 %), 0.499 % above it; a larger value keeps the clamp to max from hiding that.
  Histogram h;
  const double lower = h.bucket_lower(h.bucket_of(0.2));
  h.add(lower);
  h.add(lower);
  h.add(1.0);
  EXPECT_NEAR(h.quantile(0.5) / lower, std::sqrt(1.01), 1e-12);
  expect_within_rel(h.quantile(0.5), lower, 0.005);
}

TEST(Histogram, BucketEdgesAreGeometric) {
  Histogram h(0.005, 1e-9);
  // Bucket b starts at 1e-9·1.01^b.
  EXPECT_DOUBLE_EQ(h.bucket_lower(0), 1e-9);
  EXPECT_NEAR(h.bucket_lower(100) / 1e-9, std::pow(1.01, 100), 1e-9);
  EXPECT_EQ(h.bucket_of(0.0), -1);  // underflow
  EXPECT_EQ(h.bucket_of(5e-10), -1);
  EXPECT_EQ(h.bucket_lower(-1), 0.0);
  Rng rng(3);
  for (int i = 0; i < 10000; ++i) {
    const double v = std::exp(rng.uniform01() * 30.0 - 20.0);  // e^-20 .. e^10
    const int64_t b = h.bucket_of(v);
    ASSERT_LE(h.bucket_lower(b), v);
    ASSERT_LT(v, h.bucket_lower(b + 1));
  }
  // Exact edges land in their own bucket.
  for (int64_t b : {0, 1, 7, 1000, 2545}) EXPECT_EQ(h.bucket_of(h.bucket_lower(b)), b);
}

// bucket_of finds a value's bucket from a table indexed by the value's exponent and top 8
// mantissa bits (a factor 2^(1/256) = 1.0027 per entry), then steps up against the exact
// edges. At rel_error 0.0005 (γ = 1.001) an entry spans up to three edges, at 0.1 (γ = 1.2)
// many entries share a bucket; values past the table (1e5 s) take the log path. Every
// edge, the doubles either side of it, and values far past the table must satisfy the
// definition bucket_lower(b) <= v < bucket_lower(b + 1).
TEST(Histogram, TableLookUpMatchesTheEdgesAtEveryEdge) {
  for (double rel : {0.0005, 0.005, 0.1}) {
    for (double min_value : {1e-9, 3e-6}) {
      Histogram h(rel, min_value);
      std::vector<double> values = {1e6, 3.7e8, 1e12};  // past the table
      for (int64_t b = 0; h.bucket_lower(b) <= 2e5; ++b) {
        const double e = h.bucket_lower(b);
        values.insert(values.end(), {e, std::nextafter(e, 0.0), std::nextafter(e, 1e300)});
      }
      for (double v : values) {
        const int64_t b = h.bucket_of(v);
        if (v < min_value) {
          ASSERT_EQ(b, -1) << "rel " << rel << " v " << v;
          continue;
        }
        ASSERT_LE(h.bucket_lower(b), v) << "rel " << rel << " min " << min_value << " v " << v;
        ASSERT_LT(v, h.bucket_lower(b + 1)) << "rel " << rel << " min " << min_value << " v " << v;
      }
    }
  }
}

TEST(Histogram, UnderflowReportsExactMinimum) {
  Histogram h;  // min_value 1 ns
  h.add(0.0);
  h.add(1e-12);
  h.add(2e-12);
  h.add(1.0);
  // Ranks 1..3 are in the underflow bucket, reported as the exact minimum 0.
  EXPECT_EQ(h.quantile(0.5), 0.0);
  EXPECT_EQ(h.quantile(0.75), 0.0);
  EXPECT_EQ(h.quantile(1.0), 1.0);
}

TEST(Histogram, BulkAddEqualsRepeatedAdd) {
  Histogram bulk, single;
  bulk.add(0.010, 1000);
  bulk.add(0.250, 3);
  bulk.add(0.125, 0);  // no-op
  for (int i = 0; i < 1000; ++i) single.add(0.010);
  for (int i = 0; i < 3; ++i) single.add(0.250);
  EXPECT_EQ(bulk.count(), 1003u);
  // sum = 1000·0.01 + 3·0.25 = 10.75
  EXPECT_NEAR(bulk.sum(), 10.75, 1e-12);
  EXPECT_NEAR(single.sum(), 10.75, 1e-9);
  EXPECT_DOUBLE_EQ(bulk.min(), 0.010);
  EXPECT_DOUBLE_EQ(bulk.max(), 0.250);
  for (double q : {0.0, 0.5, 0.997, 0.998, 1.0}) EXPECT_EQ(bulk.quantile(q), single.quantile(q));
  // Rank ceil(0.998·1003) = 1001 is the first 0.25 s sample.
  expect_within_rel(bulk.quantile(0.998), 0.25, 0.005);
}

TEST(Histogram, MergeEqualsOneHistogramOfAllSamples) {
  Rng rng(5);
  Histogram a, b, all;
  for (int i = 0; i < 20000; ++i) {
    const double x = rng.exponential(0.1);
    (i % 3 == 0 ? a : b).add(x);
    all.add(x);
  }
  Histogram empty;
  a.merge(empty);  // merging nothing changes nothing
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_NEAR(a.sum(), all.sum(), 1e-9 * all.sum());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  // Same bucket counts → identical quantiles.
  for (int k = 0; k <= 100; ++k) EXPECT_EQ(a.quantile(k / 100.0), all.quantile(k / 100.0));

  Histogram into_empty;
  into_empty.merge(all);
  EXPECT_EQ(into_empty.min(), all.min());
  EXPECT_EQ(into_empty.quantile(0.5), all.quantile(0.5));

  Histogram other_error(0.01);
  EXPECT_THROW(a.merge(other_error), std::invalid_argument);
}

TEST(Histogram, MemoryStaysBoundedForMillionSamplesOverElevenDecades) {
  // 1e6 samples log-uniform over 1 ns .. 100 s, plus both ends exactly. The counters needed
  // are the highest bucket + 1 = floor(ln(100 / 1e-9) / ln(1.01)) + 1
  //   = floor(25.3284 / 0.00995033) + 1 = floor(2545.49) + 1 = 2546,
  // whatever the number of samples.
  Histogram h;
  Rng rng(9);
  h.add(1e-9);
  h.add(100.0);
  for (int i = 0; i < 1'000'000; ++i) h.add(1e-9 * std::exp(rng.uniform01() * std::log(1e11)));
  EXPECT_EQ(h.count(), 1'000'002u);
  EXPECT_EQ(h.bucket_count(), 2546u);
  // Median of log-uniform on [1e-9, 1e2] is 1e-9·10^5.5 = 3.162e-4 s. The sample median's
  // SE is 1/(2·f·sqrt(n)) with density f = 1/11 per decade: 0.0055 decades ≈ 1.3 %;
  // 5 SE ≈ 6.5 %, plus 0.5 % histogram error → 7 %.
  EXPECT_NEAR(h.quantile(0.5) / 3.1623e-4, 1.0, 0.07);
}

TEST(Histogram, RejectsBadValuesAndParameters) {
  Histogram h;
  EXPECT_THROW(h.add(-1.0), std::invalid_argument);
  EXPECT_THROW(h.add(std::nan("")), std::invalid_argument);
  EXPECT_THROW(h.add(INFINITY), std::invalid_argument);
  EXPECT_EQ(h.count(), 0u);
  EXPECT_THROW(Histogram(0.0), std::invalid_argument);
  EXPECT_THROW(Histogram(0.2), std::invalid_argument);
  EXPECT_THROW(Histogram(0.01, 0.0), std::invalid_argument);
}

TEST(Histogram, WrittenAndReadBackIsTheSameHistogram) {
  // Settings and counts survive the byte codec exactly: the same quantiles, sum, min, max,
  // and a merge of the copy equals a merge of the original.
  Histogram h(0.01, 1e-6);
  h.add(0.0);  // underflow bucket
  for (int i = 1; i <= 500; ++i) h.add(i * 1.7e-3);
  core::ByteWriter w;
  h.write(w);
  const std::string bytes = w.take();
  core::ByteReader r(bytes, "histogram");
  const Histogram c = Histogram::read(r);
  r.expect_end();
  EXPECT_EQ(c.count(), 501u);
  EXPECT_EQ(c.rel_error(), 0.01);
  EXPECT_EQ(c.sum(), h.sum());
  EXPECT_EQ(c.min(), 0.0);
  EXPECT_EQ(c.max(), 500 * 1.7e-3);
  for (double q : {0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(c.quantile(q), h.quantile(q));
  Histogram a(0.01, 1e-6), b(0.01, 1e-6);
  a.add(0.3);
  b.add(0.3);
  a.merge(h);
  b.merge(c);
  EXPECT_EQ(a.quantile(0.5), b.quantile(0.5));
  EXPECT_EQ(a.count(), b.count());
}

}  // namespace
}  // namespace fleetsim::metrics
