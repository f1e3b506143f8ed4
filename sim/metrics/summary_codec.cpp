#include "sim/metrics/summary_codec.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fleetsim::metrics {

// Every field of the structs (collector.h); a field added there must be added here.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LatencyStats, count, mean_s, p50_s, p90_s, p99_s, max_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ClassSummary, name, priority, completed, rejected, ttft, tpot, e2e,
                                   slo_attainment)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Summary, requests_arrived, requests_completed, requests_rejected,
                                   rejected_too_long_for_model, rejected_too_long_for_kv,
                                   rejected_too_long_for_batch, rejected_queue_full, preemptions,
                                   input_tokens, output_tokens, ttft, tpot, itl, e2e, queue,
                                   sim_duration_s, input_tok_per_s, output_tok_per_s, requests_per_s,
                                   goodput_req_per_s, slo_attainment, replica_busy_fraction,
                                   kv_occupancy_mean, kv_occupancy_peak, iterations,
                                   prefix_lookup_tokens, prefix_hit_tokens, prefix_hit_rate,
                                   prefix_host_tokens, kv_transfers, kv_transfer_bytes,
                                   kv_transfer_mean_s, alltoall_iterations, alltoall_bytes,
                                   alltoall_delay_mean_s, alltoall_delay_max_s, alltoall_delayed,
                                   classes, response_cache_hits, escalations)

std::string encode_summary(const Summary& s) { return nlohmann::json(s).dump(); }

Summary decode_summary(const std::string& text) {
  try {
    return nlohmann::json::parse(text).get<Summary>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("a run summary that cannot be read back: ") + e.what());
  }
}

}  // namespace fleetsim::metrics
