// Tests for sim/app/fleet_plan: the fleet_plan section is read strictly; every option × axis
// value is searched, the answers respect hand-computed bounds, the ranking is by $ a day,
// the traffic perturbation carries more calls, and the result does not depend on threads.
#include "sim/app/fleet_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app_test_util.h"
#include "hw_models/error.h"

namespace fleetsim::app {
namespace {

// As tests/sim/app/ladder_test.cpp: 2e5 weekly users × 0.5 × 2 sessions × 2 turns = 4e5
// calls a day = 4.63 calls/s, flat; every call 100 output tokens.
const char* kPlanFleet = R"(
seed: 3
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving: {policy: vllm, chunked_prefill: true, max_num_seqs: 64}
users: {weekly_active: 2e5, daily_active_fraction: 0.5, sessions_per_day: 2, turns_per_session: 2,
        think_time: 20s, prompt_tokens: 200, output_tokens: 100}
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: main, replicas: 4}]}
slo: {ttft: 2s, tpot: 100ms}
)";

const char* kPlanSection = R"(
fleet_plan:
  window: 10min
  warmup: 2min
  options:
    - {name: one at a time, set: {serving.max_num_seqs: 1, serving.chunked_prefill: false}}
    - {name: batching, set: {serving.max_num_seqs: 64}}
    - {name: 405b, set: {model: llama-3.1-405b}}
  axes:
    hardware: [{gpu: h100-sxm, node: hgx-h100}, {gpu: h200-sxm, node: hgx-h200}]
)";

TEST(FleetPlan, EveryConfigurationIsSearchedRankedByCostAndBoundedByHand) {
  const std::string file = test::scenario_file("fleetsim_fleet_plan_test", "bounds",
                                               std::string(kPlanFleet) + kPlanSection);
  const FleetPlanResult r =
      run_fleet_plan(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 2);
  // 3 options × 2 GPUs, in enumeration order (option, then axis value).
  ASSERT_EQ(r.candidates.size(), 6u);
  EXPECT_EQ(r.candidates[0].label, "one at a time hardware={gpu: h100-sxm, node: hgx-h100}");
  EXPECT_EQ(r.candidates[3].label, "batching hardware={gpu: h200-sxm, node: hgx-h200}");
  // Llama-3.1-405B (810 GB in BF16) does not fit on one GPU: invalid, with the reason.
  for (size_t i : {4, 5}) {
    EXPECT_FALSE(r.candidates[i].answer.met);
    EXPECT_EQ(r.candidates[i].answer.reason.rfind("invalid: ", 0), 0u)
        << r.candidates[i].answer.reason;
  }
  for (size_t i = 0; i < 4; ++i) ASSERT_TRUE(r.candidates[i].answer.met) << i;
  // One request at a time, a call of 100 output tokens holds its replica for at least 100
  // decode steps, each reading the 16.06 GB of BF16 weights: ≥ 4.79 ms on an H100 (3.35
  // TB/s), ≥ 3.35 ms on an H200 (4.8 TB/s). By Little's law 4.63 calls/s keep ≥ 2.2 (H100)
  // and ≥ 1.55 (H200) replicas busy: at least 3 and 2 one-GPU replicas.
  EXPECT_GE(r.candidates[0].answer.gpus, 3.0);
  EXPECT_GE(r.candidates[1].answer.gpus, 2.0);
  // Rented GPUs held all day: $ a day = GPUs × 24 h × the catalog's price ($3.24 H100,
  // $4.00 H200 per GPU-hour).
  for (size_t i = 0; i < 4; ++i) {
    const double price = i % 2 == 0 ? 3.24 : 4.0;
    EXPECT_NEAR(r.candidates[i].answer.usd_per_day, r.candidates[i].answer.gpus * 24 * price,
                1e-6 * r.candidates[i].answer.usd_per_day)
        << i;
  }
  // Ranked: the four that met, cheapest first; the answer is the first.
  ASSERT_EQ(r.ranking.size(), 4u);
  for (size_t k = 1; k < r.ranking.size(); ++k)
    EXPECT_LE(r.candidates[static_cast<size_t>(r.ranking[k - 1])].answer.usd_per_day,
              r.candidates[static_cast<size_t>(r.ranking[k])].answer.usd_per_day);
  EXPECT_EQ(r.chosen, r.ranking.front());
  // The answer searched again with 20 % more users: the window's calls grow by 1.2 (each
  // count ~3,300 calls, Poisson s.d. 1.7 %, the ratio's 2.5 %: ±8 % is over 3 s.d.).
  const FleetPlanCandidate& c = r.candidates[static_cast<size_t>(r.chosen)];
  ASSERT_TRUE(c.perturbed);
  ASSERT_TRUE(c.perturbed_answer.met) << c.perturbed_answer.reason;
  EXPECT_NEAR(c.perturbed_answer.calls_per_day / c.answer.calls_per_day, 1.2, 0.08);
  EXPECT_EQ(r.simulations, [&] {
    int n = c.perturbed_answer.simulations;
    for (const auto& x : r.candidates) n += x.answer.simulations;
    return n;
  }());
}

TEST(FleetPlan, SameSeedSameAnswerWhateverTheThreads) {
  const std::string file = test::scenario_file("fleetsim_fleet_plan_test", "threads",
                                               std::string(kPlanFleet) + kPlanSection);
  const FleetPlanResult a =
      run_fleet_plan(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 1);
  const FleetPlanResult b =
      run_fleet_plan(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 2);
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  EXPECT_EQ(a.chosen, b.chosen);
  for (size_t i = 0; i < a.candidates.size(); ++i) {
    EXPECT_EQ(a.candidates[i].answer.usd_per_day, b.candidates[i].answer.usd_per_day);
    EXPECT_EQ(a.candidates[i].answer.ttft_p99_s, b.candidates[i].answer.ttft_p99_s);
  }
}

TEST(FleetPlan, AConfigurationWithoutAPriceIsInvalidNotCheapest) {
  // A copy of the catalog whose H200 has no cloud price: its $ a day would leave the pool
  // out (0), so its configurations are invalid with the reason, never ranked as cheapest.
  const auto dir = std::filesystem::temp_directory_path() / "fleetsim_fleet_plan_catalog";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(hw::Catalog::default_dir(), dir, std::filesystem::copy_options::recursive);
  const auto gpu = dir / "gpus" / "h200-sxm.yaml";
  std::ifstream in(gpu);
  std::string text, line;
  while (std::getline(in, line))
    if (line.rfind("cloud_usd_per_gpu_hour:", 0) != 0) text += line + "\n";
  in.close();
  std::ofstream(gpu) << text;
  const hw::Catalog catalog = hw::Catalog::load(dir.string());
  const std::string file =
      test::scenario_file("fleetsim_fleet_plan_test", "unpriced", std::string(kPlanFleet) + R"(
fleet_plan:
  window: 10min
  warmup: 2min
  perturb_traffic: 0
  options: [{name: batching}]
  axes:
    hardware: [{gpu: h100-sxm, node: hgx-h100}, {gpu: h200-sxm, node: hgx-h200}]
)");
  const FleetPlanResult r = run_fleet_plan(file, {}, std::nullopt, catalog, nullptr, 1);
  ASSERT_EQ(r.candidates.size(), 2u);
  EXPECT_TRUE(r.candidates[0].answer.met);
  EXPECT_FALSE(r.candidates[1].answer.met);
  EXPECT_NE(r.candidates[1].answer.reason.find("has no price"), std::string::npos)
      << r.candidates[1].answer.reason;
  EXPECT_EQ(r.chosen, 0);
  EXPECT_EQ(r.ranking, std::vector<int>{0});
}

template <class F>
std::string plan_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(FleetPlan, SectionErrorsNameTheFieldAndHelp) {
  const std::string none = test::scenario_file("fleetsim_fleet_plan_test", "none", kPlanFleet);
  EXPECT_NE(plan_error([&] { read_fleet_plan_section(none, {}); }).find("fleet_plan: section"),
            std::string::npos);
  const std::string typo = test::scenario_file(
      "fleetsim_fleet_plan_test", "typo",
      std::string(kPlanFleet) +
          "fleet_plan: {options: [{name: a, set: {serving.max_num_seq: 1}}]}\n");
  const std::string e = plan_error([&] { read_fleet_plan_section(typo, {}); });
  EXPECT_NE(e.find("max_num_seqs"), std::string::npos) << e;  // did you mean
  EXPECT_NE(e.find("typo.yaml"), std::string::npos) << e;     // where
  const std::string twice = test::scenario_file(
      "fleetsim_fleet_plan_test", "twice",
      std::string(kPlanFleet) + "fleet_plan: {options: [{name: a}, {name: a}]}\n");
  EXPECT_NE(
      plan_error([&] { read_fleet_plan_section(twice, {}); }).find("two options are named 'a'"),
      std::string::npos);
  const std::string empty = test::scenario_file(
      "fleetsim_fleet_plan_test", "empty",
      std::string(kPlanFleet) +
          "fleet_plan: {options: [{name: a}], axes: {serving.max_num_seqs: []}}\n");
  EXPECT_NE(plan_error([&] { read_fleet_plan_section(empty, {}); }).find("list of values"),
            std::string::npos);
  // 2 options × 3 × 3 axis values = 18 configurations, over a limit of 10.
  const std::string big = test::scenario_file(
      "fleetsim_fleet_plan_test", "big",
      std::string(kPlanFleet) +
          "fleet_plan: {max_configurations: 10, options: [{name: a}, {name: b}], axes: "
          "{serving.max_num_seqs: [1, 2, 3], serving.max_batched_tokens: [512, 1024, "
          "2048]}}\n");
  EXPECT_NE(plan_error([&] { read_fleet_plan_section(big, {}); }).find("18 configurations"),
            std::string::npos);
  const std::string pool = test::scenario_file(
      "fleetsim_fleet_plan_test", "pool",
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nserving: {}\nworkload: {requests: 10, "
      "arrival: {process: poisson, rate: 1/s}, prompt_tokens: 10, output_tokens: 10}\n"
      "fleet_plan: {options: [{name: a}]}\n");
  EXPECT_NE(plan_error([&] {
              run_fleet_plan(pool, {}, std::nullopt, test::bundled_catalog(), nullptr, 1);
            }).find("fleet scenarios"),
            std::string::npos);
}

}  // namespace
}  // namespace fleetsim::app
