// Tests for sim/app/fleet_plan: the fleet_plan section is read strictly; every option × axis
// value (the plan's and the option's own) is searched, a split's sides (by length, two or
// three, or by class) are sized apart, the answers respect hand-computed bounds, the ranking
// is by $ a day with each configuration's spares, the traffic perturbation carries more
// calls, and the result does not depend on threads.
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
  // No failure rates in the scenario: no spares sized.
  EXPECT_TRUE(r.spares.empty());
  EXPECT_EQ(r.spares_gpus, 0.0);
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

TEST(FleetPlan, TheAnalyticPreScreenSkipsDearConfigurationsAndKeepsTheAnswer) {
  const std::string file = test::scenario_file("fleetsim_fleet_plan_test", "prescreen",
                                               std::string(kPlanFleet) + kPlanSection);
  const FleetPlanResult all =
      run_fleet_plan(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 2);
  const FleetPlanResult pre = run_fleet_plan(file, {"fleet_plan.slack=0.5"}, std::nullopt,
                                             test::bundled_catalog(), nullptr, 2);
  ASSERT_TRUE(pre.traffic.has_value());
  EXPECT_FALSE(all.traffic.has_value());
  // The traffic, measured on the first configuration: 4.63 calls/s (Poisson over a 12-minute
  // stretch: within 15 %) of 100 output tokens; a session's first prompt has 200 tokens, its
  // second the first turn and its answer too (200 + 100 + 200 = 500), so the mean prompt is
  // above 200 and at most (200 + 500) / 2 = 350.
  EXPECT_NEAR(pre.traffic->calls_per_s, 4.63, 0.7);
  EXPECT_GT(pre.traffic->mean_prompt, 200);
  EXPECT_LE(pre.traffic->mean_prompt, 350);
  EXPECT_NEAR(pre.traffic->mean_output, 100, 1e-9);
  // One request at a time on an H100: a call holds its replica for ≥ 100 decode steps of ≥
  // 16.06 GB / 3.35 TB/s = 4.79 ms, so a replica serves ≤ 2.09 calls/s, and at 90 % the
  // estimate is ≥ calls/s / (0.9 × 2.09) GPUs × 24 h × $3.24.
  const FleetPlanCandidate& one = pre.candidates[0];
  ASSERT_TRUE(one.analytic_usd_per_day.has_value());
  EXPECT_GE(*one.analytic_usd_per_day, pre.traffic->calls_per_s / (0.9 * 2.09) * 24 * 3.24);
  // It is more than 1.5x the batching estimates: pruned, with the reason, not simulated.
  EXPECT_TRUE(one.pruned);
  EXPECT_EQ(one.answer.reason.rfind("pruned, not simulated", 0), 0u) << one.answer.reason;
  EXPECT_EQ(one.answer.simulations, 0);
  // 405B does not fit: invalid, not estimated.
  EXPECT_FALSE(pre.candidates[4].analytic_usd_per_day.has_value());
  // The answer is the full search's, for fewer simulations.
  ASSERT_GE(all.chosen, 0);
  ASSERT_EQ(pre.chosen, all.chosen);
  EXPECT_EQ(pre.candidates[static_cast<size_t>(pre.chosen)].answer.usd_per_day,
            all.candidates[static_cast<size_t>(all.chosen)].answer.usd_per_day);
  EXPECT_GT(pre.pruned, 0);
  EXPECT_LT(pre.simulations, all.simulations);
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

// Two regions six hours apart whose users all come in one local hour: a curve of 1s with
// 4 at local hour 10, 5 at 11 (normalised to mean 1; its peak is local 11:00). users.start
// is Monday 00:00 UTC, so region a (UTC+0) peaks in hour 11 of the run and region b
// (UTC+6, local 11:00 = 05:00 UTC) in hour 5; b has twice a's users, so the fleet's busiest
// hour is b's. 2e6 weekly users × 0.5 × 2 sessions × 2 turns = 4e6 calls a day (46 a second).
const char* kTwoRegions = R"(
seed: 5
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving: {policy: vllm, chunked_prefill: true, max_num_seqs: 64}
users: {weekly_active: 2e6, daily_active_fraction: 0.5, sessions_per_day: 2, turns_per_session: 2,
        think_time: 20s, prompt_tokens: 200, output_tokens: 100}
fleet:
  regions:
    - {name: a, utc_offset: 0h, users: 1, pools: [{name: main, replicas: 4}], wan_rtt: {b: 50ms},
       diurnal: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}
    - {name: b, utc_offset: 6h, users: 2, pools: [{name: main, replicas: 4}],
       diurnal: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}
  failures: {gpu: {mtbf: 1000h, mttr: 10h}}
slo: {ttft: 2s, tpot: 100ms}
fleet_plan:
  window: 10min
  warmup: 2min
  perturb_traffic: 0
  options: [{name: batching}]
)";

TEST(FleetPlan, RegionsAreSizedApartEachForItsOwnBusiestHour) {
  const std::string file =
      test::scenario_file("fleetsim_fleet_plan_test", "regions", std::string(kTwoRegions));
  const FleetPlanResult r =
      run_fleet_plan(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 1);
  ASSERT_EQ(r.chosen, 0);
  // The hours worked out above: the fleet's busiest is b's.
  EXPECT_EQ(r.window.region_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.window.region_peak_hours, (std::vector<int>{11, 5}));
  EXPECT_EQ(r.window.peak_hour, 5);
  ASSERT_TRUE(r.regional.has_value());
  const RegionalAnswer& g = *r.regional;
  ASSERT_TRUE(g.met) << g.reason;
  ASSERT_EQ(g.regions.size(), 2u);
  const LadderRung& one = r.candidates[0].answer;
  double gpus = 0;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(g.regions[i].peak_hour, r.window.region_peak_hours[i]);
    EXPECT_TRUE(g.regions[i].met);
    // Each region meets the target in its own busiest hour, and so does the whole fleet.
    EXPECT_GE(g.regions[i].attainment, r.spec.target) << i;
    EXPECT_GT(g.regions[i].simulations, 0);
    // One-GPU replicas: whole GPUs, at least one per region.
    EXPECT_GE(g.regions[i].gpus, 1.0);
    EXPECT_EQ(g.regions[i].gpus, std::round(g.regions[i].gpus));
    gpus += g.regions[i].gpus;
  }
  EXPECT_GE(g.rung.attainment, r.spec.target);
  EXPECT_EQ(g.rung.gpus, gpus);
  // Rented, held all day: GPUs × 24 h × $3.24 (H100).
  EXPECT_NEAR(g.rung.usd_per_day, gpus * 24 * 3.24, 1e-6 * g.rung.usd_per_day);
  // Fleet load by run hour, in units of the day's mean (the curve normalised: 1 → 0.774,
  // 5 → 3.871): hour 5: a/3 · 0.774 + 2b/3 · 3.871 = 0.258 + 2.581; hour 11: a's own peak,
  // 1/3 · 3.871 = 1.290, half of b's 2.581 at its peak. The one-factor answer, sized in
  // hour 5, keeps the scenario's 4 : 4, so a holds as many replicas as b for half b's peak
  // load: sized apart, a is cut, and the fleet costs less.
  EXPECT_LT(g.regions[0].scale, 1.0);
  EXPECT_LT(g.rung.gpus, one.gpus);
  EXPECT_EQ(g.simulations, g.regions[0].simulations + g.regions[1].simulations + 1);
  EXPECT_EQ(r.simulations, one.simulations + g.simulations);

  // Failure headroom at the sizes found: GPUs down ~ Poisson(n · 10/1000) per pool of n
  // one-GPU replicas, so P(none down) = e^-0.01n ≤ 0.990 < the default 0.999: every pool
  // gets at least one spare, priced at the H100's $3.24 an hour.
  ASSERT_EQ(r.spares.size(), 2u);
  double spare_gpus = 0;
  for (const PoolSpares& ps : r.spares) {
    EXPECT_GE(ps.spares, 1) << ps.name;
    spare_gpus += ps.spares;
  }
  EXPECT_EQ(r.spares_gpus, spare_gpus);
  EXPECT_NEAR(r.spares_usd_per_day, spare_gpus * 24 * 3.24, 1e-9);

  // Off: no regional answer; one region: nothing to size apart.
  const FleetPlanResult off = run_fleet_plan(file, {"fleet_plan.per_region=false"}, std::nullopt,
                                             test::bundled_catalog(), nullptr, 1);
  EXPECT_FALSE(off.regional.has_value());
  EXPECT_EQ(off.candidates[0].answer.gpus, one.gpus);
}

TEST(FleetPlan, RankedPerRegionEveryConfigurationIsSizedApartFirst) {
  const std::string file =
      test::scenario_file("fleetsim_fleet_plan_test", "rank_regions", std::string(kTwoRegions));
  const FleetPlanResult r = run_fleet_plan(
      file,
      {"fleet_plan.rank_per_region=true",
       "fleet_plan.options=[{name: batching}, {name: small batches, set: {serving.max_num_seqs: "
       "8}}]"},
      std::nullopt, test::bundled_catalog(), nullptr, 2);
  ASSERT_EQ(r.candidates.size(), 2u);
  ASSERT_EQ(r.ranking.size(), 2u);
  // Both met, both sized region by region, ranked by that cost.
  for (const auto& c : r.candidates) {
    ASSERT_TRUE(c.regional.has_value()) << c.label;
    ASSERT_TRUE(c.regional->met) << c.label << ": " << c.regional->reason;
    EXPECT_EQ(&c.ranked(), &c.regional->rung);
  }
  const FleetPlanCandidate &first = r.candidates[static_cast<size_t>(r.ranking[0])],
                           &second = r.candidates[static_cast<size_t>(r.ranking[1])];
  EXPECT_LE(first.ranked().usd_per_day, second.ranked().usd_per_day);
  EXPECT_EQ(r.chosen, r.ranking[0]);
  // The answer's regional sizing is the one already done, not run again: every simulation
  // is a search's or a sizing's (perturb_traffic is 0 in this file).
  ASSERT_TRUE(r.regional.has_value());
  EXPECT_EQ(r.regional->rung.usd_per_day, first.regional->rung.usd_per_day);
  int sims = 0;
  for (const auto& c : r.candidates) sims += c.answer.simulations + c.regional->simulations;
  EXPECT_EQ(r.simulations, sims);
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

// Chat (100-token prompts, 80 % of sessions) and documents (8,000 tokens), one turn each,
// 50 tokens out: 4e6 weekly users × 0.5 × 2 sessions = 4e6 calls a day (46.3 a second), flat.
const char* kSplitFleet = R"(
seed: 3
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving: {policy: vllm, chunked_prefill: true, max_num_seqs: 64}
users:
  weekly_active: 4e6
  daily_active_fraction: 0.5
  sessions_per_day: 2
  turns_per_session: 1
  think_time: 20s
  prompt_tokens: 100
  output_tokens: 50
  classes:
    - {name: chat, share: 0.8}
    - {name: documents, share: 0.2, prompt_tokens: 8000}
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: main, replicas: 4}]}
slo: {ttft: 2s, tpot: 100ms}
fleet_plan:
  window: 10min
  warmup: 2min
  perturb_traffic: 0
  options:
    - {name: mixed}
    - name: split
      set:
        fleet.regions[0].pools: [{name: s, prompts: short, replicas: 4}, {name: l, prompts: long, replicas: 4}]
      axes: {fleet.routing.long_prompt_tokens: [1000, 16000]}
    - name: by class
      set:
        fleet.regions[0].pools: [{name: s, replicas: 4}, {name: l, classes: [documents], replicas: 4}]
    - name: three sides
      set:
        fleet.regions[0].pools: [{name: s, prompts: short, replicas: 4}, {name: m, prompts: medium, replicas: 4}, {name: l, prompts: long, replicas: 4}]
        fleet.routing: {medium_prompt_tokens: 1000, long_prompt_tokens: 4000}
)";

TEST(FleetPlan, AnOptionsAxesAreTriedWithItAndASplitsSidesAreSizedApart) {
  const std::string file =
      test::scenario_file("fleetsim_fleet_plan_test", "split", std::string(kSplitFleet));
  const FleetPlanResult r =
      run_fleet_plan(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 2);
  // 1 configuration of "mixed" + 2 of "split" (its own axis) + "by class" + "three sides":
  // 5, in enumeration order.
  ASSERT_EQ(r.candidates.size(), 5u);
  EXPECT_EQ(r.candidates[0].label, "mixed");
  EXPECT_EQ(r.candidates[1].label, "split fleet.routing.long_prompt_tokens=1000");
  EXPECT_EQ(r.candidates[2].label, "split fleet.routing.long_prompt_tokens=16000");
  EXPECT_EQ(r.candidates[3].label, "by class");
  for (const auto& c : r.candidates)
    ASSERT_TRUE(c.answer.met) << c.label << ": " << c.answer.reason;
  // One pool: one factor, no sides.
  EXPECT_TRUE(r.candidates[0].answer.pool_factors.empty());
  EXPECT_TRUE(r.candidates[0].answer.sizing.empty());
  // Split, each side sized on its own: a factor per pool, said in words.
  for (size_t i : {1, 2}) {
    ASSERT_EQ(r.candidates[i].answer.pool_factors.size(), 2u);
    EXPECT_NE(r.candidates[i].answer.sizing.find("sized apart"), std::string::npos);
  }
  // At 16,000 tokens no prompt is long: the idle long side shrinks to one replica, the
  // fewest a pool has (factor 1 simulated replica ÷ (sample 1 × its 4 replicas) = 0.25).
  EXPECT_DOUBLE_EQ(r.candidates[2].answer.pool_factors[1], 0.25);
  // At 1,000 tokens the documents go to the long pool: 0.2 × 46.3 calls/s × 8,000 tokens ×
  // 2 × 8.03e9 FLOP a token = 1.19e15 FLOP/s of prefill, above one H100's 9.89e14 peak, so
  // the long side needs at least 2 of the 4 replicas: factor ≥ 0.5.
  EXPECT_GE(r.candidates[1].answer.pool_factors[1], 0.5);
  // By class, the documents (8,000 tokens) go to pool l and chat (100) to s: the calls
  // land exactly where the split at 1,000 tokens puts them, with the same routers, so the
  // sides are sized to the same factors and GPUs.
  const LadderRung &by_class = r.candidates[3].answer, &at_1000 = r.candidates[1].answer;
  ASSERT_EQ(by_class.pool_factors.size(), 2u);
  EXPECT_NE(by_class.sizing.find("class split's sides were sized apart"), std::string::npos)
      << by_class.sizing;
  EXPECT_DOUBLE_EQ(by_class.pool_factors[0], at_1000.pool_factors[0]);
  EXPECT_DOUBLE_EQ(by_class.pool_factors[1], at_1000.pool_factors[1]);
  EXPECT_EQ(by_class.gpus, at_1000.gpus);
  // Three sides at 1,000 and 4,000 tokens: no prompt is medium (100 or 8,000), so the idle
  // medium side shrinks to one replica (0.25, as above), and short and long take what the
  // two-sided split at 1,000 gives them (the same calls on the same lanes' pools).
  const LadderRung& three = r.candidates[4].answer;
  ASSERT_EQ(three.pool_factors.size(), 3u);
  EXPECT_NE(three.sizing.find(", medium pools "), std::string::npos) << three.sizing;
  EXPECT_DOUBLE_EQ(three.pool_factors[1], 0.25);
  EXPECT_GE(three.pool_factors[2], 0.5);
}

// The same one-GPU replicas (RTX 4090s, at most 4 calls each, so that 4.63 calls/s need
// several), two to a server (a 2-GPU workstation) or one (a desktop), with server failures
// only: a server down for 10 h in 1,000 (mean 0.01 down per server).
const char* kSparesFleet = R"(
seed: 3
model: llama-3.1-8b
hardware: {gpu: rtx-4090, node: desktop-rtx4090, tp: 1}
serving: {policy: vllm, chunked_prefill: true, max_num_seqs: 4}
users: {weekly_active: 2e5, daily_active_fraction: 0.5, sessions_per_day: 2, turns_per_session: 2,
        think_time: 20s, prompt_tokens: 200, output_tokens: 100}
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: main, replicas: 4}]}
  failures: {node: {mtbf: 1000h, mttr: 10h}}
slo: {ttft: 2s, tpot: 100ms}
fleet_plan:
  window: 10min
  warmup: 2min
  perturb_traffic: 0
  options:
    - {name: two to a server, set: {hardware: {gpu: rtx-4090, node: workstation-2x-rtx4090, tp: 1}}}
    - {name: one to a server}
)";

TEST(FleetPlan, EveryConfigurationIsRankedWithItsSpares) {
  const std::string file =
      test::scenario_file("fleetsim_fleet_plan_test", "spares", std::string(kSparesFleet));
  const FleetPlanResult r =
      run_fleet_plan(file, {}, std::nullopt, test::bundled_catalog(), nullptr, 2);
  ASSERT_EQ(r.candidates.size(), 2u);
  const FleetPlanCandidate &two = r.candidates[0], &one = r.candidates[1];
  ASSERT_TRUE(two.answer.met) << two.answer.reason;
  ASSERT_TRUE(one.answer.met) << one.answer.reason;
  // The same GPUs serve the same calls: a server's size does not change a one-GPU replica.
  ASSERT_EQ(two.answer.gpus, one.answer.gpus);
  const int n = static_cast<int>(one.answer.gpus);
  ASSERT_GE(n, 2);
  ASSERT_LE(n, 4);
  // Two to a server: ceil(n / 2) ≤ 2 servers, servers down ~ Poisson(≤ 0.02): P(none) ≤
  // e^-0.01 = 0.990 < 0.999 and P(≤ 1) ≥ e^-0.02 · 1.02 = 0.9998: spares for one server's
  // 2 replicas.
  ASSERT_EQ(two.spares.size(), 1u);
  EXPECT_EQ(two.spares[0].spares, 2);
  // One to a server: servers down ~ Poisson(0.01 n): P(none) = e^-0.01n < 0.999, P(≤ 1) =
  // e^-0.01n (1 + 0.01n) ≥ e^-0.04 · 1.04 = 0.99922 ≥ 0.999: one spare.
  ASSERT_EQ(one.spares.size(), 1u);
  EXPECT_EQ(one.spares[0].spares, 1);
  // Priced at the RTX 4090's $0.60 a GPU-hour; the ranking is by $ a day with them: one to
  // a server first, though the serving cost ties and it is listed second (without spares
  // the tie would go to the first listed).
  EXPECT_NEAR(two.spares_usd_per_day, 2 * 24 * 0.6, 1e-9);
  EXPECT_NEAR(one.spares_usd_per_day, 1 * 24 * 0.6, 1e-9);
  EXPECT_EQ(two.answer.usd_per_day, one.answer.usd_per_day);
  ASSERT_EQ(r.ranking.size(), 2u);
  EXPECT_EQ(r.chosen, 1);
  EXPECT_EQ(r.ranking[1], 0);
  // The answer's spares are the chosen configuration's.
  EXPECT_EQ(r.spares_gpus, 1.0);
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
  // An option's axis that the plan's axes vary already.
  const std::string both = test::scenario_file(
      "fleetsim_fleet_plan_test", "both",
      std::string(kPlanFleet) +
          "fleet_plan: {options: [{name: a, axes: {serving.max_num_seqs: [1, 2]}}], axes: "
          "{serving.max_num_seqs: [4]}}\n");
  EXPECT_NE(plan_error([&] {
              read_fleet_plan_section(both, {});
            }).find("option 'a' has an axis serving.max_num_seqs that the plan's axes"),
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
