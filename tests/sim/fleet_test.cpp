// Tests for sim/fleet: geo routing and spillover (with the WAN round trip in TTFT), the
// autoscaler's reaction time, failures that lose no call, identical results for any thread
// count, calls split between pools by prompt length, and input errors of the fleet section.
#include "sim/simulation.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hw_models/error.h"
#include "scenario_text.h"

namespace fleetsim::fleet {
namespace {

// Llama-3.1-8B on H100s; 1M weekly users sampled at 1 %; flat diurnal curve. `regions` is
// the YAML list of regions, `extra` more fleet keys.
std::string scenario_text(const std::string& regions, const std::string& extra = "",
                          const std::string& users_extra = "") {
  return R"(
name: t
seed: 3
model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
serving: {engine: ideal, policy: vllm, chunked_prefill: true, max_num_seqs: 64, max_batched_tokens: 2048}
users:
  weekly_active: 1e6
  daily_active_fraction: 0.4
  sessions_per_day: 2
  turns_per_session: 3
  think_time: 20s
  prompt_tokens: {dist: lognormal, median: 200, sigma: 0.8, max: 4000}
  output_tokens: {dist: lognormal, median: 150, sigma: 0.8, max: 1000}
  duration: 2h
  sample: 0.1
)" + users_extra +
         R"(
fleet:
  regions:
)" + regions +
         extra + R"(
slo: {ttft: 2s, tpot: 100ms}
)";
}

scenario::Scenario load(const std::string& text) { return test::load_text(text, "fleet.yaml"); }
std::string error_of(const std::string& text) { return test::load_error(text, "fleet.yaml"); }

TEST(Fleet, RegionWithoutDatacenterSpillsEverythingAndPaysTheRoundTrip) {
  // Region "far" has users but no pools: all its calls go to "dc", and each one pays its
  // users' round trip (40 ms) plus the WAN hop (150 ms) before reaching a replica, so its
  // TTFT is at least 190 ms. "dc"'s own users pay 10 ms.
  const auto sc = load(scenario_text(R"(
    - {name: dc, utc_offset: 0h, users: 0.5, diurnal: flat, user_rtt: 10ms, wan_rtt: {far: 150ms},
       pools: [{name: h100, replicas: 20}]}
    - {name: far, utc_offset: 0h, users: 0.5, diurnal: flat, user_rtt: 40ms, pools: []}
)"));
  const FleetResult r = run_fleet(sc, {}, 1);
  const RegionResult& dc = r.regions[0];
  const RegionResult& far = r.regions[1];
  ASSERT_GT(far.arrivals, 1000u);
  EXPECT_EQ(far.spilled_out, far.arrivals);
  EXPECT_EQ(dc.spilled_out, 0u);
  EXPECT_EQ(far.served, 0u);
  EXPECT_EQ(dc.served, r.summary.requests_completed);
  EXPECT_EQ(r.summary.requests_completed, dc.arrivals + far.arrivals);
  // The fastest call from "far" cannot beat 190 ms; at p50 the ~60 ms of service adds on.
  EXPECT_GT(r.summary.ttft.p50_s, 0.010);
  EXPECT_GE(r.summary.ttft.max_s, 0.190);
}

TEST(Fleet, RoundRobinAcrossRegionsSendsEveryOtherCallAway) {
  // Two equal regions, half the users each; round-robin across regions alternates between
  // them whatever the home region: about half of each region's calls are served by the
  // other (every call pays the 100 ms WAN round trip when it goes away), and each region
  // serves about half of all calls. With the default (spill), nothing leaves home: the
  // regions are far from saturated.
  const std::string regions = R"(
    - {name: a, utc_offset: 0h, users: 0.5, diurnal: flat, user_rtt: 10ms, wan_rtt: {b: 100ms},
       pools: [{name: h100, replicas: 10}]}
    - {name: b, utc_offset: 0h, users: 0.5, diurnal: flat, user_rtt: 10ms, pools: [{name: h100, replicas: 10}]}
)";
  const FleetResult rr =
      run_fleet(load(scenario_text(regions, "  routing: {across_regions: round-robin}\n")), {}, 1);
  const FleetResult spill = run_fleet(load(scenario_text(regions)), {}, 1);
  const RegionResult &a = rr.regions[0], &b = rr.regions[1];
  ASSERT_GT(a.arrivals, 1000u);
  EXPECT_NEAR(static_cast<double>(a.spilled_out), 0.5 * static_cast<double>(a.arrivals),
              0.05 * static_cast<double>(a.arrivals));
  EXPECT_NEAR(static_cast<double>(a.served), 0.5 * static_cast<double>(a.served + b.served),
              1.0);  // strict alternation: the two differ by at most one call
  EXPECT_EQ(spill.regions[0].spilled_out + spill.regions[1].spilled_out, 0u);
  // The calls sent away pay the WAN: the mean TTFT grows by about half of 100 ms.
  EXPECT_GT(rr.summary.ttft.mean_s - spill.summary.ttft.mean_s, 0.04);
}

// "small" (10 replicas, all the users), "near" (30 ms away) and "far" (200 ms), 100 each.
const char* kThreeRegions = R"(
    - {name: small, utc_offset: 0h, users: 1, diurnal: flat, user_rtt: 10ms,
       wan_rtt: {near: 30ms, far: 200ms}, pools: [{name: h100, replicas: 10}]}
    - {name: near, utc_offset: 0h, users: 0, diurnal: flat, wan_rtt: {far: 200ms}, pools: [{name: h100, replicas: 100}]}
    - {name: far, utc_offset: 0h, users: 0, diurnal: flat, pools: [{name: h100, replicas: 100}]}
)";

TEST(Fleet, SaturatedRegionSpillsToTheNearestRegionWithRoom) {
  // "small" has 1 replica (64 batch slots) for half the users: about 1M·0.4·2·3·0.5 /
  // 86400 s · 0.1 sample = 1.4 calls/s, each ~2-4 s long, so its calls in flight stay far
  // below 64 · 0.05 = 3.2 only rarely: with spill_load 0.05 most of its calls spill, and
  // they go to "near" (30 ms), never to "far" (200 ms), which has room too.
  const auto sc = load(scenario_text(kThreeRegions, "  routing: {spill_load: 0.05}\n"));
  const FleetResult r = run_fleet(sc, {}, 1);
  ASSERT_GT(r.regions[0].arrivals, 1000u);
  EXPECT_GT(r.regions[0].spilled_out, 0u);
  EXPECT_EQ(r.regions[1].spilled_in, r.regions[0].spilled_out);
  EXPECT_EQ(r.regions[2].spilled_in, 0u);
  EXPECT_EQ(r.regions[0].served + r.regions[1].served, r.summary.requests_completed);

  // The same without spillover pressure (spill_load 100): everything stays home.
  const auto calm = load(scenario_text(kThreeRegions, "  routing: {spill_load: 100}\n"));
  const FleetResult c = run_fleet(calm, {}, 1);
  EXPECT_EQ(c.regions[0].spilled_out, 0u);
  EXPECT_EQ(c.regions[0].served, c.summary.requests_completed);
}

TEST(Fleet, AutoscalerAddsReplicasOneLoadTimeAfterTheFirstTick) {
  // One pool starting at 1 replica (min 1, max 10), all users (no sampling) for 5 min:
  // 1M·0.4·2·3 / 86400 s = 27.8 calls/s, each ~1-2 s long, i.e. ~40 in flight on 64 slots:
  // utilization ~0.6, above the 0.3 target, so the first tick that sees the load scales
  // up. Load time = startup 30 s + weights / storage: Llama-3.1-8B in BF16 is 16.06 GB on
  // one server at 2 GB/s = 8.03 s → 38.0 s. Ticks every 10 s; report intervals of 10 s.
  // The tick at 10 s (or 20 s, if the load had not built up at 10 s) starts replicas that
  // are active 38 s later: the intervals up to [40, 50) s show exactly 1 replica, and
  // [70, 80) s shows more.
  std::string text =
      scenario_text(R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 1, min_replicas: 1, max_replicas: 10}]}
)",
                    "  autoscaling: {mode: reactive, target: 0.3, interval: 10s, cooldown: 10min, "
                    "startup: 30s, storage_bandwidth: 2GB/s}\n  report_interval: 10s\n");
  text.replace(text.find("duration: 2h"), 12, "duration: 5min");
  text.replace(text.find("sample: 0.1"), 11, "sample: 1");
  const auto sc = load(text);
  EXPECT_NEAR(sc.fleet->regions[0].pools[0].load_time_s, 30.0 + 16.06e9 / 2e9, 0.1);
  const FleetResult r = run_fleet(sc, {}, 1);
  const auto& series = r.regions[0].series;
  ASSERT_GT(series.size(), 10u);
  for (size_t k = 0; k < 5; ++k) EXPECT_DOUBLE_EQ(series[k].replicas_mean, 1.0) << "interval " << k;
  EXPECT_GT(series[7].replicas_mean, 1.5);
  EXPECT_GT(r.pools[0].scale_ups, 0u);
  EXPECT_LE(r.pools[0].replicas_peak, 10);
}

TEST(Fleet, SloAutoscalerGrowsAPoolThatMissesItsTarget) {
  // A single replica under 4x the sessions (1M·0.4·8·3 / 86400 s = 111 calls/s on one H100,
  // several times what it serves within a TTFT SLO of 2 s): its attainment falls below
  // 0.99 within the first minute, and each tick below target adds max(1, 10 %) replicas,
  // up to max_replicas 10.
  std::string text = scenario_text(
      R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 1, min_replicas: 1, max_replicas: 10}]}
)",
      "  autoscaling: {mode: reactive, metric: slo, target: 0.99, interval: 10s, startup: 10s}\n");
  text.replace(text.find("duration: 2h"), 12, "duration: 5min");
  text.replace(text.find("sample: 0.1"), 11, "sample: 1");
  text.replace(text.find("sessions_per_day: 2"), 19, "sessions_per_day: 8");
  const FleetResult r = run_fleet(load(text), {}, 1);
  EXPECT_GT(r.pools[0].scale_ups, 0u);
  EXPECT_GT(r.pools[0].replicas_peak, 1);
  EXPECT_LE(r.pools[0].replicas_peak, 10);
  // An attainment target above 1 is an input error.
  std::string bad = text;
  bad.replace(bad.find("target: 0.99"), 12, "target: 1.50");
  EXPECT_NE(error_of(bad).find("at most 1"), std::string::npos);
}

TEST(Fleet, FailuresLoseNoCall) {
  // GPU MTBF 2 h on 20 single-GPU replicas for 2 h: about 20 failures expected. Every
  // call ends completed or failed, and the calls a failed replica held are retried.
  const auto sc =
      load(scenario_text(R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 200}]}
)",
                         "  failures: {gpu: {mtbf: 2h, mttr: 10min}, retry_delay: 1s}\n"));
  RunOptions opt;
  opt.check_invariants = false;
  const FleetResult r = run_fleet(sc, opt, 1);
  uint64_t failures = 0;
  for (const auto& p : r.pools) failures += p.failures;
  EXPECT_GE(failures, 8u);  // Poisson(20): P(X < 8) ≈ 0.0008
  EXPECT_LE(failures, 35u);
  EXPECT_GT(r.retried, 0u);
  EXPECT_EQ(r.unfinished, 0u);
  EXPECT_EQ(r.summary.requests_arrived, r.summary.requests_completed + r.failed_calls);
  EXPECT_LE(r.retried_completed, r.retried);
  // Repairs after the 2 h span are not simulated, so the run ends when the last calls
  // finish (minutes after), and GPU time is counted within the span: 20 replicas × 2 h
  // = 40 replica-hours at most, of which the busy hours are a part.
  EXPECT_LT(r.sim_end_s, 3 * 3600.0);
  EXPECT_LE(r.pools[0].replica_hours, 40.0 + 1e-9);
  EXPECT_LE(r.pools[0].busy_hours, r.pools[0].replica_hours);
}

TEST(Fleet, CallsFailWhenNoReplicaWillComeBack) {
  // 2 replicas with a GPU MTBF of 2 min and repairs of ~100 h: both fail within minutes and
  // stay down past the 30-min run. Calls then wait for a replica that never comes, so they
  // fail (not loop forever); every call is accounted for.
  std::string text =
      scenario_text(R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 2}]}
)",
                    "  failures: {gpu: {mtbf: 2min, mttr: 100h}, retry_delay: 1s}\n");
  text.replace(text.find("duration: 2h"), 12, "duration: 30min");
  text.replace(text.find("sample: 0.1"), 11, "sample: 1");
  const FleetResult r = run_fleet(load(text), {}, 1);
  EXPECT_EQ(r.pools[0].failures, 2u);
  EXPECT_GT(r.failed_calls, 0u);
  EXPECT_EQ(r.unfinished, 0u);
  EXPECT_EQ(r.summary.requests_arrived, r.summary.requests_completed + r.failed_calls);
  EXPECT_LT(r.sim_end_s, 3600.0);
}

TEST(Fleet, SameResultForAnyThreadCountAndSeed) {
  // Two models (a class on Llama-3.2-1B): two partitions. One thread or two, and the same
  // seed twice, give identical results.
  const std::string text = scenario_text(
      R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: big, replicas: 20}, {name: small, replicas: 10, model: llama-3.2-1b}]}
)",
      "", "  classes: [{name: chat, share: 0.7}, {name: mini, share: 0.3, model: llama-3.2-1b}]\n");
  const auto sc = load(text);
  const FleetResult a = run_fleet(sc, {}, 1), b = run_fleet(sc, {}, 2), c = run_fleet(sc, {}, 2);
  for (const FleetResult* x : {&b, &c}) {
    EXPECT_EQ(a.summary.requests_completed, x->summary.requests_completed);
    EXPECT_EQ(a.summary.ttft.p99_s, x->summary.ttft.p99_s);
    EXPECT_EQ(a.summary.e2e.mean_s, x->summary.e2e.mean_s);
    EXPECT_EQ(a.events, x->events);
    ASSERT_EQ(a.pools.size(), x->pools.size());
    for (size_t i = 0; i < a.pools.size(); ++i) {
      EXPECT_EQ(a.pools[i].name, x->pools[i].name);
      EXPECT_EQ(a.pools[i].completed, x->pools[i].completed);
      EXPECT_EQ(a.pools[i].busy_hours, x->pools[i].busy_hours);
    }
  }
  ASSERT_EQ(a.summary.classes.size(), 2u);
  EXPECT_GT(a.summary.classes[1].completed, 0u);
  // Each class ran on its own model's pool.
  EXPECT_EQ(a.pools[0].completed, a.summary.classes[0].completed);
  EXPECT_EQ(a.pools[1].completed, a.summary.classes[1].completed);
}

TEST(Fleet, MixedGpuPoolsInOneRegionShareItsCalls) {
  // One region, one model, two pools of different GPUs (NVIDIA H100 and AMD MI300X, each
  // with its own memory fit and step times): power of two choices spreads the calls over
  // both, and every call is served by one of them.
  const auto sc = load(scenario_text(R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: h100, replicas: 100}, {name: mi300x, replicas: 100, hardware: {gpu: mi300x}}]}
)"));
  EXPECT_EQ(sc.fleet->regions[0].pools[1].pool.gpu.id, "mi300x");
  const FleetResult r = run_fleet(sc, {}, 1);
  ASSERT_EQ(r.pools.size(), 2u);
  EXPECT_GT(r.pools[0].completed, r.summary.requests_completed / 4);
  EXPECT_GT(r.pools[1].completed, r.summary.requests_completed / 4);
  EXPECT_EQ(r.pools[0].completed + r.pools[1].completed, r.summary.requests_completed);
}

// Two kinds of session, one turn each: chat (100-token prompts) and documents (5,000-token
// prompts), every call 50 tokens out; no system prompt, so a call's prompt is its message.
const char* kTwoLengths =
    "  classes:\n"
    "    - {name: chat, share: 0.8, turns_per_session: 1, prompt_tokens: {dist: fixed, value: "
    "100}, output_tokens: {dist: fixed, value: 50}}\n"
    "    - {name: documents, share: 0.2, turns_per_session: 1, prompt_tokens: {dist: fixed, "
    "value: 5000}, output_tokens: {dist: fixed, value: 50}}\n";

TEST(Fleet, LengthSplitSendsEachCallToItsSide) {
  // Split at 1,000 tokens: every 5,000-token call goes to the long pool and every 100-token
  // call to the short one. A pool's input tokens are the prompts it completed, so the long
  // pool's are exactly 5,000 × its calls and the short pool's 100 × its calls; the region
  // counts the long pool's calls as its long side.
  const std::string regions = R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: short, prompts: short, replicas: 20}, {name: long, prompts: long, replicas: 20}]}
)";
  const FleetResult r = run_fleet(
      load(scenario_text(regions, "  routing: {long_prompt_tokens: 1000}\n", kTwoLengths)), {}, 1);
  ASSERT_EQ(r.pools.size(), 2u);
  const PoolResult &shrt = r.pools[0], &lng = r.pools[1];
  ASSERT_GT(shrt.completed, 500u);
  ASSERT_GT(lng.completed, 100u);
  EXPECT_EQ(shrt.input_tokens, 100u * shrt.completed);
  EXPECT_EQ(lng.input_tokens, 5000u * lng.completed);
  EXPECT_EQ(shrt.completed + lng.completed, r.summary.requests_completed);
  ASSERT_EQ(r.regions[0].side_served.size(), 2u);
  EXPECT_EQ(r.regions[0].side_served[1], lng.completed);
  EXPECT_EQ(r.regions[0].side_served[0], shrt.completed);
  // One session in five is a document: the long side's share of the calls is 0.2 (binomial
  // s.d. sqrt(0.2 · 0.8 / n) < 0.02 for n > 400).
  EXPECT_NEAR(
      static_cast<double>(lng.completed) / static_cast<double>(r.summary.requests_completed), 0.2,
      0.06);
  // At 5,001 tokens nothing is long: the long pool stays idle.
  const FleetResult all_short = run_fleet(
      load(scenario_text(regions, "  routing: {long_prompt_tokens: 5001}\n", kTwoLengths)), {}, 1);
  EXPECT_EQ(all_short.pools[1].completed, 0u);
  EXPECT_EQ(all_short.pools[0].completed, all_short.summary.requests_completed);
  EXPECT_EQ(all_short.regions[0].side_served[1], 0u);
}

TEST(Fleet, LengthSplitErrorsNameThePool) {
  const std::string split = "  routing: {long_prompt_tokens: 1000}\n";
  // A side without a threshold.
  std::string e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 0h, users: 1,
       pools: [{name: s, prompts: short, replicas: 2}, {name: l, prompts: long, replicas: 2}]}
)"));
  EXPECT_NE(e.find("pool a/s (prompts: short) needs a length to split at"), std::string::npos) << e;
  EXPECT_NE(e.find("long_prompt_tokens"), std::string::npos) << e;
  EXPECT_NE(e.find("fleet.yaml:"), std::string::npos) << e;
  // A pool of the split model without a side.
  e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 0h, users: 1,
       pools: [{name: s, prompts: short, replicas: 2}, {name: l, prompts: long, replicas: 2}, {name: x, replicas: 2}]}
)",
                             split));
  EXPECT_NE(e.find("pool a/x takes them all"), std::string::npos) << e;
  // One side only.
  e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 0h, users: 1, pools: [{name: l, prompts: long, replicas: 2}]}
)",
                             split));
  EXPECT_NE(e.find("no pool of llama-3.1-8b in the region takes short prompts"), std::string::npos)
      << e;
  // A threshold with nothing split.
  e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 0h, users: 1, pools: [{name: h100, replicas: 2}]}
)",
                             split));
  EXPECT_NE(e.find("no pool takes short or long prompts"), std::string::npos) << e;
  // A misspelt side gets the list.
  e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 0h, users: 1, pools: [{name: h100, prompts: lng, replicas: 2}]}
)",
                             split));
  EXPECT_NE(e.find("prompts"), std::string::npos) << e;
  EXPECT_NE(e.find("long"), std::string::npos) << e;
}

// Three lengths: chat 100 tokens, reports 2,000, documents 5,000 (shares 0.6, 0.2, 0.2).
const char* kThreeLengths =
    "  classes:\n"
    "    - {name: chat, share: 0.6, turns_per_session: 1, prompt_tokens: {dist: fixed, value: "
    "100}, output_tokens: {dist: fixed, value: 50}}\n"
    "    - {name: reports, share: 0.2, turns_per_session: 1, prompt_tokens: {dist: fixed, "
    "value: 2000}, output_tokens: {dist: fixed, value: 50}}\n"
    "    - {name: documents, share: 0.2, turns_per_session: 1, prompt_tokens: {dist: fixed, "
    "value: 5000}, output_tokens: {dist: fixed, value: 50}}\n";

TEST(Fleet, ThreeSidedLengthSplitSendsEachCallToItsSide) {
  // Sides at 1,000 and 3,000 tokens: 100-token calls short, 2,000 medium, 5,000 long. Each
  // pool's input tokens are then exactly its calls × its one prompt length.
  const std::string regions = R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: s, prompts: short, replicas: 10}, {name: l, prompts: long, replicas: 10},
               {name: m, prompts: medium, replicas: 10}]}
)";
  const FleetResult r =
      run_fleet(load(scenario_text(regions,
                                   "  routing: {medium_prompt_tokens: 1000, long_prompt_tokens: "
                                   "3000}\n",
                                   kThreeLengths)),
                {}, 1);
  ASSERT_EQ(r.pools.size(), 3u);
  const PoolResult &s = r.pools[0], &l = r.pools[1], &m = r.pools[2];
  ASSERT_GT(s.completed, 300u);
  ASSERT_GT(m.completed, 50u);
  ASSERT_GT(l.completed, 50u);
  EXPECT_EQ(s.input_tokens, 100u * s.completed);
  EXPECT_EQ(m.input_tokens, 2000u * m.completed);
  EXPECT_EQ(l.input_tokens, 5000u * l.completed);
  EXPECT_EQ(s.completed + m.completed + l.completed, r.summary.requests_completed);
  // Sides in order short, medium, long, whatever the pools' order in the file.
  ASSERT_EQ(r.regions[0].side_served.size(), 3u);
  EXPECT_EQ(r.regions[0].side_served[0], s.completed);
  EXPECT_EQ(r.regions[0].side_served[1], m.completed);
  EXPECT_EQ(r.regions[0].side_served[2], l.completed);
}

TEST(Fleet, ClassSplitSendsEachClassToItsPools) {
  // Documents (5,000-token prompts) to the pool that names them, chat (100) to the one that
  // names no class: input tokens exactly 5,000 and 100 × calls.
  const std::string regions = R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: chat, replicas: 20}, {name: docs, classes: [documents], replicas: 20}]}
)";
  const FleetResult r = run_fleet(load(scenario_text(regions, "", kTwoLengths)), {}, 1);
  ASSERT_EQ(r.pools.size(), 2u);
  const PoolResult &chat = r.pools[0], &docs = r.pools[1];
  ASSERT_GT(chat.completed, 500u);
  ASSERT_GT(docs.completed, 100u);
  EXPECT_EQ(chat.input_tokens, 100u * chat.completed);
  EXPECT_EQ(docs.input_tokens, 5000u * docs.completed);
  ASSERT_EQ(r.regions[0].side_served.size(), 2u);
  EXPECT_EQ(r.regions[0].side_served[1], docs.completed);
  // The same pools split by length at 1,000 tokens put every call on the same side with
  // the same routers (lane 1 is long there, documents here): the same run, call for call.
  const std::string by_length = R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: chat, prompts: short, replicas: 20}, {name: docs, prompts: long, replicas: 20}]}
)";
  const FleetResult l = run_fleet(
      load(scenario_text(by_length, "  routing: {long_prompt_tokens: 1000}\n", kTwoLengths)), {},
      1);
  EXPECT_EQ(l.pools[1].completed, docs.completed);
  EXPECT_EQ(l.summary.ttft.p99_s, r.summary.ttft.p99_s);
  EXPECT_EQ(l.summary.e2e.mean_s, r.summary.e2e.mean_s);
}

TEST(Fleet, AClassWhoseListHasNoPoolInTheRegionGoesToItsOtherClassesPool) {
  // Region a names documents, region b names chat: each region's pool without classes takes
  // the class the other region named. Every call is served at home (20 replicas a pool is
  // far from the spill threshold), so each pool's input tokens are one prompt length × its
  // calls: a/x and b/z chat (100), a/y and b/w documents (5,000).
  const std::string regions = R"(
    - {name: a, utc_offset: 0h, users: 0.5, diurnal: flat, wan_rtt: {b: 50ms},
       pools: [{name: x, replicas: 20}, {name: y, classes: [documents], replicas: 20}]}
    - {name: b, utc_offset: 0h, users: 0.5, diurnal: flat,
       pools: [{name: z, classes: [chat], replicas: 20}, {name: w, replicas: 20}]}
)";
  const FleetResult r = run_fleet(load(scenario_text(regions, "", kTwoLengths)), {}, 1);
  ASSERT_EQ(r.pools.size(), 4u);
  EXPECT_EQ(r.regions[0].spilled_out + r.regions[1].spilled_out, 0u);
  const uint64_t length[4] = {100, 5000, 100, 5000};
  for (size_t j = 0; j < 4; ++j) {
    ASSERT_GT(r.pools[j].completed, 50u) << r.pools[j].name;
    EXPECT_EQ(r.pools[j].input_tokens, length[j] * r.pools[j].completed) << r.pools[j].name;
  }
}

TEST(Fleet, ClassAndThreeSidedSplitErrorsNameThePool) {
  auto pools = [](const std::string& list) {
    return "    - {name: a, utc_offset: 0h, users: 1, pools: [" + list + "]}\n";
  };
  // An unknown class gets the list of classes.
  std::string e = error_of(scenario_text(
      pools("{name: x, replicas: 2}, {name: y, classes: [docs], replicas: 2}"), "", kTwoLengths));
  EXPECT_NE(e.find("pool a/y names class 'docs', which users.classes does not have"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("the classes are: chat, documents"), std::string::npos) << e;
  EXPECT_NE(e.find("fleet.yaml:"), std::string::npos) << e;
  // Every class named: nobody takes the rest, and that is fine; none named but one pool
  // without the other classes is not.
  e = error_of(
      scenario_text(pools("{name: y, classes: [documents], replicas: 2}"), "", kTwoLengths));
  EXPECT_NE(e.find("no pool of the region takes the others (chat)"), std::string::npos) << e;
  EXPECT_NO_THROW(load(scenario_text(pools("{name: x, classes: [chat], replicas: 2}, {name: y, "
                                           "classes: [documents], replicas: 2}"),
                                     "", kTwoLengths)));
  // A class in two different lists.
  e = error_of(scenario_text(pools("{name: x, classes: [chat], replicas: 2}, {name: y, classes: "
                                   "[chat, documents], replicas: 2}"),
                             "", kTwoLengths));
  EXPECT_NE(e.find("pool a/y names class 'chat', which another pool takes with other classes"),
            std::string::npos)
      << e;
  // Both ways at once.
  e = error_of(scenario_text(pools("{name: x, prompts: short, replicas: 2}, {name: y, prompts: "
                                   "long, classes: [documents], replicas: 2}"),
                             "  routing: {long_prompt_tokens: 1000}\n", kTwoLengths));
  EXPECT_NE(e.find("both by prompt length (prompts:) and by class (classes:)"), std::string::npos)
      << e;
  // A medium side without its threshold; a medium threshold at or above the long one; a
  // three-sided split with no medium pool.
  const std::string three =
      "{name: s, prompts: short, replicas: 2}, {name: m, prompts: medium, "
      "replicas: 2}, {name: l, prompts: long, replicas: 2}";
  e = error_of(scenario_text(pools(three), "  routing: {long_prompt_tokens: 1000}\n", kTwoLengths));
  EXPECT_NE(e.find("pool a/m (prompts: medium) needs a medium side"), std::string::npos) << e;
  e = error_of(scenario_text(pools(three),
                             "  routing: {long_prompt_tokens: 1000, medium_prompt_tokens: 1000}\n",
                             kTwoLengths));
  EXPECT_NE(e.find("medium_prompt_tokens (1000) must be below long_prompt_tokens (1000)"),
            std::string::npos)
      << e;
  e = error_of(scenario_text(
      pools("{name: s, prompts: short, replicas: 2}, {name: l, prompts: long, replicas: 2}"),
      "  routing: {long_prompt_tokens: 3000, medium_prompt_tokens: 1000}\n", kTwoLengths));
  EXPECT_NE(e.find("no pool of llama-3.1-8b in the region takes medium prompts"), std::string::npos)
      << e;
}

TEST(Fleet, SampledRunScalesPoolsAndCounts) {
  // sample 0.1 of 200 replicas → 20 simulated; of 5 → round(0.5) → at least 1.
  const auto sc = load(scenario_text(R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: a, replicas: 200}, {name: b, replicas: 5}]}
)"));
  const FleetResult r = run_fleet(sc, {}, 1);
  EXPECT_EQ(r.pools[0].replicas_simulated, 20);
  EXPECT_EQ(r.pools[1].replicas_simulated, 1);
  EXPECT_DOUBLE_EQ(r.sample, 0.1);
  // 1M · 0.4 · 2 sessions/day · 0.1 sample · 2 h / 24 h = 6,667 sessions (Poisson s.d. 82).
  EXPECT_NEAR(static_cast<double>(r.sessions), 6667.0, 4 * 82.0);
}

TEST(Fleet, InputErrorsNameTheField) {
  const std::string ok_regions = R"(
    - {name: a, utc_offset: 0h, users: 1, wan_rtt: {b: 50ms}, pools: [{name: h100, replicas: 2}]}
    - {name: b, utc_offset: 0h, users: 1, pools: []}
)";
  EXPECT_NO_THROW(load(scenario_text(ok_regions)));
  // A missing round trip between two regions.
  std::string e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 0h, users: 1, pools: [{name: h100, replicas: 2}]}
    - {name: b, utc_offset: 0h, users: 1, pools: []}
)"));
  EXPECT_NE(e.find("no round-trip time between a and b"), std::string::npos) << e;
  // workload: and fleet: together.
  e = error_of(scenario_text(ok_regions) +
               "workload: {requests: 10, arrival: {process: poisson, rate: 1/s}, "
               "prompt_tokens: 10, output_tokens: 10}\n");
  EXPECT_NE(e.find("users:, not workload:"), std::string::npos) << e;
  // A class asks for a model no pool serves.
  e = error_of(
      scenario_text(ok_regions, "", "  classes: [{name: x, share: 1, model: llama-3.1-70b}]\n"));
  EXPECT_NE(e.find("no pool serves llama-3.1-70b"), std::string::npos) << e;
  // Unknown key with its line.
  e = error_of(scenario_text(ok_regions, "  autoscaling: {mode: reactive, targte: 0.5}\n"));
  EXPECT_NE(e.find("targte"), std::string::npos) << e;
  EXPECT_NE(e.find("fleet.yaml:"), std::string::npos) << e;
  // Time zones carry their unit and stay within UTC−12 … UTC+14.
  e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 15h, users: 1, pools: [{name: h100, replicas: 2}]}
)"));
  EXPECT_NE(e.find("at most 14h"), std::string::npos) << e;
  e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 5, users: 1, pools: [{name: h100, replicas: 2}]}
)"));
  EXPECT_NE(e.find("utc_offset"), std::string::npos) << e;
  EXPECT_NO_THROW(load(scenario_text(R"(
    - {name: a, utc_offset: -9.5h, users: 1, pools: [{name: h100, replicas: 2}]}
)")));
  // A pool whose model does not fit its GPU.
  e = error_of(scenario_text(R"(
    - {name: a, utc_offset: 0h, users: 1, pools: [{name: tiny, replicas: 1, model: llama-3.1-405b, hardware: {gpu: rtx-4090}}]}
)"));
  EXPECT_NE(e.find("memory fit"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim::fleet
