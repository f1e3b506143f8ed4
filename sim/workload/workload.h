// The `workload:` section of a scenario: arrivals, lengths, trace replay, closed-loop users.
//
//   workload:
//     requests: 10000            # stop generating after this many (optional if duration)
//     duration: 10min            # stop generating arrivals after this time (optional)
//     arrival:                   # open loop
//       process: poisson | gamma # gamma takes cv: 2.0 (coefficient of variation of gaps)
//       rate: 20/s
//     # or closed loop:
//     clients: {users: 64, think_time: {dist: exponential, mean: 2s}}
//     # or multi-turn conversations (each turn's prompt carries the conversation so far):
//     conversations: {rate: 1/s, turns: <distribution>, think_time: <distribution>,
//                     system_prompt_tokens: 0, block_tokens: 256, max_context_tokens: 32768}
//     # or trace replay (arrival times and lengths from the trace):
//     trace: {file: data/traces/mooncake_conversation.jsonl, format: auto,
//             time_scale: 1.0}   # 2.0 replays twice as slow, 0.5 twice as fast
//     prompt_tokens: <distribution>   # not with trace
//     output_tokens: <distribution>   # not with trace
//     classes:                        # optional, not with trace: shares of the traffic
//       - {name: chat, share: 0.7, priority: 1, slo: {ttft: 1s, tpot: 50ms}}
//       - {name: batch, share: 0.3, priority: 0, prompt_tokens: ..., output_tokens: ...}
//     adapters: {count: 100, popularity_zipf: 1.0}   # optional: LoRA adapter per request
//     traffic_scale: 1.0              # optional: every arrival rate × this (a trace replayed
//                                     #   this many times as fast); not with clients
// With conversations, prompt_tokens is the new user message of each turn.
// Exactly one of arrival / clients / conversations / trace. At least one of requests / duration unless a
// trace bounds the run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/yaml_reader.h"
#include "sim/core/rng.h"
#include "sim/workload/distribution.h"
#include "sim/workload/request.h"
#include "sim/workload/trace.h"

namespace fleetsim::workload {

/// One entry of a `classes:` list: name, share, priority and slo {ttft, tpot}. The caller
/// reads any other keys of the entry, then calls finish().
RequestClass read_request_class(yaml::Map& entry);

/// LoRA adapters (`adapters: {count, popularity_zipf}` of a workload or of fleet users):
/// the cumulative probabilities of adapters 1..count, adapter i ∝ i^-popularity_zipf.
/// Errors name the field.
std::vector<double> read_adapters(yaml::Map& section);
/// The adapter (1-based) whose cumulative probability first exceeds `u` ∈ [0, 1).
inline uint32_t pick_adapter(const std::vector<double>& cdf, double u) {
  return static_cast<uint32_t>(std::upper_bound(cdf.begin(), cdf.end() - 1, u) - cdf.begin() + 1);
}

/// Generates requests lazily: memory does not grow with the number of requests.
class Workload {
 public:
  /// Reads and validates the section (InputError on any problem). `base_dir` resolves
  /// relative trace paths. Streams used: "arrivals", "lengths", "clients".
  static std::unique_ptr<Workload> from_yaml(yaml::Map& section, const RngStreams& rng,
                                             const std::string& base_dir);
  virtual ~Workload() = default;

  /// Open loop and trace: the next request in arrival order; nullopt when the workload is
  /// exhausted. Closed loop: each user's first request (at time 0 plus a think time), then
  /// nullopt; later requests come from on_completion().
  virtual std::optional<RequestSpec> next_arrival() = 0;
  /// Closed loop: the user of `done` sends its next request at now + think time (nullopt if
  /// the request limit or duration is reached). Open loop: nullopt.
  virtual std::optional<RequestSpec> on_completion(const RequestSpec& done, SimTime now_ns) = 0;

  /// Prefix-block hashes of trace requests (empty unless the trace has them).
  virtual const Trace* trace() const { return nullptr; }
  /// The request classes (`classes:`), empty when the workload has none.
  const std::vector<RequestClass>& classes() const { return classes_; }
  void set_classes(std::vector<RequestClass> c) { classes_ = std::move(c); }
  /// `warmup_requests: N`: the first N requests (ids 0 … N−1) count towards throughput but
  /// not towards latency statistics, as benchmark clients measure a steady-state window
  /// (a closed loop's first wave arrives all at once).
  uint64_t warmup_requests() const { return warmup_requests_; }
  void set_warmup_requests(uint64_t n) { warmup_requests_ = n; }
  /// One line, e.g. "poisson 20/s, prompt lognormal(median=400, sigma=1), output fixed(128)".
  virtual std::string describe() const = 0;
  /// Expected request rate for progress/ETA (0 when unknown).
  virtual double nominal_rate_per_s() const = 0;

 protected:
  uint64_t warmup_requests_ = 0;
  std::vector<RequestClass> classes_;
};

}  // namespace fleetsim::workload
