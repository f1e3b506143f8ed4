// Tests for sim/fleet/one_pool: a single-pool scenario is a fleet of one, and the one
// simulator (sim/simulation.h) runs it with its techniques. (Before the single-pool
// simulator was removed, the fleet of one's summaries of 12 shipped scenarios were checked
// equal to its field by field; the goldens of all 20, recorded by it, still hold to 1e-9.)
#include "sim/fleet/one_pool.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

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

// Which replicas took arrivals, first tokens and completions.
struct ReplicasSeen : serving::ServingObserver {
  std::set<int> arrivals, first_tokens, completions;
  uint64_t arrived = 0;
  void on_arrival(const workload::RequestSpec&, int replica, SimTime) override {
    ++arrived;
    arrivals.insert(replica);
  }
  void on_first_token(const workload::RequestSpec&, int replica, SimTime) override {
    first_tokens.insert(replica);
  }
  void on_completion(const serving::RequestRecord& rec) override {
    completions.insert(rec.replica);
  }
};

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

TEST(OnePool, DisaggregatedRequestsArriveAtThePrefillPoolAndFinishInTheDecodePool) {
  // disaggregated.yaml: 1 prefill replica (index 0), 3 decode replicas (1, 2, 3), 4,000
  // requests; each arrives once, at the prefill replica, and streams from a decode replica.
  const scenario::Scenario sc = load_one_pool("scenarios/examples/disaggregated.yaml");
  ReplicasSeen seen;
  RunOptions opt;
  opt.observers.push_back(&seen);
  const RunResult r = run_one_pool(sc, opt);
  EXPECT_EQ(seen.arrived, 4000u);
  EXPECT_EQ(r.summary.requests_arrived, 4000u);
  EXPECT_EQ(seen.arrivals, (std::set<int>{0}));
  // The first token reaches the user from the decode replica, after the KV transfer.
  EXPECT_EQ(seen.first_tokens, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(seen.completions, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(r.summary.kv_transfers, r.summary.requests_completed);
}

TEST(OnePool, ACascadesEscalatedRequestsArriveOnceAndAreAnsweredTwice) {
  // cascade.yaml: 2,000 requests to the 8B model (replica 0); escalation 0.3, chosen per
  // request id: about 600 ± 4σ (σ = √(2000 · 0.3 · 0.7) ≈ 20.5) go on to the 70B model
  // (replica 1). Each request counts one arrival; an escalated one's first token is the
  // large model's.
  const scenario::Scenario sc = load_one_pool("scenarios/examples/cascade.yaml");
  ReplicasSeen seen;
  RunOptions opt;
  opt.observers.push_back(&seen);
  const RunResult r = run_one_pool(sc, opt);
  EXPECT_EQ(r.summary.requests_arrived, 2000u);
  EXPECT_EQ(seen.arrived, 2000u);
  EXPECT_NEAR(static_cast<double>(r.summary.escalations), 600.0, 82.0);
  EXPECT_EQ(seen.arrivals, (std::set<int>{0}));
  EXPECT_EQ(seen.first_tokens, (std::set<int>{0, 1}));
  EXPECT_EQ(r.summary.requests_completed + r.summary.requests_rejected, 2000u);
}

TEST(OnePool, ResponseCacheHitsAreAnsweredAtTheFrontDoor) {
  // A fixed share of hits (chosen per request id), answered after the cache's latency
  // without a model call: about 30 % of 500 requests, 150 ± 4σ (σ = √(500 · 0.3 · 0.7)
  // ≈ 10.2). Every request is answered, by the cache or a model.
  const scenario::Scenario sc = load_one_pool(
      "scenarios/chat-service.yaml",
      {"workload.requests=500", "serving.response_cache={hit_rate: 0.3, latency: 20ms}"});
  const RunResult r = run_one_pool(sc);
  EXPECT_NEAR(static_cast<double>(r.summary.response_cache_hits), 150.0, 41.0);
  EXPECT_EQ(r.summary.requests_arrived, 500u);
  EXPECT_EQ(r.summary.requests_completed + r.summary.requests_rejected, 500u);
}

}  // namespace
}  // namespace fleetsim::fleet
