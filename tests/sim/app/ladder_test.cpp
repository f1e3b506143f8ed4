// Tests for sim/app/ladder: the ladder section is read strictly, each step is a search whose
// answer respects a hand-computed bound, and the derived autoscaling step is exactly the
// busiest hour's cost spread over the day's load.
#include "sim/app/ladder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app_test_util.h"
#include "hw_models/error.h"

namespace fleetsim::app {
namespace {

// 2e5 weekly users, half of them daily, 2 sessions of 2 turns each: 2e5 × 0.5 × 2 × 2 =
// 4e5 calls a day = 4.63 calls/s, flat over the day; every call 100 output tokens.
const char* kLadderFleet = R"(
seed: 3
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving: {policy: vllm, chunked_prefill: true, max_num_seqs: 64}
users: {weekly_active: 2e5, daily_active_fraction: 0.5, sessions_per_day: 2, turns_per_session: 2,
        think_time: 20s, prompt_tokens: 200, output_tokens: 100}
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 4}]}
slo: {ttft: 2s, tpot: 100ms}
)";

const char* kLadderSteps = R"(
ladder:
  window: 10min
  warmup: 2min
  steps:
    - {name: naive, set: {serving.max_num_seqs: 1, serving.chunked_prefill: false}}
    - {name: batching, set: {serving.max_num_seqs: 64, serving.chunked_prefill: true}}
    - {name: autoscaling, autoscaling: true}
)";

TEST(Ladder, EachStepMeetsItsHandBounds) {
  const std::string file = test::scenario_file("fleetsim_ladder_test", "bounds",
                                               std::string(kLadderFleet) + kLadderSteps);
  const LadderResult r = run_ladder(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 2);
  ASSERT_EQ(r.rungs.size(), 3u);
  for (const auto& s : r.rungs) {
    ASSERT_TRUE(s.met) << s.name << ": " << s.reason;
    EXPECT_GE(s.attainment, 0.99) << s.name;
  }
  const LadderRung& naive = r.rungs[0];
  const LadderRung& batching = r.rungs[1];
  const LadderRung& autoscaled = r.rungs[2];
  // A decode step of Llama-3.1-8B in BF16 reads at least its weights: 8.03e9 parameters × 2 B
  // = 16.06 GB over the H100's 3.35 TB/s = 4.79 ms. One request at a time, a call of 100
  // output tokens holds its replica ≥ 100 × 4.79 ms = 0.479 s, so by Little's law 4.63
  // calls/s need ≥ 4.63 × 0.479 = 2.2 busy replicas: at least 3 one-GPU replicas.
  EXPECT_GE(naive.gpus, 3.0);
  // Batching shares the weight reads; no sequence decodes faster than batch 1 allows.
  EXPECT_GE(batching.tpot_p99_s, 4.79e-3);
  EXPECT_LE(batching.gpus, naive.gpus);
  // The steps compare by $ a day: previous ÷ this.
  EXPECT_NEAR(batching.factor_previous, naive.usd_per_day / batching.usd_per_day, 1e-12);
  EXPECT_NEAR(batching.factor_start, naive.usd_per_day / batching.usd_per_day, 1e-12);
  // Autoscaling is the batching step's scenario (same search, same answer) with GPU-hours
  // divided by ρ, the session starts in the simulated stretch over the day's mean: its
  // factor is ρ exactly, and on a flat day ρ = 1.
  EXPECT_EQ(autoscaled.gpus, batching.gpus);
  EXPECT_NEAR(r.window_to_mean, 1.0, 1e-9);
  EXPECT_NEAR(autoscaled.factor_previous, r.window_to_mean, 1e-12);
  // A day's tokens: 4e5 calls × (prompt ≥ 200 + 100 output) = 1.2e8, less the warm-up's
  // missing second turns (≤ 20 s think time of 12 min: 3 %) and the window's Poisson noise
  // (4.63/s × 12 min ≈ 3,300 calls: 1/√3300 = 1.7 % standard error): ≥ 1.0e8.
  EXPECT_GE(batching.tokens_per_day, 1.0e8);
  EXPECT_NEAR(batching.usd_per_mtok, batching.usd_per_day / batching.tokens_per_day * 1e6, 1e-9);
}

// The later techniques of the default ladder on the same small fleet: quantization, the MoE
// swap, prefix caching and the response cache, each against a bound computed by hand.
const char* kLaterSteps = R"(
ladder:
  window: 10min
  warmup: 2min
  steps:
    - {name: batching, set: {serving.max_num_seqs: 64}}
    - {name: fp8, set: {precision: {weights: fp8, activations: fp8, kv: fp8}}}
    - {name: moe, set: {model: gpt-oss-20b}}
    - {name: prefix caching, set: {serving.prefix_caching: true}}
    - {name: response cache, set: {serving.response_cache: {hit_rate: 0.2}}}
)";

TEST(Ladder, LaterStepsMeetTheirHandBounds) {
  const std::string file =
      test::scenario_file("fleetsim_ladder_test", "later", std::string(kLadderFleet) + kLaterSteps);
  const LadderResult r = run_ladder(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 2);
  ASSERT_EQ(r.rungs.size(), 5u);
  for (const auto& s : r.rungs) {
    ASSERT_TRUE(s.met) << s.name << ": " << s.reason;
    EXPECT_GE(s.attainment, 0.99) << s.name;
    EXPECT_GE(s.gpus, 1.0) << s.name;
  }
  const LadderRung &batching = r.rungs[0], &fp8 = r.rungs[1], &moe = r.rungs[2],
                   &prefix = r.rungs[3], &cache = r.rungs[4];
  // No sequence decodes faster than one read of the weights a token needs, at batch 1, over
  // the H100's 3.35 TB/s:
  // - Llama-3.1-8B in BF16: 8.03e9 × 2 B = 16.06 GB → 4.79 ms;
  EXPECT_GE(batching.tpot_p99_s, 4.79e-3);
  // - in FP8: 8.03e9 × 1 B = 8.03 GB → 2.40 ms;
  EXPECT_GE(fp8.tpot_p99_s, 2.40e-3);
  // - gpt-oss-20b: its 3.61e9 active parameters (model card) at no less than MXFP4's 4.25
  //   bits (0.53 B) = 1.92 GB → 0.57 ms, with or without the caches after it.
  EXPECT_GE(moe.tpot_p99_s, 0.57e-3);
  EXPECT_GE(prefix.tpot_p99_s, 0.57e-3);
  EXPECT_GE(cache.tpot_p99_s, 0.57e-3);
  // Halving the bytes per weight cannot more than halve a replica's decode time, and the
  // fleet's size is whole replicas of 1 GPU found by the same search: FP8 needs at least
  // half the GPUs of BF16 less one replica of rounding (and never a fraction).
  EXPECT_GE(fp8.gpus, batching.gpus / 2 - 1);
  // Prefix caching saves prefill, never calls or tokens: the same traffic (same seed) arrives,
  // so a day's calls are the MoE step's exactly.
  EXPECT_EQ(prefix.calls_per_day, moe.calls_per_day);
  // The response cache answers 20 % of calls without a GPU: the calls still arrive (same
  // count), and the tokens the GPUs process fall to 80 % of the step before, within the
  // binomial noise of the hits over the window's ~3,300 calls (s.d. √(0.2·0.8/3300) = 0.7 %;
  // ±4 % is 5 s.d.).
  EXPECT_EQ(cache.calls_per_day, prefix.calls_per_day);
  EXPECT_NEAR(cache.tokens_per_day / prefix.tokens_per_day, 0.8, 0.04);
  // Each factor is the ratio of $ a day, step over step.
  for (size_t i = 1; i < r.rungs.size(); ++i)
    EXPECT_NEAR(r.rungs[i].factor_previous, r.rungs[i - 1].usd_per_day / r.rungs[i].usd_per_day,
                1e-12)
        << r.rungs[i].name;
}

TEST(Ladder, SameSeedSameAnswerWhateverTheThreads) {
  const std::string file = test::scenario_file("fleetsim_ladder_test", "determinism",
                                               std::string(kLadderFleet) + kLadderSteps);
  const LadderResult a = run_ladder(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 1);
  const LadderResult b = run_ladder(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 2);
  ASSERT_EQ(a.rungs.size(), b.rungs.size());
  for (size_t i = 0; i < a.rungs.size(); ++i) {
    EXPECT_EQ(a.rungs[i].replicas_simulated, b.rungs[i].replicas_simulated);
    EXPECT_EQ(a.rungs[i].usd_per_day, b.rungs[i].usd_per_day);
    EXPECT_EQ(a.rungs[i].ttft_p99_s, b.rungs[i].ttft_p99_s);
  }
}

// The message of the InputError `f` throws ("" when it throws none).
template <class F>
std::string ladder_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Ladder, SectionErrorsNameTheFieldAndHelp) {
  const std::string none = test::scenario_file("fleetsim_ladder_test", "none", kLadderFleet);
  EXPECT_NE(ladder_error([&] { read_ladder_section(none, {}); }).find("has no ladder: section"),
            std::string::npos);
  const std::string idle =
      test::scenario_file("fleetsim_ladder_test", "idle",
                          std::string(kLadderFleet) +
                              "ladder: {steps: [{name: a, set: {serving.max_num_seqs: 1}}, "
                              "{name: b}]}\n");
  EXPECT_NE(ladder_error([&] { read_ladder_section(idle, {}); }).find("step 'b' changes nothing"),
            std::string::npos);
  const std::string typo =
      test::scenario_file("fleetsim_ladder_test", "typo",
                          std::string(kLadderFleet) +
                              "ladder: {steps: [{name: a, set: {serving.max_num_seq: 1}}, "
                              "{name: b, autoscaling: true}]}\n");
  const std::string e = ladder_error([&] { read_ladder_section(typo, {}); });
  EXPECT_NE(e.find("max_num_seqs"), std::string::npos) << e;  // did you mean
  EXPECT_NE(e.find("typo.yaml"), std::string::npos) << e;     // where
  const std::string one = test::scenario_file(
      "fleetsim_ladder_test", "one",
      std::string(kLadderFleet) + "ladder: {steps: [{name: a, set: {seed: 2}}]}\n");
  EXPECT_NE(ladder_error([&] { read_ladder_section(one, {}); }).find("2 to 64 steps"),
            std::string::npos);
  const std::string pool = test::scenario_file(
      "fleetsim_ladder_test", "pool",
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nserving: {}\nworkload: {requests: 10, "
      "arrival: {process: poisson, rate: 1/s}, prompt_tokens: 10, output_tokens: 10}\n"
      "ladder: {steps: [{name: a, set: {seed: 2}}, {name: b, set: {seed: 3}}]}\n");
  EXPECT_NE(ladder_error([&] {
              run_ladder(pool, {}, std::nullopt, test::bundled_catalog(), nullptr, 1);
            }).find("fleet scenarios"),
            std::string::npos);
}

}  // namespace
}  // namespace fleetsim::app
