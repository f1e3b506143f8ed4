// Tests for sim/plan (the capacity planner): enumeration of the plan's axes, the analytic
// estimate and its infeasibility rules, the replica search's minimality, the choice of the
// cheapest configuration, independence of the thread count, and input errors.
#include "sim/plan/planner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hw_models/error.h"
#include "hw_models/perf_model.h"

namespace fleetsim::plan {
namespace {

const hw::Catalog& catalog() {
  static const hw::Catalog c = hw::Catalog::load(hw::Catalog::default_dir());
  return c;
}

// Writes `text` to a fresh file in the temp folder and returns its path.
std::string write_scenario(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "fleetsim-planner-test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (name + ".yaml")).string();
  std::ofstream(path) << text;
  return path;
}

// Llama-3.1-8B, 8 requests/s for 2 minutes, fixed 500-token prompts and 100-token answers.
std::string scenario_text(const std::string& plan, const std::string& workload_extra = "") {
  return R"(
name: plantest
seed: 5
model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
serving: {replicas: 1, policy: sarathi, max_num_seqs: 64, max_batched_tokens: 2048}
workload:
  duration: 2min
  arrival: {process: poisson, rate: 8/s}
  prompt_tokens: {dist: fixed, value: 500}
  output_tokens: {dist: fixed, value: 100}
)" + workload_extra +
         R"(
slo: {ttft: 1s, tpot: 60ms}
plan:
)" + plan;
}

Planner make(const std::string& name, const std::string& text) {
  return Planner(write_scenario(name, text), {}, std::nullopt, catalog(), nullptr);
}

std::string error_of(const std::string& name, const std::string& text) {
  try {
    make(name, text);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

TEST(Planner, EnumeratesTheCartesianProductLastAxisFastest) {
  const Planner p =
      make("enum", scenario_text("  gpu: [h100-sxm, a100-80gb-sxm]\n  tp: [1, 2]\n"
                                 "  kv: [bf16, fp8]\n  expert_parallel: [false, true]\n"));
  const std::vector<Candidate> cs = p.enumerate();
  // 2 GPUs × 2 tp × 2 kv = 8; expert_parallel collapses to {false} for a dense model.
  ASSERT_EQ(cs.size(), 8u);
  EXPECT_EQ(cs[0].label, "h100-sxm tp=1 no-ep kv=bf16");
  EXPECT_EQ(cs[1].label, "h100-sxm tp=1 no-ep kv=fp8");  // kv varies fastest
  EXPECT_EQ(cs[2].label, "h100-sxm tp=2 no-ep kv=bf16");
  EXPECT_EQ(cs[4].label, "a100-80gb-sxm tp=1 no-ep kv=bf16");  // gpu slowest
  for (const auto& c : cs) EXPECT_NE(c.status, Status::kInvalid) << c.label << ": " << c.reason;
  // Price: the catalog's cloud price per GPU-hour (h100-sxm.yaml: 3.24, a100: 1.99).
  EXPECT_DOUBLE_EQ(cs[0].usd_per_gpu_hour, 3.24);
  EXPECT_DOUBLE_EQ(cs[4].usd_per_gpu_hour, 1.99);
  EXPECT_EQ(cs[2].gpus_per_replica, 2);
}

TEST(Planner, AnalyticCapacityIsPrefillPlusDecodeShareOfTheReplica) {
  const Planner p = make("analytic", scenario_text("  tp: [1]\n  spares: 1\n"));
  const std::vector<Candidate> cs = p.enumerate();
  ASSERT_EQ(cs.size(), 1u);
  const Candidate& c = cs[0];
  ASSERT_EQ(c.status, Status::kPruned) << c.reason;  // estimated, not yet simulated
  const scenario::Scenario sc = p.resolve(c, 1);
  // Fixed lengths: P = 500, O = 100. Decode step at batch n with mean context P + O/2 = 550:
  // t(n) = fixed(n) + per_ctx(n)·n·550; the batch is the largest n ≤ 64 with t(n) ≤ 0.8·60 ms.
  auto step = [&](int64_t n) {
    const hw::DecodeAffine a = hw::decode_affine(sc.dep, n);
    return a.fixed_s + a.per_ctx_token_s * static_cast<double>(n) * 550.0;
  };
  EXPECT_LE(step(c.decode_batch), 0.048);
  if (c.decode_batch < 64) {
    EXPECT_GT(step(c.decode_batch + 1), 0.048);
  }
  // Each request holds the replica for t_prefill + O·t(n)/n: capacity is its inverse.
  const double expect_cap =
      1.0 / (c.prefill_mean_s + 100.0 * step(c.decode_batch) / c.decode_batch);
  EXPECT_NEAR(c.capacity_per_s, expect_cap, 1e-9 * expect_cap);
  // Replicas = ceil(rate / (0.9·capacity)); the rate is measured from the sampled arrivals
  // (≈ 8/s); cost = (replicas + 1 spare) × 1 GPU × $3.24.
  const double rate = 8.0;
  EXPECT_NEAR(c.analytic_replicas, std::ceil(rate / (0.9 * expect_cap)), 1.0);
  EXPECT_DOUBLE_EQ(c.analytic_usd_per_hour, (c.analytic_replicas + 1) * 3.24);
}

TEST(Planner, PrefillFirstWithPromptsOverTheBatchLimitIsInfeasible) {
  // 3,000-token prompts, max_batched_tokens 2,048, prefill-first (vllm): every request is
  // rejected, so no replica count can meet the SLO.
  const std::string text = scenario_text("  policy: [vllm, sarathi]\n");
  std::string t3000 = text;
  t3000.replace(t3000.find("value: 500"), 10, "value: 3000");
  const std::vector<Candidate> cs = make("prefill-first", t3000).enumerate();
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].status, Status::kInfeasible);
  EXPECT_NE(cs[0].reason.find("rejects prompts over max_batched_tokens = 2048 tokens (100 %"),
            std::string::npos)
      << cs[0].reason;
  EXPECT_EQ(cs[1].status, Status::kPruned) << cs[1].reason;  // chunked prefill serves them
}

TEST(Planner, ConfigurationsThatDoNotFitKeepTheLoadersMessage) {
  std::string text = scenario_text("  gpu: [a100-80gb-sxm]\n  tp: [1, 2]\n");
  text.replace(text.find("llama-3.1-8b"), 12, "llama-3.1-70b");
  const std::vector<Candidate> cs = make("nofit", text).enumerate();
  ASSERT_EQ(cs.size(), 2u);
  // 70B in BF16 is 141 GB of weights: not on one A100 (0.9 × 80 GiB = 77.3 GB usable);
  // on two, 70.6 GB each + 0.35 GB activations + 1.07 GB reserve leaves 5.33 GB of KV.
  // The scenario as written (h100-sxm tp 1) does not fit either: the planner takes the
  // first configuration that resolves as its base instead of failing.
  EXPECT_EQ(cs[0].status, Status::kInvalid);
  EXPECT_NE(cs[0].reason.find("does not fit on 1 x a100-80gb-sxm"), std::string::npos)
      << cs[0].reason;
  EXPECT_NE(cs[1].status, Status::kInvalid) << cs[1].reason;
}

TEST(Planner, ChoosesTheCheapestAndItsReplicaCountIsMinimal) {
  const Planner p =
      make("choose", scenario_text("  gpu: [h100-sxm, a100-80gb-sxm]\n  kv: [bf16, fp8]\n"
                                   "  simulate: 8\n  slack: 10\n  spares: 1\n  target: 0.95\n"));
  const PlanResult r = p.run(2);
  ASSERT_GE(r.chosen, 0);
  const Candidate& w = r.candidates[r.chosen];
  ASSERT_EQ(w.status, Status::kFeasible);
  // Cost arithmetic: (replicas + 1 spare) × 1 GPU × price.
  EXPECT_EQ(w.total_gpus, w.best->replicas + 1);
  EXPECT_DOUBLE_EQ(w.usd_per_hour, w.total_gpus * w.usd_per_gpu_hour);
  // Cheapest of all feasible.
  for (int i : r.ranking) EXPECT_LE(w.usd_per_hour, r.candidates[i].usd_per_hour);
  // Minimal: the chosen count meets the target, one fewer does not (checked afresh).
  EXPECT_GE(p.evaluate(w, w.best->replicas).attainment, 0.95);
  if (w.best->replicas > 1) {
    EXPECT_LT(p.evaluate(w, w.best->replicas - 1).attainment, 0.95);
  }
}

TEST(Planner, ResultDoesNotDependOnTheThreadCount) {
  const Planner p = make(
      "threads", scenario_text("  tp: [1, 2]\n  kv: [bf16, fp8]\n  simulate: 4\n  slack: 10\n"));
  const PlanResult a = p.run(1), b = p.run(3);
  ASSERT_EQ(a.chosen, b.chosen);
  ASSERT_EQ(a.ranking, b.ranking);
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    ASSERT_EQ(a.candidates[i].tried.size(), b.candidates[i].tried.size());
    for (std::size_t k = 0; k < a.candidates[i].tried.size(); ++k) {
      EXPECT_EQ(a.candidates[i].tried[k].replicas, b.candidates[i].tried[k].replicas);
      EXPECT_EQ(a.candidates[i].tried[k].attainment, b.candidates[i].tried[k].attainment);
      EXPECT_EQ(a.candidates[i].tried[k].events, b.candidates[i].tried[k].events);
    }
  }
}

TEST(Planner, PrunesByAnalyticCostWithinSlackAndCap) {
  const Planner p =
      make("prune", scenario_text("  gpu: [h100-sxm, a100-80gb-sxm]\n  tp: [1, 2, 4]\n"
                                  "  simulate: 2\n  slack: 0.25\n"));
  const PlanResult r = p.run(2);
  int simulated = 0;
  double best = INFINITY;
  for (const auto& c : r.candidates)
    if (c.status == Status::kPruned || c.status == Status::kFeasible ||
        c.status == Status::kSloMissed)
      best = std::min(best, c.analytic_usd_per_hour);
  for (const auto& c : r.candidates) {
    if (c.status == Status::kFeasible || c.status == Status::kSloMissed) {
      ++simulated;
      EXPECT_LE(c.analytic_usd_per_hour, 1.25 * best + 1e-9) << c.label;
    }
    if (c.status == Status::kPruned) {
      EXPECT_NE(c.reason.find("analytic estimate"), std::string::npos);
    }
  }
  EXPECT_LE(simulated, 2);
  EXPECT_GE(simulated, 1);
}

TEST(Planner, DisaggregatedShareAddsPrefillReplicas) {
  // ceil(0.25·R) prefill replicas for R decode replicas, at least one.
  EXPECT_EQ(Planner::prefill_replicas_for(0.0, 8), 0);
  EXPECT_EQ(Planner::prefill_replicas_for(0.25, 8), 2);
  EXPECT_EQ(Planner::prefill_replicas_for(0.25, 9), 3);
  EXPECT_EQ(Planner::prefill_replicas_for(0.25, 1), 1);
  const Planner p = make("disagg", scenario_text("  prefill_share: [0, 0.5]\n  policy: [vllm]\n"));
  const std::vector<Candidate> cs = p.enumerate();
  ASSERT_EQ(cs.size(), 2u);
  ASSERT_NE(cs[1].status, Status::kInvalid) << cs[1].reason;
  const scenario::Scenario sc = p.resolve(cs[1], 4);
  ASSERT_TRUE(sc.prefill_pool.has_value());
  EXPECT_EQ(sc.prefill_pool->replicas, 2);  // ceil(0.5 × 4)
  EXPECT_EQ(sc.replicas, 4);
}

TEST(Planner, InputErrorsNameTheField) {
  // No plan: section.
  std::string no_plan = scenario_text("");
  no_plan.erase(no_plan.find("plan:"));
  EXPECT_NE(error_of("noplan", no_plan).find("no plan: section"), std::string::npos);
  // A misspelt axis gets "did you mean".
  EXPECT_NE(error_of("typo", scenario_text("  gpus: [h100-sxm]\n")).find("did you mean 'gpu'"),
            std::string::npos);
  // A price for an unknown GPU.
  EXPECT_NE(error_of("price", scenario_text("  usd_per_gpu_hour: {h1000: 2}\n")).find("h1000"),
            std::string::npos);
  // A closed-loop workload has no rate to plan for.
  std::string closed = scenario_text("  tp: [1]\n");
  closed.replace(closed.find("arrival: {process: poisson, rate: 8/s}"), 38,
                 "clients: {users: 4, think_time: {dist: fixed, value: 1s}}");
  EXPECT_NE(error_of("closed", closed).find("open-loop workload"), std::string::npos);
  // replicas.max below min.
  EXPECT_NE(error_of("minmax", scenario_text("  replicas: {min: 8, max: 4}\n")).find("below min"),
            std::string::npos);
}

}  // namespace
}  // namespace fleetsim::plan
