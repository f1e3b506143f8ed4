#include "sim/serving/registry.h"

#include <stdexcept>

#include "sim/serving/dynamic.h"
#include "sim/serving/orca.h"
#include "sim/serving/sarathi.h"
#include "sim/serving/static.h"
#include "sim/serving/vllm.h"

namespace fleetsim::serving {

const std::vector<PolicyInfo>& policies() {
  static const std::vector<PolicyInfo> table = {
      {"vllm",
       "continuous batching with paged KV cache, prefill-first or chunked prefill "
       "(chunked_prefill: true), preemption by recompute, automatic prefix caching",
       "Kwon et al., Efficient Memory Management for LLM Serving with PagedAttention, SOSP 2023; "
       "chunked prefill: Agrawal et al., Sarathi-Serve, OSDI 2024",
       {{"max_num_seqs", "integer", "256", "", "running sequences at most (vLLM --max-num-seqs)"},
        {"max_batched_tokens", "integer", "8192", "tokens", "tokens per iteration at most"},
        {"block_tokens", "integer", "16", "tokens", "KV block size (vLLM --block-size)"},
        {"chunked_prefill", "bool", "false", "",
         "decodes first, then prompt chunks in the token budget (Sarathi-Serve)"},
        {"split_prompts", "bool", "the engine's", "",
         "with chunked_prefill: split a prompt across iterations (false: whole prompts, as "
         "TensorRT-LLM without chunked context); prefill-first: cut a prompt longer than "
         "max_batched_tokens into prefill iterations (SGLang) instead of rejecting it (vLLM V0)"},
        {"prefix_caching", "bool", "false", "",
         "keep prompt prefix blocks by content hash, evict least recently used (needs a trace "
         "with prefix hashes)"},
        {"fast_forward", "bool", "true", "", "advance unchanging decode batches in closed form"}},
       [](int i, core::Engine& e, ServingObserver& o, const StepModel& s, const ServingConfig& c) {
         if (c.chunked_prefill)
           return std::unique_ptr<Replica>(
               std::make_unique<Sarathi>(i, e, o, s, c, SarathiConfig{c.split_prompts}));
         return std::unique_ptr<Replica>(
             std::make_unique<Vllm>(i, e, o, s, c, VllmConfig{c.split_long_prompts}));
       }},
      {"sarathi",
       "Sarathi-Serve: the vllm replica with chunked prefill always on — every iteration runs "
       "the decodes first, then prompt chunks in the max_batched_tokens budget (stall-free "
       "batching); accepts every vllm option",
       "Agrawal et al., Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve, "
       "OSDI 2024",
       {{"max_batched_tokens", "integer", "8192", "tokens", "the token budget of one iteration"},
        {"max_num_seqs", "integer", "256", "", "running sequences at most"}},
       [](int i, core::Engine& e, ServingObserver& o, const StepModel& s, const ServingConfig& c) {
         return std::make_unique<Sarathi>(i, e, o, s, c, SarathiConfig{c.split_prompts});
       }},
      {"static",
       "static batching, run to completion: an idle replica takes up to max_num_seqs waiting "
       "requests, prefills them together and decodes until the longest is done; the batch "
       "returns at once, then the next one forms",
       "FasterTransformer / pre-continuous-batching serving, as described in Yu et al., Orca, "
       "OSDI 2022, section 3",
       {{"max_num_seqs", "integer", "256", "", "requests per batch at most"},
        {"block_tokens", "integer", "16", "tokens", "granularity of the KV reservation"},
        {"fast_forward", "bool", "true", "", "advance decode iterations in closed form"}},
       [](int i, core::Engine& e, ServingObserver& o, const StepModel& s, const ServingConfig& c) {
         return std::make_unique<Static>(i, e, o, s, c);
       }},
      {"dynamic",
       "dynamic batching: static batching whose batch launches when max_num_seqs requests "
       "wait or the oldest has waited batch_timeout, whichever comes first",
       "NVIDIA Triton Inference Server dynamic batcher (max_queue_delay_microseconds); "
       "TorchServe batch_size / max_batch_delay",
       {{"max_num_seqs", "integer", "256", "", "requests per batch at most"},
        {"batch_timeout", "time", "10ms", "s",
         "longest wait of the oldest queued request before a partial batch launches"},
        {"block_tokens", "integer", "16", "tokens", "granularity of the KV reservation"},
        {"fast_forward", "bool", "true", "", "advance decode iterations in closed form"}},
       [](int i, core::Engine& e, ServingObserver& o, const StepModel& s, const ServingConfig& c) {
         return std::make_unique<Dynamic>(i, e, o, s, c, DynamicConfig{c.batch_timeout_ns});
       }},
      {"orca",
       "iteration-level scheduling with selective batching: new requests join every iteration "
       "with their whole prompt, each reserving KV for prompt + output tokens (no paging, no "
       "preemption)",
       "Yu et al., Orca: A Distributed Serving System for Transformer-Based Generative Models, "
       "OSDI 2022",
       {{"max_num_seqs", "integer", "256", "", "running requests at most (Orca max_bs)"},
        {"block_tokens", "integer", "16", "tokens", "granularity of the KV reservation"},
        {"fast_forward", "bool", "true", "", "advance unchanging decode batches in closed form"}},
       [](int i, core::Engine& e, ServingObserver& o, const StepModel& s, const ServingConfig& c) {
         return std::make_unique<Orca>(i, e, o, s, c);
       }},
  };
  return table;
}

const std::vector<RouterInfo>& routers() {
  static const std::vector<RouterInfo> table = {
      {"round-robin", "each replica in turn",
       [](const RngStreams&, const RouterParams&) { return std::make_unique<RoundRobin>(); }},
      {"least-outstanding", "the replica with the fewest waiting + running requests",
       [](const RngStreams&, const RouterParams&) { return std::make_unique<LeastOutstanding>(); }},
      {"random", "a replica uniformly at random (random stream 'router')",
       [](const RngStreams& rng, const RouterParams&) {
         return std::make_unique<RandomRouter>(rng);
       }},
      {"least-kv", "the replica with the lowest KV-cache occupancy",
       [](const RngStreams&, const RouterParams&) { return std::make_unique<LeastKvLoad>(); }},
      {"power-of-two",
       "two replicas at random, the one with fewer outstanding requests "
       "(Mitzenmacher, IEEE TPDS 2001)",
       [](const RngStreams& rng, const RouterParams&) {
         return std::make_unique<PowerOfTwo>(rng);
       }},
      {"prefix-aware",
       "the replica with the longest cached prompt prefix unless it has more "
       "than prefix_balance_slack outstanding requests above the least loaded "
       "one (SGLang cache-aware router, Mooncake Conductor); needs prefix_caching",
       [](const RngStreams&, const RouterParams& p) {
         return std::make_unique<PrefixAware>(p.prefix_balance_slack);
       },
       {{"prefix_balance_slack", "integer", "8", "requests",
         "how many more outstanding requests than the least loaded replica a cache hit may "
         "cost before load wins"}}},
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

const PolicyInfo& policy(const std::string& name) {
  for (const auto& p : policies())
    if (p.name == name) return p;
  throw std::out_of_range("unknown policy '" + name + "'");
}

std::unique_ptr<Router> make_router(const std::string& name, const RngStreams& rng,
                                    const RouterParams& params) {
  for (const auto& r : routers())
    if (r.name == name) return r.make(rng, params);
  throw std::out_of_range("unknown router '" + name + "'");
}

}  // namespace fleetsim::serving
