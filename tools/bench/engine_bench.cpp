// The event engine's dispatch at fleet-like sizes: `targets` event targets of 1 kB each
// (replicas, in a fleet run), allocated one by one and visited in a shuffled order so that
// neighbours in memory are not neighbours in time, with 12 pending events per target (a
// full-scale day holds ~50k events for ~4,000 replicas). Each event reads and writes a
// counter near the start of its target (next to the vtable pointer that the dispatch
// loads) and one other line picked by the event's data, then
// schedules the target again after a delay from a log-uniform table (1 µs to 100 ms), so
// the queue keeps its size. Per event this is what the engine adds to a fleet run: the
// queue's pop and push and the load of a target that is rarely in cache. Run:
// build/fleetsim_microbench --benchmark_filter=Engine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "sim/core/engine.h"

namespace {

using fleetsim::SimTime;
using fleetsim::core::Engine;
using fleetsim::core::Event;
using fleetsim::core::EventTarget;

constexpr std::size_t kLines = 16;  // 1 kB of state per target

struct Target final : EventTarget {
  Engine* engine = nullptr;
  const std::vector<SimTime>* delays = nullptr;
  std::array<std::array<uint64_t, 8>, kLines> lines{};  // 16 cache lines
  uint32_t next_delay = 0;
  void on_event(const Event& e) override {
    lines[0][0] += 1;
    auto& line = lines[1 + e.data % (kLines - 1)];
    line[0] += line[1] + 1;
    next_delay = (next_delay + 1) & static_cast<uint32_t>(delays->size() - 1);
    engine->schedule(e.time + (*delays)[next_delay], 0, this, 0, e.data * 2654435761u + 1);
  }
};

void BM_EngineDispatch(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::mt19937_64 gen(7);
  std::vector<SimTime> delays(1 << 12);
  std::uniform_real_distribution<double> log_delay(std::log(1e3), std::log(1e8));  // ns
  for (auto& d : delays) d = static_cast<SimTime>(std::exp(log_delay(gen)));
  Engine engine;
  std::vector<std::unique_ptr<Target>> targets(n);
  for (auto& t : targets) {
    t = std::make_unique<Target>();
    t->engine = &engine;
    t->delays = &delays;
    t->next_delay = static_cast<uint32_t>(gen() % delays.size());
  }
  std::shuffle(targets.begin(), targets.end(), gen);
  for (int k = 0; k < 12; ++k)
    for (std::size_t i = 0; i < n; ++i)
      engine.schedule(delays[(i * 12 + static_cast<std::size_t>(k)) % delays.size()], 0,
                      targets[i].get(), 0, i);
  for (std::size_t i = 0; i < 20 * n; ++i) engine.step();  // past the start-up transient
  for (auto _ : state) engine.step();
  benchmark::DoNotOptimize(engine.now());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["pending"] = static_cast<double>(engine.pending());
}
// 8 targets: benchmark (b)'s replicas, all in cache; 4,096: a full-scale day's replicas.
BENCHMARK(BM_EngineDispatch)->Arg(8)->Arg(4096)->Arg(32768);

}  // namespace
