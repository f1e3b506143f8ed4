// Tests for sim/metrics/collector: warm-up requests count towards throughput, not latency.
#include "sim/metrics/collector.h"

#include <gtest/gtest.h>

namespace fleetsim::metrics {
namespace {

constexpr SimTime kMs = 1'000'000;

workload::RequestSpec spec(uint64_t id, SimTime arrival, int32_t out) {
  workload::RequestSpec r;
  r.id = id;
  r.arrival_ns = arrival;
  r.prompt_tokens = 100;
  r.output_tokens = out;
  return r;
}

TEST(Collector, WarmupRequestsCountForThroughputOnly) {
  Collector c(1, std::nullopt, std::nullopt);
  c.set_warmup_requests(2);  // ids 0 and 1 are the warm-up
  const auto a = spec(0, 0, 11), b = spec(1, 0, 11), d = spec(2, 10 * kMs, 11);
  // Warm-up requests waited long (the closed loop's first wave): TTFT 900 and 1000 ms.
  c.on_completion({&a, 0, 0, 900 * kMs, 1000 * kMs, 0});
  c.on_completion({&b, 0, 0, 1000 * kMs, 1100 * kMs, 0});
  // The measured one: arrival 10 ms, first token 60 ms, done 160 ms: TTFT 50 ms, TPOT
  // (160 − 60)/(11 − 1) = 10 ms.
  c.on_completion({&d, 0, 10 * kMs, 60 * kMs, 160 * kMs, 0});
  const Summary s = c.summarize(2000 * kMs);
  EXPECT_EQ(s.requests_completed, 3u);
  EXPECT_EQ(s.output_tokens, 33u);  // 3 · 11: every request's tokens count
  EXPECT_EQ(s.ttft.count, 1u);
  EXPECT_NEAR(s.ttft.mean_s, 0.050, 1e-12);  // exact mean: only the third request
  EXPECT_NEAR(s.tpot.mean_s, 0.010, 1e-12);
}

TEST(Collector, MeanDecodeBatchIsDecodeTokensPerIterationNotBusyTime) {
  Collector c(1, std::nullopt, std::nullopt);
  // One replica runs two segments over 1 s of a 2 s run: 10 iterations emitting 20 decode
  // tokens (2 sequences), then 30 iterations emitting 600 (20 sequences).
  serving::SegmentRecord a;
  a.replica = 0;
  a.start_ns = 0;
  a.end_ns = 500 * kMs;
  a.iterations = 10;
  a.decode_tokens = 20;
  serving::SegmentRecord b = a;
  b.start_ns = 500 * kMs;
  b.end_ns = 1000 * kMs;
  b.iterations = 30;
  b.decode_tokens = 600;
  c.on_segment(a);
  c.on_segment(b);
  const Summary s = c.summarize(2000 * kMs);
  EXPECT_NEAR(s.replica_busy_fraction, 0.5, 1e-12);       // 1 s of 2 s, however small the batch
  EXPECT_NEAR(s.mean_decode_batch, 620.0 / 40.0, 1e-12);  // (20 + 600) / (10 + 30) = 15.5
  EXPECT_EQ(s.iterations, 40u);
}

TEST(Collector, NoWarmupByDefault) {
  Collector c(1, std::nullopt, std::nullopt);
  const auto a = spec(0, 0, 2);
  c.on_completion({&a, 0, 0, 5 * kMs, 6 * kMs, 0});
  EXPECT_EQ(c.summarize(10 * kMs).ttft.count, 1u);
}

}  // namespace
}  // namespace fleetsim::metrics
