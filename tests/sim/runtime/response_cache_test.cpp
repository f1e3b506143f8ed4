// The response cache in front of the replicas: a share of hits by request id, or exact
// matching of prompts over an LRU.
#include "sim/runtime/response_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/core/rng.h"

namespace fleetsim::runtime {
namespace response_cache_test {

workload::RequestSpec prompt(uint64_t id, int32_t tokens, uint32_t hash_begin,
                             uint32_t hash_count) {
  workload::RequestSpec r;
  r.id = id;
  r.prompt_tokens = tokens;
  r.hash_begin = hash_begin;
  r.hash_count = hash_count;
  return r;
}

TEST(ResponseCache, DisabledAnswersNothing) {
  ResponseCache c(false, 1.0, 0, 0.005, nullptr);
  EXPECT_FALSE(c.hit(prompt(1, 10, 0, 0)));
}

TEST(ResponseCache, HitRateChoosesByRequestIdOnly) {
  ResponseCache c(true, 0.25, 0, 0.005, nullptr);
  EXPECT_EQ(c.latency_ns(), 5'000'000);
  int hits = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const bool h = c.hit(prompt(static_cast<uint64_t>(i), 10, 0, 0));
    // The same choice as the hash every simulation uses (salt 0x5eed), asked twice.
    EXPECT_EQ(h, unit_hash(static_cast<uint64_t>(i), 0x5eed) < 0.25);
    EXPECT_EQ(h, c.hit(prompt(static_cast<uint64_t>(i), 99, 0, 0)));
    hits += h;
  }
  // Binomial(n, 0.25): mean 5000, sd sqrt(n · 0.25 · 0.75) ≈ 61; within 4 sd.
  EXPECT_NEAR(hits, 0.25 * n, 4 * std::sqrt(n * 0.25 * 0.75));
}

TEST(ResponseCache, ExactMatchingIsAnLruOfPrompts) {
  // Prompts A = hashes {1, 2}, B = {3}, C = {4}, each 32 tokens; capacity 2.
  const std::vector<uint64_t> hashes = {1, 2, 3, 4};
  ResponseCache c(true, -1, 2, 0, &hashes);
  const auto a = prompt(1, 32, 0, 2), b = prompt(2, 32, 2, 1), d = prompt(3, 32, 3, 1);
  EXPECT_FALSE(c.hit(a));  // nothing answered yet
  c.insert(a);
  EXPECT_TRUE(c.hit(prompt(7, 32, 0, 2)));   // same hashes and length, another id
  EXPECT_FALSE(c.hit(prompt(8, 33, 0, 2)));  // another length: another prompt
  c.insert(b);
  EXPECT_TRUE(c.hit(a));  // a is now the most recently used, b the least
  c.insert(d);            // full: evicts b
  EXPECT_FALSE(c.hit(b));
  EXPECT_TRUE(c.hit(a));
  EXPECT_TRUE(c.hit(d));
  // A prompt without hashes never matches.
  c.insert(prompt(9, 5, 0, 0));
  EXPECT_FALSE(c.hit(prompt(9, 5, 0, 0)));
}

}  // namespace response_cache_test
}  // namespace fleetsim::runtime
