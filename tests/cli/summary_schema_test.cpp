// One result schema: a single-pool run's summary.json and a fleet run's carry the same basic
// keys (reports::put_common_metrics), and in the fleet they agree with its own calls_* counts
// and technique figures.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_fixture.h"

using nlohmann::json;

namespace {

// The contract, written out (not read from the code): what every summary.json must have.
const char* const kCommonKeys[] = {
    "requests_arrived", "requests_completed", "requests_rejected", "input_tokens", "output_tokens",
    "input_tok_per_s", "output_tok_per_s", "requests_per_s", "goodput_req_per_s", "slo_attainment",
    "sim_duration_s", "ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "ttft_max_s",
    "tpot_mean_s", "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "tpot_max_s", "itl_p99_s",
    "e2e_mean_s", "e2e_p50_s", "e2e_p99_s", "queue_p99_s",
    // The serving techniques' counters: every technique runs in one pool and in fleets.
    "requests_rejected_too_long_for_model", "requests_rejected_too_long_for_kv_cache",
    "requests_rejected_too_long_for_batch", "requests_rejected_queue_full", "preemptions",
    "prefix_lookup_tokens", "prefix_hit_tokens", "prefix_hit_rate", "prefix_host_tokens",
    "kv_transfers", "kv_transfer_bytes", "kv_transfer_mean_s", "response_cache_hits",
    "escalations"};

void expect_common_keys(const json& j, const std::string& what) {
  for (const char* k : kCommonKeys) EXPECT_TRUE(j.contains(k)) << what << " lacks " << k;
}

TEST_F(Cli, OnePoolAndFleetSummariesShareTheBasicKeys) {
  const std::string one = (dir_ / "one").string(), fleet = (dir_ / "fleet").string();
  ASSERT_EQ(run("run scenarios/chat-service.yaml --quiet --out " + one).code, 0);
  const Result r =
      run("run scenarios/default.yaml --quiet --set users.sample=0.0005 --set users.duration=2h "
          "--out " +
          fleet);
  ASSERT_EQ(r.code, 0) << r.err;
  const json a = json::parse(slurp(one + "/summary.json"));
  const json f = json::parse(slurp(fleet + "/summary.json"));
  expect_common_keys(a, "the single-pool summary");
  expect_common_keys(f, "the fleet summary");
  // The fleet's basic keys are its calls, not another count: completed = calls_completed,
  // arrived = calls_arrived (both the simulated, unscaled counts).
  EXPECT_EQ(f["requests_completed"], f["calls_completed"]);
  EXPECT_EQ(f["requests_arrived"], f["calls_arrived"]);
  EXPECT_GT(f["requests_completed"].get<double>(), 0.0);
  // The technique counters at the top level are those of the fleet's techniques section.
  EXPECT_EQ(f["kv_transfers"], f["techniques"]["kv_transfers"]);
  EXPECT_EQ(f["response_cache_hits"], f["techniques"]["response_cache"]["hits"]);
  EXPECT_EQ(f["escalations"], f["techniques"]["cascade"]["escalations"]);
  EXPECT_EQ(f["prefix_hit_tokens"], f["techniques"]["prefix_caching"]["hit_tokens"]);
  // Rates are totals over the simulated span: output_tok_per_s · sim_duration_s =
  // output_tokens (to rounding of the division).
  for (const json* j : {&a, &f}) {
    const double span = (*j)["sim_duration_s"].get<double>();
    ASSERT_GT(span, 0.0);
    EXPECT_NEAR((*j)["output_tok_per_s"].get<double>() * span, (*j)["output_tokens"].get<double>(),
                1e-9 * (*j)["output_tokens"].get<double>() + 1e-6);
  }
}

}  // namespace
