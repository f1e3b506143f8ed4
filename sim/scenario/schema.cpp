#include "sim/scenario/schema.h"

#include <cstdio>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "sim/fleet/geo_routing.h"
#include "sim/serving/registry.h"

namespace fleetsim::scenario::schema {

namespace {

using Key = yaml::Key;
using T = yaml::Key::Type;
using units::Dim;

constexpr double kBig = 9.3e18;  // no bound (an int64_t's range)

Key make(std::string path, T type, std::string fallback, std::string help) {
  Key k;
  k.path = std::move(path);
  k.type = type;
  k.fallback = std::move(fallback);
  k.help = std::move(help);
  return k;
}
Key I(std::string p, double lo, double hi, std::string d, std::string h) {
  Key k = make(std::move(p), T::kInt, std::move(d), std::move(h));
  k.min = lo;
  k.max = hi;
  return k;
}
Key N(std::string p, double lo, double hi, std::string d, std::string h) {
  Key k = make(std::move(p), T::kNumber, std::move(d), std::move(h));
  k.min = lo;
  k.max = hi;
  return k;
}
Key Q(std::string p, Dim dim, double lo, double hi, std::string d, std::string h) {
  Key k = make(std::move(p), T::kQuantity, std::move(d), std::move(h));
  k.dim = dim;
  k.min = lo;
  k.max = hi;
  return k;
}
Key S(std::string p, std::string d, std::string h) {
  return make(std::move(p), T::kString, std::move(d), std::move(h));
}
Key C(std::string p, std::vector<std::string> choices, std::string d, std::string h) {
  Key k = make(std::move(p), T::kChoice, std::move(d), std::move(h));
  k.choices = std::move(choices);
  return k;
}
Key B(std::string p, std::string d, std::string h) {
  return make(std::move(p), T::kBool, std::move(d), std::move(h));
}
Key M(std::string p, std::string h) { return make(std::move(p), T::kMap, "", std::move(h)); }
Key L(std::string p, std::string h) { return make(std::move(p), T::kList, "", std::move(h)); }
Key D(std::string p, std::string d, std::string h) {
  Key k = make(std::move(p), T::kDistribution, std::move(d), std::move(h));
  k.open = true;  // dist, mean, min, ...: scenarios/README.md#distributions
  return k;
}
Key P(std::string p, std::string h) {
  Key k = make(std::move(p), T::kPercentiles, "", std::move(h));
  k.min = 0;
  k.open = true;  // p50, p99.9, ...
  return k;
}
Key req(Key k) {
  k.required = true;
  return k;
}
Key doc(Key k, std::string text) {
  k.default_doc = std::move(text);
  return k;
}
Key open(Key k) {
  k.open = true;
  return k;
}
Key alias(Key k, std::string target) {
  k.same_as = std::move(target);
  return k;
}

const std::vector<std::string> kWeightTypes = {"bf16",  "fp16",  "fp8",  "int8", "int4",  "fp4",
                                               "mxfp4", "nvfp4", "q8_0", "q4_0", "q4_k_m"};

std::vector<Key> build() {
  const double T40 = static_cast<double>(1LL << 40);
  std::vector<Key> t = {
      // Top level.
      doc(S("name", "", "run name; `fleetsim run` writes to out/<name>/ unless --out is given"),
          "the file's stem"),
      doc(S("description", "", "free text, copied into summary.json"), "\"\""),
      I("seed", 0, kBig, "1",
        "scenario seed: one random stream per component is derived from it; --seed replaces it"),
      req(S("model", "", "catalog id of the model served (fleetsim list models)")),
      req(M("hardware", "the GPU, node and parallelism of one replica")),
      M("precision", "element formats of weights, activations and KV cache"),
      M("efficiency", "achieved fractions of peak and engine overheads (default: the catalog's)"),
      M("offload", "weights kept in host memory"),
      req(M("serving", "replicas, router, batching policy and its limits (may be {})")),
      doc(M("workload", "where requests come from (single-pool scenarios)"),
          "required (not with fleet)"),
      M("slo", "latency targets: goodput and SLO attainment"),
      M("users", "a fleet's population (with fleet, instead of workload)"),
      M("fleet", "regions with pools of replicas (with users)"),
      M("cost", "a fleet's cost basis"),
      M("network", "the network model and the scale-out fabric's shape"),
      M("plan", "the configuration space of `fleetsim plan` (ignored by run)"),
      M("sweep", "the axes of `fleetsim sweep` (ignored by run)"),
      M("ladder", "the technique ladder of `fleetsim ladder` (ignored by run)"),
      M("fleet_plan", "a fleet's configurations for `fleetsim plan` (ignored by run)"),

      // hardware
      req(S("hardware.gpu", "", "catalog id of the GPU (fleetsim list gpus)")),
      doc(S("hardware.node", "",
            "catalog id of the server: GPUs per scale-up domain, NICs, host memory and compute"),
          "the first node built from gpu"),
      I("hardware.tp", 1, 1024, "1",
        "tensor-parallel degree; must divide the model's attention heads"),
      I("hardware.pp", 1, 1024, "1", "pipeline stages (at most the model's layers)"),
      I("hardware.dp_attention", 1, 1024, "1",
        "attention data-parallel groups of tp GPUs, each with its own sequences and KV cache; "
        "the MLP spans tp x dp_attention GPUs"),
      B("hardware.expert_parallel", "false",
        "MoE experts whole on GPUs (EP over tp x dp_attention): all-to-alls under "
        "attention DP, an all-reduce after the MoE under attention TP"),
      I("hardware.redundant_experts", 0, 1 << 16, "0",
        "replicas of hot experts (EPLB); needs expert_parallel"),
      B("hardware.two_batch_overlap", "false",
        "two micro-batches, one's EP all-to-all under the other's compute; needs "
        "expert_parallel and dp_attention > 1"),

      // precision
      C("precision.weights", kWeightTypes, "bf16", "weight format"),
      doc(C("precision.activations", {"bf16", "fp16", "fp8", "int8", "fp4", "mxfp4", "nvfp4"}, "",
            "activation format"),
          "fp8 with fp8 weights on a GPU with FP8 units, else bf16"),
      C("precision.kv", {"bf16", "fp16", "fp8", "int8", "int4"}, "bf16", "KV-cache format"),

      // efficiency
      doc(N("efficiency.compute", 0.01, 1, "", "achieved / peak tensor rate"),
          "the GPU's catalog figure"),
      doc(N("efficiency.memory", 0.01, 1, "", "achieved / peak memory bandwidth"),
          "the GPU's catalog figure"),
      doc(Q("efficiency.iteration_overhead", Dim::kTime, 0, kBig, "",
            "scheduler (CPU) time added to every iteration"),
          "the engine's"),
      doc(Q("efficiency.per_sequence_overhead", Dim::kTime, 0, kBig, "",
            "CPU time per sequence that samples a token in the iteration"),
          "the engine's"),
      doc(Q("efficiency.kernel_launch", Dim::kTime, 0, kBig, "",
            "CPU time per kernel launch in eager mode (hidden by the GPU's work while that "
            "takes longer)"),
          "the engine's"),
      doc(Q("efficiency.min_kernel", Dim::kTime, 0, kBig, "",
            "the shortest time any GPU operator takes"),
          "2us"),
      doc(Q("efficiency.operator_latency", Dim::kTime, 0, kBig, "",
            "device-side latency per operator, never hidden (dataflow parts)"),
          "0s"),
      B("efficiency.cuda_graphs", "true", "decode-only iterations replay one graph: one launch"),
      doc(N("efficiency.moe_imbalance", 1, 100, "",
            "a floor on the busiest expert-parallel GPU's token copies over the mean"),
          "the catalog's"),
      doc(N("efficiency.kernel_efficiency", 0.05, 2, "",
            "every GPU operator's time is divided by it"),
          "the engine's"),
      B("efficiency.calibration", "true",
        "use the calibration tables for this GPU where they exist"),

      // offload
      I("offload.layers_on_host", 0, 1 << 20, "0",
        "the last N layers' weights live in host memory (at most the model's layers)"),
      N("offload.experts_on_host", 0, 1, "0",
        "MoE only: share of the least popular routed experts kept in host memory"),
      N("offload.expert_popularity_zipf", 0, 10, "0", "expert popularity p_i ~ i^-s (0 = uniform)"),
      C("offload.mode", {"stream", "host_compute"}, "stream",
        "stream offloaded weights over the host link every pass, or compute them on the host"),

      // serving
      S("serving.engine", hw::kDefaultEngine,
        "serving engine profile (fleetsim list engines): overheads, kernel efficiency, "
        "scheduler defaults"),
      I("serving.replicas", 1, 1e6, "1", "replicas of the model (not in fleets)"),
      C("serving.router", serving::router_names(), "round-robin",
        "how requests are spread over replicas (fleetsim list routers)"),
      I("serving.prefix_balance_slack", 0, T40, "8",
        "prefix-aware router: outstanding requests above the least loaded replica it accepts"),
      C("serving.policy", serving::policy_names(), "vllm",
        "batching policy (fleetsim list policies)"),
      doc(B("serving.chunked_prefill", "",
            "decodes first, then prompt chunks in the token budget (Sarathi-Serve)"),
          "false when policy is named, else the engine's"),
      doc(B("serving.split_prompts", "",
            "with chunked_prefill: a prompt may be split across iterations; prefill-first: a "
            "prompt longer than max_batched_tokens runs in prefill iterations of at most that "
            "many tokens (SGLang) instead of being rejected (vLLM V0)"),
          "the engine's (true for sarathi)"),
      doc(C("serving.admission", {"paged", "reserve"}, "",
            "KV admission of the vllm and sarathi policies: paged admits a request when its "
            "prompt's blocks fit and preempts a running one when decoding runs out (vLLM, "
            "SGLang); reserve admits it only when its whole life's blocks fit beside the "
            "running requests' and never preempts (TensorRT-LLM's GUARANTEED_NO_EVICT)"),
          "the engine's"),
      I("serving.block_tokens", 1, 1024, "16", "tokens per paged-KV block (vLLM --block-size)"),
      doc(I("serving.max_num_seqs", 1, 65536, "",
            "most sequences running on one replica, all its attention-DP ranks together "
            "(vLLM --max-num-seqs)"),
          "the engine's (per attention-DP rank for an engine whose ranks schedule apart)"),
      doc(I("serving.max_batched_tokens", 1, 1 << 24, "",
            "token budget of one iteration of a replica, all its attention-DP ranks together "
            "(vLLM --max-num-batched-tokens)"),
          "the engine's (per attention-DP rank for an engine whose ranks schedule apart)"),
      B("serving.fast_forward", "true",
        "advance runs of identical decode iterations in one event (false: for testing)"),
      B("serving.prefix_caching", "false",
        "vllm only: automatic prefix caching (needs prompts with prefix hashes)"),
      doc(I("serving.prefix_block_tokens", 1, 1 << 20, "",
            "fleets with prefix_caching: tokens per generated prefix-hash block"),
          "256 rounded up to whole KV blocks"),
      doc(Q("serving.batch_timeout", Dim::kTime, 0, 3600, "",
            "dynamic only: the longest the oldest waiting request waits for its batch to fill"),
          "10ms"),
      N("serving.gpu_memory_utilization", 0.05, 1, "0.9",
        "share of each GPU's memory the replica may use"),
      Q("serving.runtime_reserve", Dim::kBytes, 0, kBig, "1GiB",
        "per-GPU memory kept back inside that budget (CUDA context, allocator slack)"),
      M("serving.speculative", "vllm only: speculative decoding with a draft model"),
      M("serving.lora", "vllm only: multi-LoRA serving (needs workload.adapters)"),
      C("serving.preemption", {"recompute", "swap"}, "recompute",
        "vllm only: what a preempted request loses"),
      Q("serving.swap_space", Dim::kBytes, 0, kBig, "4GiB",
        "with preemption: swap, host memory per GPU for swapped-out KV"),
      I("serving.max_queue", 0, T40, "0",
        "vllm only: load shedding; an arrival finding this many waiting is rejected (0: none)"),
      Q("serving.prefix_cache_host_space", Dim::kBytes, 1, kBig, "",
        "with prefix_caching: a host-memory tier of this size per replica"),
      N("serving.forced_token_share", 0, 0.9, "0",
        "vllm only: share of output tokens dictated by a grammar, appended without a decode"),
      M("serving.disaggregation",
        "vllm only: a prefill pool that hands requests to the decode "
        "pool (the scenario's hardware and replicas)"),
      M("serving.cascade", "vllm only: a small model first, a share escalates to the scenario's"),
      M("serving.response_cache", "identical prompts answered without a model call"),

      req(S("serving.speculative.draft_model", "",
            "catalog id of the draft (the target's vocabulary), or mtp for the model's own "
            "multi-token-prediction layers")),
      req(I("serving.speculative.k", 0, 64, "", "draft tokens per iteration (0 turns it off)")),
      doc(N("serving.speculative.acceptance", 0, 0.999, "", "acceptance rate of a draft token"),
          "required unless k is 0"),
      N("serving.speculative.acceptance_spread", 0, 1, "0",
        "acceptance spread uniformly +- this per request"),
      req(I("serving.lora.max_loras", 1, 4096, "", "adapters resident in GPU memory")),
      I("serving.lora.rank", 1, 1024, "16", "adapter rank"),
      req(I("serving.disaggregation.prefill_replicas", 1, 1e6, "", "replicas of the prefill pool")),
      alias(M("serving.disaggregation.prefill_hardware",
              "hardware fields of the prefill pool that differ from hardware"),
            "hardware"),
      req(S("serving.cascade.small_model", "", "catalog id of the small model")),
      doc(I("serving.cascade.small_replicas", 1, 1e6, "", "replicas of the small model"),
          "required (not in fleets)"),
      alias(M("serving.cascade.small_hardware",
              "hardware fields of the small model's pool that differ (not in fleets)"),
            "hardware"),
      req(N("serving.cascade.escalation", 0, 1, "",
            "share of requests answered again by the scenario's model")),
      Q("serving.response_cache.latency", Dim::kTime, 0, kBig, "5ms", "time to answer a hit"),
      N("serving.response_cache.hit_rate", 0, 1, "",
        "a fixed share of hits (give this or capacity)"),
      I("serving.response_cache.capacity", 1, T40, "",
        "LRU entries, exact matches of trace prompts (give this or hit_rate)"),

      // slo
      P("slo.ttft", "time to first token: a bound per request, or {p99: 1s, ...}"),
      P("slo.tpot", "time per output token after the first: a bound, or percentiles"),
      P("slo.itl", "inter-token latency over all requests' gaps: percentiles only"),

      // network
      C("network.model", {"analytic", "simgrid"}, "analytic",
        "analytic: alpha-beta formulas; simgrid: SimGrid tables and live transfers"),
      doc(B("network.live_alltoall", "",
            "simgrid only: run cross-domain expert all-to-alls live on the fabric"),
          "true where it can run"),
      I("network.regions", 1, 2, "1",
        "2: the prefill and decode pools in different regions joined by wan"),
      M("network.wan", "the link from region 0 to region 1"),
      N("network.oversubscription", 1, 1000, "1",
        "leaf downlink over uplink bandwidth (2, 2.0 or \"2:1\")"),
      I("network.nodes_per_leaf", 1, 1 << 20, "32", "nodes under one leaf switch per rail"),
      req(Q("network.wan.bandwidth", Dim::kBandwidth, 1, kBig, "", "one direction")),
      req(Q("network.wan.latency", Dim::kTime, 0, kBig, "", "one way")),

      // workload
      doc(I("workload.requests", 1, kBig, "", "stop generating after this many requests"), "none"),
      I("workload.warmup_requests", 0, T40, "0",
        "the first N requests count towards throughput but not the latency statistics"),
      N("workload.traffic_scale", 1e-6, 1e6, "1", "every arrival rate x this"),
      Q("workload.duration", Dim::kTime, 0, 9.0e9, "",
        "stop generating at this simulated time (> 0)"),
      M("workload.arrival", "open loop: independent arrivals"),
      M("workload.clients", "closed loop: users who wait for their answers"),
      M("workload.trace", "replay: a trace path, or {file, format, time_scale}"),
      M("workload.conversations", "multi-turn chat with prefix reuse"),
      L("workload.classes", "request classes with their own priority, SLO and lengths"),
      M("workload.adapters", "each request names a LoRA adapter (needs serving.lora)"),
      doc(D("workload.prompt_tokens", "", "prompt length of each request"),
          "required with arrival or clients"),
      doc(D("workload.output_tokens", "", "output length of each request"),
          "required with arrival or clients"),
      req(S("workload.classes[].name", "", "unique")),
      req(N("workload.classes[].share", 1e-9, 1e9, "", "relative weight")),
      I("workload.classes[].priority", 0, 7, "0", "vllm admits higher priorities first"),
      doc(alias(M("workload.classes[].slo", "this class's ttft and tpot targets"), "slo"),
          "the scenario's slo"),
      doc(D("workload.classes[].prompt_tokens", "", "this class's prompt lengths"),
          "the workload's"),
      doc(D("workload.classes[].output_tokens", "", "this class's output lengths"),
          "the workload's"),
      req(I("workload.adapters.count", 1, 1e6, "", "adapters 1..count")),
      N("workload.adapters.popularity_zipf", 0, 10, "0", "Zipf popularity of the adapters"),
      req(Q("workload.conversations.rate", Dim::kRate, 0, kBig, "",
            "new conversations per second")),
      req(D("workload.conversations.turns", "", "turns per conversation")),
      D("workload.conversations.think_time", "0s", "between an answer and the next question"),
      I("workload.conversations.system_prompt_tokens", 0, 1 << 20, "0",
        "prefix shared by every conversation"),
      I("workload.conversations.block_tokens", 1, 1 << 16, "256", "prefix-hash granularity"),
      I("workload.conversations.max_context_tokens", 2, 1 << 30, "32768",
        "a conversation ends before a turn that would exceed this"),
      C("workload.arrival.process", {"poisson", "gamma"}, "poisson",
        "poisson: exponential gaps; gamma: gaps with coefficient of variation cv"),
      doc(Q("workload.arrival.rate", Dim::kRate, 0, kBig, "", "mean arrivals per unit time"),
          "required unless shape"),
      doc(N("workload.arrival.cv", 0, kBig, "", "gamma: coefficient of variation of the gaps"),
          "required for gamma"),
      L("workload.arrival.shape", "a rate that changes over time: points {at, rate}"),
      req(Q("workload.arrival.shape[].at", Dim::kTime, 0, kBig, "", "time of the point")),
      req(Q("workload.arrival.shape[].rate", Dim::kRate, 0, kBig, "", "rate at that time")),
      req(I("workload.clients.users", 1, 2147483647, "", "concurrent users")),
      D("workload.clients.think_time", "0s", "between a completion and the user's next request"),
      req(S("workload.trace.file", "", "relative to the scenario file's folder")),
      C("workload.trace.format", {"auto", "azure", "mooncake"}, "auto",
        "auto: .csv is azure, .jsonl is mooncake"),
      N("workload.trace.time_scale", 0, kBig, "1",
        "arrival = record time x this (> 0): 2 replays twice as slow"),

      // users
      req(N("users.weekly_active", 1, 1e11, "", "weekly active users")),
      req(N("users.daily_active_fraction", 1e-6, 1, "", "daily actives / weekly actives")),
      req(D("users.sessions_per_day", "", "sessions per daily active user")),
      req(D("users.turns_per_session", "", "turns per session")),
      req(D("users.think_time", "", "from a turn's last answer to the next turn")),
      req(D("users.prompt_tokens", "", "the new user message of a turn")),
      req(D("users.output_tokens", "", "the answer of each call")),
      I("users.system_prompt_tokens", 0, 1 << 20, "0", "tokens before the conversation"),
      I("users.max_context_tokens", 16, 1 << 24, "32768",
        "a session ends before a turn that would exceed it"),
      N("users.sample", 1e-9, 1, "1", "simulate this share of the users and of every pool"),
      C("users.tracking", {"auto", "users", "rate"}, "auto",
        "users: each user's sessions of a day drawn for that user; rate: sessions at the "
        "population's mean rate; auto: users up to 100k weekly users"),
      M("users.adapters", "each session uses one LoRA adapter (needs serving.lora)"),
      req(I("users.adapters.count", 1, 1e6, "", "adapters 1..count")),
      N("users.adapters.popularity_zipf", 0, 10, "0", "Zipf popularity of the adapters"),
      M("users.start", "when the run starts, for the curves"),
      Q("users.duration", Dim::kTime, 1, kBig, "24h",
        "sessions start until then (at most 31 days)"),
      L("users.classes", "shares of sessions with their own model, lengths, fan-out and SLO"),
      C("users.start.weekday", {"mon", "tue", "wed", "thu", "fri", "sat", "sun"}, "mon",
        "weekday at the start"),
      N("users.start.hour_utc", 0, 23.999, "0", "hour (UTC) at the start"),
      req(S("users.classes[].name", "", "unique")),
      req(N("users.classes[].share", 1e-9, 1e9, "", "relative weight")),
      I("users.classes[].priority", 0, 7, "0", "vllm admits higher priorities first"),
      doc(alias(M("users.classes[].slo", "this class's ttft and tpot targets"), "slo"),
          "the scenario's slo"),
      doc(S("users.classes[].model", "", "routes the class's calls to pools of this model"),
          "the scenario's"),
      doc(D("users.classes[].prompt_tokens", "", "this class's new messages"), "the users'"),
      doc(D("users.classes[].output_tokens", "", "this class's answers"), "the users'"),
      doc(D("users.classes[].turns_per_session", "", "this class's turns"), "the users'"),
      doc(D("users.classes[].fanout", "", "parallel calls per turn"), "1"),

      // fleet
      req(L("fleet.regions", "1 to 255 regions")),
      M("fleet.routing", "routing between regions"),
      M("fleet.datacenter", "facility power and floor"),
      M("fleet.autoscaling", "autoscaling per pool (off when absent)"),
      M("fleet.failures", "GPU, node, link, rack and region failures (none when absent)"),
      Q("fleet.report_interval", Dim::kTime, 1, kBig, "1h",
        "length of the per-region time series intervals"),
      req(S("fleet.regions[].name", "", "unique")),
      req(Q("fleet.regions[].utc_offset", Dim::kTime, -12 * 3600.0, 14 * 3600.0, "",
            "local time = UTC + offset")),
      req(N("fleet.regions[].users", 0, 1e9, "", "share of the population (normalised)")),
      C("fleet.regions[].diurnal", {"consumer", "business", "flat"}, "consumer",
        "load by local hour: a built-in curve or 24 numbers"),
      doc(L("fleet.regions[].weekly", "load by local weekday: 7 numbers, Monday first"), "flat"),
      Q("fleet.regions[].user_rtt", Dim::kTime, 0, kBig, "0s",
        "round trip between the region's users and its datacenter"),
      doc(open(M("fleet.regions[].wan_rtt", "round trips to the other regions: {name: time}")),
          "required for every pair"),
      req(L("fleet.regions[].pools", "pools of replicas (may be [])")),
      doc(S("fleet.regions[].pools[].name", "", "pool name"), "pool<i>"),
      req(I("fleet.regions[].pools[].replicas", 0, 1e7, "", "replicas")),
      doc(S("fleet.regions[].pools[].model", "", "catalog id of the model served"),
          "the scenario's"),
      alias(M("fleet.regions[].pools[].hardware", "hardware fields that differ from hardware"),
            "hardware"),
      alias(M("fleet.regions[].pools[].precision", "replaces precision"), "precision"),
      alias(M("fleet.regions[].pools[].efficiency", "replaces efficiency"), "efficiency"),
      alias(M("fleet.regions[].pools[].offload", "replaces offload"), "offload"),
      doc(alias(M("fleet.regions[].pools[].speculative", "this pool's speculative decoding"),
                "serving.speculative"),
          "serving.speculative for the scenario's model"),
      C("fleet.regions[].pools[].role", {"both", "prefill", "decode"}, "both",
        "prefill/decode disaggregation"),
      C("fleet.regions[].pools[].prompts", {"all", "short", "medium", "long"}, "all",
        "which calls it takes by prompt length: short (below fleet.routing.long_prompt_tokens, "
        "or medium_prompt_tokens when set), medium (from medium_prompt_tokens), long (at or "
        "above long_prompt_tokens)"),
      doc(L("fleet.regions[].pools[].classes",
            "which calls it takes by the users' session class (names from users.classes); pools "
            "of its model in the region without classes take the other classes"),
          "all classes"),
      I("fleet.regions[].pools[].spares", 0, 1e6, "0", "N+k headroom replicas"),
      I("fleet.regions[].pools[].min_replicas", 0, 1e7, "0", "autoscaling floor"),
      doc(I("fleet.regions[].pools[].max_replicas", 0, 1e7, "", "autoscaling ceiling"),
          "replicas + spares"),
      doc(N("fleet.regions[].pools[].usd_per_gpu_hour", 0, 1000, "", "cloud price"),
          "the GPU's catalog price"),
      N("fleet.regions[].pools[].server_usd", 0, 1e9, "0",
        "price of one server (cost basis owned)"),
      N("fleet.routing.spill_load", 0.01, 100, "1",
        "a region is saturated at this share of its batch slots"),
      doc(I("fleet.routing.long_prompt_tokens", 1, 1 << 30, "",
            "split by prompt length: calls at or above it go to prompts: long pools"),
          "no split"),
      doc(I("fleet.routing.medium_prompt_tokens", 1, 1 << 30, "",
            "a third side: calls from it up to long_prompt_tokens go to prompts: medium pools"),
          "two sides"),
      C("fleet.routing.across_regions", fleet::region_router_names(), "spill",
        "which region serves a call: spill (home unless saturated, then the nearest that is "
        "not) or a router's rule over the regions, by outstanding calls per batch slot"),
      N("fleet.datacenter.pue", 1, 3, "1.2", "facility power / IT power"),
      N("fleet.datacenter.floor_m2_per_rack", 0.1, 100, "2.5", "floor per rack, aisles included"),
      doc(Q("fleet.datacenter.rack_power", Dim::kPower, 0, kBig, "", "power cap per rack"),
          "the node's rack_power"),
      C("fleet.autoscaling.mode", {"off", "reactive", "scheduled"}, "reactive",
        "reactive to load, scheduled from the users' curve, or off"),
      C("fleet.autoscaling.metric", {"utilization", "queue", "slo"}, "utilization",
        "what reactive scaling watches"),
      doc(N("fleet.autoscaling.target", 0.01, 1e6, "", "target of the metric"),
          "0.7 (utilization), 4 (queue), 0.99 (slo)"),
      Q("fleet.autoscaling.interval", Dim::kTime, 1, kBig, "60s", "decision interval"),
      Q("fleet.autoscaling.cooldown", Dim::kTime, 0, kBig, "10min",
        "wait after a change before scaling down"),
      Q("fleet.autoscaling.startup", Dim::kTime, 0, kBig, "60s",
        "start-up before the weights load"),
      Q("fleet.autoscaling.storage_bandwidth", Dim::kBandwidth, 1, kBig, "2GB/s",
        "weights read per server"),
      M("fleet.failures.gpu", "GPU failures: {mtbf, mttr}"),
      alias(M("fleet.failures.node", "server failures: {mtbf, mttr}"), "fleet.failures.gpu"),
      alias(M("fleet.failures.link", "server link failures: {mtbf, mttr}"), "fleet.failures.gpu"),
      alias(M("fleet.failures.rack",
              "rack failures (top-of-rack switch, PDU) take down every server of a rack: "
              "{mtbf, mttr} per rack"),
            "fleet.failures.gpu"),
      alias(M("fleet.failures.region",
              "region outages take down every replica of a region: {mtbf, mttr} per region"),
            "fleet.failures.gpu"),
      M("fleet.failures.region_outage", "a scheduled outage of one region: {region, at, duration}"),
      req(S("fleet.failures.region_outage.region", "", "the region that goes down")),
      req(Q("fleet.failures.region_outage.at", Dim::kTime, 0, kBig, "",
            "when it goes down (run time)")),
      req(Q("fleet.failures.region_outage.duration", Dim::kTime, 1, kBig, "",
            "how long it stays down (then its replicas load their weights again)")),
      Q("fleet.failures.retry_delay", Dim::kTime, 0, kBig, "1s",
        "a failed replica's calls are retried after this"),
      req(Q("fleet.failures.gpu.mtbf", Dim::kTime, 60, kBig, "", "mean time between failures")),
      req(Q("fleet.failures.gpu.mttr", Dim::kTime, 1, kBig, "", "mean time to repair")),

      // cost
      C("cost.basis", {"cloud", "owned"}, "cloud",
        "cloud: GPU-hours at the pools' prices; owned: capital plus electricity"),
      N("cost.reserved_discount", 0, 0.95, "0", "cloud: share off the on-demand price"),
      N("cost.depreciation_years", 0.1, 30, "4", "owned: straight-line depreciation"),
      N("cost.network_usd_per_server", 0, 1e9, "0", "owned: the fabric's share per server"),
      N("cost.rack_usd", 0, 1e9, "0", "owned: per rack"),
      doc(N("cost.electricity_usd_per_kwh", 0, 10, "", "facility energy price"),
          "required when owned"),
      N("cost.margin", 0, 0.99, "0.3", "break-even price = cost / (1 - margin)"),
  };
  // plan: the axes, then the search's settings.
  for (const char* axis : {"gpu", "tp", "pp", "expert_parallel", "weights", "kv", "policy",
                           "max_num_seqs", "max_batched_tokens"})
    t.push_back(doc(L(std::string("plan.") + axis, "values to try"), "the scenario's value"));
  for (Key k : {
           doc(L("plan.prefill_share",
                 "numbers in [0, 4]: 0 colocated, s > 0 ceil(s x replicas) prefill replicas"),
               "colocated"),
           N("plan.target", 0.01, 1, "0.99",
             "share of arrived requests that must meet every per-request target"),
           I("plan.spares", 0, 1000, "0", "failure headroom: spare replicas"),
           N("plan.spare_fraction", 0, 1, "0", "failure headroom: ceil(this x N) more"),
           M("plan.replicas", "replica counts searched"),
           I("plan.replicas.min", 1, 100000, "1", "fewest replicas"),
           I("plan.replicas.max", 1, 100000, "512", "most replicas"),
           I("plan.simulate", 1, 100000, "32", "configurations simulated at most"),
           N("plan.slack", 0, 100, "0.5", "simulate those within +slack of the best analytic cost"),
           N("plan.tie_tolerance", 0, 1, "0.01", "configurations this close in cost tie"),
           M("plan.perturb", "robustness re-runs of each answer"),
           N("plan.perturb.traffic", 0, 10, "0.2", "traffic x (1 + this); 0 skips it"),
           Q("plan.perturb.iteration_overhead", Dim::kTime, 0, 10, "3ms",
             "more engine time per iteration; 0 skips it"),
           doc(open(M("plan.usd_per_gpu_hour", "prices: {gpu id: number}")),
               "the catalog's cloud price"),
           doc(open(M("sweep.vary", "the axes: {field path: [values]}")), "none"),
           I("sweep.seeds", 1, 10000, "1", "seeds per point"),
           N("ladder.target", 0.01, 1, "0.99",
             "share of calls that must meet every SLO target, at each step"),
           Q("ladder.window", Dim::kTime, 60, 86400, "1h",
             "the busiest stretch of the day simulated per step"),
           Q("ladder.warmup", Dim::kTime, 0, 86400, "15min",
             "traffic simulated before the window (sessions already under way)"),
           req(L("ladder.steps", "2 to 64 steps: the naive start, then one technique each")),
           req(S("ladder.steps[].name", "", "what the step adds")),
           S("ladder.steps[].note", "", "its assumptions and sources"),
           doc(open(M("ladder.steps[].set", "overrides added at this step: {field.path: value}")),
               "none"),
           B("ladder.steps[].autoscaling", "false",
             "from this step on, GPUs follow the day's load (derived, not simulated)"),
           doc(L("ladder.published", "whole-fleet figures shown beside the answer"), "none"),
           req(S("ladder.published[].name", "", "whose figure, of what")),
           req(N("ladder.published[].wh_per_call", 0, 1e6, "", "energy per call (query), Wh")),
           req(S("ladder.published[].source", "", "where and when it was published")),
           N("fleet_plan.target", 0.01, 1, "0.99",
             "share of calls that must meet every SLO target"),
           Q("fleet_plan.window", Dim::kTime, 60, 86400, "1h",
             "the busiest stretch of the day simulated per configuration"),
           Q("fleet_plan.warmup", Dim::kTime, 0, 86400, "15min",
             "traffic simulated before the window (sessions already under way)"),
           B("fleet_plan.autoscaling", "false",
             "GPUs follow the day's load (derived from the busiest window, not simulated)"),
           N("fleet_plan.perturb_traffic", 0, 10, "0.2",
             "the answer re-simulated with (1 + this) x the users; 0 skips it"),
           doc(N("fleet_plan.slack", 0, 100, "",
                 "simulate only configurations whose analytic $ a day is within (1 + slack) x "
                 "the cheapest estimate"),
               "every configuration simulated"),
           B("fleet_plan.per_region", "true",
             "then size the answer's regions apart, each for its own busiest hour"),
           B("fleet_plan.rank_per_region", "false",
             "size every configuration that meets the target region by region before ranking, "
             "and rank by that (about 9 more simulations each)"),
           N("fleet_plan.availability", 0, 0.999999, "0.999",
             "spares cover the replicas down at once this share of the time (fleet.failures' "
             "rates); 0: none"),
           I("fleet_plan.max_configurations", 1, 4096, "256", "refuse larger searches"),
           req(L("fleet_plan.options", "1 to 256 alternative fleets: {name, note, set, axes}")),
           req(S("fleet_plan.options[].name", "", "what this fleet is")),
           S("fleet_plan.options[].note", "", "its assumptions and sources"),
           doc(open(M("fleet_plan.options[].set",
                      "overrides making this fleet: {field.path: value}")),
               "none (the scenario as written)"),
           doc(open(M("fleet_plan.options[].axes",
                      "tried with this option only, after the plan's: {field.path: [values]}")),
               "none"),
           doc(open(M("fleet_plan.axes", "tried with every option: {field.path: [values]}")),
               "none"),
       })
    t.push_back(std::move(k));
  return t;
}

struct Table {
  std::vector<Key> keys = build();
  std::unordered_map<std::string, size_t> index;
  Table() {
    for (size_t i = 0; i < keys.size(); ++i)
      if (!index.emplace(keys[i].path, i).second)
        throw std::logic_error("schema: " + keys[i].path + " is declared twice");
  }
};

const Table& table() {
  static const Table t;
  return t;
}

const Key* exact(const std::string& path) {
  const auto& t = table();
  const auto it = t.index.find(path);
  return it == t.index.end() ? nullptr : &t.keys[it->second];
}

}  // namespace

const std::vector<Key>& keys() { return table().keys; }

const Key* find(const std::string& path_in) {
  const std::string path = yaml::generic_path(path_in);
  if (const Key* k = exact(path)) return k;
  // The longest declared prefix decides: an alias maps the rest onto its target, an open
  // mapping or a distribution accepts any field under it.
  for (size_t dot = path.rfind('.'); dot != std::string::npos && dot > 0;
       dot = path.rfind('.', dot - 1)) {
    const Key* p = exact(path.substr(0, dot));
    if (!p) continue;
    if (!p->same_as.empty()) return find(p->same_as + path.substr(dot));
    if (p->open) return p;
    return nullptr;
  }
  return nullptr;
}

const Key& key(const std::string& path) {
  const Key* k = exact(path);
  if (!k) throw std::logic_error("schema: '" + path + "' is read but not declared");
  return *k;
}

const Key& key_in(const yaml::Map& map, const std::string& name) {
  const std::string path = yaml::generic_path(map.path().empty() ? name : map.path() + "." + name);
  // A scenario nested in another document (a validation case's `scenario:`) is read at the
  // end of its path.
  const Key* k = find(path);
  for (size_t dot = path.find('.'); !k && dot != std::string::npos; dot = path.find('.', dot + 1))
    k = find(path.substr(dot + 1));
  if (!k || k->name() != name)
    throw std::logic_error("schema: '" + path + "' is read but not declared");
  return *k;
}

std::vector<std::string> sections() {
  std::vector<std::string> out;
  for (const auto& k : keys())
    if (k.path.find('.') == std::string::npos) out.push_back(k.path);
  return out;
}

void check_override(const std::string& dotted) {
  const std::string path = yaml::generic_path(dotted);
  if (find(path)) return;
  std::vector<std::string> paths;
  for (const auto& k : keys()) paths.push_back(k.path);
  const std::string m = closest_match(path, paths);
  std::string hint;
  if (!m.empty()) {
    hint = exact(m)->summary();
  } else {
    // The nearest section that exists: list its keys.
    std::string section = path;
    while (!section.empty() && !exact(section)) {
      const size_t dot = section.rfind('.');
      section = dot == std::string::npos ? "" : section.substr(0, dot);
    }
    hint = section.empty() ? "fleetsim list keys shows every key"
                           : "fleetsim list keys " + section + " shows the keys there";
  }
  throw InputError("unknown key '" + path + "'" + (m.empty() ? "" : " (did you mean '" + m + "'?)"),
                   hint, "--set " + dotted);
}

std::vector<const Key*> keys_under(const std::string& section) {
  if (!section.empty() && !exact(yaml::generic_path(section))) {
    std::vector<std::string> paths;
    for (const auto& k : keys())
      if (k.type == Key::Type::kMap || k.type == Key::Type::kList) paths.push_back(k.path);
    throw InputError("unknown section '" + section + "'" + did_you_mean(section, paths),
                     "fleetsim list keys, without a section, shows every key");
  }
  const std::string prefix = yaml::generic_path(section);
  std::vector<const Key*> out;
  for (const auto& k : keys())
    if (prefix.empty() || k.path == prefix || k.path.rfind(prefix + ".", 0) == 0 ||
        k.path.rfind(prefix + "[].", 0) == 0)
      out.push_back(&k);
  return out;
}

std::string text(const std::string& section) {
  std::string out;
  char buf[64];
  for (const Key* key : keys_under(section)) {
    const Key& k = *key;
    // path, type and range, default, meaning:
    //   serving.block_tokens   integer 1 … 1024, default 16: tokens per paged-KV block
    std::snprintf(buf, sizeof buf, "%-44s ", k.path.c_str());
    out += buf;
    out += k.type_name();
    if (!k.same_as.empty()) out += " (the fields of " + k.same_as + ")";
    if (const std::string r = k.range_text(); !r.empty())
      out += (k.type == Key::Type::kChoice ? " of " : " ") + r;
    out += (k.required ? std::string(", required") : ", default " + k.default_text()) + ": " +
           k.help + "\n";
  }
  return out;
}

namespace {

std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

std::string parent_of(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

}  // namespace

std::string markdown() {
  // One table per mapping, in the table's order: the keys whose parent is that mapping.
  std::vector<std::string> parents;
  std::map<std::string, std::vector<const Key*>> children;
  for (const auto& k : keys()) {
    const std::string p = parent_of(k.path);
    if (!children.count(p)) parents.push_back(p);
    children[p].push_back(&k);
  }
  std::string out;
  for (const auto& p : parents) {
    out += "### Keys: " + (p.empty() ? std::string("top level") : "`" + p + "`") + "\n\n";
    out += "| key | type | range | default | meaning |\n|---|---|---|---|---|\n";
    for (const Key* k : children[p]) {
      std::string type = k->type_name();
      if (!k->same_as.empty()) type += " (the fields of `" + k->same_as + "`)";
      const std::string d = k->default_text();
      out += "| `" + k->name() + "` | " + cell(type) + " | " + cell(k->range_text()) + " | " +
             (k->required ? "**required**" : cell(d)) + " | " + cell(k->help) + " |\n";
    }
    out += "\n";
  }
  return out;
}

}  // namespace fleetsim::scenario::schema
