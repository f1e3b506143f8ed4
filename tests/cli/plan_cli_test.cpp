// What `fleetsim plan` tells a user about cost and about configurations it dropped.
#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace {

using nlohmann::json;

// The report wraps its paragraphs: compare with runs of spaces and newlines as one space.
std::string unwrapped(const std::string& text) {
  std::string o;
  for (char ch : text) {
    const bool space = ch == ' ' || ch == '\n';
    if (space && !o.empty() && o.back() == ' ') continue;
    o += space ? ' ' : ch;
  }
  return o;
}

TEST_F(Cli, PlanGivesDollarsPerMillionTokensAndWhyConfigurationsAreInvalid) {
  // MI300X is given no price (every catalog part has one, so the plan's price table sets it
  // to 0), so its 8 configurations (tp 4, 8 × 2 weights × 2 KV) are invalid for that reason,
  // which the search paragraph names with their count.
  const Result r =
      run("plan scenarios/plan-llama70b-chat.yaml --set workload.duration=5min "
          "--set plan.gpu=[h100-sxm,mi300x] --set 'plan.usd_per_gpu_hour={mi300x: 0}' "
          "--set plan.tp=[4,8] --set plan.pp=[1] "
          "--set plan.policy=[sarathi] --set plan.max_num_seqs=[256] --set plan.simulate=2 --out " +
          (dir_ / "p").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = unwrapped(r.out);
  EXPECT_NE(out.find("8 invalid (8 no price for mi300x"), std::string::npos) << out;
  // Up front, before the search paragraph: the GPU that no configuration could use, why, and
  // the fix (the price error's hint). H100 and both TPs have valid configurations: no line.
  const size_t dropped = out.find("DROPPED gpu = mi300x: all 8 configurations invalid: no price");
  ASSERT_NE(dropped, std::string::npos) << out;
  EXPECT_LT(dropped, out.find("Searched"));
  EXPECT_NE(out.find("fix: give plan.usd_per_gpu_hour: {mi300x: ...}"), std::string::npos) << out;
  EXPECT_EQ(out.find("DROPPED tp"), std::string::npos) << out;
  EXPECT_EQ(out.find("DROPPED gpu = h100"), std::string::npos) << out;
  EXPECT_NE(r.out.find("$/M out tok"), std::string::npos) << r.out;
  const json j = json::parse(slurp(dir_ / "p" / "plan.json"));
  ASSERT_EQ(j["dropped_values"].size(), 1u) << j["dropped_values"];
  const json& c = j["chosen"];
  ASSERT_TRUE(c.is_object());
  // $ per million output tokens = $/h ÷ (3600 · output tokens/s) · 1e6; the chosen
  // configuration's output rate is in the answer paragraph, so check the figure's range:
  // an H100 fleet serving a 70B model costs dollars, not cents or thousands, per million.
  const double usd = c["usd_per_mtok_output"].get<double>();
  EXPECT_GT(usd, 0.1);
  EXPECT_LT(usd, 100);
  EXPECT_NE(out.find("per million output tokens at the peak hour"), std::string::npos) << out;

  // The answer, deployable: the chosen TP in vLLM's command on the terminal, and each
  // engine's script a shell accepts (sh -n parses without running).
  const std::string tp = c["values"]["hardware.tp"].get<std::string>();
  EXPECT_NE(r.out.find("vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size " + tp),
            std::string::npos)
      << r.out;
  for (const char* f : {"vllm.sh", "sglang.sh", "trtllm.sh"}) {
    const std::string path = (dir_ / "p" / "deploy" / f).string();
    EXPECT_EQ(std::system(("sh -n '" + path + "'").c_str()), 0) << path;
  }
  EXPECT_FALSE(slurp(dir_ / "p" / "deploy" / "kubernetes.yaml").empty());
}

TEST_F(Cli, PlanShowsEveryEquallyCheapAnswerWithMarginsAndPerturbations) {
  // Percentile targets set on the command line: TTFT p99 ≤ 2 s, TPOT p99 ≤ 50 ms and ITL
  // p99 ≤ 250 ms; the plain targets of the file are replaced (the slo: mapping is rewritten).
  // Two policies on one GPU type, so two configurations of the same kind compete.
  const Result r =
      run("plan scenarios/plan-llama70b-chat.yaml --set workload.duration=5min "
          "--set 'slo={ttft: {p99: 2s}, tpot: {p99: 50ms}, itl: {p99: 250ms}}' "
          "--set plan.gpu=[h200-sxm] --set plan.tp=[2] --set plan.pp=[1] --set plan.weights=[fp8] "
          "--set plan.kv=[fp8] --set plan.policy=[vllm,sarathi] --set plan.max_num_seqs=[256] "
          "--set plan.max_batched_tokens=[16384] --out " +
          (dir_ / "q").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = unwrapped(r.out);
  EXPECT_NE(out.find("TTFT p99 ≤ 2.00 s, TPOT p99 ≤ 50.0 ms, ITL p99 ≤ 250 ms"), std::string::npos)
      << out;
  EXPECT_NE(out.find("EQUALLY CHEAP ANSWERS"), std::string::npos) << out;
  EXPECT_NE(out.find("MARGINS AND PERTURBATIONS"), std::string::npos) << out;
  EXPECT_NE(out.find("With traffic +20 %:"), std::string::npos) << out;
  EXPECT_NE(out.find("With engine overhead +3.00 ms per iteration:"), std::string::npos) << out;
  const json j = json::parse(slurp(dir_ / "q" / "plan.json"));
  const json& c = j["chosen"];
  ASSERT_TRUE(c.is_object());
  // The chosen is the first answer, and every answer is within the tolerance of its cost.
  ASSERT_GE(j["answers"].size(), 1u);
  EXPECT_EQ(j["answers"][0]["index"], c["index"]);
  for (const auto& a : j["answers"])
    EXPECT_LE(a["usd_per_hour"].get<double>(), c["usd_per_hour"].get<double>() * 1.01 + 1e-9);
  // Margins: one check per percentile target, each margin = 1 − value ÷ bound.
  ASSERT_EQ(c["slo_checks"].size(), 3u);
  for (const auto& k : c["slo_checks"]) {
    EXPECT_TRUE(k["met"].get<bool>());
    EXPECT_NEAR(k["margin"].get<double>(),
                1 - k["value_s"].get<double>() / k["bound_s"].get<double>(), 1e-12);
  }
  EXPECT_EQ(c["slo_checks"][2]["metric"], "itl");
  EXPECT_EQ(c["slo_checks"][2]["percentile"], "p99");
  // Both perturbations, each "still meets" or with the replicas it needs.
  ASSERT_EQ(c["perturbations"].size(), 2u);
  EXPECT_DOUBLE_EQ(c["perturbations"][0]["traffic_scale"].get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(c["perturbations"][1]["extra_iteration_overhead_s"].get<double>(), 0.003);
  for (const auto& pt : c["perturbations"]) {
    if (pt["still_meets"].get<bool>()) {
      EXPECT_EQ(pt["replicas_needed"], c["replicas"]);
    } else if (!pt["replicas_needed"].is_null()) {
      EXPECT_GT(pt["more_replicas"].get<int>(), 0);
    }
  }
  const std::string md = slurp(dir_ / "q" / "report.md");
  EXPECT_NE(md.find("## Equally cheap answers"), std::string::npos);
  EXPECT_NE(md.find("## Margins and perturbations"), std::string::npos);
  EXPECT_NE(slurp(dir_ / "q" / "plan.csv").find(",itl_p99_s,"), std::string::npos);
}

}  // namespace

namespace {

TEST_F(Cli, PlanOnAFleetScenarioRanksItsOptionsAndNamesWhatIsDropped) {
  // scenarios/examples/fleet-plan.yaml at 5 % of its users (a search then resolves one
  // replica of 20: coarse, but about half a second); its first option, H100 TP2, is made to
  // serve Llama-3.1-405B, which does not fit on two H100s: both its configurations are
  // invalid, so the plan names the option up front with the reason and the loader's fix.
  const Result r =
      run("plan scenarios/examples/fleet-plan.yaml --set users.sample=0.05 --set "
          "'fleet_plan.options[0].set={model: llama-3.1-405b}' --quiet --out " +
          (dir_ / "fp").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = unwrapped(r.out);
  const size_t dropped = out.find(
      "DROPPED option 'H100 TP2': all 2 configurations invalid: llama-3.1-405b does "
      "not fit");
  ASSERT_NE(dropped, std::string::npos) << out;
  EXPECT_LT(dropped, out.find("ANSWER"));
  EXPECT_NE(out.find("(try tp: 8 or more"), std::string::npos) << out;
  EXPECT_NE(out.find("With 20 % more users"), std::string::npos) << out;
  const json j = json::parse(slurp(dir_ / "fp" / "fleet_plan.json"))["fleet_plan"];
  // 5 options × 2 values of serving.max_num_seqs.
  ASSERT_EQ(j["configurations"].size(), 10u);
  ASSERT_TRUE(j["chosen"].is_number());
  const json& chosen = j["configurations"][j["chosen"].get<size_t>()];
  // The chosen is the cheapest of those that met the target.
  for (const json& c : j["configurations"]) {
    if (c["answer"]["met"].get<bool>()) {
      EXPECT_LE(chosen["answer"]["usd_per_day"].get<double>(),
                c["answer"]["usd_per_day"].get<double>());
    }
  }
  EXPECT_EQ(j["ranking"].size(), 8u);  // the two invalid ones are not ranked
  EXPECT_TRUE(fs::exists(dir_ / "fp" / "report.md"));
  EXPECT_NE(slurp(dir_ / "fp" / "report.md").find("Dropped: option 'H100 TP2'"), std::string::npos);
  // The answer's pools deployable: a vLLM case per pool of each region ("us-main" and
  // "eu-main"), and the manifests beside them.
  const std::string sh = slurp(dir_ / "fp" / "deploy" / "vllm.sh");
  EXPECT_NE(sh.find("  us-main)"), std::string::npos) << sh;
  EXPECT_NE(sh.find("  eu-main)"), std::string::npos) << sh;
  EXPECT_TRUE(fs::exists(dir_ / "fp" / "deploy" / "kubernetes.yaml"));
}

TEST_F(Cli, AFleetScenarioWithoutAFleetPlanIsOneErrorLine) {
  expect_error("plan scenarios/examples/region-outage.yaml",
               {"region-outage.yaml", "fleet_plan: section"});
}

}  // namespace

TEST_F(Cli, TheQuestionScenariosAnswerWithoutDroppingRequests) {
  // scenarios/questions/mi300x-or-h200-deepseek-v3.yaml: chat lengths up to 14,050 prompt
  // tokens on SGLang, whose prefill batches hold 8,192. SGLang cuts a longer prompt into
  // prefill batches; fleetsim used to reject it (as vLLM V0 does), so the answer silently
  // lost 0.7 % of the requests and its SLO check (which counts rejected requests as misses)
  // disagreed with its own TPOT p99. Without rejections the two are the same quantile.
  const Result r = run("plan scenarios/questions/mi300x-or-h200-deepseek-v3.yaml --quiet --out " +
                       (dir_ / "q2").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(slurp(dir_ / "q2" / "plan.json"));
  const json& c = j["chosen"];
  ASSERT_TRUE(c.is_object());
  bool checked = false;
  for (const json& k : c["slo_checks"])
    if (k["metric"] == "tpot") {
      EXPECT_DOUBLE_EQ(k["value_s"].get<double>(), c["tpot_p99_s"].get<double>());
      checked = true;
    }
  EXPECT_TRUE(checked) << c["slo_checks"];
  // The first question's file is a valid plan too (its answer is in the README).
  EXPECT_EQ(run("check scenarios/questions/h100-llama70b-40rps.yaml").code, 0);
}
