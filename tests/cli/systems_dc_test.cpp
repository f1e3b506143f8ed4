// The datacenter systems of the original question (scenarios/systems/dc-*.yaml): each
// scenario loads and runs in a few seconds, and each answer is held against a bound worked
// out by hand from the catalog's datasheet figures (the math is next to every assertion).
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>

#include "cli_fixture.h"

namespace {

using nlohmann::json;

// A suite of its own: cli_fixture.h defines Cli in an anonymous namespace, and this file may
// fall in another unity batch (8 files) than the other CLI tests; gtest refuses one suite
// name with two fixture classes.
class SystemsDc : public Cli {};

// The summary.json a run `r` wrote to `out` (an empty object when the run failed).
json systems_dc_summary(const Result& r, const fs::path& out) {
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return json::object();
  return json::parse(slurp(out / "summary.json"));
}

// Pools of a fleet summary by name.
std::map<std::string, json> systems_dc_pools(const json& s) {
  std::map<std::string, json> m;
  for (const auto& p : s["pools"]) m[p["name"].get<std::string>()] = p;
  return m;
}

// A decode step reads every weight a token passes through at least once, so its time is at
// least the bytes of one GPU's share over that GPU's datasheet bandwidth (efficiency <= 1).
// Llama-3.1-70B: 70.6e9 parameters (catalog), less the input embedding, of which a step reads
// one row: 128,256 x 8,192 = 1.05e9. At 1 byte a weight (FP8, int8): >= 69.5e9 bytes.
constexpr double kLlama70bStepBytes = 69.5e9;

TEST_F(SystemsDc, MixedFleetEveryPoolServesWithinItsBandwidthBound) {
  const fs::path out = dir_ / "out";
  const json s = systems_dc_summary(
      run("run scenarios/systems/dc-mixed-fleet.yaml --quiet --out '" + out.string() + "'"), out);
  ASSERT_TRUE(s.contains("pools"));
  auto pools = systems_dc_pools(s);
  ASSERT_EQ(pools.size(), 3u);
  const json &h100 = pools["us-east/h100"], &mi = pools["us-east/mi300x"],
             &tpu = pools["us-east/tpu-v6e"];
  // The 2:8 split by GPU count, at full scale: 20 replicas x TP 2 = 40 H100, 10 x TP 1 = 10
  // MI300X; 10 / (40 + 10) = 0.2.
  const double nv =
      h100["replicas_configured"].get<double>() * h100["gpus_per_replica"].get<double>();
  const double amd = mi["replicas_configured"].get<double>() * mi["gpus_per_replica"].get<double>();
  EXPECT_EQ(nv, 40.0);
  EXPECT_EQ(amd, 10.0);
  // Every pool serves, and the pools' calls add up to the run's.
  double calls = 0;
  for (const auto& [name, p] : pools) {
    EXPECT_GT(p["calls_completed"].get<double>(), 100.0) << name;
    calls += p["calls_completed"].get<double>();
  }
  EXPECT_EQ(calls, s["requests_completed"].get<double>());
  // Bandwidth bounds on the median TPOT (FP8 / int8 weights, 1 byte each):
  //   H100 SXM, TP 2: 69.5e9 / 2 / 3.35e12 B/s = 10.4 ms
  //   MI300X, TP 1:   69.5e9 / 5.3e12 B/s      = 13.1 ms
  //   TPU v6e, TP 8:  69.5e9 / 8 / 1.638e12    = 5.30 ms
  EXPECT_GE(h100["tpot_p50_s"].get<double>(), kLlama70bStepBytes / 2 / 3.35e12);
  EXPECT_GE(mi["tpot_p50_s"].get<double>(), kLlama70bStepBytes / 5.3e12);
  EXPECT_GE(tpu["tpot_p50_s"].get<double>(), kLlama70bStepBytes / 8 / 1.638e12);
  // One MI300X holds the whole model and reads all of it each step; an H100 of a TP-2 pair
  // reads half at 3.35 / 5.3 = 0.63 of the MI300X's rate: 0.5 / 0.63 = 0.79 of the MI300X's
  // time. At similar batches the MI300X pool's tokens are the slower ones.
  EXPECT_GT(mi["tpot_p50_s"].get<double>(), h100["tpot_p50_s"].get<double>());
  EXPECT_GT(s["slo_attainment"].get<double>(), 0.95);
}

TEST_F(SystemsDc, FourH100Pcie2uRackCapitalIsServersTimesPrice) {
  const fs::path out = dir_ / "out";
  const json s = systems_dc_summary(
      run("run scenarios/systems/dc-4xh100-pcie-2u.yaml --quiet --out '" + out.string() + "'"),
      out);
  ASSERT_TRUE(s.contains("answer"));
  const json& a = s["answer"];
  // Layout at full scale: pcie-2u 32 TP-4 replicas on 4-GPU servers = 32 servers, 16 a rack
  // (h100-pcie-4gpu-2u-rack16) = 2 racks; hgx-h100 16 TP-4 replicas, 2 per 8-GPU server = 8
  // servers, 4 a rack = 2 racks. GPUs: 32 x 4 + 16 x 4 = 192.
  EXPECT_EQ(a["servers"].get<double>(), 40.0);
  EXPECT_EQ(a["racks"].get<double>(), 4.0);
  EXPECT_EQ(a["gpus_peak"].get<double>(), 192.0);
  // Capital = servers x price (no network, no rack cost): 32 x $140,000 + 8 x $317,000 =
  // $4,480,000 + $2,536,000 = $7,016,000. A 64-GPU PCIe rack is 16 x $140,000 = $2.24M; an
  // HGX H100 rack 4 x $317,000 = $1.268M.
  EXPECT_NEAR(a["capital_usd"].get<double>(), 7016000.0, 1.0);
  EXPECT_EQ(a["cost_basis"], "owned");
  // Owned cost a day = capital / (4 years x 365 days) + electricity: $7,016,000 / 1,460 =
  // $4,805.48 of hardware; electricity is positive and at most the IT power at full load x
  // PUE x 24 h x $0.10: (32 x 2.8 kW + 8 x 10.2 kW) x 1.2 x 24 h x $0.10 = $493.
  const double hw = 7016000.0 / (4 * 365.0);
  const double power_cap = (32 * 2.8 + 8 * 10.2) * 1.2 * 24 * 0.10;
  EXPECT_GT(a["cost_usd_per_day"].get<double>(), hw);
  EXPECT_LE(a["cost_usd_per_day"].get<double>(), hw + power_cap + 1e-6);
  // Bandwidth bounds on the median TPOT, FP8 at TP 4 (a quarter of the weights per GPU):
  //   H100 PCIe: 69.5e9 / 4 / 2.0e12 B/s = 8.69 ms;  H100 SXM: 69.5e9 / 4 / 3.35e12 = 5.19 ms.
  auto pools = systems_dc_pools(s);
  EXPECT_GE(pools["dc/pcie-2u"]["tpot_p50_s"].get<double>(), kLlama70bStepBytes / 4 / 2.0e12);
  EXPECT_GE(pools["dc/hgx-h100"]["tpot_p50_s"].get<double>(), kLlama70bStepBytes / 4 / 3.35e12);
}

TEST_F(SystemsDc, SpeculativeGptOssAgainstNoDraftAndForcedTokens) {
  const std::string scen = "run scenarios/systems/dc-speculative-gpt-oss.yaml --quiet ";
  const fs::path on = dir_ / "on", off = dir_ / "off", forced = dir_ / "forced";
  const json s = systems_dc_summary(run(scen + "--out '" + on.string() + "'"), on);
  const json n = systems_dc_summary(
      run(scen + "--set serving.speculative.k=0 --out '" + off.string() + "'"), off);
  const json f = systems_dc_summary(run(scen +
                                        "--set serving.speculative.k=0 --set "
                                        "serving.forced_token_share=0.3 --out '" +
                                        forced.string() + "'"),
                                    forced);
  ASSERT_TRUE(s.contains("tpot_mean_s") && n.contains("tpot_mean_s") && f.contains("tpot_mean_s"));
  EXPECT_EQ(s["requests_completed"].get<int>(), 200);
  EXPECT_EQ(n["requests_completed"].get<int>(), 200);
  const double t_spec = s["tpot_mean_s"].get<double>(), t_plain = n["tpot_mean_s"].get<double>();
  // One user at a time (0.2 calls/s, answers of ~1 s): almost every step is a batch of one.
  // A verify step is at least as long as a plain decode step and emits at most k + 1 = 4
  // tokens: TPOT_spec >= TPOT_plain / 4. On average it emits 1 + 0.7 + 0.7^2 + 0.7^3 =
  // 2.533 tokens: TPOT_spec >= TPOT_plain / 2.533, less 5 % for the sampled acceptances
  // (~17,000 steps, the mean's standard error under 1 %).
  EXPECT_GE(t_spec, t_plain / 4);
  EXPECT_GE(t_spec, t_plain / 2.533 / 1.05);
  // Drafting loses here, for two reasons worked out from the catalog shapes (batch 1,
  // memory-bound, MXFP4 experts at 0.53 B a weight, the rest BF16 at 2):
  //  - verify: a token reads 4 of 128 experts a layer, 36 x 4 x 3 x 2880^2 = 3.58e9 weights
  //    = 1.90 GB, plus 1.55e9 other weights = 3.10 GB: 5.0 GB. k + 1 = 4 tokens touch
  //    128 x (1 - (124/128)^4) = 15.3 experts a layer: 7.26 + 3.10 = 10.4 GB, 2.07x a step;
  //  - draft: gpt-oss-20b has 3.61B active weights against 5.13B (model card), ~0.7 of a
  //    target pass each, x k = 3 = ~2.1.
  // ~4.2 plain steps buy 2.53 tokens: slower than plain decoding.
  EXPECT_GT(t_spec, t_plain);
  // Structured output: 30 % of output tokens appended without a decode step. Decode steps per
  // token fall to 0.7, so the mean TPOT falls below the plain run's, but not below 0.7 of it
  // less 5 % (the forced share is drawn per token).
  const double t_forced = f["tpot_mean_s"].get<double>();
  EXPECT_LT(t_forced, t_plain);
  EXPECT_GE(t_forced, 0.7 * t_plain * 0.95);
}

TEST_F(SystemsDc, WaferScaleOperatorLatencyBoundsAndHeldOut405b) {
  const std::string scen = "run scenarios/systems/dc-wafer-scale-speculative.yaml --quiet ";
  const fs::path on = dir_ / "on", off = dir_ / "off", big = dir_ / "big";
  const json s = systems_dc_summary(run(scen + "--out '" + on.string() + "'"), on);
  const json n = systems_dc_summary(
      run(scen + "--set serving.speculative.k=0 --out '" + off.string() + "'"), off);
  ASSERT_TRUE(s.contains("tpot_mean_s") && n.contains("tpot_mean_s"));
  EXPECT_EQ(s["requests_completed"].get<int>(), 60);
  // Without drafting, a token passes 80 layers x 9 operators + 2 per stage x 4 stages = 728
  // operators at 0.587 us = 427.3 us; plus each wafer's share of the weights,
  // 141.1e9 B / 4 = 35.3e9 B, at 21 PB/s x 0.8 (assumed efficiency) = 2.1 us, x 4 = 8.4 us;
  // plus 3 hops between wafers at 10 us (100 GbE latency) = 30 us: >= 465.7 us. The constant
  // was fitted to 1 / 2,100 tok/s = 476.2 us, so the answer lies within a few percent of it.
  const double t_plain = n["tpot_mean_s"].get<double>();
  EXPECT_GE(t_plain, 465.7e-6);
  EXPECT_LE(t_plain, 476.2e-6 * 1.05);
  // With drafting: a verify step costs at least its 427.3 us of target operators and emits at
  // most k + 1 = 5 tokens: TPOT >= 85.5 us. On average it emits 1 + 0.7 + 0.7^2 + 0.7^3 +
  // 0.7^4 = 2.773 tokens: TPOT >= 427.3 / 2.773 = 154.1 us, less 5 % for the sampled
  // acceptances.
  const double t_spec = s["tpot_mean_s"].get<double>();
  EXPECT_GE(t_spec, 427.3e-6 / 5);
  EXPECT_GE(t_spec, 427.3e-6 / 2.773 / 1.05);
  // Drafting pays here: the fixed cost per operator does not grow with the k + 1 tokens.
  EXPECT_LT(t_spec, t_plain);
  // Held out: Llama-3.1-405B on 24 wafers with the same constant, against Cerebras' 969 tok/s
  // (18 Nov 2024). By hand: 126 x 9 + 2 x 24 = 1,182 operators x 0.587 us = 693.8 us; plus
  // 810e9 B / 24 / 16.8e15 B/s x 24 = 48 us of SRAM reads; plus 23 hops x 10 us = 230 us:
  // ~972 us, ~1,029 tok/s. Allowed: within 10 % of the measured 969.
  const json b = systems_dc_summary(run(scen +
                                        "--set serving.speculative.k=0 --set model=llama-3.1-405b "
                                        "--set hardware.pp=24 --set workload.requests=20 --out '" +
                                        big.string() + "'"),
                                    big);
  ASSERT_TRUE(b.contains("tpot_mean_s"));
  const double tok_s = 1.0 / b["tpot_mean_s"].get<double>();
  EXPECT_NEAR(tok_s / 969.0, 1.0, 0.10) << tok_s;
}

}  // namespace
