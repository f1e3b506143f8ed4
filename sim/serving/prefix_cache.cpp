#include "sim/serving/prefix_cache.h"

#include <stdexcept>

namespace fleetsim::serving {

namespace {

// splitmix64's finaliser: trace hash ids are small consecutive integers, which linear
// probing on the raw value would cluster.
inline uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

// ---- one tier -------------------------------------------------------------------------

uint32_t PrefixCache::Tier::find(uint64_t hash) const {
  if (index.empty()) return kNil;
  const size_t mask = index.size() - 1;
  for (size_t i = mix(hash) & mask;; i = (i + 1) & mask) {
    const Slot& s = index[i];
    if (s.node == kNil) return kNil;
    if (s.hash == hash) return s.node;
  }
}

uint32_t PrefixCache::Tier::insert(uint64_t hash) {
  if (static_cast<size_t>(size + 1) * 2 > index.size()) {
    // Grow to keep the index at most half full, and re-place every entry.
    std::vector<Slot> old(index.empty() ? 64 : index.size() * 2);
    old.swap(index);
    const size_t mask = index.size() - 1;
    for (const Slot& s : old) {
      if (s.node == kNil) continue;
      size_t i = mix(s.hash) & mask;
      while (index[i].node != kNil) i = (i + 1) & mask;
      index[i] = s;
    }
  }
  uint32_t n;
  if (!free_nodes.empty()) {
    n = free_nodes.back();
    free_nodes.pop_back();
  } else {
    n = static_cast<uint32_t>(nodes.size());
    nodes.emplace_back();
  }
  nodes[n] = Node{hash, 0, kNil, kNil};
  const size_t mask = index.size() - 1;
  size_t i = mix(hash) & mask;
  while (index[i].node != kNil) i = (i + 1) & mask;
  index[i] = Slot{hash, n};
  ++size;
  return n;
}

void PrefixCache::Tier::erase(uint32_t node) {
  const uint64_t hash = nodes[node].hash;
  const size_t mask = index.size() - 1;
  size_t i = mix(hash) & mask;
  while (index[i].node != node) i = (i + 1) & mask;
  // Backward shift: move later entries of the probe run into the hole unless their home
  // slot lies cyclically in (hole, their slot].
  for (size_t j = (i + 1) & mask; index[j].node != kNil; j = (j + 1) & mask) {
    const size_t home = mix(index[j].hash) & mask;
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    index[i] = index[j];
    i = j;
  }
  index[i] = Slot{};
  free_nodes.push_back(node);
  --size;
}

void PrefixCache::Tier::lru_push_back(uint32_t node) {
  Node& n = nodes[node];
  n.prev = tail;
  n.next = kNil;
  if (tail != kNil)
    nodes[tail].next = node;
  else
    head = node;
  tail = node;
  ++lru_size;
}

void PrefixCache::Tier::lru_unlink(uint32_t node) {
  Node& n = nodes[node];
  if (n.prev != kNil)
    nodes[n.prev].next = n.next;
  else
    head = n.next;
  if (n.next != kNil)
    nodes[n.next].prev = n.prev;
  else
    tail = n.prev;
  n.prev = n.next = kNil;
  --lru_size;
}

// ---- the cache ------------------------------------------------------------------------

int64_t PrefixCache::match(HashSpan h, int64_t n) const {
  int64_t m = 0;
  while (m < n && gpu_.find(h[m]) != kNil) ++m;
  return m;
}

void PrefixCache::pin(HashSpan h, int64_t m) {
  for (int64_t i = 0; i < m; ++i) {
    const uint32_t n = gpu_.find(h[i]);
    if (n == kNil) throw std::logic_error("PrefixCache: pin of a missing block");
    if (gpu_.nodes[n].refs++ == 0) gpu_.lru_unlink(n);
  }
}

void PrefixCache::unpin(HashSpan h, int64_t m) {
  // Appending from the deepest to the shallowest puts the shallowest at the back (most
  // recent), so eviction takes the deepest block of the prefix first.
  for (int64_t i = m - 1; i >= 0; --i) {
    const uint32_t n = gpu_.find(h[i]);
    if (n == kNil || gpu_.nodes[n].refs <= 0)
      throw std::logic_error("PrefixCache: unpin of an unreferenced block");
    if (--gpu_.nodes[n].refs == 0) gpu_.lru_push_back(n);
  }
}

bool PrefixCache::insert_pinned(uint64_t hash) {
  uint32_t n = gpu_.find(hash);
  const bool inserted = n == kNil;
  if (inserted)
    n = gpu_.insert(hash);
  else if (gpu_.nodes[n].refs == 0)
    gpu_.lru_unlink(n);
  ++gpu_.nodes[n].refs;
  return inserted;
}

bool PrefixCache::evict_one() {
  if (gpu_.head == kNil) return false;
  const uint32_t n = gpu_.head;
  const uint64_t hash = gpu_.nodes[n].hash;
  gpu_.lru_unlink(n);
  gpu_.erase(n);
  ++evictions_;
  if (host_capacity_ > 0 && host_.find(hash) == kNil) {
    if (host_.size >= host_capacity_) {
      const uint32_t old = host_.head;
      host_.lru_unlink(old);
      host_.erase(old);
    }
    host_.lru_push_back(host_.insert(hash));
  }
  return true;
}

PrefixCache::Match PrefixCache::match_tiers(HashSpan h, int64_t n) const {
  Match m;
  m.gpu = match(h, n);
  int64_t i = m.gpu;
  while (i < n && host_.find(h[i]) != kNil) ++i;
  m.host = i - m.gpu;
  return m;
}

void PrefixCache::promote(HashSpan h, int64_t m) {
  for (int64_t i = 0; i < m; ++i) {
    const uint32_t n = host_.find(h[i]);
    if (n == kNil) throw std::logic_error("PrefixCache: promote of a missing entry");
    host_.lru_unlink(n);
    host_.erase(n);
    insert_pinned(h[i]);
  }
}

}  // namespace fleetsim::serving
