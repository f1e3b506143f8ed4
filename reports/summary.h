// Turns a run's metrics into the terminal table, summary.json and the per-request CSV.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw_models/files.h"
#include "reports/document.h"
#include "sim/app/capacity.h"
#include "sim/run_result.h"
#include "sim/scenario/scenario.h"
#include "sim/serving/observer.h"

namespace fleetsim::reports {

/// `run --capacity`: the capacity at the SLO next to the load now, as terminal lines and
/// as summary.json's "capacity" object.
std::string capacity_text(const app::Capacity& c);
nlohmann::json capacity_json(const app::Capacity& c);

/// The fully resolved scenario (defaults filled in, catalog entries expanded).
nlohmann::json resolved_scenario(const scenario::Scenario& sc);

/// The keys every summary.json has, one pool or a fleet (a fleet adds its sections and
/// never renames these): requests arrived, completed and rejected; input and output tokens
/// and tokens/s; requests/s, goodput and SLO attainment; TTFT, TPOT, inter-token, end-to-end
/// and queueing latency (mean, p50, p90, p99, max); the simulated span; rejections by
/// reason, preemptions, prefix-cache lookups and hits, KV transfers, response-cache hits,
/// cascade escalations and the per-class figures (every serving technique runs in both).
/// Counts are those simulated (a sampled fleet scales them in its "answer" section).
void put_common_metrics(nlohmann::json& j, const metrics::Summary& s);

/// One percentile target against a run: "TPOT p99 47.0 ms of 50.0 ms: 6 % margin",
/// "ITL p99 318 ms of 200 ms: missed by 59 %", "TTFT p99 (class chat) ...".
std::string slo_check_text(const metrics::SloCheck& c);
/// The same as JSON: metric, percentile, class, bound_s, value_s (null when rejected
/// requests alone exceed the allowance), met, margin.
nlohmann::json slo_check_json(const metrics::SloCheck& c);

/// summary.json: flat metric keys with units in their names (ttft_p99_s, ...), run facts
/// (seed, events, wall_s, version) and "scenario": resolved_scenario(sc).
nlohmann::json summary_json(const scenario::Scenario& sc, const RunResult& run);

/// "<model> on <replicas> × <tp> × <GPU>, <policy>, router <router>".
std::string serving_setup(const scenario::Scenario& sc);

/// Latency (TTFT, TPOT, inter-token, end-to-end, queueing): mean, p50, p90, p99, max.
Table latency_table(const metrics::Summary& s);

/// The lines after the latency table: requests, classes, caches, throughput, goodput,
/// replicas, simulated span and events (no wall-clock figures).
std::string summary_notes(const scenario::Scenario& sc, const RunResult& run);

/// The readable table printed after a run.
std::string summary_table(const scenario::Scenario& sc, const RunResult& run);

/// What `fleetsim check` prints: the resolved configuration and memory budget.
std::string check_report(const scenario::Scenario& sc);
/// One line naming the scenario's serving engine, whether it was defaulted, its overheads
/// and whether its profile was fitted.
std::string engine_line(const scenario::Scenario& sc);

/// The scenario's validation error band as a sentence ("" without one), and as JSON (null
/// without one). `gpus`: the answer's GPU count, scaled by the band's 75th-percentile factor.
std::string accuracy_line(const scenario::Scenario& sc, double gpus = 0);
nlohmann::json accuracy_json(const scenario::Scenario& sc, double gpus = 0);

/// Writes summary.json (pretty, keys sorted) to `path`; throws InputError if it cannot.
void write_json(const nlohmann::json& j, const std::string& path);

/// One finished request, completed or rejected: a row of the per-request CSV (RequestsCsv)
/// and of the Python module's per-request columns. Times in seconds from the request's
/// arrival; a rejected request has no latencies (NaN).
struct RequestRow {
  uint64_t id = 0;
  int replica = -1;
  int cls = 0;  ///< request class: index into the summary's classes (0 without classes)
  double arrival_s = 0;
  int32_t prompt_tokens = 0, output_tokens = 0;
  double queue_s = std::numeric_limits<double>::quiet_NaN();
  double ttft_s = std::numeric_limits<double>::quiet_NaN();
  /// Mean time per output token after the first (0 with a single output token).
  double tpot_s = std::numeric_limits<double>::quiet_NaN();
  double e2e_s = std::numeric_limits<double>::quiet_NaN();
  int32_t preemptions = 0;
  std::optional<serving::RejectReason> rejected;
  /// "completed", or "rejected_" and the reason ("rejected_queue_full", ...).
  std::string status() const;
};
RequestRow request_row(const serving::RequestRecord& rec);
RequestRow request_row(const workload::RequestSpec& r, int replica, serving::RejectReason why);

/// Keeps every finished request's row in memory, in the order the requests finished.
class RequestRows final : public serving::ServingObserver {
 public:
  void on_completion(const serving::RequestRecord& rec) override {
    rows_.push_back(request_row(rec));
  }
  void on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                 SimTime) override {
    rows_.push_back(request_row(r, replica, why));
  }
  const std::vector<RequestRow>& rows() const { return rows_; }

 private:
  std::vector<RequestRow> rows_;
};

/// Streams one CSV row per finished request (completed or rejected) to a temporary file that
/// finish() renames into place; a failed write is an InputError naming the file as soon as
/// it shows. Destroyed without finish() (an error, an interruption), it leaves nothing.
class RequestsCsv final : public serving::ServingObserver {
 public:
  explicit RequestsCsv(const std::string& path);
  void on_completion(const serving::RequestRecord& rec) override;
  void on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                 SimTime t) override;
  void finish() { file_.commit(); }

 private:
  void write(const RequestRow& row);
  files::AtomicFile file_;
  std::ostream& out_;
};

}  // namespace fleetsim::reports
