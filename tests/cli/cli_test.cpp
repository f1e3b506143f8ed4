// End-to-end tests of the fleetsim binary: bad input, determinism, the golden default
// scenario, overrides and outputs. Each runs the real executable ($FLEETSIM_BIN, set by
// CTest) in a temporary folder.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

TEST_F(Cli, Version) {
  const Result r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("fleetsim ", 0), 0u);
}

TEST_F(Cli, ListsCatalogAndTables) {
  EXPECT_NE(run("list gpus").out.find("h100-sxm"), std::string::npos);
  EXPECT_NE(run("list models").out.find("llama-3.1-70b"), std::string::npos);
  EXPECT_NE(run("list policies").out.find("vllm"), std::string::npos);
  EXPECT_NE(run("list routers").out.find("least-outstanding"), std::string::npos);
  expect_error("list gpu", {"unknown list 'gpu'", "did you mean 'gpus'"});
}

TEST_F(Cli, HelpOnEachCommand) {
  for (const char* c : {"run --help", "check --help", "list --help", "--help"}) {
    const Result r = run(c);
    EXPECT_EQ(r.code, 0) << c;
    EXPECT_NE(r.out.find("usage: fleetsim"), std::string::npos) << c;
  }
}

TEST_F(Cli, CheckValidatesWithoutRunning) {
  const Result r = run("check scenarios/chat-service.yaml");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("OK"), std::string::npos);
  EXPECT_NE(r.out.find("KV cache"), std::string::npos);
}

// ---- bad input: one clear line, non-zero exit, never a crash or a hang ----------------

TEST_F(Cli, MissingUnit) {
  const auto f = variant("nounit", "rate: 20/s", "rate: 20");
  // The rate is on line 36 of scenarios/chat-service.yaml.
  expect_error("check " + f, {f + ":", "'workload.arrival.rate'", "unit", "20/s"});
}

TEST_F(Cli, UnknownKeyWithDidYouMean) {
  const auto f = variant("typo", "max_num_seqs:", "max_num_seq:");
  expect_error("check " + f, {f + ":", "serving.max_num_seq", "did you mean 'max_num_seqs'"});
  const auto g = variant("typo2", "serving:", "servng:");
  expect_error("check " + g, {"'servng'", "did you mean 'serving'"});
}

TEST_F(Cli, NegativeRate) {
  const auto f = variant("neg", "rate: 20/s", "rate: -5/s");
  expect_error("check " + f, {"'workload.arrival.rate'", "> 0"});
}

TEST_F(Cli, ModelThatDoesNotFit) {
  // Llama-3.1-70B in BF16 is ~141 GB of weights; one 80 GB A100 cannot hold it.
  const auto f = variant("nofit", "gpu: h100-sxm", "gpu: a100-80gb-sxm");
  expect_error("check " + f + " --set model=llama-3.1-70b", {"does not fit", "short by", "tp"});
}

TEST_F(Cli, MissingTraceFile) {
  const fs::path p = dir_ / "notrace.yaml";
  std::ofstream(p) << "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nserving: {replicas: 1}\n"
                      "workload:\n  trace: {file: nope.csv}\n";
  expect_error("check " + p.string(), {"workload.trace.file", "nope.csv"});
}

TEST_F(Cli, MalformedTraceLineReportsItsLineNumber) {
  std::ofstream(dir_ / "bad.csv") << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                     "2023-11-16 18:15:46.6805900,374,44\n"
                                     "2023-11-16 18:15:50.9951690,abc,109\n";
  const fs::path p = dir_ / "badtrace.yaml";
  std::ofstream(p) << "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nserving: {replicas: 1}\n"
                      "workload:\n  trace: {file: bad.csv}\n";
  // The bad row is line 3 of the CSV (header is line 1).
  expect_error("run " + p.string() + " --out " + (dir_ / "o").string(), {"bad.csv:3:", "abc"});
}

TEST_F(Cli, EmptyWorkload) {
  const auto f = variant("empty", "requests: 6000", "requests: 0");
  expect_error("check " + f, {"workload", "no requests"});
}

TEST_F(Cli, ListKeys) {
  // One section: its mapping line and one line per key under it.
  const Result r = run("list keys serving.lora");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("serving.lora.max_loras"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("integer 1 … 1024, default 16: adapter rank"), std::string::npos) << r.out;
  // The Markdown reference starts with the top-level table.
  const Result m = run("list keys --markdown");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(m.out.rfind("### Keys: top level\n", 0), 0u) << m.out.substr(0, 200);
  expect_error("list keys servng", {"unknown section 'servng'", "did you mean 'serving'"});
}

TEST_F(Cli, BadOverrides) {
  // An undeclared key: the nearest declared one with its type, range and default.
  expect_error("check scenarios/chat-service.yaml --set serving.replica=3",
               {"--set serving.replica", "unknown key 'serving.replica'",
                "did you mean 'serving.replicas'", "serving.replicas: integer, 1 … 1000000"});
  expect_error("check scenarios/chat-service.yaml --set serving.replicas=0",
               {"--set serving.replicas", "must be in [1, 1000000], got 0",
                "hint: serving.replicas: integer, 1 … 1000000, default 1"});
  expect_error("check scenarios/chat-service.yaml --set hardware.gpu=h100",
               {"--set hardware.gpu", "unknown GPU 'h100'", "h100-sxm"});
  expect_error("check scenarios/chat-service.yaml --set serving.replicas", {"malformed override"});
  expect_error("check nothere.yaml", {"nothere.yaml", "cannot open"});
  // A key given twice is refused with both lines, not read as the first (yaml-cpp's way):
  // here a second `name:` appended after the file's own on line 1.
  {
    const std::string f = variant("dup", "\nserving:", "\nname: second\nserving:");
    expect_error("check " + f, {"dup.yaml:", "duplicate key 'name' (first at line", "merge"});
  }
  // Numbers the option parser would wrap or accept: a negative seed, zero threads.
  expect_error("run scenarios/chat-service.yaml --seed -1",
               {"--seed must be a whole number from 0 to 18446744073709551615", "'-1'"});
  expect_error("run scenarios/chat-service.yaml --seed 18446744073709551616", {"--seed"});
  expect_error("run scenarios/chat-service.yaml --threads 0", {"--threads must be at least 1"});
  // A validation folder without cases is an error, not an empty success.
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  expect_error("validate " + empty.string(), {"no case files", empty.string()});
  // Fields that only mean something with another one.
  expect_error("check scenarios/chat-service.yaml --set hardware.redundant_experts=8",
               {"redundant_experts", "applies to expert parallelism", "expert_parallel: true"});
  expect_error("check scenarios/chat-service.yaml --set hardware.two_batch_overlap=true",
               {"two_batch_overlap", "applies to expert parallelism"});
  // Expert parallelism under attention TP has no all-to-all to hide.
  expect_error(
      "check scenarios/examples/expert-parallel.yaml --set hardware.dp_attention=1 "
      "--set hardware.tp=16 --set hardware.two_batch_overlap=true",
      {"two_batch_overlap", "attention data parallelism", "dp_attention > 1"});
  expect_error("check scenarios/examples/expert-parallel.yaml --set hardware.redundant_experts=20",
               {"redundant_experts", "256 experts + 20 redundant ones", "16 GPUs"});
  expect_error(
      "check scenarios/chat-service.yaml --set serving.policy=sarathi "
      "--set serving.split_prompts=false",
      {"split_prompts", "sarathi policy splits prompts"});
}

// ---- runs --------------------------------------------------------------------------------

TEST_F(Cli, DeterministicAcrossRuns) {
  const std::string a = (dir_ / "a").string(), b = (dir_ / "b").string();
  ASSERT_EQ(run("run scenarios/chat-service.yaml --quiet --out " + a).code, 0);
  ASSERT_EQ(run("run scenarios/chat-service.yaml --quiet --out " + b).code, 0);
  json ja = json::parse(slurp(a + "/summary.json")), jb = json::parse(slurp(b + "/summary.json"));
  ja.erase("wall_s");
  jb.erase("wall_s");
  EXPECT_EQ(ja.dump(), jb.dump());
  // Another seed gives another run.
  ASSERT_EQ(run("run scenarios/chat-service.yaml --quiet --seed 2 --out " + b).code, 0);
  jb = json::parse(slurp(b + "/summary.json"));
  EXPECT_EQ(jb["seed"], 2);
  EXPECT_NE(ja["ttft_p99_s"], jb["ttft_p99_s"]);
}

TEST_F(Cli, DefaultScenarioGoldenSummary) {
  const std::string o = (dir_ / "o").string();
  const Result r = run("run scenarios/chat-service.yaml --quiet --out " + o + " --requests-csv " +
                       o + "/req.csv");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(slurp(o + "/summary.json"));
  for (const char* k :
       {"requests_completed", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s",
        "e2e_p99_s", "input_tok_per_s", "output_tok_per_s", "sim_duration_s", "wall_s", "events",
        "seed", "scenario"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  // Hand-checkable facts. The workload asks for 6,000 requests; none is longer than
  // Llama-3.1-8B's context or the KV cache, so all complete.
  EXPECT_EQ(j["requests_completed"], 6000);
  EXPECT_EQ(j["requests_rejected"], 0);
  // Poisson at 20/s: 6,000 arrivals take ≈ 300 s (± a few %), plus the tail of the last
  // requests (seconds).
  EXPECT_NEAR(j["sim_duration_s"].get<double>(), 300.0, 20.0);
  // Rates are totals over the simulated time.
  EXPECT_NEAR(j["input_tok_per_s"].get<double>() * j["sim_duration_s"].get<double>(),
              j["input_tokens"].get<double>(), 1e-6 * j["input_tokens"].get<double>());
  // A decode step reads all weights at least once: 8.03e9 params × 2 B / 3.35e12 B/s =
  // 4.79 ms is a floor for any time per output token.
  EXPECT_GT(j["tpot_p50_s"].get<double>(), 4.79e-3);
  EXPECT_LE(j["ttft_p50_s"].get<double>(), j["ttft_p99_s"].get<double>());
  EXPECT_LE(j["ttft_p99_s"].get<double>(), j["ttft_max_s"].get<double>());
  // One CSV row per request plus the header.
  const std::string csv = slurp(o + "/req.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6001);

  // Regression baseline: tests/golden/chat_service_summary.json holds the summary of this
  // scenario at the commit that last changed the model on purpose (regenerate it with
  // tools/update_golden.sh and say why in the commit). Metrics must match to 1e-9.
  const json golden = json::parse(slurp(kRoot + "/tests/golden/chat_service_summary.json"));
  for (const auto& [key, value] : golden.items()) {
    ASSERT_TRUE(j.contains(key)) << key;
    if (value.is_number_float()) {
      EXPECT_NEAR(j[key].get<double>(), value.get<double>(),
                  1e-9 * std::max(1.0, std::abs(value.get<double>())))
          << key;
    } else {
      EXPECT_EQ(j[key], value) << key;
    }
  }
}

TEST_F(Cli, OverridesReachTheResolvedScenario) {
  const std::string o = (dir_ / "o").string();
  ASSERT_EQ(run("run scenarios/chat-service.yaml --quiet --out " + o +
                " --set serving.replicas=3 --set workload.requests=300")
                .code,
            0);
  const json j = json::parse(slurp(o + "/summary.json"));
  EXPECT_EQ(j["scenario"]["serving"]["replicas"], 3);
  EXPECT_EQ(j["requests_completed"], 300);
}

// The validation suite runs, covers the groups it promises, and is no worse than the
// committed baseline (scenarios/validation/baseline.json). This is the CI gate.
TEST_F(Cli, ValidationSuiteIsNoWorseThanTheBaseline) {
  const Result r = run("validate --check-baseline");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("baseline: no group is worse"), std::string::npos) << r.out;
  // At least 30 cases over at least 4 GPU families, dense and MoE, single- and multi-GPU.
  const auto count = [&](const std::string& group) {
    const auto p = r.out.find("\n" + group + " ");
    if (p == std::string::npos) return 0;
    return std::stoi(r.out.substr(p + 1 + 28, 5));
  };
  EXPECT_GE(count("all"), 30) << r.out;
  EXPECT_GE(count("model moe"), 1);
  EXPECT_GE(count("model dense"), 1);
  EXPECT_GE(count("multi-GPU"), 1);
  EXPECT_GE(count("single-GPU"), 1);
  int families = 0;
  for (const char* f : {"gpu AMD", "gpu Apple", "gpu NVIDIA Ada", "gpu NVIDIA Ampere",
                        "gpu NVIDIA Blackwell", "gpu NVIDIA Hopper", "gpu Google"})
    families += count(f) > 0;
  EXPECT_GE(families, 4);
  EXPECT_GE(count("held out"), 1);
}

TEST_F(Cli, ValidateWritesEveryCaseInFullToJson) {
  // Two published decode rates (batch 1) copied into a folder of their own: llama.cpp's
  // Llama-2-7B F16 on an H100 PCIe (83.32 tokens/s) and SGLang's gpt-oss-120b MXFP4 on
  // 8 x H100 (318.53 tokens/s). The JSON holds both with their full ids and measured values
  // as the case files give them, error = predicted / measured − 1, and the group "all".
  const fs::path cases = dir_ / "cases";
  fs::create_directories(cases);
  for (const char* id :
       {"llamacpp-h100pcie-llama2-7b-f16-tg", "sglang-h100x8-gptoss120b-mxfp4-bs1-1024x512-decode"})
    fs::copy_file(kRoot + "/scenarios/validation/" + id + ".yaml",
                  cases / (std::string(id) + ".yaml"));
  const std::string out = (dir_ / "v.json").string();
  const Result r = run("validate " + cases.string() + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("wrote " + out), std::string::npos) << r.out;
  const json j = json::parse(slurp(out));
  ASSERT_EQ(j["cases"].size(), 2u);
  const json& a = j["cases"][0];
  EXPECT_EQ(a["id"], "llamacpp-h100pcie-llama2-7b-f16-tg");
  EXPECT_EQ(a["measured"], 83.32);
  EXPECT_EQ(a["engine"], "llamacpp");
  EXPECT_EQ(a["gpus"], 1);
  const json& b = j["cases"][1];
  EXPECT_EQ(b["id"], "sglang-h100x8-gptoss120b-mxfp4-bs1-1024x512-decode");
  EXPECT_EQ(b["measured"], 318.53);
  EXPECT_EQ(b["gpus"], 8);
  for (const json& c : j["cases"]) {
    const double m = c["measured"], p = c["predicted"];
    EXPECT_GT(p, 0);
    EXPECT_NEAR(c["error"].get<double>(), p / m - 1.0, 1e-12);
    EXPECT_NEAR(c["optimism"].get<double>(), p / m - 1.0, 1e-12);  // a rate: the same sign
  }
  EXPECT_EQ(j["groups"][0]["group"], "all");
  EXPECT_EQ(j["groups"][0]["cases"], 2);
  // A folder that does not exist is refused before anything runs.
  expect_error("validate " + cases.string() + " --json " + (dir_ / "nope" / "v.json").string(),
               {"--json", "does not exist"});
}

TEST_F(Cli, ExplainPrintsTheOperatorBreakdown) {
  const Result r =
      run("run scenarios/chat-service.yaml --quiet --explain --out " + (dir_ / "o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* k : {"prefill: one chunk of", "decode: 32 sequences", "QKV projection",
                        "decode attention", "MLP up+gate", "LM head", "totals:"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k << "\n" << r.out;
}

TEST_F(Cli, ExplainShowsALongPromptsMeanChunkWithItsCachedPrefix) {
  // 10,000-token prompts in a 2,048-token budget run in chunks; the mean chunk has
  // (10000 − 2048) / 2 = 3,976 prompt tokens before it. Llama-3.1-8B (32 query heads of
  // 128, TP 1) spends 4 · 32 · 128 = 16,384 FLOPs per query-key pair, and the chunk has
  // 2048 · (3976 + 2049 / 2) = 10,241,024 pairs: 1.678e11 FLOPs per layer ("168G"). Without
  // the cached prefix it would be 2048 · 2049 / 2 pairs: 34.4G.
  const Result r =
      run("run scenarios/chat-service.yaml --quiet --explain --set workload.prompt_tokens=10000 "
          "--set workload.requests=50 --out " +
          (dir_ / "o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2048 tokens after 3976 of the prompt already in the KV cache"),
            std::string::npos)
      << r.out;
  const size_t line = r.out.find("attention: prefill attention");
  ASSERT_NE(line, std::string::npos) << r.out;
  EXPECT_NE(r.out.substr(line, r.out.find('\n', line) - line).find(" 168G "), std::string::npos)
      << r.out;
}

TEST_F(Cli, CalibrateImportChecksAndNeverOverwritesWithoutForce) {
  const std::string dest = (dir_ / "calib").string();
  const std::string table = kRoot + "/hw_models/calibration/h100-sxm-fa3.csv";
  Result r = run("calibrate import " + table + " --calibration " + dest);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "calib" / "h100-sxm-fa3.csv"));
  r = run("calibrate import " + table + " --calibration " + dest);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("already installed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(run("calibrate import " + table + " --calibration " + dest + " --force").code, 0);
  // A broken table is rejected with its line and column.
  const std::string bad = (dir_ / "bad.csv").string();
  std::ofstream(bad)
      << "# fleetsim-calibration: 1\n# gpu: h100-sxm\n# source: s\n# driver: d\n"
         "# cuda: c\n# date: 2026-01-01\n"
         "op,dtype,m,n,k,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,time_us,citation\n"
         "gemm,bf16,4096,4096,4096,,,,,,,,0.5,too fast\n";
  r = run("calibrate import " + bad + " --calibration " + dest);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad + ":8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("time_us"), std::string::npos) << r.err;
}

TEST_F(Cli, CalibrateImportHelpIsHelpNotAFileName) {
  // `calibrate import --help` used to open a table named "--help". Help anywhere in the
  // arguments prints the usage and exits 0; a missing FILE is a usage error (exit 2).
  for (const char* args : {"calibrate import --help", "calibrate import -h", "calibrate --help"}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
    EXPECT_NE(r.out.find("usage: fleetsim calibrate import FILE"), std::string::npos) << args;
    EXPECT_EQ(r.err.find("cannot open"), std::string::npos) << args << "\n" << r.err;
  }
  EXPECT_EQ(run("calibrate import").code, 2);
}

TEST_F(Cli, MemoryFitErrorSaysWhatWouldFit) {
  // Llama-3.1-70B in BF16 (141 GB) cannot fit one H100 (80 GB).
  const Result r = run("check scenarios/chat-service.yaml --set model=llama-3.1-70b");
  EXPECT_EQ(r.code, 1);
  for (const char* k : {"does not fit on 1 x h100-sxm", "short by", "hardware", "try tp: 2"})
    EXPECT_NE(r.err.find(k), std::string::npos) << k << "\n" << r.err;
}

// ---- batching policies: static, dynamic, orca --------------------------------------------

TEST_F(Cli, CheckAcceptsEveryBatchingPolicy) {
  for (const char* p : {"static", "dynamic", "orca"}) {
    const Result r =
        run(std::string("check scenarios/chat-service.yaml --set serving.policy=") + p);
    EXPECT_EQ(r.code, 0) << p << ": " << r.err;
  }
  const Result r =
      run("check scenarios/chat-service.yaml --set serving.policy=dynamic --set "
          "serving.batch_timeout=5ms");
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string list = run("list policies").out;
  for (const char* k : {"static", "dynamic", "orca", "serving.batch_timeout", "Orca"})
    EXPECT_NE(list.find(k), std::string::npos) << k;
}

TEST_F(Cli, BatchTimeoutOnlyWithDynamic) {
  expect_error("check scenarios/chat-service.yaml --set serving.batch_timeout=10ms",
               {"serving.batch_timeout", "only to policy 'dynamic'", "policy is 'vllm'", "hint"});
  expect_error(
      "check scenarios/chat-service.yaml --set serving.policy=orca --set "
      "serving.batch_timeout=10ms",
      {"serving.batch_timeout", "policy is 'orca'"});
  expect_error(
      "check scenarios/chat-service.yaml --set serving.policy=dynamic --set "
      "serving.batch_timeout=10",
      {"serving.batch_timeout", "unit"});
  expect_error(
      "check scenarios/chat-service.yaml --set serving.policy=dynamic --set "
      "serving.batch_timeout=-1ms",
      {"serving.batch_timeout"});
}

TEST_F(Cli, EveryBatchingPolicyRuns) {
  for (const char* p : {"static", "dynamic", "orca"}) {
    const std::string o = (dir_ / p).string();
    const Result r =
        run(std::string("run scenarios/chat-service.yaml --quiet --set serving.policy=") + p +
            " --set workload.requests=300 --out " + o);
    ASSERT_EQ(r.code, 0) << p << ": " << r.err;
    const json j = json::parse(slurp(o + "/summary.json"));
    EXPECT_EQ(j["scenario"]["serving"]["policy"], p);
    EXPECT_EQ(j["requests_completed"].get<int>() + j["requests_rejected"].get<int>(), 300) << p;
    EXPECT_GT(j["ttft_p50_s"].get<double>(), 0.0) << p;
  }
}

// Every comparison scenario in scenarios/examples/ runs (compare.sh runs their
// variants and prints the tables of scenarios/README.md).
TEST_F(Cli, ExampleScenariosRun) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kRoot + "/scenarios/examples")) {
    if (e.path().extension() != ".yaml") continue;
    ++n;
    const std::string o = (dir_ / e.path().stem()).string();
    // SimGrid tables (expert-parallel.yaml) go to this test's folder, not the user's cache.
    const Result r = run("run " + e.path().string() + " --quiet --out " + o,
                         "FLEETSIM_CACHE_DIR='" + (dir_ / "cache").string() + "'");
    if (r.code != 0 && r.err.find("built without SimGrid") != std::string::npos) continue;
    ASSERT_EQ(r.code, 0) << e.path() << "\n" << r.err;
    const json j = json::parse(slurp(o + "/summary.json"));
    EXPECT_GT(j["requests_completed"].get<int>(), 0) << e.path();
  }
  EXPECT_GE(n, 6);
}

TEST_F(Cli, SweepOfASimGridScenarioRunsEachPointInItsOwnProcess) {
  // 1 and 2 decode replicas change the SimGrid fabric; one process can hold only one, so
  // each point runs in a child process (run_in_own_process). Both points complete.
  const std::string o = (dir_ / "s").string();
  const Result r =
      run("sweep scenarios/examples/expert-parallel.yaml --vary serving.replicas=1,2 "
          "--set workload.requests=200 --threads 2 --quiet --out " +
              o,
          "FLEETSIM_CACHE_DIR='" + (dir_ / "cache").string() + "'");
  if (r.code != 0 && r.err.find("built without SimGrid") != std::string::npos)
    GTEST_SKIP() << r.err;
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(o + "/sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;  // header + 2 points
  EXPECT_EQ(csv.find("error"), std::string::npos) << csv;
}

TEST_F(Cli, CascadeEscalatesTheConfiguredShare) {
  // 2,000 requests; each escalates when a hash of its id falls below 0.3, so about 600 do
  // (binomial: sd = sqrt(2000·0.3·0.7) = 20.5; ±4 sd = ±82). All complete exactly once.
  const std::string o = (dir_ / "c").string();
  const Result r = run("run scenarios/examples/cascade.yaml --quiet --out " + o);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(slurp(o + "/summary.json"));
  EXPECT_EQ(j["requests_completed"], 2000);
  EXPECT_EQ(j["requests_arrived"], 2000);
  EXPECT_NEAR(j["escalations"].get<double>(), 600, 82);
}

TEST_F(Cli, ResponseCacheAnswersWithoutAModelCall) {
  // hit_rate 0.25 of 6,000 requests: 1,500 ± 4·sqrt(6000·0.25·0.75) = ±134 answered from the
  // cache, with TTFT = the 5 ms cache latency; the rest are served as before.
  const std::string o = (dir_ / "rc").string();
  const Result r = run("run scenarios/chat-service.yaml --quiet --out " + o +
                       " --set 'serving.response_cache={hit_rate: 0.25, latency: 5ms}'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(slurp(o + "/summary.json"));
  EXPECT_NEAR(j["response_cache_hits"].get<double>(), 1500, 134);
  EXPECT_EQ(j["requests_completed"], 6000);
  // Exact matching needs prompt identities: a synthetic workload has none.
  const Result bad =
      run("check scenarios/chat-service.yaml --set 'serving.response_cache={capacity: 10}'");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("serving.response_cache.capacity"), std::string::npos) << bad.err;
}

TEST_F(Cli, PrefixCachingNeedsPrefixHashes) {
  const Result r = run("check scenarios/chat-service.yaml --set serving.prefix_caching=true");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("serving.prefix_caching"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("prefix-block hashes"), std::string::npos) << r.err;
}

TEST_F(Cli, PriorityClassesAreReportedAndChatIsServedFirst) {
  const std::string o = (dir_ / "p").string();
  const Result r = run("run scenarios/examples/priorities.yaml --quiet --out " + o);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(slurp(o + "/summary.json"));
  const auto& chat = j["classes"]["chat"];
  const auto& batch = j["classes"]["batch"];
  // Every request is counted once: completed + rejected = arrived, per class and in all.
  EXPECT_EQ(chat["requests_completed"].get<int>() + batch["requests_completed"].get<int>(),
            j["requests_completed"].get<int>());
  EXPECT_EQ(chat["requests_rejected"].get<int>() + batch["requests_rejected"].get<int>(),
            j["requests_rejected"].get<int>());
  EXPECT_EQ(j["requests_rejected"].get<int>(), j["requests_rejected_queue_full"].get<int>());
  EXPECT_EQ(j["requests_completed"].get<int>() + j["requests_rejected"].get<int>(), 4000);
  // Overloaded: shedding falls on the low-priority class only, and chat waits less.
  EXPECT_EQ(chat["requests_rejected"], 0);
  EXPECT_GT(batch["requests_rejected"].get<int>(), 0);
  EXPECT_LT(chat["ttft_p99_s"].get<double>(), batch["ttft_p50_s"].get<double>());
}

TEST_F(Cli, DefaultScenarioOpensWithTheFleetAnswer) {
  // The default scenario at a tenth of its sample (0.05 % of users; every pool still has
  // at least one replica): a fleet run that prints the answer first and writes the JSON
  // and the per-region CSV.
  const std::string o = (dir_ / "d").string();
  const Result r =
      run("run scenarios/default.yaml --quiet --set users.sample=0.0005 --set users.duration=2h "
          "--out " +
          o);
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t answer = r.out.find("THE ANSWER");
  ASSERT_NE(answer, std::string::npos) << r.out;
  EXPECT_LT(answer, r.out.find("regions "));
  EXPECT_NE(r.out.find("WHY NOT AT HOME"), std::string::npos);
  EXPECT_NE(r.out.find("sampling error"), std::string::npos);
  const json j = json::parse(slurp(o + "/summary.json"));
  // 700e6 · 0.4 DAU · 2.5 sessions = 700M sessions a day; every configured GPU is in the
  // answer, (replicas + spares) · GPUs per replica: americas (6400 + 128)·8 + 1224, europe
  // (5200 + 104)·8 + 1224, south-asia (3200 + 64)·8 + 612, east-asia (4200 + 84)·8 + 612 =
  // (52,224 + 42,432 + 26,112 + 34,272) + (1,224 + 1,224 + 612 + 612) = 155,040 + 3,672
  // = 158,712.
  EXPECT_DOUBLE_EQ(j["answer"]["gpus_configured"].get<double>(), 158712.0);
  EXPECT_GT(j["answer"]["cost_usd_per_day"].get<double>(), 0.0);
  EXPECT_EQ(j["calls_arrived"].get<uint64_t>(), j["calls_completed"].get<uint64_t>() +
                                                    j["calls_failed"].get<uint64_t>() +
                                                    j["calls_unfinished"].get<uint64_t>());
  const std::string csv = slurp(o + "/regions.csv");
  EXPECT_EQ(csv.rfind("region,start_s,", 0), 0u);
  EXPECT_NE(csv.find("east-asia,"), std::string::npos);
  // pools.csv and datacenters.csv hold the report's tables: their GPUs and racks add up to
  // the answer's (8 pools, 4 regions).
  auto column_sum = [](const std::string& text, const std::string& column, size_t* rows) {
    std::istringstream in(text);
    std::string line, cell;
    std::getline(in, line);
    std::vector<std::string> header;
    for (std::istringstream h(line); std::getline(h, cell, ',');) header.push_back(cell);
    const size_t c =
        static_cast<size_t>(std::find(header.begin(), header.end(), column) - header.begin());
    double sum = 0;
    *rows = 0;
    while (std::getline(in, line)) {
      std::istringstream row(line);
      for (size_t i = 0; std::getline(row, cell, ','); ++i)
        if (i == c) sum += std::stod(cell);
      ++*rows;
    }
    return sum;
  };
  size_t rows = 0;
  const std::string pools = slurp(o + "/pools.csv"), dcs = slurp(o + "/datacenters.csv");
  EXPECT_DOUBLE_EQ(column_sum(pools, "gpus_peak", &rows), j["answer"]["gpus_peak"].get<double>());
  EXPECT_EQ(rows, 8u);
  EXPECT_DOUBLE_EQ(column_sum(dcs, "racks", &rows), j["answer"]["racks"].get<double>());
  EXPECT_EQ(rows, 4u);
}

TEST_F(Cli, DefaultScenarioIsTheFullScaleScenarioSampled) {
  // default.yaml must stay the sampled twin of chatgpt-700m.yaml: equal except for name,
  // description and users.sample.
  YAML::Node a = YAML::LoadFile(kRoot + "/scenarios/default.yaml");
  YAML::Node b = YAML::LoadFile(kRoot + "/scenarios/chatgpt-700m.yaml");
  EXPECT_LT(a["users"]["sample"].as<double>(), 1.0);
  EXPECT_EQ(b["users"]["sample"].as<double>(), 1.0);
  for (YAML::Node* n : {&a, &b}) {
    (*n).remove("name");
    (*n).remove("description");
    (*n)["users"].remove("sample");
  }
  YAML::Emitter ea, eb;
  ea << a;
  eb << b;
  EXPECT_EQ(std::string(ea.c_str()), std::string(eb.c_str()));
}

TEST_F(Cli, FleetResultsDoNotDependOnThreads) {
  const std::string o1 = (dir_ / "t1").string(), o2 = (dir_ / "t2").string();
  const std::string base =
      "run scenarios/default.yaml --quiet --set users.sample=0.0005 --set users.duration=1h ";
  ASSERT_EQ(run(base + "--threads 1 --out " + o1).code, 0);
  ASSERT_EQ(run(base + "--threads 2 --out " + o2).code, 0);
  json a = json::parse(slurp(o1 + "/summary.json")), b = json::parse(slurp(o2 + "/summary.json"));
  for (json* j : {&a, &b})
    for (const char* k : {"wall_s", "peak_rss_bytes"}) j->erase(k);
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_EQ(slurp(o1 + "/regions.csv"), slurp(o2 + "/regions.csv"));
}

TEST_F(Cli, ReplicationsAreTheSeedsRunOneByOne) {
  // --replications 3 runs seeds 1, 2, 3: its values must equal three separate runs.
  const std::string o = (dir_ / "r").string(), o2 = (dir_ / "s2").string();
  const std::string base = "run scenarios/chat-service.yaml --quiet --set workload.requests=500 ";
  ASSERT_EQ(run(base + "--replications 3 --out " + o).code, 0);
  ASSERT_EQ(run(base + "--seed 2 --out " + o2).code, 0);
  const json j = json::parse(slurp(o + "/summary.json"));
  const json s2 = json::parse(slurp(o2 + "/summary.json"));
  const auto& ttft = j["replications"]["metrics"]["ttft_p99_s"];
  ASSERT_EQ(ttft["values"].size(), 3u);
  EXPECT_EQ(ttft["values"][0].get<double>(), j["ttft_p99_s"].get<double>());
  EXPECT_EQ(ttft["values"][1].get<double>(), s2["ttft_p99_s"].get<double>());
  EXPECT_EQ(j["replications"]["seeds"], json({1, 2, 3}));
  EXPECT_GT(ttft["ci95_half_width"].get<double>(), 0.0);
  const Result bad = run(base + "--replications 1 --out " + o);
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--replications must be between 2 and 1000"), std::string::npos)
      << bad.err;
}

TEST_F(Cli, PerfettoTraceHoldsEverySegmentAndRequest) {
  const std::string o = (dir_ / "t").string();
  const Result r =
      run("run scenarios/chat-service.yaml --quiet --set workload.requests=300 --out " + o +
          " --trace " + o + "/trace.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json summary = json::parse(slurp(o + "/summary.json"));
  const json trace = json::parse(slurp(o + "/trace.json"));  // valid JSON (a Chrome trace array)
  ASSERT_TRUE(trace.is_array());
  int64_t iterations = 0;
  std::map<uint64_t, int> begins, ends;
  std::map<std::pair<uint64_t, std::string>, double> begin_ts;
  for (const auto& e : trace) {
    const std::string ph = e["ph"];
    if (ph == "X") {
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      iterations += e["args"]["iterations"].get<int64_t>();
    } else if (ph == "b") {
      ++begins[e["id"]];
      begin_ts[{e["id"].get<uint64_t>(), e["name"].get<std::string>()}] = e["ts"].get<double>();
    } else if (ph == "e") {
      ++ends[e["id"]];
      // Every phase ends no earlier than it began (the file lists b before e).
      EXPECT_LE(begin_ts.at({e["id"].get<uint64_t>(), e["name"].get<std::string>()}),
                e["ts"].get<double>());
    }
  }
  // The segments' iterations add up to the run's; every completed request has its four
  // phases (request, queue, prefill, decode), begun and ended.
  EXPECT_EQ(iterations, summary["iterations"].get<int64_t>());
  EXPECT_EQ(begins.size(), summary["requests_completed"].get<size_t>());
  for (const auto& [id, n] : begins) {
    EXPECT_EQ(n, 4) << id;
    EXPECT_EQ(ends[id], 4) << id;
  }
  EXPECT_NE(r.out.find("trace "), std::string::npos);
}

// fleetsim plan on the bundled plan scenario, shortened to 5 minutes of traffic and 4
// simulated configurations: the outputs exist, the choice's cost is its GPUs times the
// price, every configuration has a row, and the result does not depend on the threads.
TEST_F(Cli, PlanWritesTheChoiceAndEveryConfiguration) {
  const std::string a = (dir_ / "a").string(), b = (dir_ / "b").string();
  const std::string args =
      "plan scenarios/plan-llama70b-chat.yaml --quiet --set workload.duration=5min "
      "--set plan.simulate=4 --out ";
  const Result r = run(args + a + " --threads 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("ANSWER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("WHY THE OTHERS LOST"), std::string::npos) << r.out;
  json ja = json::parse(slurp(a + "/plan.json"));
  // 4 GPUs × 4 tp × 2 pp × 2 weights × 2 kv × 2 policies × 4 batch limits (the scenario's plan:).
  EXPECT_EQ(ja["configurations"], 1024);
  const json& c = ja["chosen"];
  ASSERT_TRUE(c.is_object());
  // GPUs = (replicas + prefill replicas + 1 spare) × GPUs per replica; $/h = GPUs × price.
  const std::string csv = slurp(a + "/plan.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1025);  // header + one row per configuration
  EXPECT_GE(c["slo_attainment"].get<double>(), 0.99);
  EXPECT_EQ(c["spare_replicas"], 1);
  const std::string gpu = c["values"]["hardware.gpu"];
  const double price = gpu == "b200"       ? 5.25
                       : gpu == "h200-sxm" ? 4.0
                       : gpu == "h100-sxm" ? 3.24
                                           : 1.99;
  const int tp = std::stoi(c["values"]["hardware.tp"].get<std::string>());
  const int pp = std::stoi(c["values"]["hardware.pp"].get<std::string>());
  const int gpus = (c["replicas"].get<int>() + c["prefill_replicas"].get<int>() + 1) * tp * pp;
  EXPECT_EQ(c["gpus"], gpus);
  EXPECT_NEAR(c["usd_per_hour"].get<double>(), gpus * price, 1e-9);
  // One thread: the same plan.
  ASSERT_EQ(run(args + b + " --threads 1").code, 0);
  json jb = json::parse(slurp(b + "/plan.json"));
  ja.erase("wall_s");
  jb.erase("wall_s");
  EXPECT_EQ(ja.dump(), jb.dump());
  // `run` on the same file simulates the configuration as written and ignores plan:.
  EXPECT_EQ(
      run("run scenarios/plan-llama70b-chat.yaml --quiet --set workload.duration=1min --out " + b)
          .code,
      0);
}

TEST_F(Cli, PlanNeedsAPlanSection) {
  expect_error("plan scenarios/chat-service.yaml",
               {"chat-service.yaml", "no plan: section", "hint"});
}

// fleetsim sweep: every (point, seed) is one run whose metrics equal a plain `run` of the
// same overrides and seed; a sweep: section in the file gives the same as --vary.
TEST_F(Cli, SweepRowsEqualPlainRuns) {
  const std::string a = (dir_ / "a").string(), r = (dir_ / "r").string();
  const Result s = run(
      "sweep scenarios/chat-service.yaml --quiet --threads 2 --vary serving.replicas=1,2 --seeds 2 "
      "--set workload.requests=1500 --out " +
      a);
  ASSERT_EQ(s.code, 0) << s.err;
  const std::string csv = slurp(a + "/sweep.csv");
  // Header + 2 points × 2 seeds; the last varied value is first on each row, then the seed.
  ASSERT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;
  EXPECT_EQ(csv.rfind("serving.replicas,seed,requests_completed,ttft_p50_s,ttft_p99_s,", 0), 0u)
      << csv;
  std::istringstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::vector<std::string> rows;
  while (std::getline(in, row)) rows.push_back(row);
  EXPECT_EQ(rows[0].rfind("1,1,1500,", 0), 0u) << rows[0];  // replicas 1, seed 1
  EXPECT_EQ(rows[3].rfind("2,2,1500,", 0), 0u) << rows[3];  // replicas 2, seed 2
  // Row 4 (replicas 2, seed 2) against `fleetsim run` with the same overrides and seed;
  // columns: replicas, seed, requests_completed, ttft_p50_s, ttft_p99_s (4), tpot_p99_s,
  // e2e_p50_s, output_tok_per_s, goodput_req_per_s (8), ... (6 significant digits in the CSV).
  ASSERT_EQ(run("run scenarios/chat-service.yaml --quiet --set workload.requests=1500 --set "
                "serving.replicas=2 "
                "--seed 2 --out " +
                r)
                .code,
            0);
  const json j = json::parse(slurp(r + "/summary.json"));
  std::vector<std::string> cells;
  std::istringstream rs(rows[3]);
  for (std::string c; std::getline(rs, c, ',');) cells.push_back(c);
  EXPECT_NEAR(std::stod(cells[4]), j["ttft_p99_s"].get<double>(),
              1e-5 * j["ttft_p99_s"].get<double>());
  EXPECT_NEAR(std::stod(cells[8]), j["goodput_req_per_s"].get<double>(),
              1e-5 * j["goodput_req_per_s"].get<double>());
  // The same axes from a sweep: section in the file.
  const std::string with_section =
      variant("sectioned", "slo:", "sweep: {vary: {serving.replicas: [1, 2]}, seeds: 2}\nslo:");
  const std::string b = (dir_ / "b").string();
  ASSERT_EQ(run("sweep " + with_section + " --quiet --set workload.requests=1500 --out " + b).code,
            0);
  EXPECT_EQ(slurp(b + "/sweep.csv"), csv);
}

TEST_F(Cli, ASweepOverOneNumericAxisMarksTheKneeOfItsLatencyCurve) {
  // chat-service at 10 to 50 requests/s: its TTFT p99 rises slowly, then runs away at the
  // last point; the knee (reports/sweep_test.cpp checks the rule by hand) is an interior
  // point, printed, written in report.md and drawn in sweep_latency.svg.
  const std::string o = (dir_ / "knee").string();
  const Result r =
      run("sweep scenarios/chat-service.yaml --quiet --set workload.requests=2000 --vary "
          "workload.arrival.rate=10/s,20/s,30/s,40/s,50/s --out " +
          o);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string knee = "KNEE   ttft_p99_s turns up at workload.arrival.rate = ";
  const size_t at = r.out.find(knee);
  ASSERT_NE(at, std::string::npos) << r.out;
  const size_t from = at + knee.size();
  const std::string value = r.out.substr(from, r.out.find(' ', from) - from);
  EXPECT_TRUE(value == "20/s" || value == "30/s" || value == "40/s") << value;
  EXPECT_NE(slurp(o + "/report.md").find("The knee: ttft_p99_s turns up at"), std::string::npos);
  if (fs::exists(o + "/sweep_latency.svg")) {  // gnuplot installed
    EXPECT_NE(slurp(o + "/sweep_latency.svg").find("knee: " + value), std::string::npos);
  }
}

TEST_F(Cli, SweepInputErrors) {
  expect_error("sweep scenarios/chat-service.yaml", {"nothing to sweep", "hint"});
  expect_error("sweep scenarios/chat-service.yaml --vary serving.replicas",
               {"--vary", "KEY=V1,V2"});
  // A point that does not load is reported before anything runs.
  expect_error("sweep scenarios/chat-service.yaml --vary serving.replicas=2,0",
               {"serving.replicas", "--set"});
}

}  // namespace
