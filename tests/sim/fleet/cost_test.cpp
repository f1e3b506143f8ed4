// Tests for sim/fleet/cost: the cost and energy model against hand arithmetic on a small
// fleet (owned and cloud bases), and the idle-cost curve.
#include "sim/fleet/cost.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hw_models/error.h"
#include "sim/simulation.h"

namespace fleetsim::fleet {
namespace {

scenario::Scenario cost_scenario(const std::string& cost) {
  static const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  const std::string text = R"(
name: t
seed: 5
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving: {policy: vllm, chunked_prefill: true, max_num_seqs: 64, max_batched_tokens: 2048}
users:
  weekly_active: 1e5
  daily_active_fraction: 0.5
  sessions_per_day: 2
  turns_per_session: 3
  think_time: 20s
  prompt_tokens: 200
  output_tokens: 100
  duration: 2h
fleet:
  regions:
    - {name: dc, utc_offset: 0h, users: 1, diurnal: flat, pools: [{name: h100, replicas: 2, server_usd: 200000}]}
  datacenter: {pue: 1.25}
)" + cost;
  auto src = std::make_shared<yaml::Source>();
  src->file = "cost.yaml";
  return scenario::load_map(yaml::Map(YAML::Load(text), src, ""), "cost.yaml", {}, std::nullopt,
                            catalog);
}

TEST(FleetCost, OwnedHardwareMatchesHandArithmetic) {
  const auto sc = cost_scenario(
      "cost: {basis: owned, depreciation_years: 4, network_usd_per_server: 10000, rack_usd: 20000, "
      "electricity_usd_per_kwh: 0.1, margin: 0.5}\n");
  const FleetResult r = run_fleet(sc, {}, 1);
  const FleetAnswer a = fleet_answer(sc, r);
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  ASSERT_GT(p.replica_hours, 0.0);
  // Two 1-GPU replicas share one 8-GPU HGX H100 server (catalog: 9.6 kW, 4 per rack).
  EXPECT_DOUBLE_EQ(a.servers, 1.0);
  EXPECT_DOUBLE_EQ(a.racks, 1.0);
  // Capital: 1 server × ($200,000 + $10,000 network) + 1 rack × $20,000 = $230,000.
  EXPECT_DOUBLE_EQ(a.capital_usd, 230000.0);
  // Energy over the 2 h run, scaled to a day (× 12): per replica, one GPU at
  // 70 W idle + (700 − 70) W × busy share, plus 1/8 of the server's non-GPU draw
  // (9,600 − 8 × 700 = 4,000 W); × PUE 1.25.
  const double busy = p.busy_hours / p.replica_hours;
  const double replica_w = (70.0 + 630.0 * busy) + 4000.0 / 8;
  const double kwh_day = p.replica_hours * 12 * replica_w / 1e3 * 1.25;
  EXPECT_NEAR(a.energy_kwh_per_day, kwh_day, 1e-9 * kwh_day);
  // Cost a day: $230,000 / (4 × 365) + kWh × $0.10.
  const double usd_day = 230000.0 / (4 * 365.0) + kwh_day * 0.1;
  EXPECT_NEAR(a.cost_usd_per_day, usd_day, 1e-9 * usd_day);
  // Tokens: every completed call is 200-token message + context, 100 out; per M tokens
  // and break-even at a 50 % margin = twice the cost.
  const double tokens_day = static_cast<double>(p.input_tokens + p.output_tokens) * 12;
  EXPECT_NEAR(a.usd_per_mtok, usd_day / tokens_day * 1e6, 1e-9 * a.usd_per_mtok);
  EXPECT_NEAR(a.breakeven_usd_per_mtok, 2 * a.usd_per_mtok, 1e-9 * a.usd_per_mtok);
  // The idle-cost curve: at 10 % of the load, capital is unchanged and only the GPUs'
  // busy draw falls, so $/M tokens rises almost tenfold (but not quite: the energy of
  // the idle draw and hosts is also spread over fewer tokens, and the busy part shrinks).
  ASSERT_EQ(a.usd_per_mtok_at_load.size(), 5u);
  EXPECT_DOUBLE_EQ(a.usd_per_mtok_at_load.back().second, a.usd_per_mtok);
  const double at10 = a.usd_per_mtok_at_load[1].second;
  const double kwh10 = p.replica_hours * 12 * ((70.0 + 630.0 * busy * 0.1) + 500.0) / 1e3 * 1.25;
  EXPECT_NEAR(at10, (230000.0 / 1460.0 + kwh10 * 0.1) / (0.1 * tokens_day) * 1e6, 1e-9 * at10);
}

TEST(FleetCost, CloudPriceWithReservationDiscount) {
  const auto sc = cost_scenario("cost: {basis: cloud, reserved_discount: 0.4}\n");
  const FleetResult r = run_fleet(sc, {}, 1);
  const FleetAnswer a = fleet_answer(sc, r);
  // GPU-hours a day × $3.24 (catalog h100-sxm on-demand) × (1 − 0.4); the 2 replicas are
  // held the whole 2 h run: 2 × 2 h × 12 = 48 GPU-hours a day.
  EXPECT_NEAR(a.gpu_hours_per_day, 48.0, 1e-6);
  EXPECT_NEAR(a.cost_usd_per_day, 48.0 * 3.24 * 0.6, 1e-6);
  // The cloud price holds whatever the load: 1 % of the tokens costs 100× per token.
  EXPECT_NEAR(a.usd_per_mtok_at_load.front().second, 100 * a.usd_per_mtok,
              1e-9 * a.usd_per_mtok * 100);
}

TEST(FleetCost, PoolDayAndRegionLayoutByHand) {
  const auto sc = cost_scenario("cost: {basis: cloud}\n");
  const FleetResult r = run_fleet(sc, {}, 1);
  ASSERT_EQ(r.pools.size(), 1u);
  const PoolResult& p = r.pools[0];
  // A 2 h run: a day is 12 runs; not sampled, so a simulated replica is a full-scale one.
  const PoolDay d = pool_day(p, r.sample, 12.0);
  EXPECT_DOUBLE_EQ(pool_scale(p), 1.0);
  EXPECT_NEAR(d.gpu_hours, p.replica_hours * 12, 1e-9);
  EXPECT_NEAR(d.output_tokens, static_cast<double>(p.output_tokens) * 12, 1e-6);
  // At the catalog's $3.24 per GPU-hour: the day's GPU-hours over its output tokens, and
  // the run's own GPU-hours over the tokens it served (the same ratio here).
  const double per_out = p.replica_hours * 3.24 / static_cast<double>(p.output_tokens) * 1e6;
  EXPECT_NEAR(d.list_usd_per_mtok_output, per_out, 1e-9 * per_out);
  ASSERT_TRUE(d.run_usd_per_mtok_output && d.run_usd_per_mtok);
  EXPECT_NEAR(*d.run_usd_per_mtok_output, per_out, 1e-9 * per_out);
  EXPECT_NEAR(*d.run_usd_per_mtok,
              p.replica_hours * 3.24 / static_cast<double>(p.input_tokens + p.output_tokens) * 1e6,
              1e-9 * per_out);
  // Rack: 4 HGX H100 servers of 9.6 kW.
  EXPECT_DOUBLE_EQ(d.rack_power_w, 4 * 9600.0);
  // The region: one server in one rack, 9.6 kW of IT load × PUE 1.25, 2.5 m² a rack.
  const Layout l = region_layout(*sc.fleet, r, 0);
  EXPECT_DOUBLE_EQ(l.servers, 1.0);
  EXPECT_DOUBLE_EQ(l.racks, 1.0);
  EXPECT_DOUBLE_EQ(l.it_power_w, 9600.0);
  EXPECT_DOUBLE_EQ(l.facility_power_w, 12000.0);
  EXPECT_DOUBLE_EQ(l.floor_m2, 2.5);
}

TEST(FleetCost, OwnedNeedsPricesAndElectricity) {
  try {
    cost_scenario("cost: {basis: owned, depreciation_years: 4}\n");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("electricity_usd_per_kwh"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fleetsim::fleet
