#include "sim/runtime/response_cache.h"

#include "sim/core/rng.h"

namespace fleetsim::runtime {

ResponseCache::ResponseCache(bool enabled, double hit_rate, int64_t capacity, double latency_s,
                             const std::vector<uint64_t>* hashes)
    : enabled_(enabled),
      hit_rate_(hit_rate),
      capacity_(capacity),
      latency_ns_(seconds_to_ns(latency_s)),
      hashes_(hashes) {}

uint64_t ResponseCache::prompt_key(const workload::RequestSpec& r) const {
  // Identical prompts: the same prefix-block hashes and the same length (FNV-1a over them).
  uint64_t k = 1469598103934665603ULL ^ static_cast<uint64_t>(r.prompt_tokens);
  for (uint32_t i = 0; i < r.hash_count; ++i) {
    k ^= (*hashes_)[r.hash_begin + i];
    k *= 1099511628211ULL;
  }
  return k;
}

bool ResponseCache::hit(const workload::RequestSpec& r) {
  if (!enabled_) return false;
  if (hit_rate_ >= 0) return unit_hash(r.id, 0x5eed) < hit_rate_;
  if (r.hash_count == 0 || hashes_ == nullptr) return false;
  auto it = index_.find(prompt_key(r));
  if (it == index_.end()) return false;
  lru_.splice(lru_.end(), lru_, it->second);  // most recently used
  return true;
}

void ResponseCache::insert(const workload::RequestSpec& r) {
  if (!enabled_ || hit_rate_ >= 0 || r.hash_count == 0 || hashes_ == nullptr) return;
  const uint64_t key = prompt_key(r);
  if (index_.count(key)) return;
  if (static_cast<int64_t>(lru_.size()) >= capacity_) {
    index_.erase(lru_.front());
    lru_.pop_front();
  }
  index_[key] = lru_.insert(lru_.end(), key);
}

}  // namespace fleetsim::runtime
