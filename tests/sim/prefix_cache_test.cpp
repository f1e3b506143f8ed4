// The prefix cache's index and LRU lists against a plain reference model (std::map and
// std::list, the obvious implementation), over long random operation sequences; and the
// generated conversation hashes against their formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <map>

#include "sim/core/rng.h"
#include "sim/serving/prefix_cache.h"

namespace fleetsim::serving {
namespace {

// The behaviour PrefixCache documents, written the slow and obvious way.
struct Reference {
  std::map<uint64_t, int32_t> refs;  // GPU tier
  std::list<uint64_t> lru;           // unreferenced GPU entries, front = least recent
  std::list<uint64_t> host;          // host tier, front = least recent
  int64_t host_capacity = 0, evictions = 0;

  bool in_host(uint64_t h) const { return std::find(host.begin(), host.end(), h) != host.end(); }
  int64_t match(const std::vector<uint64_t>& h, int64_t n) const {
    int64_t m = 0;
    while (m < n && refs.count(h[static_cast<size_t>(m)]) != 0) ++m;
    return m;
  }
  bool insert_pinned(uint64_t h) {
    auto it = refs.find(h);
    if (it == refs.end()) {
      refs[h] = 1;
      return true;
    }
    if (it->second++ == 0) lru.remove(h);
    return false;
  }
  void unpin(const std::vector<uint64_t>& h, int64_t m) {
    for (int64_t i = m - 1; i >= 0; --i)
      if (--refs[h[static_cast<size_t>(i)]] == 0) lru.push_back(h[static_cast<size_t>(i)]);
  }
  void pin(const std::vector<uint64_t>& h, int64_t m) {
    for (int64_t i = 0; i < m; ++i)
      if (refs[h[static_cast<size_t>(i)]]++ == 0) lru.remove(h[static_cast<size_t>(i)]);
  }
  bool evict_one() {
    if (lru.empty()) return false;
    const uint64_t h = lru.front();
    lru.pop_front();
    refs.erase(h);
    ++evictions;
    if (host_capacity > 0 && !in_host(h)) {
      if (static_cast<int64_t>(host.size()) >= host_capacity) host.pop_front();
      host.push_back(h);
    }
    return true;
  }
};

TEST(PrefixCache, MatchesTheReferenceModelOverRandomOperations) {
  for (int64_t host_capacity : {0, 40}) {
    PrefixCache c;
    Reference ref;
    c.set_host_capacity(host_capacity);
    ref.host_capacity = host_capacity;
    Rng rng(RngStreams(7).stream("prefix-cache-test"));
    // Requests hold prefixes of one of 30 chains of up to 12 blocks; hashes are small
    // integers (as trace hash ids are), which stresses the index's probing.
    std::vector<std::pair<std::vector<uint64_t>, int64_t>> held;  // (chain, pinned blocks)
    for (int step = 0; step < 200000; ++step) {
      const uint64_t op = rng.uniform_u64(4);
      if (op == 0 || held.empty()) {
        // A request arrives: pins its cached prefix, inserts the rest.
        const uint64_t chain = rng.uniform_u64(30);
        const int64_t len = 1 + static_cast<int64_t>(rng.uniform_u64(12));
        std::vector<uint64_t> h;
        for (int64_t b = 0; b < len; ++b) h.push_back(chain * 16 + static_cast<uint64_t>(b));
        const int64_t m = c.match(h.data(), len);
        ASSERT_EQ(m, ref.match(h, len));
        c.pin(h.data(), m);
        ref.pin(h, m);
        for (int64_t b = m; b < len; ++b)
          ASSERT_EQ(c.insert_pinned(h[static_cast<size_t>(b)]),
                    ref.insert_pinned(h[static_cast<size_t>(b)]));
        held.emplace_back(h, len);
      } else if (op == 1) {
        // A request finishes: unpins its blocks.
        const size_t k = rng.uniform_u64(held.size());
        c.unpin(held[k].first.data(), held[k].second);
        ref.unpin(held[k].first, held[k].second);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        ASSERT_EQ(c.evict_one(), ref.evict_one());
      }
      ASSERT_EQ(c.entries(), static_cast<int64_t>(ref.refs.size()));
      ASSERT_EQ(c.evictable(), static_cast<int64_t>(ref.lru.size()));
      ASSERT_EQ(c.host_entries(), static_cast<int64_t>(ref.host.size()));
    }
    EXPECT_EQ(c.evictions(), ref.evictions);
    EXPECT_GT(c.evictions(), 1000);  // the sequence did exercise eviction
    for (const auto& [h, r] : ref.refs) EXPECT_EQ(c.refs(h), r);
  }
}

TEST(PrefixCache, GeneratedHashesShareTheSystemPromptAndNothingElse) {
  // Owner 5 (a session), 3 shared blocks: blocks 0-2 hash as owner 0's, block 3 on as 5's.
  const HashSpan a(5, 3), b(6, 3);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(a[i], workload::conversation_block_hash(0, i));
    EXPECT_EQ(a[i], b[i]);
  }
  EXPECT_EQ(a[3], workload::conversation_block_hash(5, 3));
  EXPECT_NE(a[3], b[3]);
  EXPECT_EQ((a + 2)[1], a[3]);  // an offset span continues the same sequence
  // conversation_block_hash(owner, b) = owner·0x9e37… XOR (b + 1)·0xbf58…
  EXPECT_EQ(workload::conversation_block_hash(0, 0), 0xbf58476d1ce4e5b9ULL);
}

}  // namespace
}  // namespace fleetsim::serving
