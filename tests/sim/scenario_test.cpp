// The scenario loader's checks of a deployment against its server: host memory for
// offloaded weights, in a single pool and in a fleet pool; and the serving defaults an
// engine profile gives (what prefill-first does with a prompt longer than its budget).
#include "sim/scenario/scenario.h"

#include <gtest/gtest.h>

#include "hw_models/error.h"
#include "scenario_text.h"

namespace fleetsim::scenario {
namespace scenario_test {  // named: the tests build as one unit with other files

std::string error_of(const std::string& text) { return test::load_error(text, "s.yaml"); }

// Llama-3.1-70B in BF16 on one RTX 4090 in a desktop with 64 GB of host memory.
std::string single(int layers_on_host) {
  return R"(
model: llama-3.1-70b
hardware: {gpu: rtx-4090, node: desktop-rtx4090, tp: 1}
offload: {layers_on_host: )" +
         std::to_string(layers_on_host) + R"(}
serving: {replicas: 1}
workload: {arrival: {rate: 1/s}, requests: 10, prompt_tokens: 100, output_tokens: 10}
)";
}

TEST(HostMemory, OffloadedWeightsMustFitTheServersHostMemory) {
  // 75 of 80 layers on the host: 75/80 of the ~141 GB of BF16 weights = 132 GB, more
  // than 90 % of 64 GB = 57.6 GB. The error names the offload field and its line.
  const std::string e = error_of(single(75));
  EXPECT_NE(e.find("s.yaml:4: 'offload.layers_on_host'"), std::string::npos) << e;
  EXPECT_NE(e.find("132 GB of host memory per server"), std::string::npos) << e;
  EXPECT_NE(e.find("57.6 GB usable of desktop-rtx4090's 64.0 GB"), std::string::npos) << e;
  // 30 layers: 30/80 · 141 GB ≈ 53 GB of host weights fits 57.6 GB; the remaining 50
  // layers (~88 GB) do not fit the 24 GB GPU, which the memory fit reports instead: the
  // host check passes.
  EXPECT_EQ(error_of(single(30)).find("host memory per server"), std::string::npos);
}

// `head` (model, hardware, serving) and a one-hour fleet of one region whose one pool,
// `pool`, has one replica and the hardware (and further lines) in `pool_lines`.
std::string one_pool_fleet(const std::string& head, const std::string& pool,
                           const std::string& pool_lines) {
  return head + R"(
users: {weekly_active: 1e4, daily_active_fraction: 0.4, sessions_per_day: 1, turns_per_session: 1,
        think_time: 1s, prompt_tokens: 100, output_tokens: 10, duration: 1h}
fleet:
  regions:
    - name: home
      utc_offset: 0h
      users: 1
      pools:
        - name: )" +
         pool + R"(
          replicas: 1
)" + pool_lines;
}

TEST(HostMemory, AFleetPoolsOffloadIsCheckedWithItsServer) {
  const std::string text =
      one_pool_fleet(R"(
model: llama-3.1-70b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 2}
serving: {engine: ideal})",
                     "desk", R"(          hardware: {gpu: rtx-4090, node: desktop-rtx4090, tp: 1}
          offload: {layers_on_host: 75}
)");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("'fleet.regions[0].pools[0].offload.layers_on_host'"), std::string::npos) << e;
  EXPECT_NE(e.find("[home/desk]"), std::string::npos) << e;
}

// `deployment` (model, hardware, precision lines) with `serving` as given.
Scenario deployed(const std::string& deployment, const std::string& serving) {
  return test::load_text(deployment + "serving: " + serving + R"(
workload: {arrival: {rate: 1/s}, requests: 10, prompt_tokens: 100, output_tokens: 10}
)",
                         "s.yaml");
}

// Llama-3.1-8B on one H100 with `serving` as given.
Scenario with_serving(const std::string& serving) {
  return deployed("model: llama-3.1-8b\nhardware: {gpu: h100-sxm, tp: 1}\n", serving);
}

TEST(ServingDefaults, PrefillFirstCutsLongPromptsAsTheEngineDoes) {
  // SGLang runs prefill batches apart from decodes and cuts a long prompt at
  // chunked_prefill_size (hw_models/catalog/engines/sglang.yaml: split_long_prompts).
  const Scenario sg = with_serving("{engine: sglang}");
  EXPECT_FALSE(sg.vllm.chunked_prefill);
  EXPECT_TRUE(sg.vllm.split_long_prompts);
  // Naming the vllm policy means vLLM V0's prefill-first: a long prompt is rejected.
  const Scenario v0 = with_serving("{policy: vllm}");
  EXPECT_FALSE(v0.vllm.chunked_prefill);
  EXPECT_FALSE(v0.vllm.split_long_prompts);
  // The file decides over the engine, both ways.
  EXPECT_TRUE(with_serving("{policy: vllm, split_prompts: true}").vllm.split_long_prompts);
  EXPECT_FALSE(with_serving("{engine: sglang, split_prompts: false}").vllm.split_long_prompts);
  // With chunked prefill the key keeps its meaning (whole prompts with the decodes or not),
  // and prefill-first's setting stays off.
  const Scenario whole = with_serving("{chunked_prefill: true, split_prompts: false}");
  EXPECT_FALSE(whole.vllm.split_prompts);
  EXPECT_FALSE(whole.vllm.split_long_prompts);
}

TEST(ServingDefaults, AdmissionComesFromTheEngineUnlessTheFileNamesIt) {
  // No shipped profile reserves at admission (hw_models/catalog/README.md, `admission`),
  // so the default is paged admission with preemption; the file's key turns reserve on.
  EXPECT_FALSE(test::catalog().engine("trtllm-1").reserve_at_admission);
  EXPECT_FALSE(with_serving("{engine: trtllm-1}").vllm.reserve_at_admission);
  EXPECT_TRUE(with_serving("{engine: trtllm-1, admission: reserve}").vllm.reserve_at_admission);
  EXPECT_FALSE(with_serving("{admission: paged}").vllm.reserve_at_admission);
  const std::string e = error_of(R"(model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
serving: {admission: guaranteed}
workload: {arrival: {rate: 1/s}, requests: 10, prompt_tokens: 100, output_tokens: 10}
)");
  EXPECT_NE(e.find("serving.admission"), std::string::npos) << e;
  EXPECT_NE(e.find("reserve"), std::string::npos) << e;
}

// DeepSeek-R1 on 4 B200 with experts spread over 4 attention-DP ranks.
Scenario dep4(const std::string& serving) {
  return deployed(R"(model: deepseek-r1
hardware: {gpu: b200, tp: 1, dp_attention: 4, expert_parallel: true}
precision: {weights: fp4, activations: fp4, kv: fp8}
)",
                  serving);
}

TEST(ServingDefaults, PerRankLimitsOfAnEngineWhoseRanksScheduleApart) {
  // trtllm-1.yaml: max_num_seqs 2048, max_batched_tokens 8192, limits_per_dp_rank: true.
  // 4 ranks: 4 × 2048 = 8192 sequences and 4 × 8192 = 32768 tokens for the replica.
  const Scenario trt = dep4("{engine: trtllm-1}");
  EXPECT_EQ(trt.vllm.max_num_seqs, 8192);
  EXPECT_EQ(trt.vllm.max_batched_tokens, 32768);
  // The file's own values are the replica's, as written.
  const Scenario own = dep4("{engine: trtllm-1, max_num_seqs: 512, max_batched_tokens: 4096}");
  EXPECT_EQ(own.vllm.max_num_seqs, 512);
  EXPECT_EQ(own.vllm.max_batched_tokens, 4096);
  // sglang.yaml has no per-rank limits: its defaults (max_num_seqs and chunked prefill
  // size as the profile gives them) stay the replica's.
  const hw::EngineSpec& sg = test::catalog().engine("sglang");
  ASSERT_FALSE(sg.limits_per_dp_rank);
  const Scenario sgl = dep4("{engine: sglang}");
  EXPECT_EQ(sgl.vllm.max_num_seqs, sg.max_num_seqs);
  EXPECT_EQ(sgl.vllm.max_batched_tokens, sg.max_batched_tokens);
}

TEST(ServingDefaults, AFleetPoolTakesPerRankLimitsForItsOwnRanks) {
  // The scenario runs DeepSeek-R1 on 8 B200 as TP 8 (one rank); its fleet pool "wide" runs
  // 8 attention-DP ranks. trtllm-1's per-rank defaults: 1 × 2048 sequences and 8192 tokens
  // for the scenario, 8 × 2048 = 16384 and 8 × 8192 = 65536 for the pool.
  const Scenario sc = test::load_text(
      one_pool_fleet(R"(
model: deepseek-r1
hardware: {gpu: b200, node: dgx-b200, tp: 8}
precision: {weights: fp4, activations: fp4, kv: fp8}
serving: {engine: trtllm-1})",
                     "wide", R"(          hardware: {tp: 1, dp_attention: 8, expert_parallel: true}
)"),
      "s.yaml");
  EXPECT_EQ(sc.vllm.max_num_seqs, 2048);
  EXPECT_EQ(sc.vllm.max_batched_tokens, 8192);
  ASSERT_TRUE(sc.fleet.has_value());
  const Pool& wide = sc.fleet->regions.at(0).pools.at(0).pool;
  EXPECT_EQ(wide.vllm.max_num_seqs, 16384);
  EXPECT_EQ(wide.vllm.max_batched_tokens, 65536);
}

}  // namespace scenario_test
}  // namespace fleetsim::scenario
