// Automatic prefix caching (vLLM's APC; SGLang's RadixAttention does the same for a tree):
// KV blocks of a prompt prefix are kept after the request that computed them, keyed by the
// content hash of the prefix up to and including that block, and reused by later requests
// whose prompts start the same way. Unreferenced blocks are evicted least recently used
// first when the KV cache needs room.
//
// Granularity: one entry is one hash block of the trace (`prefix_block_tokens`, 512 tokens
// in the Mooncake trace), i.e. prefix_block_tokens / block_tokens KV blocks. The owner
// (the replica) counts the entries' KV blocks as used; this class only keeps references and
// recency. All operations are O(1) per entry (hash map + intrusive LRU list).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>

namespace fleetsim::serving {

class PrefixCache {
 public:
  /// A second tier in host memory (Mooncake's KV store idea, vLLM/LMCache CPU offload):
  /// entries evicted from the GPU go there (least recently used first out of it too) and
  /// can be loaded back instead of recomputed. 0 entries (default) = no host tier.
  void set_host_capacity(int64_t entries) { host_capacity_ = entries; }
  /// Leading hashes of [h, h + n) found: `gpu` resident on the GPU, then `host` more in the
  /// host tier (a GPU-resident hash after a host one counts as host).
  struct Match {
    int64_t gpu = 0, host = 0;
  };
  Match match_tiers(const uint64_t* h, int64_t n) const;
  /// Moves host-tier entries [h, h + m) to the GPU, each with one reference.
  void promote(const uint64_t* h, int64_t m);

  /// Number of leading hashes of [h, h + n) present in the cache.
  int64_t match(const uint64_t* h, int64_t n) const;
  /// Adds a reference to each of the first m hashes (all present).
  void pin(const uint64_t* h, int64_t m);
  /// Drops a reference from each of the first m hashes; an entry left unreferenced becomes
  /// evictable, most recently used. The deepest block of the prefix is queued first, so it
  /// is evicted before the shallower ones and a cached prefix never has a hole.
  void unpin(const uint64_t* h, int64_t m);
  /// Inserts `hash` with one reference (the caller's). Returns false (and pins the existing
  /// entry instead) when it is already present.
  bool insert_pinned(uint64_t hash);
  /// Evicts the least recently used unreferenced GPU entry (into the host tier when there
  /// is one); false when there is none.
  bool evict_one();

  /// References held on `hash` (0 when unreferenced or absent).
  int32_t refs(uint64_t hash) const {
    auto it = map_.find(hash);
    return it == map_.end() ? 0 : it->second.refs;
  }
  int64_t entries() const { return static_cast<int64_t>(map_.size()); }
  int64_t evictable() const { return static_cast<int64_t>(lru_.size()); }
  int64_t evictions() const { return evictions_; }
  int64_t host_entries() const { return static_cast<int64_t>(host_map_.size()); }

 private:
  struct Entry {
    int32_t refs = 0;
    std::list<uint64_t>::iterator lru;  // valid when refs == 0
  };
  std::unordered_map<uint64_t, Entry> map_;
  std::list<uint64_t> lru_;  // front = least recently used
  int64_t evictions_ = 0;
  int64_t host_capacity_ = 0;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> host_map_;
  std::list<uint64_t> host_lru_;
};

}  // namespace fleetsim::serving
