// `fleetsim ladder`: bad input is one clear error line (exit 1); a small fleet's ladder runs,
// prints its table with the published figures beside it and writes ladder.json and the
// report (the searches themselves are tested in tests/sim/app/ladder_test.cpp).
#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace {

// A suite of its own (cli_fixture.h's Cli lives in an anonymous namespace; another unity
// batch may hold the other CLI tests).
class LadderCli : public Cli {};

TEST_F(LadderCli, AScenarioWithoutALadderIsOneErrorLine) {
  expect_error("ladder scenarios/chat-service.yaml", {"chat-service.yaml", "no ladder: section"});
}

TEST_F(LadderCli, ASmallFleetClimbsAndWritesItsResults) {
  const fs::path file = dir_ / "small.yaml";
  std::ofstream(file) << R"(
name: small-ladder
seed: 5
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving: {policy: vllm, chunked_prefill: true, max_num_seqs: 64}
users: {weekly_active: 1e5, daily_active_fraction: 0.5, sessions_per_day: 2, turns_per_session: 2,
        think_time: 20s, prompt_tokens: 200, output_tokens: 100}
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 2}]}
slo: {ttft: 2s, tpot: 100ms}
ladder:
  window: 5min
  warmup: 1min
  steps:
    - {name: one at a time, set: {serving.max_num_seqs: 1}}
    - {name: batching, set: {serving.max_num_seqs: 64}}
  published:
    - {name: a figure, wh_per_call: 0.5, source: a test}
)";
  const fs::path out = dir_ / "out";
  const Result r =
      run("ladder '" + file.string() + "' --threads 2 --quiet --out '" + out.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("one at a time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PUBLISHED 0.5 Wh per call: a figure (a test)"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(out / "ladder.json"))["ladder"];
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][1]["name"], "batching");
  // The second step's overrides are the first's and its own, in order.
  EXPECT_EQ(j["steps"][1]["overrides"],
            nlohmann::json({"serving.max_num_seqs=1", "serving.max_num_seqs=64"}));
  EXPECT_EQ(j["published"][0]["wh_per_call"], 0.5);
  EXPECT_TRUE(fs::exists(out / "report.md"));
  EXPECT_TRUE(fs::exists(out / "report.html"));
  // The waterfall (when gnuplot is installed) has a bar for every step, the first included.
  if (fs::exists(out / "ladder_waterfall.svg")) {
    const std::string svg = slurp(out / "ladder_waterfall.svg");
    EXPECT_NE(svg.find(">one at a time<"), std::string::npos);
    EXPECT_NE(svg.find(">start<"), std::string::npos);
    EXPECT_NE(svg.find(">batching<"), std::string::npos);
  }
}

}  // namespace
