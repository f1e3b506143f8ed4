// The response cache in front of the replicas (serving.response_cache): a request it
// answers makes no model call and completes after the cache's latency. Used by every
// simulation the same way, so a call is a hit or a miss whatever the scenario's shape.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

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
                const std::vector<uint64_t>* hashes);

  bool enabled() const { return enabled_; }
  SimTime latency_ns() const { return latency_ns_; }
  /// True when the cache answers `r`; an exact hit becomes the most recently used entry.
  bool hit(const workload::RequestSpec& r);
  /// A model answered `r`: exact matching remembers its prompt (evicting the least
  /// recently used one when full).
  void insert(const workload::RequestSpec& r);

 private:
  uint64_t prompt_key(const workload::RequestSpec& r) const;

  bool enabled_;
  double hit_rate_;
  int64_t capacity_;
  SimTime latency_ns_;
  const std::vector<uint64_t>* hashes_;
  std::list<uint64_t> lru_;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
};

}  // namespace fleetsim::runtime
