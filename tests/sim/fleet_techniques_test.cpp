// Serving techniques in fleet runs: prefix caching with each session's context and the
// shared system prompt, speculative decoding in the pools of the scenario's model, the
// response cache, a router of the registry inside a region, a cascade through the fleet's
// small-model pools, prefill pools handing calls to decode pools, and the techniques a
// fleet still refuses (with the reason).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "hw_models/error.h"
#include "scenario_text.h"
#include "sim/simulation.h"

namespace fleetsim::fleet {
namespace techniques_test {  // named: the tests build as one unit with fleet_test.cpp

scenario::Scenario load(const std::string& text) { return test::load_text(text, "fleet.yaml"); }
std::string error_of(const std::string& text) { return test::load_error(text, "fleet.yaml"); }

// Llama-3.1-8B on H100s, one region. Every session has exactly 3 turns of a 300-token
// message and a 100-token answer after a 512-token system prompt, 1 s apart.
std::string text(const std::string& serving_extra,
                 const std::string& pools = "[{name: h100, replicas: 1}]",
                 const std::string& users_extra = "") {
  return R"(
name: t
seed: 5
model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
serving: {engine: ideal, policy: vllm, chunked_prefill: true, max_num_seqs: 64, max_batched_tokens: 2048)" +
         serving_extra + R"(}
users:
  weekly_active: 2e4
  daily_active_fraction: 0.4
  sessions_per_day: 1
  turns_per_session: 3
  think_time: 1s
  system_prompt_tokens: 512
  prompt_tokens: 300
  output_tokens: 100
  duration: 30min
)" + users_extra +
         R"(
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, user_rtt: 10ms, pools: )" +
         pools + R"(}
slo: {ttft: 2s, tpot: 100ms}
)";
}

TEST(FleetTechniques, PrefixCachingReusesEachSessionsContextAndTheSystemPrompt) {
  // Hash blocks of 256 tokens; the system prompt is 2 whole blocks. Turn 1's prompt is
  // 512 + 300 = 812 tokens (3 whole blocks), turn 2's 812 + 100 + 300 = 1212 (4), turn 3's
  // 1212 + 100 + 300 = 1612 (6). A call's whole blocks are cached when it finishes, its
  // answer's included: its KV then holds prompt + 100 − 1 tokens. So:
  //   turn 1 finds the system prompt (2 blocks = 512 tokens) cached by earlier sessions,
  //   turn 2 finds turn 1's 911 / 256 = 3 blocks (768 tokens), turn 3 turn 2's
  //   1311 / 256 = 5 blocks (1,280 tokens; its prompt's blocks alone would be 4).
  // With one replica and a KV cache far larger than the ~170 sessions' blocks, nothing a
  // later turn needs is evicted; only the very first session misses the system prompt.
  const auto sc = load(text(", prefix_caching: true, prefix_block_tokens: 256"));
  const FleetResult r = run_fleet(sc, {}, 1);
  const auto& s = r.summary;
  ASSERT_EQ(s.requests_completed % 3, 0u);
  const uint64_t n = s.requests_completed / 3;  // sessions (all of them finish in 30 min)
  ASSERT_GT(n, 100u);
  EXPECT_EQ(s.prefix_lookup_tokens, static_cast<int64_t>(n * (812 + 1212 + 1612)));
  EXPECT_EQ(s.prefix_hit_tokens, static_cast<int64_t>((n - 1) * 512 + n * (768 + 1280)));

  // The same fleet without prefix caching computes every prompt token; its TTFT is longer.
  const FleetResult off = run_fleet(load(text("")), {}, 1);
  EXPECT_EQ(off.summary.prefix_lookup_tokens, 0);
  EXPECT_EQ(off.summary.requests_completed, s.requests_completed);  // the same sessions
  EXPECT_LT(s.ttft.mean_s, off.summary.ttft.mean_s);
}

TEST(FleetTechniques, PrefixCacheHostTierKeepsWhatTheGpuEvicts) {
  // A KV cache too small for the sessions' contexts: with gpu_memory_utilization 0.26 an
  // 80 GB H100 keeps ~20.8 GB, ~16 GB of it the 8B model's weights, ~4.6 GB of KV at
  // 131,072 B/token ≈ 35k tokens. ~1,670 sessions in 30 min whose turns are 30 s apart keep
  // ~80 sessions between turns at any time, each with up to 1,612 tokens (~100k): the GPU
  // evicts blocks that their next turns need. A 64 GB host tier (~490k tokens, each pool's
  // blocks from the same bytes) keeps them, so next turns load them back over PCIe instead
  // of computing them again: more hit tokens, some of them from the host.
  auto scenario = [](const std::string& host) {
    return R"(
name: t
seed: 5
model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
serving: {engine: ideal, policy: vllm, chunked_prefill: true, max_num_seqs: 32,
          max_batched_tokens: 2048, prefix_caching: true, gpu_memory_utilization: 0.26)" +
           host + R"(}
users: {weekly_active: 2e5, daily_active_fraction: 0.4, sessions_per_day: 1, turns_per_session: 3,
        think_time: 30s, system_prompt_tokens: 512, prompt_tokens: 300, output_tokens: 100,
        duration: 30min}
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, user_rtt: 10ms, pools: [{name: h100, replicas: 1}]}
)";
  };
  const auto with_host = load(scenario(", prefix_cache_host_space: 64GB"));
  const auto& pool = with_host.fleet->regions[0].pools[0].pool;
  // 64 GB / (131,072 B/token · 16 tokens per block) = 30,517 blocks of the pool's model.
  EXPECT_EQ(pool.prefix_host_blocks, static_cast<int64_t>(64e9 / (131072.0 * 16)));
  const FleetResult on = run_fleet(with_host, {}, 1);
  const FleetResult off = run_fleet(load(scenario("")), {}, 1);
  ASSERT_GT(on.summary.requests_completed, 4000u);
  ASSERT_EQ(on.summary.requests_completed, off.summary.requests_completed);
  EXPECT_EQ(off.summary.prefix_host_tokens, 0u);
  EXPECT_GT(on.summary.prefix_host_tokens, 0u);
  EXPECT_GT(on.summary.prefix_hit_tokens, off.summary.prefix_hit_tokens);
}

TEST(FleetTechniques, SpeculativeDecodingRunsInThePoolsOfTheScenariosModel) {
  const std::string spec = ", speculative: {draft_model: llama-3.2-1b, k: 4, acceptance: 0.8}";
  const std::string pools =
      "[{name: h100, replicas: 2}, {name: small, replicas: 2, model: llama-3.2-1b}]";
  const auto sc = load(text(spec, pools));
  const auto& big = sc.fleet->regions[0].pools[0].pool;
  const auto& small = sc.fleet->regions[0].pools[1].pool;
  // The pool of the scenario's model carries the draft, with the draft's weights and KV in
  // its memory fit exactly as the single-pool scenario's own deployment (same hardware).
  ASSERT_TRUE(big.spec.has_value());
  EXPECT_EQ(big.spec->k, 4);
  EXPECT_EQ(big.vllm.spec_k, 4);
  EXPECT_EQ(big.memory.kv_blocks, sc.memory.kv_blocks);
  EXPECT_DOUBLE_EQ(big.dep.extra_weight_bytes_per_gpu, sc.dep.extra_weight_bytes_per_gpu);
  EXPECT_GT(big.dep.extra_weight_bytes_per_gpu, 1e9);  // a 1.2B-parameter draft in bf16
  // The other model's pool runs without it.
  EXPECT_FALSE(small.spec.has_value());
  EXPECT_EQ(small.vllm.spec_k, 0);
  EXPECT_EQ(small.dep.extra_weight_bytes_per_gpu, 0);

  // With 80 % acceptance of 4 draft tokens a verification step emits
  // (1 − 0.8^5)/(1 − 0.8) = 3.36 tokens on average, so tokens come faster.
  const FleetResult on = run_fleet(load(text(spec)), {}, 1);
  const FleetResult off = run_fleet(load(text("")), {}, 1);
  EXPECT_LT(on.summary.tpot.mean_s, 0.6 * off.summary.tpot.mean_s);
}

// Counts each replica's completed calls (-1: answered from the response cache) and the
// TTFTs of the cache's answers.
struct PerReplica final : serving::ServingObserver {
  std::map<int, uint64_t> done;
  std::vector<SimTime> hit_ttft_ns;
  void on_completion(const serving::RequestRecord& rec) override {
    ++done[rec.replica];
    if (rec.replica < 0) hit_ttft_ns.push_back(rec.first_token_ns - rec.spec->arrival_ns);
  }
};

TEST(FleetTechniques, ResponseCacheAnswersItsShareWithoutAModelCall) {
  const auto sc = load(text(", response_cache: {hit_rate: 0.25, latency: 5ms}"));
  PerReplica obs;
  RunOptions opt;
  opt.observers.push_back(&obs);
  const FleetResult r = run_fleet(sc, opt, 1);
  const auto& s = r.summary;
  const double n = static_cast<double>(s.requests_completed);
  ASSERT_GT(n, 300);
  // Hits are chosen per call id with probability 0.25: within 4 standard deviations of
  // n·0.25, sd = sqrt(n·0.25·0.75).
  EXPECT_NEAR(static_cast<double>(s.response_cache_hits), 0.25 * n, 4 * std::sqrt(n * 0.25 * 0.75));
  // A hit is answered 5 ms after it reaches the front door, one 10 ms user round trip after
  // it was sent: TTFT 15 ms.
  ASSERT_EQ(obs.hit_ttft_ns.size(), s.response_cache_hits);
  for (SimTime t : obs.hit_ttft_ns) ASSERT_EQ(t, 15'000'000);
  // The pool served only the misses.
  EXPECT_EQ(r.pools[0].completed + s.response_cache_hits, s.requests_completed);

  EXPECT_NE(error_of(text(", response_cache: {capacity: 1000}"))
                .find("fleet users' prompts are generated"),
            std::string::npos);
}

TEST(FleetTechniques, ARouterOfTheRegistryChoosesAmongARegionsReplicas) {
  // Round robin over 4 replicas: replica i gets calls i, i+4, i+8, ...: the counts differ
  // by at most one.
  const auto sc = load(text(", router: round-robin", "[{name: h100, replicas: 4}]"));
  PerReplica obs;
  RunOptions opt;
  opt.observers.push_back(&obs);
  const FleetResult r = run_fleet(sc, opt, 1);
  ASSERT_EQ(obs.done.size(), 4u);
  uint64_t lo = UINT64_MAX, hi = 0, total = 0;
  for (const auto& [rep, n] : obs.done) {
    lo = std::min(lo, n);
    hi = std::max(hi, n);
    total += n;
  }
  EXPECT_EQ(total, r.summary.requests_completed);
  EXPECT_LE(hi - lo, 1u);
  // The default (power of two choices) does not split calls evenly.
  PerReplica p2c;
  RunOptions opt2;
  opt2.observers.push_back(&p2c);
  run_fleet(load(text("", "[{name: h100, replicas: 4}]")), opt2, 1);
  uint64_t lo2 = UINT64_MAX, hi2 = 0;
  for (const auto& [rep, n] : p2c.done) {
    lo2 = std::min(lo2, n);
    hi2 = std::max(hi2, n);
  }
  EXPECT_GT(hi2 - lo2, 1u);
}

TEST(FleetTechniques, CascadeSendsEveryCallToTheSmallModelFirstAndEscalatesItsShare) {
  const std::string cascade = ", cascade: {small_model: llama-3.2-1b, escalation: 0.3}";
  const std::string pools =
      "[{name: big, replicas: 2}, {name: small, replicas: 2, model: llama-3.2-1b}]";
  const auto sc = load(text(cascade, pools));
  const FleetResult r = run_fleet(sc, {}, 1);
  const auto& s = r.summary;
  const double n = static_cast<double>(s.requests_completed);
  ASSERT_GT(n, 300);
  ASSERT_EQ(r.pools.size(), 2u);
  // Every call is answered by the small model first; the escalated ones (chosen per call id
  // with probability 0.3: within 4 sd of 0.3·n) by the large model again.
  EXPECT_EQ(r.pools[1].completed, s.requests_completed);
  EXPECT_EQ(r.pools[0].completed, s.escalations);
  EXPECT_NEAR(static_cast<double>(s.escalations), 0.3 * n, 4 * std::sqrt(n * 0.3 * 0.7));
  // The same with two threads: the cascade's two models run in one partition.
  const FleetResult r2 = run_fleet(sc, {}, 2);
  EXPECT_EQ(r2.summary.requests_completed, s.requests_completed);
  EXPECT_EQ(r2.summary.escalations, s.escalations);
  EXPECT_EQ(r2.summary.ttft.p99_s, s.ttft.p99_s);

  EXPECT_NE(error_of(text(cascade)).find("no pool of the fleet serves llama-3.2-1b"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          text(", cascade: {small_model: llama-3.2-1b, escalation: 0.3, small_replicas: 2}", pools))
          .find("a fleet's small model runs in its pools"),
      std::string::npos);
}

TEST(FleetTechniques, PrefillPoolsHandTheirCallsToDecodePoolsOverTheNetwork) {
  const std::string pools =
      "[{name: prefill, replicas: 1, role: prefill}, {name: decode, replicas: 2, role: decode}]";
  const auto sc = load(text("", pools));
  const FleetResult r = run_fleet(sc, {}, 1);
  const auto& s = r.summary;
  ASSERT_GT(s.requests_completed, 300u);
  ASSERT_EQ(r.pools.size(), 2u);
  // Every call (all have 100 output tokens) is prefilled by the prefill pool, moves its KV
  // cache once, and is completed by the decode pool, which counts no prompt tokens.
  EXPECT_EQ(r.pools[0].completed, s.requests_completed);
  EXPECT_EQ(r.pools[1].completed, s.requests_completed);
  EXPECT_EQ(s.kv_transfers, s.requests_completed);
  EXPECT_EQ(r.pools[1].input_tokens, 0u);
  EXPECT_EQ(r.pools[0].output_tokens, 0u);
  EXPECT_EQ(r.pools[0].input_tokens, s.input_tokens);
  // KV bytes: Llama-3.1-8B keeps 2 (K, V) × 32 layers × 8 KV heads × 128 dims × 2 bytes =
  // 131,072 bytes per token; prompts are 812, 1212 and 1612 tokens (a third each).
  const double bytes = 131072.0 * (812 + 1212 + 1612) / 3;
  EXPECT_NEAR(s.kv_transfer_bytes / static_cast<double>(s.kv_transfers), bytes, 1e-6 * bytes);
  EXPECT_GT(s.kv_transfer_mean_s, 0);

  EXPECT_NE(error_of(text("", "[{name: prefill, replicas: 1, role: prefill}]"))
                .find("has no decode pool of llama-3.1-8b in its region"),
            std::string::npos);
  EXPECT_NE(error_of(text(", disaggregation: {prefill_replicas: 1}")).find("role: prefill"),
            std::string::npos);
}

TEST(FleetTechniques, CallsWhoseDecodePoolNeverComesBackFailInsteadOfLooping) {
  // A decode pool of 0 replicas: a prefilled call with no decode replica up or coming
  // fails (it does not go round prefill again forever); every call is accounted for.
  const FleetResult r = run_fleet(load(text("",
                                            "[{name: prefill, replicas: 2, role: prefill}, {name: "
                                            "decode, replicas: 0, role: decode}]")),
                                  {}, 1);
  EXPECT_GT(r.failed_calls, 100u);
  EXPECT_EQ(r.summary.requests_completed, 0u);
  EXPECT_EQ(r.unfinished, 0u);
  EXPECT_EQ(r.summary.requests_arrived, r.summary.requests_completed + r.failed_calls);
  EXPECT_LT(r.sim_end_s, 3600.0);
}

// Which adapters the calls carry.
struct Adapters : serving::ServingObserver {
  std::map<uint32_t, uint64_t> calls;
  void on_completion(const serving::RequestRecord& rec) override { ++calls[rec.spec->adapter]; }
};

TEST(FleetTechniques, MultiLoraSessionsUseOneAdapterServedByTheScenariosModel) {
  // 50 adapters of rank 16, 4 resident per replica, in the pools of Llama-3.1-8B; a
  // Llama-3.2-1B pool serves a class of its own without them. Every session of the 8B
  // model names one adapter (1..50), so every call of theirs carries one.
  const std::string lora = ", lora: {max_loras: 4, rank: 16}";
  const std::string pools =
      "[{name: h100, replicas: 2}, {name: small, replicas: 1, model: llama-3.2-1b}]";
  const std::string users =
      "  adapters: {count: 50, popularity_zipf: 1.0}\n"
      "  classes: [{name: chat, share: 0.8}, {name: mini, share: 0.2, model: llama-3.2-1b}]\n";
  const auto sc = load(text(lora, pools, users));
  const auto& big = sc.fleet->regions[0].pools[0].pool;
  const auto& small = sc.fleet->regions[0].pools[1].pool;
  // The 8B pool holds the 4 adapter slots in its memory exactly as the single-pool
  // scenario's own deployment does (same hardware), and loads one over its host link.
  EXPECT_EQ(big.lora_rank, 16);
  EXPECT_EQ(big.vllm.lora_slots, 4);
  EXPECT_DOUBLE_EQ(big.dep.extra_weight_bytes_per_gpu, sc.dep.extra_weight_bytes_per_gpu);
  EXPECT_EQ(big.vllm.lora_load_ns, sc.vllm.lora_load_ns);
  EXPECT_EQ(big.memory.kv_blocks, sc.memory.kv_blocks);
  EXPECT_EQ(small.lora_rank, 0);
  EXPECT_EQ(small.vllm.lora_slots, 0);
  Adapters seen;
  RunOptions opt;
  opt.observers.push_back(&seen);
  const FleetResult r = run_fleet(sc, opt, 1);
  ASSERT_GT(r.summary.requests_completed, 100u);
  uint64_t with = 0;
  for (const auto& [adapter, n] : seen.calls) {
    EXPECT_LE(adapter, 50u);
    if (adapter > 0) with += n;
  }
  // Zipf(1) over 50: adapter 1 is the most popular, with 1 / H_50 ≈ 22 % of sessions.
  EXPECT_GT(seen.calls[1], seen.calls[2]);
  // The base model's calls are the mini class's, ~20 % (the same in every session's turns).
  EXPECT_NEAR(static_cast<double>(seen.calls[0]), 0.2 * static_cast<double>(with + seen.calls[0]),
              0.07 * static_cast<double>(with + seen.calls[0]));
  // Without LoRA the same sessions finish sooner: the adapters' matmuls and loads cost time.
  const FleetResult base = run_fleet(load(text("", pools,
                                               "  classes: [{name: chat, share: 0.8}, "
                                               "{name: mini, share: 0.2, model: "
                                               "llama-3.2-1b}]\n")),
                                     {}, 1);
  EXPECT_EQ(base.summary.requests_completed, r.summary.requests_completed);
  EXPECT_LT(base.summary.e2e.mean_s, r.summary.e2e.mean_s);
  // Each side alone is an error that says what to add.
  EXPECT_NE(error_of(text("", pools, users)).find("add serving.lora"), std::string::npos);
  EXPECT_NE(error_of(text(lora, pools)).find("users.adapters"), std::string::npos);
}

TEST(FleetTechniques, TechniquesNotModelledInFleetsSayWhy) {
  EXPECT_NE(error_of(text(", prefix_block_tokens: 256")).find("prefix_caching: true"),
            std::string::npos);
  EXPECT_NE(error_of(text(", prefix_caching: true, prefix_block_tokens: 100"))
                .find("whole number of KV blocks"),
            std::string::npos);
}

}  // namespace techniques_test
}  // namespace fleetsim::fleet
