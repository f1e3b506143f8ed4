// Histogram::add on latency-shaped values: every completed call adds four or five samples
// (TTFT, TPOT, end to end, queueing, per-class copies), so at a million calls per second
// this is on the hot path. The values are log-normal around 0.2 s with a spread of a
// factor e per standard deviation (about 5 ms to 10 s), drawn once so the timing loop
// measures the look-up, not the generator. Run: build/fleetsim_microbench
// --benchmark_filter=Histogram.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "sim/metrics/histogram.h"

namespace {

std::vector<double> latency_values(std::size_t n) {
  std::mt19937_64 gen(7);
  std::lognormal_distribution<double> d(std::log(0.2), 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

void BM_HistogramAddLatencies(benchmark::State& state) {
  const std::vector<double> values = latency_values(1 << 16);
  fleetsim::metrics::Histogram h;
  std::size_t i = 0;
  for (auto _ : state) {
    h.add(values[i]);
    i = (i + 1) & (values.size() - 1);
  }
  benchmark::DoNotOptimize(h.count());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_HistogramAddLatencies);

// Making a histogram: fleet runs make one per region, pool, class and report interval.
void BM_HistogramConstruct(benchmark::State& state) {
  for (auto _ : state) {
    fleetsim::metrics::Histogram h(0.01);
    benchmark::DoNotOptimize(h.rel_error());
  }
}
BENCHMARK(BM_HistogramConstruct);

}  // namespace
