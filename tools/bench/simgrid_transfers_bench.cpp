// Contended transfers simulated per wall-second on the SimGrid fabric, with 64 and 512
// transfers in flight: 64 HGX H100 nodes (512 GPUs, one 400 Gb/s NIC each, rail-optimized,
// 2 leaves of 32 nodes), 64 MiB per transfer (the KV cache of ~500 tokens of Llama-3.1-8B),
// random GPU pairs. Each iteration advances the network to its next event and replaces the
// transfers that ended, so the number in flight stays constant.
//   fleetsim_microbench --benchmark_filter=SimGrid
#include <benchmark/benchmark.h>

#include <random>

#include "sim/network/simgrid_network.h"

namespace {

fleetsim::hw::Fabric fabric512() {
  fleetsim::hw::Fabric f;
  f.gpus = 512;
  f.gpus_per_node = 8;
  f.domain_gpus = 8;
  f.nics_per_node = 8;
  f.scaleup = {1.83e-6, 450e9};
  f.nic = {1e-6, 50e9};
  f.nodes_per_leaf = 32;
  f.oversubscription = 1.0;
  return f;
}

void BM_SimGridContendedTransfers(benchmark::State& state) {
  if (!fleetsim::net::simgrid_available()) {
    state.SkipWithError("built without SimGrid");
    return;
  }
  auto& f = fleetsim::net::SimGridFabric::acquire(fabric512());
  const int in_flight = static_cast<int>(state.range(0));
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> gpu(0, 511);
  const double bytes = 64.0 * 1024 * 1024;
  auto start_one = [&] {
    const int a = gpu(rng);
    int b = gpu(rng);
    while (b == a) b = gpu(rng);
    f.start_transfer(a, b, bytes, f.now());
  };
  for (int i = 0; i < in_flight; ++i) start_one();
  std::vector<fleetsim::net::Completion> done;
  int64_t completed = 0;
  for (auto _ : state) {
    f.advance_to_next_event(done);
    for (size_t i = 0; i < done.size(); ++i) start_one();
    completed += static_cast<int64_t>(done.size());
    done.clear();
  }
  state.counters["transfers_per_s"] =
      benchmark::Counter(static_cast<double>(completed), benchmark::Counter::kIsRate);
  state.counters["in_flight"] = in_flight;
  // Drain (after the timed loop), so the next run starts from an idle network.
  while (f.advance_to_next_event(done)) done.clear();
}
BENCHMARK(BM_SimGridContendedTransfers)->Arg(64)->Arg(512)->Unit(benchmark::kMicrosecond)->MinTime(2.0);

}  // namespace
