// Tests for sim/metrics/collector: warm-up requests count towards throughput, not latency;
// percentile SLO targets with rejected requests counted as misses, and over token gaps.
#include "sim/metrics/collector.h"

#include <gtest/gtest.h>

#include <vector>

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

// 100 requests with TTFT 1, 2, ..., 100 ms (and TPOT 10 ms), `rejected` more rejected.
Summary hundred(const std::vector<workload::SloTarget>& targets, int rejected) {
  Collector c(1, std::nullopt, std::nullopt);
  c.set_slo_targets(targets);
  std::vector<workload::RequestSpec> specs;
  for (int i = 0; i < 100 + rejected; ++i) specs.push_back(spec(static_cast<uint64_t>(i), 0, 11));
  for (int i = 0; i < 100; ++i)
    c.on_completion(
        {&specs[static_cast<std::size_t>(i)], 0, 0, (i + 1) * kMs, (i + 1) * kMs + 100 * kMs, 0});
  for (int i = 100; i < 100 + rejected; ++i)
    c.on_reject(specs[static_cast<std::size_t>(i)], 0, serving::RejectReason::kQueueFull, 0);
  return c.summarize(1000 * kMs);
}

TEST(Collector, PercentileTargetsCountRejectedRequestsAsMisses) {
  const workload::SloTarget ttft_p90{workload::SloMetric::kTtft, 0.90, 0.095, "", false};
  // No rejections: p90 of 1..100 ms is 90 ms (0.5 % histogram error) ≤ 95 ms; margin
  // 1 − 90/95 = 5.3 %.
  Summary s = hundred({ttft_p90}, 0);
  ASSERT_EQ(s.slo_checks.size(), 1u);
  EXPECT_NEAR(s.slo_checks[0].value_s, 0.090, 0.090 * 0.005);
  EXPECT_TRUE(s.slo_checks[0].met);
  EXPECT_NEAR(s.slo_checks[0].margin(), 1 - 0.090 / 0.095, 0.006);
  // 10 rejected: 90 % of 110 requests = 99 must be within 95 ms, all among the 100 completed,
  // so the quantile at 99/100 = 0.99 → 99 ms > 95 ms: missed by 1 − 99/95 = −4.2 %.
  s = hundred({ttft_p90}, 10);
  EXPECT_NEAR(s.slo_checks[0].value_s, 0.099, 0.099 * 0.005);
  EXPECT_FALSE(s.slo_checks[0].met);
  EXPECT_FALSE(s.slo_checks[0].beyond);
  EXPECT_LT(s.slo_checks[0].margin(), -0.03);
  // 20 rejected: 90 % of 120 = 108 within the bound, more than the 100 completed.
  s = hundred({ttft_p90}, 20);
  EXPECT_TRUE(s.slo_checks[0].beyond);
  EXPECT_FALSE(s.slo_checks[0].met);
}

TEST(Collector, InterTokenTargetsAreOverAllTokenGaps) {
  Collector c(1, std::nullopt, std::nullopt);
  const workload::SloTarget p99{workload::SloMetric::kItl, 0.99, 0.020, "", false};
  const workload::SloTarget p999{workload::SloMetric::kItl, 0.999, 0.200, "", false};
  c.set_slo_targets({p99, p999});
  // 995 gaps of 10 ms and 5 stalls of 1 s: p99 is the 990th of 1000 gaps = 10 ms (met,
  // margin 1 − 10/20 = 50 %); p99.9 is the 999th = 1 s > 200 ms (missed by 400 %).
  c.on_token_gaps(10 * kMs, 995);
  c.on_token_gaps(1000 * kMs, 5);
  const Summary s = c.summarize(2000 * kMs);
  ASSERT_EQ(s.slo_checks.size(), 2u);
  EXPECT_NEAR(s.slo_checks[0].value_s, 0.010, 0.010 * 0.005);
  EXPECT_TRUE(s.slo_checks[0].met);
  EXPECT_NEAR(s.slo_checks[0].margin(), 0.5, 0.005);
  EXPECT_NEAR(s.slo_checks[1].value_s, 1.0, 0.005);
  EXPECT_FALSE(s.slo_checks[1].met);
  EXPECT_NEAR(s.slo_checks[1].margin(), -4.0, 0.03);
}

TEST(Collector, ClassTargetsAreCheckedOnTheirClassOnly) {
  Collector c(1, std::nullopt, std::nullopt);
  workload::RequestClass chat, batch;
  chat.name = "chat";
  batch.name = "batch";
  chat.slo_targets = {{workload::SloMetric::kTtft, 0.5, 0.030, "chat", false}};
  c.set_classes({chat, batch});
  // chat: TTFT 10, 20, 40 ms (median 20 ms ≤ 30 ms); batch: 500 ms, not in chat's check.
  std::vector<workload::RequestSpec> specs;
  for (int i = 0; i < 4; ++i) specs.push_back(spec(static_cast<uint64_t>(i), 0, 2));
  specs[3].cls = 1;
  const SimTime ttft[] = {10 * kMs, 20 * kMs, 40 * kMs, 500 * kMs};
  for (int i = 0; i < 4; ++i)
    c.on_completion({&specs[static_cast<std::size_t>(i)], 0, 0, ttft[i], ttft[i] + kMs, 0});
  const Summary s = c.summarize(1000 * kMs);
  ASSERT_EQ(s.slo_checks.size(), 1u);
  EXPECT_EQ(s.slo_checks[0].target.cls, "chat");
  EXPECT_NEAR(s.slo_checks[0].value_s, 0.020, 0.020 * 0.005);
  EXPECT_TRUE(s.slo_checks[0].met);
}

TEST(MeetsSlo, TtftAlwaysTpotOnlyWithMoreThanOneTokenAndZeroIsNoTarget) {
  // Targets TTFT 1 s, TPOT 50 ms.
  EXPECT_TRUE(meets_slo(0.5, 0.04, 1.0, 0.05));
  EXPECT_TRUE(meets_slo(1.0, 0.05, 1.0, 0.05));   // at the target: met
  EXPECT_FALSE(meets_slo(1.5, 0.04, 1.0, 0.05));  // TTFT over
  EXPECT_FALSE(meets_slo(0.5, 0.06, 1.0, 0.05));  // TPOT over
  EXPECT_TRUE(meets_slo(0.5, -1, 1.0, 0.05));     // one output token: no TPOT to judge
  EXPECT_TRUE(meets_slo(9, 9, 0, 0));             // no targets
}

}  // namespace
}  // namespace fleetsim::metrics
