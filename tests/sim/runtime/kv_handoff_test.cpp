// Requests waiting for their KV cache to travel from a prefill to a decode replica.
#include "sim/runtime/kv_handoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace fleetsim::runtime {
namespace kv_handoff_test {

struct Ends final : core::EventTarget {
  std::vector<std::pair<SimTime, uint64_t>> seen;  // (time, slot) of each transfer end
  void on_event(const core::Event& e) override {
    EXPECT_EQ(e.kind(), 7u);
    seen.emplace_back(e.time, e.data);
  }
};

TEST(KvHandoffs, PricedTransfersEndAfterTheirTimeAndAreCounted) {
  core::Engine engine;
  Ends ends;
  metrics::Collector collector(1, std::nullopt, std::nullopt);
  KvHandoffs kv(engine, &ends, 7, collector);
  serving::Handoff h;
  h.spec.id = 42;
  h.prefill_done_ns = 100;
  const uint32_t a = kv.add(h);
  kv.priced(a, 1e9, 0.25);  // 1 GB in 250 ms
  h.spec.id = 43;
  const uint32_t b = kv.add(h);
  kv.priced(b, 3e9, 0.5);
  engine.run();
  ASSERT_EQ(ends.seen.size(), 2u);
  EXPECT_EQ(ends.seen[0], std::make_pair(SimTime{250'000'000}, uint64_t{a}));
  EXPECT_EQ(ends.seen[1], std::make_pair(SimTime{500'000'000}, uint64_t{b}));
  const serving::Handoff got = kv.take(a, 250'000'000);
  EXPECT_EQ(got.spec.id, 42u);
  EXPECT_EQ(got.first_token_ns, 250'000'000);  // the first token comes with the KV cache
  // Two transfers, 4 GB, mean (0.25 + 0.5) / 2 = 0.375 s.
  const metrics::Summary s = collector.summarize(500'000'000);
  EXPECT_EQ(s.kv_transfers, 2u);
  EXPECT_DOUBLE_EQ(s.kv_transfer_bytes, 4e9);
  EXPECT_DOUBLE_EQ(s.kv_transfer_mean_s, 0.375);
}

TEST(KvHandoffs, BytesAreTheModelsKvPerTokenTimesThePrompt) {
  hw::ModelSpec m;
  m.layers = 2;
  m.kv_heads = 4;
  m.head_dim = 8;
  // K and V of 4 heads of 8 dimensions in each of 2 layers, 2 bytes each:
  // 2 · 4 · 8 · 2 layers · 2 bytes = 256 bytes per token; a 10-token prompt moves 2560.
  EXPECT_DOUBLE_EQ(kv_bytes(m, 2, 10), 2560);
}

}  // namespace kv_handoff_test
}  // namespace fleetsim::runtime
