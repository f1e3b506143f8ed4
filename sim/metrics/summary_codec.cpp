#include "sim/metrics/summary_codec.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fleetsim::metrics {

// Every field of the structs (collector.h); a field added there must be added here.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LatencyStats, count, mean_s, p50_s, p90_s, p99_s, max_s)
}  // namespace fleetsim::metrics
namespace fleetsim::workload {
// By hand: the metric is range-checked (results come back from checkpoint files too, and a
// float cast to the enum would be undefined behaviour).
void to_json(nlohmann::json& j, const SloTarget& t) {
  j = {{"metric", static_cast<int>(t.metric)},
       {"quantile", t.quantile},
       {"bound_s", t.bound_s},
       {"cls", t.cls},
       {"plain", t.plain}};
}
void from_json(const nlohmann::json& j, SloTarget& t) {
  const nlohmann::json& m = j.at("metric");
  if (!m.is_number_integer() || m.get<int64_t>() < 0 ||
      m.get<int64_t>() > static_cast<int64_t>(SloMetric::kItl))
    throw std::runtime_error("an SLO metric that is not 0, 1 or 2: " + m.dump());
  t.metric = static_cast<SloMetric>(m.get<int64_t>());
  j.at("quantile").get_to(t.quantile);
  j.at("bound_s").get_to(t.bound_s);
  j.at("cls").get_to(t.cls);
  j.at("plain").get_to(t.plain);
}
}  // namespace fleetsim::workload
namespace fleetsim::metrics {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SloCheck, target, value_s, beyond, met)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ClassSummary, name, priority, completed, rejected, ttft, tpot,
                                   e2e, slo_attainment)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(
    Summary, requests_arrived, requests_completed, requests_rejected, rejected_too_long_for_model,
    rejected_too_long_for_kv, rejected_too_long_for_batch, rejected_queue_full, preemptions,
    input_tokens, output_tokens, ttft, tpot, itl, e2e, queue, sim_duration_s, input_tok_per_s,
    output_tok_per_s, requests_per_s, goodput_req_per_s, slo_attainment, replica_busy_fraction,
    kv_occupancy_mean, kv_occupancy_peak, iterations, prefix_lookup_tokens, prefix_hit_tokens,
    prefix_hit_rate, prefix_host_tokens, kv_transfers, kv_transfer_bytes, kv_transfer_mean_s,
    alltoall_iterations, alltoall_bytes, alltoall_delay_mean_s, alltoall_delay_max_s,
    alltoall_delayed, classes, slo_checks, response_cache_hits, escalations)

std::string encode_summary(const Summary& s) { return nlohmann::json(s).dump(); }

Summary decode_summary(const std::string& text) {
  try {
    return nlohmann::json::parse(text).get<Summary>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("a run summary that cannot be read back: ") + e.what());
  }
}

std::string encode_slo_targets(const std::vector<workload::SloTarget>& t) {
  return nlohmann::json(t).dump();
}

std::vector<workload::SloTarget> decode_slo_targets(const std::string& text) {
  try {
    return nlohmann::json::parse(text).get<std::vector<workload::SloTarget>>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("SLO targets that cannot be read back: ") + e.what());
  }
}

std::string encode_slo_checks(const std::vector<SloCheck>& c) { return nlohmann::json(c).dump(); }

std::vector<SloCheck> decode_slo_checks(const std::string& text) {
  try {
    return nlohmann::json::parse(text).get<std::vector<SloCheck>>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("SLO checks that cannot be read back: ") + e.what());
  }
}

}  // namespace fleetsim::metrics
