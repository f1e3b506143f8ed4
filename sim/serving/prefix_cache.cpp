#include "sim/serving/prefix_cache.h"

#include <stdexcept>

namespace fleetsim::serving {

int64_t PrefixCache::match(const uint64_t* h, int64_t n) const {
  int64_t m = 0;
  while (m < n && map_.count(h[m]) != 0) ++m;
  return m;
}

void PrefixCache::pin(const uint64_t* h, int64_t m) {
  for (int64_t i = 0; i < m; ++i) {
    Entry& e = map_.at(h[i]);
    if (e.refs++ == 0) lru_.erase(e.lru);
  }
}

void PrefixCache::unpin(const uint64_t* h, int64_t m) {
  // Appending from the deepest to the shallowest puts the shallowest at the back (most
  // recent), so eviction takes the deepest block of the prefix first.
  for (int64_t i = m - 1; i >= 0; --i) {
    Entry& e = map_.at(h[i]);
    if (e.refs <= 0) throw std::logic_error("PrefixCache: unpin of an unreferenced block");
    if (--e.refs == 0) e.lru = lru_.insert(lru_.end(), h[i]);
  }
}

bool PrefixCache::insert_pinned(uint64_t hash) {
  auto [it, inserted] = map_.try_emplace(hash);
  Entry& e = it->second;
  if (!inserted && e.refs == 0) lru_.erase(e.lru);
  ++e.refs;
  return inserted;
}

bool PrefixCache::evict_one() {
  if (lru_.empty()) return false;
  const uint64_t hash = lru_.front();
  map_.erase(hash);
  lru_.pop_front();
  ++evictions_;
  if (host_capacity_ > 0 && host_map_.count(hash) == 0) {
    if (static_cast<int64_t>(host_lru_.size()) >= host_capacity_) {
      host_map_.erase(host_lru_.front());
      host_lru_.pop_front();
    }
    host_map_[hash] = host_lru_.insert(host_lru_.end(), hash);
  }
  return true;
}

PrefixCache::Match PrefixCache::match_tiers(const uint64_t* h, int64_t n) const {
  Match m;
  m.gpu = match(h, n);
  int64_t i = m.gpu;
  while (i < n && host_map_.count(h[i]) != 0) ++i;
  m.host = i - m.gpu;
  return m;
}

void PrefixCache::promote(const uint64_t* h, int64_t m) {
  for (int64_t i = 0; i < m; ++i) {
    auto it = host_map_.find(h[i]);
    if (it == host_map_.end()) throw std::logic_error("PrefixCache: promote of a missing entry");
    host_lru_.erase(it->second);
    host_map_.erase(it);
    insert_pinned(h[i]);
  }
}

}  // namespace fleetsim::serving
