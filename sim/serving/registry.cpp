#include "sim/serving/registry.h"

#include <stdexcept>

namespace fleetsim::serving {

const std::vector<PolicyInfo>& policies() {
  static const std::vector<PolicyInfo> table = {
      {"vllm",
       "continuous batching with paged KV cache, prefill-first or chunked prefill "
       "(chunked_prefill: true), preemption by recompute",
       "Kwon et al., Efficient Memory Management for LLM Serving with PagedAttention, SOSP 2023; "
       "chunked prefill: Agrawal et al., Sarathi-Serve, OSDI 2024"},
  };
  return table;
}

const std::vector<RouterInfo>& routers() {
  static const std::vector<RouterInfo> table = {
      {"round-robin", "each replica in turn",
       [](const RngStreams&) { return std::make_unique<RoundRobin>(); }},
      {"least-outstanding", "the replica with the fewest waiting + running requests",
       [](const RngStreams&) { return std::make_unique<LeastOutstanding>(); }},
      {"random", "a replica uniformly at random (random stream 'router')",
       [](const RngStreams& rng) { return std::make_unique<RandomRouter>(rng); }},
      {"least-kv", "the replica with the lowest KV-cache occupancy",
       [](const RngStreams&) { return std::make_unique<LeastKvLoad>(); }},
      {"power-of-two", "two replicas at random, the one with fewer outstanding requests "
                       "(Mitzenmacher, IEEE TPDS 2001)",
       [](const RngStreams& rng) { return std::make_unique<PowerOfTwo>(rng); }},
      {"prefix-aware", "the replica with the longest cached prompt prefix unless it has more "
                       "than 8 outstanding requests above the least loaded one (SGLang "
                       "cache-aware router, Mooncake Conductor); needs prefix_caching",
       [](const RngStreams&) { return std::make_unique<PrefixAware>(8); }},
  };
  return table;
}

std::vector<std::string> policy_names() {
  std::vector<std::string> out;
  for (const auto& p : policies()) out.push_back(p.name);
  return out;
}

std::vector<std::string> router_names() {
  std::vector<std::string> out;
  for (const auto& r : routers()) out.push_back(r.name);
  return out;
}

std::unique_ptr<Router> make_router(const std::string& name, const RngStreams& rng) {
  for (const auto& r : routers())
    if (r.name == name) return r.make(rng);
  throw std::out_of_range("unknown router '" + name + "'");
}

}  // namespace fleetsim::serving
