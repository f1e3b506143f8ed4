// Tests for correlated failures in the fleet (sim/simulation.cpp: fail, rack_fail,
// region_down/up): a server failure takes down exactly the replicas on that server, a rack
// failure the servers of its rack, a region outage loses no call and its users' calls pay
// the WAN round trip, and the same seed gives the same failures. Every count is worked out
// by hand in the comment above its assertion.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/serving/observer.h"
#include "sim/simulation.h"
#include "tests/sim/scenario_text.h"

namespace fleetsim::fleet {
namespace {

// Llama-3.1-8B on HGX H100 servers (8 GPUs each, 4 servers per rack: the catalog's
// nodes_per_rack 4 and 38.4 kW / 9.6 kW per server = 4); 100k weekly users, all simulated
// (sample 1), flat curve, 2 h; no autoscaling, so a replica that fails stays down until
// its repair. `hardware` is the pool's, `regions` the YAML list, `failures` the section.
std::string corr_scenario(const std::string& regions, const std::string& failures) {
  return R"(
name: t
seed: 7
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving: {engine: ideal, policy: vllm, chunked_prefill: true, max_num_seqs: 64, max_batched_tokens: 2048}
users:
  weekly_active: 1e5
  daily_active_fraction: 0.4
  sessions_per_day: 2
  turns_per_session: 3
  think_time: 20s
  prompt_tokens: {dist: lognormal, median: 200, sigma: 0.8, max: 4000}
  output_tokens: {dist: lognormal, median: 150, sigma: 0.8, max: 1000}
  duration: 2h
  sample: 1
fleet:
  regions:
)" + regions +
         "  failures: " + failures + R"(
slo: {ttft: 2s, tpot: 100ms}
)";
}

scenario::Scenario corr_load(const std::string& text) {
  return test::load_text(text, "failures.yaml");
}

const FailureClassResult& cls(const FleetResult& r, FailureClass c) {
  return r.failure_classes[static_cast<size_t>(c)];
}

TEST(FleetFailures, NodeFailureTakesDownEveryReplicaOnItsServer) {
  // TP2 on 8-GPU servers: 8 / 2 = 4 replicas per server; 8 replicas fill seats 0-7, i.e.
  // servers 0 (seats 0-3) and 1 (seats 4-7). Node MTBF 10 min per server, repairs of
  // ~100 h (after the 2 h run): each server fails once at rate 1/10 min, so P(a server
  // survives 2 h) = e^-12 ≈ 6e-6. Two node failures, each taking its 4 replicas: 8 down.
  const auto sc = corr_load(corr_scenario(R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: h100, replicas: 8, hardware: {tp: 2}}]}
)",
                                          "{node: {mtbf: 10min, mttr: 100h}}"));
  ASSERT_EQ(sc.fleet->regions[0].pools[0].replicas_per_server, 4);  // 8 GPUs / TP2
  const FleetResult r = run_fleet(sc, {}, 1);
  const FailureClassResult& node = cls(r, FailureClass::kNode);
  EXPECT_EQ(node.events, 2u);
  EXPECT_EQ(node.replicas_down, 8u);  // 2 servers × 4 replicas
  EXPECT_EQ(r.pools[0].failures, 8u);
  EXPECT_EQ(r.pools[0].down_peak, 8);
  EXPECT_EQ(cls(r, FailureClass::kGpu).events, 0u);
  // With every replica down for good, the calls still waiting fail; none is lost.
  EXPECT_EQ(r.summary.requests_arrived, r.summary.requests_completed + r.failed_calls);
  EXPECT_EQ(node.calls_retried, r.retried);
}

TEST(FleetFailures, GpuFailureTakesDownOnlyItsReplica) {
  // The same 8 TP2 replicas with GPU failures only: 2 GPUs per replica at MTBF 20 min is
  // a rate of 1/10 min per replica; P(a replica survives 2 h) = e^-12. Each failure takes
  // the replica holding that GPU, not its 3 neighbours: 8 events, 8 replicas down.
  const auto sc = corr_load(corr_scenario(R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: h100, replicas: 8, hardware: {tp: 2}}]}
)",
                                          "{gpu: {mtbf: 20min, mttr: 100h}}"));
  const FleetResult r = run_fleet(sc, {}, 1);
  EXPECT_EQ(cls(r, FailureClass::kGpu).events, 8u);
  EXPECT_EQ(cls(r, FailureClass::kGpu).replicas_down, 8u);
  EXPECT_EQ(cls(r, FailureClass::kNode).events, 0u);
}

TEST(FleetFailures, RackFailureTakesDownItsServers) {
  // TP8: one replica per 8-GPU server; 8 replicas on 8 servers = 2 racks of 4. Rack MTBF
  // 10 min per rack, repairs ~100 h: P(a rack survives 2 h) = e^-12, and a rack in repair
  // does not fail again. Two rack failures, each taking servers_per_rack = 4 replicas.
  const auto sc = corr_load(corr_scenario(R"(
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat,
       pools: [{name: h100, replicas: 8, hardware: {tp: 8}}]}
)",
                                          "{rack: {mtbf: 10min, mttr: 100h}}"));
  ASSERT_EQ(sc.fleet->regions[0].pools[0].servers_per_rack, 4);  // min(4, 38.4 kW / 9.6 kW)
  const FleetResult r = run_fleet(sc, {}, 1);
  const FailureClassResult& rack = cls(r, FailureClass::kRack);
  EXPECT_EQ(rack.events, 2u);
  EXPECT_EQ(rack.replicas_down, 8u);  // 2 racks × 4 servers × 1 replica
  EXPECT_EQ(r.pools[0].down_peak, 8);
  EXPECT_EQ(r.summary.requests_arrived, r.summary.requests_completed + r.failed_calls);
}

// Records, for the calls of region `home`'s users that arrived in [from, to), the
// smallest TTFT and how many completed.
class OutageTtftProbe : public serving::ServingObserver {
 public:
  OutageTtftProbe(int home, SimTime from, SimTime to) : home_(home), from_(from), to_(to) {}
  void on_completion(const serving::RequestRecord& rec) override {
    if (rec.spec->region != home_ || rec.spec->arrival_ns < from_ || rec.spec->arrival_ns >= to_)
      return;
    ++completed;
    const SimTime ttft = rec.first_token_ns - rec.spec->arrival_ns;
    min_ttft = completed == 1 ? ttft : std::min(min_ttft, ttft);
  }
  uint64_t completed = 0;
  SimTime min_ttft = 0;

 private:
  int home_;
  SimTime from_, to_;
};

TEST(FleetFailures, RegionOutageLosesNoCallAndPaysTheWanRoundTrip) {
  // Regions a and b, half the users each, 10 TP1 replicas each (640 batch slots: far more
  // than the ~3 calls/s need). a is down from 30 min to 60 min. Its users' calls go to b:
  // every call they send in [30 min, 60 min − 20 ms) reaches a's front door (20 ms) while
  // a is down (and a's replicas reload their weights after it), so it pays a's user round
  // trip and the WAN round trip to b: TTFT ≥ 20 ms + 80 ms = 100 ms.
  const auto sc =
      corr_load(corr_scenario(R"(
    - {name: a, utc_offset: 0h, users: 0.5, diurnal: flat, user_rtt: 20ms, wan_rtt: {b: 80ms},
       pools: [{name: h100, replicas: 10}]}
    - {name: b, utc_offset: 0h, users: 0.5, diurnal: flat, user_rtt: 10ms,
       pools: [{name: h100, replicas: 10}]}
)",
                              "{region_outage: {region: a, at: 30min, duration: 30min}}"));
  OutageTtftProbe probe(0, seconds_to_ns(1800), seconds_to_ns(3600) - seconds_to_ns(0.020));
  RunOptions opt;
  opt.observers.push_back(&probe);
  const FleetResult r = run_fleet(sc, opt, 1);
  // No call lost: every arrived call completed (b has capacity), none failed or pending.
  EXPECT_EQ(r.failed_calls, 0u);
  EXPECT_EQ(r.unfinished, 0u);
  EXPECT_EQ(r.summary.requests_arrived, r.summary.requests_completed);
  // 100k × 0.4 × 2 / 24 h × 3 turns ≈ 0.28 calls/s from a's half: ~500 in 30 min.
  ASSERT_GT(probe.completed, 100u);
  EXPECT_GE(probe.min_ttft, seconds_to_ns(0.100));
  ASSERT_EQ(r.outages.size(), 1u);
  const OutageResult& o = r.outages[0];
  EXPECT_EQ(o.region, 0);
  EXPECT_EQ(o.replicas_down, 10u);  // all of a's replicas
  EXPECT_EQ(o.completed, o.calls);  // the outage's own count of its users' calls agrees
  EXPECT_GE(o.calls, probe.completed);
  EXPECT_GE(o.ttft_min_s, 0.100);
  EXPECT_EQ(cls(r, FailureClass::kRegion).events, 1u);
  EXPECT_EQ(cls(r, FailureClass::kRegion).replicas_down, 10u);
  EXPECT_EQ(cls(r, FailureClass::kRegion).calls_failed, 0u);
  // b carried a's load: its peak is recorded, and 10 replicas were active at the peak.
  ASSERT_EQ(o.surviving.size(), 1u);
  EXPECT_EQ(o.surviving[0].region, 1);
  EXPECT_EQ(o.surviving[0].replicas_at_peak, 10);
  EXPECT_GT(r.regions[0].spilled_out, 0u);
}

TEST(FleetFailures, SameSeedSameFailures) {
  // Every failure class at once (GPU, node, link, rack and a region MTBF), twice with the
  // same seed: the same events, replicas down, retries, outages and call counts.
  const std::string text = corr_scenario(R"(
    - {name: a, utc_offset: 0h, users: 0.5, diurnal: flat, user_rtt: 20ms, wan_rtt: {b: 80ms},
       pools: [{name: h100, replicas: 16, hardware: {tp: 2}}]}
    - {name: b, utc_offset: 0h, users: 0.5, diurnal: flat, user_rtt: 10ms,
       pools: [{name: h100, replicas: 16, hardware: {tp: 2}}]}
)",
                                         "{gpu: {mtbf: 10h, mttr: 1h}, node: {mtbf: 10h, mttr: "
                                         "30min}, link: {mtbf: 10h, mttr: 10min}, rack: {mtbf: "
                                         "10h, mttr: 1h}, region: {mtbf: 3h, mttr: 20min}}");
  const auto sc = corr_load(text);
  const FleetResult x = run_fleet(sc, {}, 1), y = run_fleet(sc, {}, 1);
  // Something failed: 2 × 16 replicas × 2 GPUs = 64 GPUs at MTBF 10 h over 2 h is 12.8 GPU
  // failures expected (Poisson: P(0) = e^-12.8 ≈ 3e-6).
  EXPECT_GT(x.failure_classes[static_cast<size_t>(FailureClass::kGpu)].events, 0u);
  for (int c = 1; c < kFailureClasses; ++c) {
    const auto& a = x.failure_classes[static_cast<size_t>(c)];
    const auto& b = y.failure_classes[static_cast<size_t>(c)];
    EXPECT_EQ(a.events, b.events) << failure_class_name(c);
    EXPECT_EQ(a.replicas_down, b.replicas_down) << failure_class_name(c);
    EXPECT_EQ(a.calls_retried, b.calls_retried) << failure_class_name(c);
    EXPECT_EQ(a.retried_good, b.retried_good) << failure_class_name(c);
  }
  ASSERT_EQ(x.outages.size(), y.outages.size());
  for (size_t k = 0; k < x.outages.size(); ++k) {
    EXPECT_EQ(x.outages[k].start_s, y.outages[k].start_s);
    EXPECT_EQ(x.outages[k].calls, y.outages[k].calls);
  }
  EXPECT_EQ(x.summary.requests_completed, y.summary.requests_completed);
  EXPECT_EQ(x.summary.ttft.p99_s, y.summary.ttft.p99_s);
  EXPECT_EQ(x.retried, y.retried);
  EXPECT_EQ(x.events, y.events);
  // No call lost with all of them: completed + failed + in flight = arrived.
  EXPECT_EQ(x.summary.requests_arrived,
            x.summary.requests_completed + x.failed_calls + x.unfinished);
}

TEST(FleetFailures, UnknownOutageRegionIsAnInputError) {
  const std::string e =
      test::load_error(corr_scenario(R"(
    - {name: a, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 2}]}
)",
                                     "{region_outage: {region: mars, at: 1h, duration: 1h}}"),
                       "failures.yaml");
  EXPECT_NE(e.find("no region named 'mars'"), std::string::npos) << e;
  EXPECT_NE(e.find("one of: a"), std::string::npos) << e;
  EXPECT_NE(e.find("failures.yaml"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim::fleet
