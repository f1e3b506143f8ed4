// Automatic prefix caching (vLLM's APC; SGLang's RadixAttention does the same for a tree):
// KV blocks of a prompt prefix are kept after the request that computed them, keyed by the
// content hash of the prefix up to and including that block, and reused by later requests
// whose prompts start the same way. Unreferenced blocks are evicted least recently used
// first when the KV cache needs room.
//
// Granularity: one entry is one hash block of the trace (`prefix_block_tokens`, 512 tokens
// in the Mooncake trace), i.e. prefix_block_tokens / block_tokens KV blocks. The owner
// (the replica) counts the entries' KV blocks as used; this class only keeps references and
// recency. All operations are O(1) per entry: an open-addressing hash index over a node
// pool with intrusive LRU lists (a fleet day makes billions of lookups; std::unordered_map
// and std::list nodes cost a cache miss and an allocation each and took 60 % of such a run).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/workload/request.h"

namespace fleetsim::serving {

/// The prefix-block hashes of one prompt: stored (a trace's hash_ids) or generated (a
/// conversation's, conversation_block_hash with its first `shared` blocks owned by 0),
/// from block `offset` on. Generated hashes take no memory, which a fleet day of billions
/// of calls needs.
struct HashSpan {
  const uint64_t* stored = nullptr;  ///< null: generated
  uint64_t owner = 0;
  int64_t shared = 0, offset = 0;
  HashSpan() = default;
  HashSpan(const uint64_t* h) : stored(h) {}  // NOLINT: a stored array is a span
  HashSpan(uint64_t owner_id, int64_t shared_blocks) : owner(owner_id), shared(shared_blocks) {}
  uint64_t operator[](int64_t i) const {
    if (stored != nullptr) return stored[i];
    const int64_t b = i + offset;
    return workload::conversation_block_hash(b < shared ? 0 : owner, b);
  }
  HashSpan operator+(int64_t k) const {
    HashSpan s = *this;
    if (stored != nullptr)
      s.stored += k;
    else
      s.offset += k;
    return s;
  }
};

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
  Match match_tiers(HashSpan h, int64_t n) const;
  /// Moves host-tier entries [h, h + m) to the GPU, each with one reference.
  void promote(HashSpan h, int64_t m);

  /// Number of leading hashes of [h, h + n) present in the cache.
  int64_t match(HashSpan h, int64_t n) const;
  /// Adds a reference to each of the first m hashes (all present).
  void pin(HashSpan h, int64_t m);
  /// Drops a reference from each of the first m hashes; an entry left unreferenced becomes
  /// evictable, most recently used. The deepest block of the prefix is queued first, so it
  /// is evicted before the shallower ones and a cached prefix never has a hole.
  void unpin(HashSpan h, int64_t m);
  /// Inserts `hash` with one reference (the caller's). Returns false (and pins the existing
  /// entry instead) when it is already present.
  bool insert_pinned(uint64_t hash);
  /// Evicts the least recently used unreferenced GPU entry (into the host tier when there
  /// is one); false when there is none.
  bool evict_one();

  /// References held on `hash` (0 when unreferenced or absent).
  int32_t refs(uint64_t hash) const {
    const uint32_t n = gpu_.find(hash);
    return n == kNil ? 0 : gpu_.nodes[n].refs;
  }
  int64_t entries() const { return gpu_.size; }
  int64_t evictable() const { return gpu_.lru_size; }
  int64_t evictions() const { return evictions_; }
  int64_t host_entries() const { return host_.size; }

 private:
  static constexpr uint32_t kNil = 0xffffffffu;
  /// The entries of one tier: nodes in a pool, found by hash through an open-addressing
  /// index (linear probing, backward-shift deletion), the unreferenced ones in an LRU list.
  struct Tier {
    struct Node {
      uint64_t hash = 0;
      int32_t refs = 0;
      uint32_t prev = kNil, next = kNil;  // LRU links (unreferenced entries only)
    };
    struct Slot {
      uint64_t hash = 0;
      uint32_t node = kNil;  // kNil: empty
    };
    std::vector<Node> nodes;
    std::vector<uint32_t> free_nodes;
    std::vector<Slot> index;            // a power of two, at most half full
    uint32_t head = kNil, tail = kNil;  // head: least recently used
    int64_t size = 0, lru_size = 0;

    uint32_t find(uint64_t hash) const;
    uint32_t insert(uint64_t hash);  // precondition: absent; refs 0, not in the LRU list
    void erase(uint32_t node);       // must not be in the LRU list
    void lru_push_back(uint32_t node);
    void lru_unlink(uint32_t node);
  };
  Tier gpu_, host_;
  int64_t evictions_ = 0;
  int64_t host_capacity_ = 0;
};

}  // namespace fleetsim::serving
