// Tests for sim/validation/bench_import: a serving benchmark's saved result becomes case
// files that the validation suite runs. The JSON texts below are format fixtures with the
// field names of vLLM's benchmark_serving.py result dictionary (duration, completed,
// total_input_tokens, total_output_tokens, request_throughput, output_throughput,
// total_token_throughput, mean_ttft_ms, mean_tpot_ms, with backend, model_id,
// request_rate, burstiness and max_concurrency from its main()); their values are chosen
// for the hand math, not measurements.
#include "sim/validation/bench_import.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "hw_models/error.h"
#include "sim/validation/validation.h"

namespace fleetsim::validation {
namespace {

const hw::Catalog& bench_catalog() {
  static const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  return catalog;
}

std::string bench_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "fleetsim_bench_import_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

// 100 requests, 22,900 prompt and 21,700 output tokens (means 229 and 217), at most 4 in
// flight, sent as fast as the limit allows.
const char* kVllmResult = R"({
  "date": "20250101-120000",
  "backend": "openai-chat",
  "model_id": "openai/gpt-oss-120b",
  "num_prompts": 100,
  "request_rate": "inf",
  "burstiness": 1.0,
  "max_concurrency": 4,
  "duration": 75.0,
  "completed": 100,
  "total_input_tokens": 22900,
  "total_output_tokens": 21700,
  "request_throughput": 1.3333,
  "output_throughput": 289.33,
  "total_token_throughput": 594.67,
  "mean_ttft_ms": 150.0,
  "mean_tpot_ms": 11.67
})";

BenchImportOptions a100_gptoss() {
  BenchImportOptions o;
  o.model = "gpt-oss-120b";
  o.gpu = "a100-80gb-sxm";
  o.weights = "fp4";  // MXFP4 experts: 120B parameters fit one 80 GB GPU only so
  return o;
}

std::string with(const std::string& base, const std::string& from, const std::string& to) {
  std::string s = base;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(BenchImport, EachFigureBecomesACaseThatTheSuiteRuns) {
  const auto cases =
      import_serving_bench(bench_file("c4.json", kVllmResult), a100_gptoss(), bench_catalog());
  // The total throughput (output_throughput is skipped when the total is there), mean TTFT
  // and mean TPOT, in the suite's units: 150 ms = 0.15 s, 11.67 ms = 0.01167 s.
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].name, "c4-total_tokens_per_s.yaml");
  EXPECT_EQ(cases[1].name, "c4-ttft_mean.yaml");
  EXPECT_EQ(cases[2].name, "c4-tpot_mean.yaml");
  EXPECT_NE(cases[0].text.find("measured: 594.67"), std::string::npos) << cases[0].text;
  EXPECT_NE(cases[1].text.find("measured: 0.15 "), std::string::npos) << cases[1].text;
  // The load: a closed loop of 4 clients; lengths 22,900 / 100 = 229 and 21,700 / 100 = 217.
  for (const auto& c : cases) {
    EXPECT_NE(c.text.find("clients: {users: 4, think_time: 0s}"), std::string::npos) << c.text;
    EXPECT_NE(c.text.find("prompt_tokens: {dist: fixed, value: 229}"), std::string::npos);
    EXPECT_NE(c.text.find("output_tokens: {dist: fixed, value: 217}"), std::string::npos);
    EXPECT_NE(c.text.find("engine: vllm-v1"), std::string::npos);  // backend openai-chat
    EXPECT_NE(c.text.find("precision: {weights: fp4}"), std::string::npos);
  }
  // The suite loads and runs the written case: the measured value as the file gave it.
  const auto dir = std::filesystem::temp_directory_path() / "fleetsim_bench_import_cases";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / cases[2].name).string();
  std::ofstream(file) << cases[2].text;
  const Case c = run_case(file, bench_catalog(), nullptr);
  EXPECT_EQ(c.metric, "tpot_mean");
  EXPECT_DOUBLE_EQ(c.measured, 0.01167);
  EXPECT_EQ(c.engine, "vllm-v1");
  EXPECT_EQ(c.source, "c4");  // the file stem, for leave-one-source-out
  EXPECT_GT(c.predicted, 0.0);
}

TEST(BenchImport, ARequestRateIsPoissonAndSglangPicksItsEngine) {
  std::string json = with(kVllmResult, "\"max_concurrency\": 4,", "");
  json = with(json, "\"request_rate\": \"inf\"", "\"request_rate\": 2.5");
  json = with(json, "\"backend\": \"openai-chat\"", "\"backend\": \"sglang\"");
  json = with(json, "  \"total_token_throughput\": 594.67,\n", "");
  const auto cases =
      import_serving_bench(bench_file("rate.json", json), a100_gptoss(), bench_catalog());
  ASSERT_EQ(cases.size(), 3u);
  // No total in the file: the output throughput is the throughput case.
  EXPECT_EQ(cases[0].name, "rate-output_tokens_per_s.yaml");
  for (const auto& c : cases) {
    EXPECT_NE(c.text.find("arrival: {process: poisson, rate: 2.5/s}"), std::string::npos) << c.text;
    EXPECT_NE(c.text.find("engine: sglang"), std::string::npos);
  }
  // "inf" without a concurrency limit: every request at once (as the suite's offline cases).
  const auto burst =
      import_serving_bench(bench_file("inf.json", with(kVllmResult, "\"max_concurrency\": 4,", "")),
                           a100_gptoss(), bench_catalog());
  EXPECT_NE(burst[0].text.find("rate: 1000000/s"), std::string::npos) << burst[0].text;
}

// The error's text, or "" when none was thrown.
std::string import_error(const std::string& name, const std::string& json,
                         BenchImportOptions opt = a100_gptoss()) {
  try {
    import_serving_bench(bench_file(name, json), opt, bench_catalog());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(BenchImport, BadInputNamesTheFileFieldAndLine) {
  // A missing field: its name, the file, and a hint.
  std::string w =
      import_error("no_out.json", with(kVllmResult, "\"total_output_tokens\": 21700,", ""));
  EXPECT_NE(w.find("total_output_tokens"), std::string::npos) << w;
  EXPECT_NE(w.find("no_out.json"), std::string::npos) << w;
  // A field of the wrong type: its line (line 10 of the fixture holds "completed": "{" is
  // line 1).
  w = import_error("text.json", with(kVllmResult, "\"completed\": 100", "\"completed\": \"all\""));
  EXPECT_NE(w.find("completed"), std::string::npos) << w;
  EXPECT_NE(w.find("text.json:10:"), std::string::npos) << w;
  // Failed requests: the figures are not those of the load given.
  w = import_error("failed.json",
                   with(kVllmResult, "\"completed\": 100,", "\"completed\": 100, \"failed\": 3,"));
  EXPECT_NE(w.find("failed"), std::string::npos) << w;
  // Burstiness other than 1 with a request rate: not modelled, said so.
  std::string bursty = with(kVllmResult, "\"max_concurrency\": 4,", "");
  bursty = with(bursty, "\"request_rate\": \"inf\"", "\"request_rate\": 2.5");
  bursty = with(bursty, "\"burstiness\": 1.0", "\"burstiness\": 0.5");
  w = import_error("bursty.json", bursty);
  EXPECT_NE(w.find("burstiness"), std::string::npos) << w;
  // An unknown backend needs --engine.
  w = import_error("tgi.json", with(kVllmResult, "openai-chat", "tgi"));
  EXPECT_NE(w.find("--engine"), std::string::npos) << w;
  // Not JSON; and no model named.
  w = import_error("broken.json", "{\"completed\": ");
  EXPECT_NE(w.find("not valid JSON"), std::string::npos) << w;
  BenchImportOptions none;
  w = import_error("c4b.json", kVllmResult, none);
  EXPECT_NE(w.find("--model"), std::string::npos) << w;
}

}  // namespace
}  // namespace fleetsim::validation
