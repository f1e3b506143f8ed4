// `fleetsim run --capacity`: the most traffic a deployment carries within its SLO, checked
// against queueing theory on a server that takes one request at a time (M/D/1).
#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace {

using nlohmann::json;

// Llama-3.1-8B on one H100, one request at a time (static batching of 1), fixed lengths:
// every request takes the same service time S.
std::string md1(double rate_per_s, const std::string& slo, int requests) {
  return "model: llama-3.1-8b\n"
         "hardware: {gpu: h100-sxm, tp: 1}\n"
         "serving: {replicas: 1, policy: static, max_num_seqs: 1}\n"
         "workload:\n"
         "  requests: " +
         std::to_string(requests) +
         "\n"
         "  arrival: {process: poisson, rate: " +
         std::to_string(rate_per_s) +
         "/s}\n"
         "  prompt_tokens: {dist: fixed, value: 200}\n"
         "  output_tokens: {dist: fixed, value: 100}\n" +
         slo;
}

}  // namespace

TEST_F(Cli, CapacityLiesBetweenHalfAndAllOfTheServiceRate) {
  // S from a lone request (arrivals far apart: no queueing, e2e = S).
  std::ofstream(dir_ / "lone.yaml") << md1(0.001, "", 5);
  ASSERT_EQ(
      run("run " + (dir_ / "lone.yaml").string() + " --quiet --out " + (dir_ / "lone").string())
          .code,
      0);
  const double S = json::parse(slurp(dir_ / "lone" / "summary.json"))["e2e_mean_s"].get<double>();
  ASSERT_GT(S, 0);
  // SLO: TTFT p99 within 5 S. Offered at 0.3/S; the capacity λ* = scale_met · 0.3/S.
  // One server, deterministic service, Poisson arrivals (M/D/1) at ρ = λS: unstable for
  // ρ ≥ 1, so λ*·S < 1. The waiting time's tail is P(W > t) ≈ e^(−θt) with
  // ρ(e^(θS) − 1) = θS: θS ≈ 1.26 at ρ = 0.5, so its p99 ≈ ln(100)/1.26 · S = 3.65 S, and
  // TTFT (wait + prefill < S) stays within 5 S: λ*·S ≥ 0.5. (Measured on 2026-12-03:
  // S = 0.609 s, λ*·S = 0.698, missed at 0.706.)
  char slo[64];
  std::snprintf(slo, sizeof slo, "slo: {ttft: {p99: %.9gs}}\n", 5 * S);
  std::ofstream(dir_ / "q.yaml") << md1(0.3 / S, slo, 3000);
  const Result r = run("run " + (dir_ / "q.yaml").string() + " --quiet --capacity --out " +
                       (dir_ / "q").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const json cap = json::parse(slurp(dir_ / "q" / "summary.json"))["capacity"];
  const double rho = cap["scale_met"].get<double>() * 0.3;
  EXPECT_GE(rho, 0.5) << cap;
  EXPECT_LT(rho, 1.0) << cap;
  EXPECT_GT(cap["scale_missed"].get<double>(), cap["scale_met"].get<double>());
  EXPECT_NE(r.out.find("headroom now: +"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("busy time, not load"), std::string::npos) << r.out;
}

TEST_F(Cli, CapacityNeedsASinglePoolWithAnSlo) {
  std::ofstream(dir_ / "noslo.yaml") << md1(1, "", 10);
  Result r = run("run " + (dir_ / "noslo.yaml").string() + " --quiet --capacity --out " +
                 (dir_ / "a").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--capacity needs an SLO"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "a" / "summary.json"));  // refused before running
  r = run("run scenarios/default.yaml --quiet --capacity --out " + (dir_ / "b").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("is a fleet"), std::string::npos) << r.err;
  r = run("run scenarios/chat-service.yaml --quiet --capacity-target 0.9 --out " +
          (dir_ / "c").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("applies to --capacity"), std::string::npos) << r.err;
}
