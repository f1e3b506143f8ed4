// A fleet partition's outcome through the byte codec (what an MPI rank sends rank 0): the
// decoded result and metrics equal the ones encoded, pools point into the fleet again, and
// a damaged message or one from another fleet is an error.
#include "sim/fleet/result_codec.h"

#include <gtest/gtest.h>

#include "../scenario_text.h"
#include "sim/simulation.h"

namespace fleetsim::fleet {
namespace {

// Two regions, two models (a class on Llama-3.2-1B): two partitions; sampled small.
std::string fleet_text(const std::string& first_pool = "big") {
  return R"(
name: t
seed: 5
model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
serving: {engine: ideal, policy: vllm, chunked_prefill: true, max_num_seqs: 64, max_batched_tokens: 2048}
users:
  weekly_active: 1e6
  daily_active_fraction: 0.4
  sessions_per_day: 2
  turns_per_session: 3
  think_time: 20s
  prompt_tokens: {dist: lognormal, median: 200, sigma: 0.8, max: 4000}
  output_tokens: {dist: lognormal, median: 150, sigma: 0.8, max: 1000}
  duration: 1h
  sample: 0.05
  classes: [{name: chat, share: 0.7}, {name: mini, share: 0.3, model: llama-3.2-1b}]
fleet:
  regions:
    - {name: us, utc_offset: 0h, users: 0.6, diurnal: flat, wan_rtt: {eu: 80ms},
       pools: [{name: )" +
         first_pool + R"(, replicas: 20}, {name: small, replicas: 10, model: llama-3.2-1b}]}
    - {name: eu, utc_offset: 1h, users: 0.4, diurnal: flat,
       pools: [{name: big, replicas: 20}, {name: small, replicas: 10, model: llama-3.2-1b}]}
slo: {ttft: 2s, tpot: 100ms}
)";
}

TEST(ResultCodec, ADecodedPartitionEqualsTheOneEncoded) {
  const auto sc = test::load_text(fleet_text(), "codec.yaml");
  ASSERT_EQ(sc.fleet->partitions().size(), 2u);
  Simulation sim(sc, {}, sc.fleet->partitions()[0]);
  const FleetResult r = sim.run();
  ASSERT_GT(r.summary.requests_completed, 100u);
  const std::string bytes = encode_partition(r, sim.collector(), sim.retried_e2e());
  const PartitionResult d =
      decode_partition(bytes, fleetsim::fleet_collector(sc), *sc.fleet, "partition 0");

  // The collector's metrics: every figure of the summary it gives is the original's.
  const SimTime end = seconds_to_ns(r.sim_end_s);
  const metrics::Summary a = sim.collector().summarize(end), b = d.collector.summarize(end);
  EXPECT_EQ(a.requests_arrived, b.requests_arrived);
  EXPECT_EQ(a.requests_completed, b.requests_completed);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.ttft.p99_s, b.ttft.p99_s);
  EXPECT_EQ(a.tpot.p50_s, b.tpot.p50_s);
  EXPECT_EQ(a.itl.p90_s, b.itl.p90_s);
  EXPECT_EQ(a.e2e.mean_s, b.e2e.mean_s);
  EXPECT_EQ(a.slo_attainment, b.slo_attainment);
  ASSERT_EQ(b.classes.size(), 2u);
  EXPECT_EQ(a.classes[0].completed, b.classes[0].completed);
  EXPECT_EQ(a.classes[0].ttft.p90_s, b.classes[0].ttft.p90_s);
  EXPECT_EQ(b.classes[1].completed, 0u);  // partition 0 runs the chat model only

  // The fleet result, region by region and pool by pool.
  const FleetResult& f = d.result;
  ASSERT_EQ(f.regions.size(), 2u);
  for (size_t g = 0; g < 2; ++g) {
    EXPECT_EQ(f.regions[g].name, r.regions[g].name);
    EXPECT_EQ(f.regions[g].arrivals, r.regions[g].arrivals);
    EXPECT_EQ(f.regions[g].served, r.regions[g].served);
    EXPECT_EQ(f.regions[g].ttft.p99_s, r.regions[g].ttft.p99_s);
    ASSERT_EQ(f.regions[g].series.size(), r.regions[g].series.size());
    EXPECT_EQ(f.regions[g].series.back().replicas_mean, r.regions[g].series.back().replicas_mean);
    EXPECT_EQ(f.regions[g].over_time.buckets().size(), r.regions[g].over_time.buckets().size());
    EXPECT_EQ(f.regions[g].over_time.total_latency().quantile(0.5),
              r.regions[g].over_time.total_latency().quantile(0.5));
  }
  ASSERT_EQ(f.pools.size(), r.pools.size());
  for (size_t i = 0; i < f.pools.size(); ++i) {
    EXPECT_EQ(f.pools[i].name, r.pools[i].name);
    EXPECT_EQ(f.pools[i].completed, r.pools[i].completed);
    EXPECT_EQ(f.pools[i].busy_hours, r.pools[i].busy_hours);
    EXPECT_EQ(f.pools[i].tpot.p99_s, r.pools[i].tpot.p99_s);
    EXPECT_EQ(f.pools[i].spec, r.pools[i].spec);  // points into the same fleet again
  }
  EXPECT_EQ(f.events, r.events);
  EXPECT_EQ(f.sessions, r.sessions);
  EXPECT_EQ(f.sim_end_s, r.sim_end_s);
  EXPECT_EQ(d.retried_e2e.count(), sim.retried_e2e().count());
}

TEST(ResultCodec, DamagedMessagesAndOtherFleetsAreErrors) {
  const auto sc = test::load_text(fleet_text(), "codec.yaml");
  // Partition 0: the chat model's pools, us/big among them.
  Simulation sim(sc, {}, sc.fleet->partitions()[0]);
  const FleetResult r = sim.run();
  const std::string bytes = encode_partition(r, sim.collector(), sim.retried_e2e());
  const metrics::Collector blank = fleetsim::fleet_collector(sc);
  // One byte short, one byte too many.
  EXPECT_THROW(decode_partition(bytes.substr(0, bytes.size() - 1), blank, *sc.fleet, "p1"),
               std::runtime_error);
  EXPECT_THROW(decode_partition(bytes + "x", blank, *sc.fleet, "p1"), std::runtime_error);
  // A fleet whose first pool is us/huge, not us/big: the message's pools are not its pools.
  const auto other = test::load_text(fleet_text("huge"), "other.yaml");
  try {
    decode_partition(bytes, blank, *other.fleet, "p1");
    FAIL() << "decoded another fleet's pools";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a pool of this fleet"), std::string::npos)
        << e.what();
  }
  // A collector set up for other classes cannot take the metrics.
  const metrics::Collector no_classes(1, sc.slo_ttft_s, sc.slo_tpot_s);
  EXPECT_THROW(decode_partition(bytes, no_classes, *sc.fleet, "p1"), std::runtime_error);
}

}  // namespace
}  // namespace fleetsim::fleet
