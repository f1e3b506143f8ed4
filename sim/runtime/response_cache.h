// The response cache in front of the replicas (serving.response_cache): a request it
// answers makes no model call and completes after the cache's latency. Used by every
// simulation the same way, so a call is a hit or a miss whatever the scenario's shape.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "sim/core/rng.h"
#include "sim/core/time.h"
#include "sim/workload/request.h"

namespace fleetsim::runtime {

class ResponseCache {
 public:
  /// `hit_rate` ≥ 0: that share of requests, chosen per request id, are hits (synthetic
  /// workloads). Otherwise exact matching: a prompt answered before (same length, same
  /// prefix-block hashes from `hashes`) is a hit, over an LRU of `capacity` prompts.
  /// A disabled cache answers nothing.
  ResponseCache(bool enabled, double hit_rate, int64_t capacity, double latency_s,
                const std::vector<uint64_t>* hashes)
      : enabled_(enabled),
        hit_rate_(hit_rate),
        capacity_(capacity),
        latency_ns_(seconds_to_ns(latency_s)),
        hashes_(hashes) {}

  bool enabled() const { return enabled_; }
  SimTime latency_ns() const { return latency_ns_; }
  /// True when the cache answers `r`; an exact hit becomes the most recently used entry.
  bool hit(const workload::RequestSpec& r) {
    if (!enabled_) return false;
    if (hit_rate_ >= 0) return unit_hash(r.id, 0x5eed) < hit_rate_;
    if (r.hash_count == 0 || hashes_ == nullptr) return false;
    auto it = index_.find(prompt_key(r));
    if (it == index_.end()) return false;
    lru_.splice(lru_.end(), lru_, it->second);  // most recently used
    return true;
  }
  /// A model answered `r`: exact matching remembers its prompt (evicting the least
  /// recently used one when full).
  void insert(const workload::RequestSpec& r) {
    if (!enabled_ || hit_rate_ >= 0 || r.hash_count == 0 || hashes_ == nullptr) return;
    const uint64_t key = prompt_key(r);
    if (index_.count(key)) return;
    if (static_cast<int64_t>(lru_.size()) >= capacity_) {
      index_.erase(lru_.front());
      lru_.pop_front();
    }
    index_[key] = lru_.insert(lru_.end(), key);
  }

 private:
  uint64_t prompt_key(const workload::RequestSpec& r) const {
    // Identical prompts: the same prefix-block hashes and the same length (FNV-1a over them).
    uint64_t k = 1469598103934665603ULL ^ static_cast<uint64_t>(r.prompt_tokens);
    for (uint32_t i = 0; i < r.hash_count; ++i) {
      k ^= (*hashes_)[r.hash_begin + i];
      k *= 1099511628211ULL;
    }
    return k;
  }

  bool enabled_;
  double hit_rate_;
  int64_t capacity_;
  SimTime latency_ns_;
  const std::vector<uint64_t>* hashes_;
  std::list<uint64_t> lru_;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
};

}  // namespace fleetsim::runtime
