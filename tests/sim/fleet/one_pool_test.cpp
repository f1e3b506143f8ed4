// Tests for sim/fleet/one_pool: a single-pool scenario runs as a fleet of one on the fleet
// simulator, with every serving technique a single pool has, and gives exactly what the
// single-pool simulator (sim/simulation.h) gives: the same requests on the same replicas
// in the same order, so every count, percentile and the number of events agree.
#include "sim/fleet/one_pool.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/fleet/fleet_sim.h"
#include "sim/simulation.h"

namespace fleetsim::fleet {
namespace {

const hw::Catalog& one_pool_catalog() {
  static const hw::Catalog c = hw::Catalog::load(hw::Catalog::default_dir());
  return c;
}

scenario::Scenario load_one_pool(const std::string& file,
                                 const std::vector<std::string>& sets = {}) {
  return scenario::load(std::string(FLEETSIM_SOURCE_DIR) + "/" + file, sets, std::nullopt,
                        one_pool_catalog());
}

struct OnePoolCase {
  const char* file;
  std::vector<std::string> sets;
};

TEST(OnePool, EverySinglePoolTechniqueGivesTheSingleRunsSummaryExactly) {
  const std::vector<OnePoolCase> cases = {
      {"scenarios/chat-service.yaml", {"workload.requests=600"}},
      {"scenarios/chat-service.yaml", {"workload.requests=600", "serving.policy=orca"}},
      {"scenarios/chat-service.yaml", {"workload.requests=600", "serving.router=random"}},
      {"scenarios/examples/cascade.yaml", {}},         // small model first, escalations
      {"scenarios/examples/disaggregated.yaml", {}},   // prefill pool, KV handoffs
      {"scenarios/examples/cross-region.yaml", {}},    // KV over the WAN link
      {"scenarios/examples/prefix-caching.yaml", {}},  // trace hashes, session affinity
      {"scenarios/examples/conversations.yaml", {}},   // closed loop
      {"scenarios/examples/multi-lora.yaml", {}},      // LoRA step model
      {"scenarios/examples/speculative.yaml", {}},     // draft model
      {"scenarios/examples/priorities.yaml", {}},      // request classes
      {"scenarios/mooncake-replay.yaml", {}},          // a trace
  };
  for (const OnePoolCase& c : cases) {
    SCOPED_TRACE(c.file);
    const scenario::Scenario sc = load_one_pool(c.file, c.sets);
    ASSERT_TRUE(runs_as_fleet_of_one(sc));
    const RunResult one = run_one_pool(sc);
    const RunResult single = Simulation(sc).run();
    const metrics::Summary& a = one.summary;
    const metrics::Summary& b = single.summary;
    ASSERT_GT(b.requests_completed, 0u);
    EXPECT_EQ(one.events, single.events);
    EXPECT_EQ(a.requests_arrived, b.requests_arrived);
    EXPECT_EQ(a.requests_completed, b.requests_completed);
    EXPECT_EQ(a.requests_rejected, b.requests_rejected);
    EXPECT_EQ(a.preemptions, b.preemptions);
    EXPECT_EQ(a.iterations, b.iterations);
    EXPECT_EQ(a.output_tokens, b.output_tokens);
    EXPECT_EQ(a.ttft.p50_s, b.ttft.p50_s);
    EXPECT_EQ(a.ttft.p99_s, b.ttft.p99_s);
    EXPECT_EQ(a.tpot.p99_s, b.tpot.p99_s);
    EXPECT_EQ(a.itl.count, b.itl.count);
    EXPECT_EQ(a.itl.p99_s, b.itl.p99_s);
    EXPECT_EQ(a.e2e.max_s, b.e2e.max_s);
    EXPECT_EQ(a.sim_duration_s, b.sim_duration_s);
    EXPECT_EQ(a.replica_busy_fraction, b.replica_busy_fraction);
    EXPECT_EQ(a.prefix_hit_tokens, b.prefix_hit_tokens);
    EXPECT_EQ(a.kv_transfers, b.kv_transfers);
    EXPECT_EQ(a.kv_transfer_mean_s, b.kv_transfer_mean_s);
    EXPECT_EQ(a.escalations, b.escalations);
    EXPECT_EQ(a.response_cache_hits, b.response_cache_hits);
    ASSERT_EQ(a.classes.size(), b.classes.size());
    for (size_t k = 0; k < a.classes.size(); ++k)
      EXPECT_EQ(a.classes[k].ttft.p99_s, b.classes[k].ttft.p99_s);
  }
}

TEST(OnePool, ResponseCacheHitsAreAnsweredAtTheFrontDoor) {
  // A fixed share of hits (chosen per request id): both simulators answer the same ones.
  const scenario::Scenario sc = load_one_pool(
      "scenarios/chat-service.yaml",
      {"workload.requests=500", "serving.response_cache={hit_rate: 0.3, latency: 20ms}"});
  const RunResult one = run_one_pool(sc);
  const RunResult single = Simulation(sc).run();
  // About 30 % of 500 requests: 150 ± 4σ (σ = √(500 · 0.3 · 0.7) ≈ 10).
  EXPECT_NEAR(static_cast<double>(one.summary.response_cache_hits), 150.0, 41.0);
  EXPECT_EQ(one.summary.response_cache_hits, single.summary.response_cache_hits);
  EXPECT_EQ(one.summary.ttft.p50_s, single.summary.ttft.p50_s);
  EXPECT_EQ(one.events, single.events);
}

TEST(OnePool, TheFleetOfOneListsThePoolsInReplicaOrder) {
  // Disaggregated: the prefill pool's replicas are numbered first, then the decode pool.
  const scenario::Scenario d = load_one_pool("scenarios/examples/disaggregated.yaml");
  const FleetSpec f = one_pool_fleet(d, 1);
  ASSERT_EQ(f.regions.size(), 1u);
  ASSERT_EQ(f.regions[0].pools.size(), 2u);
  EXPECT_EQ(f.regions[0].pools[0].pool.vllm.role, serving::EngineConfig::Role::kPrefill);
  EXPECT_EQ(f.regions[0].pools[0].pool.replicas, d.prefill_pool->replicas);
  EXPECT_EQ(f.regions[0].pools[1].pool.vllm.role, serving::EngineConfig::Role::kDecode);
  EXPECT_EQ(f.regions[0].pools[1].pool.replicas, d.replicas);
  EXPECT_EQ(f.regions[0].user_rtt_s, 0.0);  // the users are at the datacenter
  EXPECT_EQ(f.router, d.router);
  EXPECT_EQ(f.cascade_model, -1);
  // A cascade: the small model's pool first; calls go to it (cascade_model 1) and a share
  // is escalated to the scenario's model (models[0]).
  const scenario::Scenario c = load_one_pool("scenarios/examples/cascade.yaml");
  const FleetSpec g = one_pool_fleet(c, 3);
  ASSERT_EQ(g.regions[0].pools.size(), 2u);
  EXPECT_EQ(g.regions[0].pools[0].pool.model.id, c.small_pool->model.id);
  EXPECT_EQ(g.regions[0].pools[1].pool.model.id, c.model.id);
  ASSERT_EQ(g.models.size(), 2u);
  EXPECT_EQ(g.models[0], c.model.id);
  EXPECT_EQ(g.cascade_model, 1);
  EXPECT_EQ(g.escalation, c.escalation);
  EXPECT_EQ(g.class_model, std::vector<int>(3, 0));  // every class: the scenario's model
}

TEST(OnePool, LiveTransfersOnSimGridStayOnTheSingleRunForNow) {
  // Disaggregated with network: {model: simgrid}: its KV transfers run live on the fabric.
  EXPECT_FALSE(runs_as_fleet_of_one(load_one_pool("scenarios/examples/expert-parallel.yaml")));
  EXPECT_TRUE(runs_as_fleet_of_one(load_one_pool("scenarios/examples/disaggregated.yaml")));
}

}  // namespace
}  // namespace fleetsim::fleet
