// Tests for sim/app/run and sim/app/metrics: one entry point runs single-pool and fleet
// scenarios (the same results as the simulators they call), and the one list of metrics
// gives replications and sweeps the names their outputs have always had.
#include "sim/app/run.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/app/metrics.h"
#include "sim/app/sweep.h"
#include "sim/simulation.h"

namespace fleetsim::app {
namespace {

scenario::Scenario load(const std::string& text) {
  static const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  auto src = std::make_shared<yaml::Source>();
  src->file = "app.yaml";
  return scenario::load_map(yaml::Map(YAML::Load(text), src, ""), "app.yaml", {}, std::nullopt,
                            catalog);
}

const char* kPool = R"(
seed: 4
model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
serving: {replicas: 2, policy: vllm, chunked_prefill: true}
workload: {requests: 300, arrival: {process: poisson, rate: 20/s}, prompt_tokens: 300, output_tokens: 60}
slo: {ttft: 1s, tpot: 50ms}
)";

const char* kFleet = R"(
seed: 4
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving: {policy: vllm, chunked_prefill: true, max_num_seqs: 64}
users: {weekly_active: 1e5, daily_active_fraction: 0.5, sessions_per_day: 2, turns_per_session: 2,
        think_time: 20s, prompt_tokens: 200, output_tokens: 100, duration: 1h}
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 2}]}
slo: {ttft: 2s, tpot: 100ms}
)";

TEST(AppRun, SinglePoolIsTheSimulatorsResultWithItsTimeBuckets) {
  const scenario::Scenario sc = load(kPool);
  const RunRecord r = run(sc);
  ASSERT_TRUE(r.pool && r.over_time);
  EXPECT_FALSE(r.fleet || r.answer);
  const RunResult direct = run_one_pool(sc);
  EXPECT_EQ(r.pool->summary.requests_completed, 300u);
  EXPECT_EQ(r.pool->events, direct.events);
  EXPECT_EQ(r.pool->summary.ttft.p99_s, direct.summary.ttft.p99_s);
  // The basic figures read the same whichever kind of run.
  EXPECT_EQ(&r.summary(), &r.pool->summary);
  EXPECT_EQ(r.events(), r.pool->events);
  EXPECT_EQ(r.wall_s(), r.pool->wall_s);
  // Many runs: the same simulation, without time buckets.
  const RunRecord m = run_one_of_many(sc);
  ASSERT_TRUE(m.pool);
  EXPECT_FALSE(m.over_time);
  EXPECT_EQ(m.pool->summary.tpot.p99_s, direct.summary.tpot.p99_s);
}

TEST(AppRun, FleetIsTheFleetsResultWithItsAnswer) {
  const scenario::Scenario sc = load(kFleet);
  const RunRecord r = run(sc, {}, 2);
  ASSERT_TRUE(r.fleet && r.answer);
  EXPECT_FALSE(r.pool || r.over_time);
  const fleet::FleetResult direct = run_fleet(sc, {}, 1);
  EXPECT_EQ(r.fleet->summary.requests_completed, direct.summary.requests_completed);
  EXPECT_EQ(r.answer->cost_usd_per_day, fleet::fleet_answer(sc, direct).cost_usd_per_day);
  EXPECT_EQ(&r.summary(), &r.fleet->summary);
  EXPECT_EQ(r.events(), r.fleet->events);
  EXPECT_EQ(r.wall_s(), r.fleet->wall_s);
  // The metrics read the answer (full scale) and the summary (latency).
  for (const auto& [name, v] : metrics_of(r, kSweep)) {
    if (name == "calls_per_day") {
      EXPECT_EQ(v, r.answer->calls_per_day);
    } else if (name == "usd_per_mtok") {
      EXPECT_EQ(v, r.answer->usd_per_mtok);
    } else if (name == "ttft_p99_s") {
      EXPECT_EQ(v, r.fleet->summary.ttft.p99_s);
    }
  }
}

TEST(AppMetrics, OneListGivesEachUseItsNamesInOrder) {
  // The columns of sweep.csv and the keys checkpoints hold.
  EXPECT_EQ(metric_names(false, kSweep),
            (std::vector<std::string>{"requests_completed", "ttft_p50_s", "ttft_p99_s",
                                      "tpot_p99_s", "e2e_p50_s", "output_tok_per_s",
                                      "goodput_req_per_s", "slo_attainment", "busy_fraction"}));
  EXPECT_EQ(metric_names(true, kSweep),
            (std::vector<std::string>{"calls_per_day", "gpus", "gpu_hours_per_day",
                                      "cost_usd_per_day", "usd_per_mtok", "slo_attainment",
                                      "ttft_p99_s", "tpot_p99_s", "busy_fraction"}));
  // The keys of summary.json's replications.
  EXPECT_EQ(metric_names(false, kReplications),
            (std::vector<std::string>{"ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
                                      "e2e_p50_s", "e2e_p99_s", "output_tok_per_s",
                                      "goodput_req_per_s", "slo_attainment"}));
  const std::vector<std::string> fleet = metric_names(true, kReplications);
  EXPECT_EQ(std::set<std::string>(fleet.begin(), fleet.end()),
            (std::set<std::string>{"calls_per_day", "slo_attainment", "ttft_p50_s", "ttft_p99_s",
                                   "tpot_p99_s", "e2e_p50_s", "gpu_hours_per_day",
                                   "cost_usd_per_day", "cost_usd_per_mtok"}));
  // A record's values, by hand.
  RunRecord r;
  r.pool.emplace();
  r.pool->summary.requests_completed = 7;
  r.pool->summary.ttft.p50_s = 0.25;
  r.pool->summary.replica_busy_fraction = 0.5;
  const auto m = metrics_of(r, kSweep);
  ASSERT_EQ(m.size(), 9u);
  EXPECT_EQ(m[0], (std::pair<std::string, double>{"requests_completed", 7.0}));
  EXPECT_EQ(m[1], (std::pair<std::string, double>{"ttft_p50_s", 0.25}));
  EXPECT_EQ(m[8], (std::pair<std::string, double>{"busy_fraction", 0.5}));
}

TEST(AppSweep, ACheckpointedResultHasExactlyOneKindsMetrics) {
  std::string ok = "{";
  for (const auto& n : metric_names(false, kSweep)) {
    if (ok.size() > 1) ok += ',';
    ok += '"';
    ok += n;
    ok += "\":1";
  }
  ok += '}';
  EXPECT_NO_THROW(check_sweep_result(ok));
  EXPECT_THROW(check_sweep_result("{\"ttft_p50_s\":1}"), std::invalid_argument);
  EXPECT_THROW(check_sweep_result("[1]"), std::invalid_argument);
}

}  // namespace
}  // namespace fleetsim::app
