// The 700M-user fleet with its serving techniques turned on from the command line: prefix
// caching with the prefix-aware router, a cascade through the mini pools, a response cache
// and speculative decoding in one pool; then prefill/decode pools in one region. Each run
// is a short, sampled slice of chatgpt-700m.yaml (1 h from 14:00 UTC, 0.03 % of users).
#include <nlohmann/json.hpp>

#include <cmath>

#include "cli_fixture.h"

namespace {

using nlohmann::json;

const std::string kSlice =
    "run scenarios/chatgpt-700m.yaml --quiet --set users.sample=0.0003 --set users.duration=1h "
    "--set users.start.hour_utc=14 ";

TEST_F(Cli, ChatgptFleetRunsWithCachingCascadeResponseCacheAndSpeculation) {
  const Result r = run(kSlice +
                       "--set serving.prefix_caching=true --set serving.router=prefix-aware "
                       "--set 'serving.cascade={small_model: gpt-oss-120b, escalation: 0.2}' "
                       "--set 'serving.response_cache={hit_rate: 0.05}' "
                       "--set 'fleet.regions[0].pools[1].speculative={draft_model: gpt-oss-20b, "
                       "k: 3, acceptance: 0.7}' --out '" +
                       (dir_ / "out").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json s = json::parse(slurp(dir_ / "out" / "summary.json"));
  const json& t = s["techniques"];
  const double calls = s["requests_completed"].get<double>();
  ASSERT_GT(calls, 1000);
  // Every turn after a session's first finds its own context; every first turn the 700-token
  // system prompt (two 256-token blocks): a large share of prompt tokens is cached.
  EXPECT_TRUE(t["prefix_caching"]["enabled"].get<bool>());
  EXPECT_GT(t["prefix_caching"]["hit_rate"].get<double>(), 0.3);
  EXPECT_EQ(t["router_in_region"], "prefix-aware");
  // Cascade: 62 % + 8 % + 2 % of sessions are the GPT-4-class model's (chat, reasoning,
  // agent); a fifth of their calls is escalated: several percent of all calls.
  EXPECT_GT(t["cascade"]["escalations"].get<double>(), 0.05 * calls);
  EXPECT_LT(t["cascade"]["escalations"].get<double>(), 0.25 * calls);
  // 5 % of calls answered by the response cache (within 4 sd of 0.05 · calls).
  const double hits = t["response_cache"]["hits"].get<double>();
  EXPECT_NEAR(hits, 0.05 * calls, 4 * std::sqrt(calls * 0.05 * 0.95));
  ASSERT_EQ(t["speculative_pools"].size(), 1u);
  EXPECT_EQ(t["speculative_pools"][0]["pool"], "americas/h100-mini");
  EXPECT_EQ(t["speculative_pools"][0]["draft"], "gpt-oss-20b");
  // The report says what ran.
  const std::string report = slurp(dir_ / "out" / "report.md");
  EXPECT_NE(report.find("prefix caching:"), std::string::npos);
  EXPECT_NE(report.find("cascade: gpt-oss-120b answers first"), std::string::npos);
}

TEST_F(Cli, ChatgptFleetRunsWithPrefillAndDecodePools) {
  const Result r =
      run(kSlice +
          "--set 'fleet.regions[1].pools=[{name: b200-prefill, replicas: 2300, role: prefill}, "
          "{name: b200-decode, replicas: 2300, role: decode}, {name: h100-mini, replicas: 1200, "
          "model: gpt-oss-120b, hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1, "
          "expert_parallel: false}}]' --out '" +
          (dir_ / "out").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json s = json::parse(slurp(dir_ / "out" / "summary.json"));
  const json& t = s["techniques"];
  EXPECT_EQ(t["disaggregated_pools"]["europe/b200-prefill"], "prefill");
  EXPECT_EQ(t["disaggregated_pools"]["europe/b200-decode"], "decode");
  // Every GPT-4-class call served in Europe with more than one output token moves its KV
  // cache once; the MQA model's cache is small (30 KB a token in FP8), so a transfer takes
  // well under a millisecond over 8 NICs.
  EXPECT_GT(t["kv_transfers"].get<double>(), 100);
  EXPECT_GT(t["kv_transfer_mean_s"].get<double>(), 0);
  EXPECT_LT(t["kv_transfer_mean_s"].get<double>(), 0.01);
}

}  // namespace
