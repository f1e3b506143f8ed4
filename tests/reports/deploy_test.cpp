// Deployable output: the launch commands carry the deployment's settings in each engine's
// words, and the Kubernetes manifests parse and match them.
#include "reports/deploy.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hw_models/catalog.h"

namespace fleetsim::reports {
namespace {

const hw::Catalog& shipped_catalog() {
  static const hw::Catalog c = hw::Catalog::load(hw::Catalog::default_dir());
  return c;
}

scenario::Scenario load(const std::string& rel, const std::vector<std::string>& overrides) {
  return scenario::load(std::string(FLEETSIM_SOURCE_DIR) + "/" + rel, overrides, std::nullopt,
                        shipped_catalog());
}

const Launch& launch(const Deployable& d, const std::string& engine, const std::string& pool) {
  for (const auto& l : d.launches)
    if (l.engine == engine && l.pool == pool) return l;
  ADD_FAILURE() << "no " << engine << " launch for pool " << pool;
  static const Launch none;
  return none;
}

// The value after `flag` in `argv` ("" when the flag is absent or last).
std::string value_of(const std::vector<std::string>& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

// Whether one of `d`'s notes contains `text`.
bool has_note(const Deployable& d, const std::string& text) {
  return std::any_of(d.notes.begin(), d.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

bool has(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

TEST(Deploy, EachEngineGetsTheDeploymentsSettings) {
  // Llama-3.1-70B on H200 at TP 2, FP8 weights and KV, 3 replicas, 128 sequences, a
  // 4096-token budget, chunked prefill, 0.9 of memory.
  const scenario::Scenario sc =
      load("scenarios/plan-llama70b-chat.yaml",
           {"hardware.gpu=h200-sxm", "hardware.tp=2", "precision.weights=fp8", "precision.kv=fp8",
            "serving.replicas=3", "serving.max_num_seqs=128", "serving.max_batched_tokens=4096",
            "serving.policy=sarathi", "serving.gpu_memory_utilization=0.9"});
  const Deployable d = deployable(sc, "Chat Plan");
  ASSERT_EQ(d.launches.size(), 3u);  // one pool, three engines
  const Launch& v = launch(d, "vllm", "serving");
  EXPECT_EQ(v.replicas, 3);
  EXPECT_EQ(v.gpus, 2);
  EXPECT_EQ(std::vector<std::string>(v.argv.begin(), v.argv.begin() + 3),
            (std::vector<std::string>{"vllm", "serve", "meta-llama/Llama-3.1-70B"}));
  EXPECT_EQ(value_of(v.argv, "--tensor-parallel-size"), "2");
  EXPECT_EQ(value_of(v.argv, "--max-num-seqs"), "128");
  EXPECT_EQ(value_of(v.argv, "--max-num-batched-tokens"), "4096");
  EXPECT_EQ(value_of(v.argv, "--kv-cache-dtype"), "fp8");
  EXPECT_EQ(value_of(v.argv, "--quantization"), "fp8");
  EXPECT_EQ(value_of(v.argv, "--gpu-memory-utilization"), "0.9");
  const Launch& s = launch(d, "sglang", "serving");
  EXPECT_EQ(value_of(s.argv, "--tp-size"), "2");
  EXPECT_EQ(value_of(s.argv, "--max-running-requests"), "128");
  EXPECT_EQ(value_of(s.argv, "--chunked-prefill-size"), "4096");
  EXPECT_EQ(value_of(s.argv, "--kv-cache-dtype"), "fp8_e4m3");
  const Launch& t = launch(d, "trtllm", "serving");
  EXPECT_EQ(value_of(t.argv, "--tp_size"), "2");
  EXPECT_EQ(value_of(t.argv, "--max_batch_size"), "128");
  EXPECT_EQ(value_of(t.argv, "--max_num_tokens"), "4096");
  EXPECT_EQ(value_of(t.argv, "--extra_llm_api_options"), t.extra_name);
  const YAML::Node extra = YAML::Load(t.extra_yaml);
  EXPECT_TRUE(extra["enable_chunked_prefill"].as<bool>());
  EXPECT_EQ(extra["kv_cache_config"]["dtype"].as<std::string>(), "fp8");

  // The manifests (vLLM is the scenario's engine): a Deployment of 3 pods with 2 GPUs each
  // running exactly the vLLM command, and its Service.
  const std::vector<YAML::Node> docs = YAML::LoadAll(d.kubernetes);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "Deployment");
  EXPECT_EQ(docs[0]["metadata"]["name"].as<std::string>(), "chat-plan-serving");
  EXPECT_EQ(docs[0]["spec"]["replicas"].as<int>(), 3);
  const YAML::Node c = docs[0]["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 2);
  EXPECT_EQ(c["command"][0].as<std::string>(), "vllm");
  std::vector<std::string> args;
  for (const auto& a : c["args"]) args.push_back(a.as<std::string>());
  EXPECT_EQ(args, std::vector<std::string>(v.argv.begin() + 1, v.argv.end()));
  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "Service");
  EXPECT_EQ(docs[1]["spec"]["selector"]["app"].as<std::string>(), "chat-plan-serving");
}

TEST(Deploy, PrefillFirstOnVllmV1IsSaidNotSilentlyChunked) {
  // policy vllm without chunked prefill (prefill-first) on the vllm-v1 engine: V1 cannot
  // turn chunking off, so a note says what the command does instead; chunked prefill
  // (policy sarathi) needs no such note.
  const std::vector<std::string> base = {"hardware.gpu=h200-sxm", "hardware.tp=2",
                                         "serving.engine=vllm-v1"};
  std::vector<std::string> first = base, chunked = base;
  first.push_back("serving.policy=vllm");
  first.push_back("serving.chunked_prefill=false");
  first.push_back("serving.max_batched_tokens=16384");
  chunked.push_back("serving.policy=sarathi");
  EXPECT_TRUE(has_note(deployable(load("scenarios/plan-llama70b-chat.yaml", first), "a"),
                       "always chunks prefills"));
  EXPECT_FALSE(has_note(deployable(load("scenarios/plan-llama70b-chat.yaml", chunked), "b"),
                        "always chunks prefills"));
}

TEST(Deploy, DisaggregatedPoolsGetTheirRoles) {
  const scenario::Scenario sc = load("scenarios/examples/disaggregated.yaml", {});
  ASSERT_TRUE(sc.prefill_pool);
  const Deployable d = deployable(sc, "disagg");
  ASSERT_EQ(d.launches.size(), 6u);  // two pools, three engines
  EXPECT_EQ(value_of(launch(d, "sglang", "prefill").argv, "--disaggregation-mode"), "prefill");
  EXPECT_EQ(value_of(launch(d, "sglang", "decode").argv, "--disaggregation-mode"), "decode");
  EXPECT_TRUE(has(launch(d, "vllm", "decode").argv, "--kv-transfer-config"));
  EXPECT_EQ(launch(d, "vllm", "prefill").replicas, sc.prefill_pool->replicas);
  EXPECT_EQ(launch(d, "vllm", "decode").replicas, sc.replicas);
  // Two Deployments and two Services.
  EXPECT_EQ(YAML::LoadAll(d.kubernetes).size(), 4u);
}

// The Deployment named `name` among the manifests (a null node when there is none).
YAML::Node deployment(const std::string& manifests, const std::string& name) {
  for (const YAML::Node& doc : YAML::LoadAll(manifests))
    if (doc && doc["kind"] && doc["kind"].as<std::string>() == "Deployment" &&
        doc["metadata"]["name"].as<std::string>() == name)
      return doc;
  return YAML::Node();
}

TEST(Deploy, AFleetsPoolsEachGetTheirLaunchesManifestsAndTheSplitsRouting) {
  // fleet-length-split.yaml as written: us/short (H200 TP1) and us/long (TP2), split at
  // 4,096 prompt tokens; deployed at 14 and 4 replicas.
  const scenario::Scenario sc = load("scenarios/examples/fleet-length-split.yaml", {});
  const Deployable d = fleet_deployable(sc, {14, 4}, "fls");
  ASSERT_EQ(d.launches.size(), 6u);  // two pools, three engines
  EXPECT_EQ(launch(d, "vllm", "us-short").replicas, 14);
  EXPECT_EQ(launch(d, "vllm", "us-long").replicas, 4);
  EXPECT_EQ(value_of(launch(d, "vllm", "us-short").argv, "--tensor-parallel-size"), "1");
  EXPECT_EQ(value_of(launch(d, "vllm", "us-long").argv, "--tensor-parallel-size"), "2");
  EXPECT_EQ(value_of(launch(d, "vllm", "us-long").argv, "--kv-cache-dtype"), "fp8");
  // TensorRT-LLM's options file is named after the pool, in the file list and the command.
  EXPECT_EQ(launch(d, "trtllm", "us-long").extra_name, "trtllm-us-long.yaml");
  EXPECT_EQ(value_of(launch(d, "trtllm", "us-long").argv, "--extra_llm_api_options"),
            "trtllm-us-long.yaml");
  // The manifests parse: a Deployment (and a Service) per pool, with its replicas and GPUs.
  EXPECT_EQ(YAML::LoadAll(d.kubernetes).size(), 4u);
  const YAML::Node lng = deployment(d.kubernetes, "fls-us-long");
  ASSERT_TRUE(lng) << d.kubernetes;
  EXPECT_EQ(lng["spec"]["replicas"].as<int>(), 4);
  EXPECT_EQ(
      lng["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
          .as<int>(),
      2);
  ASSERT_TRUE(deployment(d.kubernetes, "fls-us-short"));
  // The split is the gateway's: said in a note, with the threshold and the pools.
  bool routed = false;
  for (const auto& n : d.notes)
    routed =
        routed || (n.find("prompts of fewer than 4096 tokens to us-short") != std::string::npos &&
                   n.find("prompts of at least 4096 tokens to us-long") != std::string::npos);
  EXPECT_TRUE(routed);
}

TEST(Deploy, AFleetOnTensorRtLlmMountsEachPoolsOwnOptionsFile) {
  // Each pool's manifests and notes name its own options file, not a shared
  // "trtllm-serving.yaml" that two pools with different settings would both claim.
  const scenario::Scenario sc =
      load("scenarios/examples/fleet-length-split.yaml", {"serving.engine=trtllm-1"});
  const Deployable d = fleet_deployable(sc, {14, 4}, "fls");
  EXPECT_NE(d.kubernetes.find("trtllm-us-short.yaml"), std::string::npos) << d.kubernetes;
  EXPECT_NE(d.kubernetes.find("trtllm-us-long.yaml"), std::string::npos) << d.kubernetes;
  EXPECT_EQ(d.kubernetes.find("trtllm-serving.yaml"), std::string::npos) << d.kubernetes;
  for (const auto& n : d.notes) EXPECT_EQ(n.find("trtllm-serving.yaml"), std::string::npos) << n;
}

TEST(Deploy, AFleetsPrefillAndDecodePoolsAreOneDisaggregatedDeployment) {
  const scenario::Scenario sc = load(
      "scenarios/examples/fleet-length-split.yaml",
      {"fleet.regions[0].pools=[{name: p, role: prefill, replicas: 3}, {name: d, role: decode, "
       "replicas: 5}]",
       "fleet.routing={}"});
  const Deployable d = fleet_deployable(sc, {3, 5}, "pd");
  ASSERT_EQ(d.launches.size(), 6u);
  EXPECT_EQ(value_of(launch(d, "sglang", "us-p").argv, "--disaggregation-mode"), "prefill");
  EXPECT_EQ(value_of(launch(d, "sglang", "us-d").argv, "--disaggregation-mode"), "decode");
  EXPECT_EQ(launch(d, "vllm", "us-p").replicas, 3);
  EXPECT_EQ(launch(d, "vllm", "us-d").replicas, 5);
  EXPECT_EQ(YAML::LoadAll(d.kubernetes).size(), 4u);
}

TEST(Deploy, AReplicaOverSeveralNodesIsALeaderWorkerSet) {
  // Llama-3.1-405B at TP 8 × PP 2 on HGX H200 servers (8 GPUs each): 16 GPUs, 2 nodes.
  const scenario::Scenario sc =
      load("scenarios/plan-llama70b-chat.yaml",
           {"model=llama-3.1-405b", "hardware.gpu=h200-sxm", "hardware.tp=8", "hardware.pp=2",
            "precision.weights=fp8", "serving.replicas=2"});
  const Deployable d = deployable(sc, "big");
  const std::vector<YAML::Node> docs = YAML::LoadAll(d.kubernetes);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "LeaderWorkerSet");
  EXPECT_EQ(docs[0]["spec"]["replicas"].as<int>(), 2);
  EXPECT_EQ(docs[0]["spec"]["leaderWorkerTemplate"]["size"].as<int>(), 2);  // 16 / 8
  const YAML::Node c =
      docs[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0];
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 8);
  EXPECT_EQ(value_of(launch(d, "vllm", "serving").argv, "--pipeline-parallel-size"), "2");
  EXPECT_TRUE(has_note(d, "span 2 nodes"));
}

TEST(Deploy, AModelWithoutARepositoryAsksForItsPath) {
  const scenario::Scenario sc =
      load("scenarios/plan-llama70b-chat.yaml",
           {"model=gpt4-class-moe", "hardware.gpu=h200-sxm", "hardware.tp=8", "hardware.pp=2",
            "precision.weights=fp8", "hardware.node=hgx-h200"});
  const Deployable d = deployable(sc, "x");
  EXPECT_EQ(launch(d, "vllm", "serving").argv[2], "${MODEL_PATH:?the weights of gpt4-class-moe}");
  EXPECT_TRUE(has_note(d, "set MODEL_PATH"));
}

TEST(Deploy, ShellLineQuotesWhatTheShellWouldSplit) {
  // Plain words as they are; a space or a quote single-quoted (' as '\''); a ${...}
  // expansion double-quoted so that it still expands.
  EXPECT_EQ(shell_line({"vllm", "serve", "a/b", "--x", "0.9"}), "vllm serve a/b --x 0.9");
  EXPECT_EQ(shell_line({"--c", "{\"k\": 1}"}), "--c '{\"k\": 1}'");
  EXPECT_EQ(shell_line({"it's"}), "'it'\\''s'");
  EXPECT_EQ(shell_line({"${MODEL_PATH:?m}"}), "\"${MODEL_PATH:?m}\"");
}

}  // namespace
}  // namespace fleetsim::reports
