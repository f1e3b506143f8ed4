#include "sim/serving/step_model.h"

#include <gtest/gtest.h>

#include "sim/core/rng.h"
#include "tests/sim/scenario_text.h"

using fleetsim::SimTime;
using fleetsim::serving::floor_sum;
using fleetsim::serving::StepModel;
using fleetsim::serving::u128;

TEST(FloorSum, MatchesBruteForce) {
  fleetsim::Rng rng(3);
  for (int t = 0; t < 2000; ++t) {
    const uint64_t n = rng.uniform_u64(200), m = 1 + rng.uniform_u64(1u << 20);
    const uint64_t a = rng.uniform_u64(1ull << 40), b = rng.uniform_u64(1ull << 40);
    u128 brute = 0;
    for (uint64_t i = 0; i < n; ++i) brute += (static_cast<u128>(a) * i + b) / m;
    ASSERT_EQ(floor_sum(n, m, a, b), brute) << "n=" << n << " m=" << m << " a=" << a << " b=" << b;
  }
}

TEST(StepModel, ClosedFormRunEqualsSumOfSteps) {
  // fixed 5 ms for any batch, 0.3 ns per attended token (fixed-point slope).
  std::vector<SimTime> fixed(9, 5'000'000);
  fixed[0] = 0;
  StepModel m(fixed, 0.3, [](const fleetsim::hw::BatchShape&) { return SimTime{1}; });
  // One step: 5,000,000 + floor(1000 * 0.3) = 5,000,300 ns.
  EXPECT_EQ(m.decode_step_ns(8, 1000), 5'000'300);
  for (int64_t n = 1; n <= 8; ++n) {
    for (int64_t ctx0 : {0, 7, 12345, 999'999}) {
      SimTime brute = 0;
      for (int64_t j = 0; j < 777; ++j) brute += m.decode_step_ns(n, ctx0 + n * j);
      ASSERT_EQ(m.decode_run_ns(n, ctx0, 777), brute);
    }
  }
}

TEST(StepModel, IterationsToReachIsTheFirstBoundaryAtOrAfter) {
  std::vector<SimTime> fixed(5, 4'000'000);
  fixed[0] = 0;
  StepModel m(fixed, 0.77, [](const fleetsim::hw::BatchShape&) { return SimTime{1}; });
  for (int64_t n = 1; n <= 4; ++n) {
    for (SimTime delta :
         {SimTime{1}, SimTime{3'999'999}, SimTime{4'000'000}, SimTime{123'456'789}}) {
      SimTime t = 0;
      const int64_t k = m.decode_iterations_to_reach(n, 5000, 1000, delta, &t);
      EXPECT_EQ(t, m.decode_run_ns(n, 5000, k));
      // Definition: T(k) >= delta and (k == 1 or T(k-1) < delta).
      EXPECT_GE(m.decode_run_ns(n, 5000, k), delta);
      if (k > 1) {
        EXPECT_LT(m.decode_run_ns(n, 5000, k - 1), delta);
      }
    }
  }
  // Past the end of the stretch: k_max.
  SimTime t = 0;
  EXPECT_EQ(m.decode_iterations_to_reach(1, 0, 10, 1'000'000'000, &t), 10);
}

namespace step_model_test {  // named: the tests build as one unit with other files

// Llama-3.1-8B drafted by Llama-3.2-1B (k = 4) on one H100 with `overhead` per iteration.
fleetsim::scenario::Scenario speculative(const std::string& overhead) {
  return fleetsim::test::load_text(R"(
model: llama-3.1-8b
hardware: {gpu: h100-sxm, tp: 1}
efficiency: {iteration_overhead: )" + overhead +
                                       R"(, per_sequence_overhead: 0s}
serving:
  replicas: 1
  max_num_seqs: 16
  speculative: {draft_model: llama-3.2-1b, k: 4, acceptance: 0.8}
workload: {arrival: {rate: 1/s}, requests: 10, prompt_tokens: 100, output_tokens: 10}
)",
                                   "s.yaml");
}

TEST(StepModel, SpeculativeDecodingPaysTheIterationOverheadOnce) {
  // An iteration verifies k + 1 = 5 positions per sequence on the target and runs k = 4
  // draft steps; the engine's CPU work (10 ms here) happens once per iteration, not once per
  // draft step: the step with it is the step without it + 10 ms (not + 50 ms), to the
  // nanosecond of rounding.
  const auto with = speculative("10ms"), without = speculative("0s");
  ASSERT_TRUE(with.spec && without.spec);
  const StepModel a({with.dep, with.spec, std::nullopt}, 16);
  const StepModel b({without.dep, without.spec, std::nullopt}, 16);
  for (int64_t n : {1, 8, 16})
    EXPECT_NEAR(static_cast<double>(a.decode_step_ns(n, 1000 * n) - b.decode_step_ns(n, 1000 * n)),
                10e6, 1.0)
        << n;
}

}  // namespace step_model_test
