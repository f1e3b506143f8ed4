// Tests for sim/workload/slo: SLO targets at percentiles in a scenario's and a class's slo:,
// the per-request bounds they imply, old plain files unchanged, and every error.
#include "sim/workload/slo.h"

#include <gtest/gtest.h>

#include "tests/sim/scenario_text.h"

namespace fleetsim::workload {
namespace {

// Llama-3.1-8B on one H100, 4 requests/s for 10 s; `slo` is the slo: section's text.
std::string scenario(const std::string& slo, const std::string& classes = "") {
  return R"(name: slotest
model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
serving: {replicas: 1}
workload:
  duration: 10s
  arrival: {process: poisson, rate: 4/s}
  prompt_tokens: {dist: fixed, value: 200}
  output_tokens: {dist: fixed, value: 50}
)" + classes +
         "slo: " + slo + "\n";
}

TEST(Slo, PercentileNamesReadBack) {
  EXPECT_EQ(percentile_name(0.99), "p99");
  EXPECT_EQ(percentile_name(0.5), "p50");
  EXPECT_EQ(percentile_name(0.999), "p99.9");  // 99.9, not 99.900000000000006
  EXPECT_EQ(percentile_name(0.955), "p95.5");
}

TEST(Slo, OldPlainFilesKeepTheirMeaning) {
  const scenario::Scenario sc = test::load_text(scenario("{ttft: 2s, tpot: 50ms}"), "s.yaml");
  ASSERT_TRUE(sc.slo_ttft_s && sc.slo_tpot_s);
  EXPECT_DOUBLE_EQ(*sc.slo_ttft_s, 2.0);
  EXPECT_DOUBLE_EQ(*sc.slo_tpot_s, 0.050);
  EXPECT_TRUE(sc.slo_plain);
  EXPECT_TRUE(sc.slo_targets.empty());  // nothing at percentiles: runs and plans as before
}

TEST(Slo, PercentilesAnyNumberSortedWithTheTailAsPerRequestBound) {
  const scenario::Scenario sc = test::load_text(
      scenario("{ttft: {p99: 1s, p50: 300ms}, tpot: 50ms, itl: {p99.9: 500ms, p95: 80ms}}"),
      "s.yaml");
  // TTFT's per-request bound is its highest percentile's (p99: 1 s), not p50's.
  EXPECT_DOUBLE_EQ(*sc.slo_ttft_s, 1.0);
  EXPECT_DOUBLE_EQ(*sc.slo_tpot_s, 0.050);
  EXPECT_TRUE(sc.slo_plain);  // tpot is plain
  // Metric order ttft, tpot, itl; ascending percentile within each.
  ASSERT_EQ(sc.slo_targets.size(), 4u);
  EXPECT_EQ(sc.slo_targets[0].metric, SloMetric::kTtft);
  EXPECT_DOUBLE_EQ(sc.slo_targets[0].quantile, 0.50);
  EXPECT_DOUBLE_EQ(sc.slo_targets[0].bound_s, 0.300);
  EXPECT_DOUBLE_EQ(sc.slo_targets[1].quantile, 0.99);
  EXPECT_EQ(sc.slo_targets[2].metric, SloMetric::kItl);
  EXPECT_DOUBLE_EQ(sc.slo_targets[2].quantile, 0.95);
  EXPECT_DOUBLE_EQ(sc.slo_targets[3].quantile, 0.999);
  EXPECT_DOUBLE_EQ(sc.slo_targets[3].bound_s, 0.5);
  EXPECT_EQ(sc.slo_targets[3].cls, "");
}

TEST(Slo, PercentileOnlyIsNotPlain) {
  const scenario::Scenario sc =
      test::load_text(scenario("{tpot: {p90: 40ms}, itl: {p99: 200ms}}"), "s.yaml");
  EXPECT_FALSE(sc.slo_plain);
  EXPECT_FALSE(sc.slo_ttft_s.has_value());
  EXPECT_DOUBLE_EQ(*sc.slo_tpot_s, 0.040);
}

TEST(Slo, ClassTargetsCarryTheClassName) {
  const std::string classes = R"(  classes:
    - {name: chat, share: 0.5, slo: {ttft: {p90: 500ms}}}
    - {name: batch, share: 0.5}
)";
  const scenario::Scenario sc = test::load_text(scenario("{ttft: 2s}", classes), "s.yaml");
  const auto w = sc.make_workload(1);
  ASSERT_EQ(w->classes().size(), 2u);
  const RequestClass& chat = w->classes()[0];
  EXPECT_DOUBLE_EQ(chat.slo_ttft_s, 0.5);  // the p90 bound is its per-request bound
  ASSERT_EQ(chat.slo_targets.size(), 1u);
  EXPECT_EQ(chat.slo_targets[0].cls, "chat");
  EXPECT_DOUBLE_EQ(chat.slo_targets[0].quantile, 0.90);
  EXPECT_TRUE(w->classes()[1].slo_targets.empty());
}

TEST(Slo, BadValuesNameFileLineFieldAndHint) {
  // The slo: line is line 10 of the text (name: is line 1).
  std::string e = test::load_error(scenario("{ttft: {p101: 1s}}"), "s.yaml");
  EXPECT_NE(e.find("s.yaml:10"), std::string::npos) << e;
  EXPECT_NE(e.find("'slo.ttft.p101'"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a percentile key"), std::string::npos) << e;
  EXPECT_NE(e.find("p99.9"), std::string::npos) << e;  // the hint's example
  e = test::load_error(scenario("{ttft: {99: 1s}}"), "s.yaml");
  EXPECT_NE(e.find("expected a percentile key"), std::string::npos) << e;
  e = test::load_error(scenario("{ttft: {p0: 1s}}"), "s.yaml");
  EXPECT_NE(e.find("expected a percentile key"), std::string::npos) << e;
  // A bare number is refused as everywhere else (units in strings).
  e = test::load_error(scenario("{tpot: {p99: 50}}"), "s.yaml");
  EXPECT_NE(e.find("'slo.tpot.p99'"), std::string::npos) << e;
  e = test::load_error(scenario("{tpot: {p99: 0ms}}"), "s.yaml");
  EXPECT_NE(e.find("must be > 0"), std::string::npos) << e;
  e = test::load_error(scenario("{itl: 200ms}"), "s.yaml");
  EXPECT_NE(e.find("'slo.itl'"), std::string::npos) << e;
  EXPECT_NE(e.find("needs a percentile"), std::string::npos) << e;
  e = test::load_error(scenario("{ttft: {}}"), "s.yaml");
  EXPECT_NE(e.find("no percentile given"), std::string::npos) << e;
  e = test::load_error(scenario("{ttft: {p99: 1s, p99.0: 2s}}"), "s.yaml");
  EXPECT_NE(e.find("given twice"), std::string::npos) << e;
  e = test::load_error(scenario("{ttfb: 1s}"), "s.yaml");
  EXPECT_NE(e.find("did you mean 'ttft'"), std::string::npos) << e;
  // Inter-token targets are over all gaps: not per class.
  e = test::load_error(
      scenario("{ttft: 2s}", "  classes: [{name: chat, share: 1, slo: {itl: {p99: 1s}}}]\n"),
      "s.yaml");
  EXPECT_NE(e.find("not to one class"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim::workload
