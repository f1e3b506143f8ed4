// The metrics observer: streaming histograms and counters for one run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/metrics/histogram.h"
#include "sim/serving/observer.h"

namespace fleetsim::metrics {

/// mean, p50, p90, p99, max of one latency, in seconds.
struct LatencyStats {
  uint64_t count = 0;
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0;
};
LatencyStats stats_of(const Histogram& h);

/// One percentile target checked against the run (sim/workload/slo.h).
struct SloCheck {
  workload::SloTarget target;
  /// The measured quantile: over completed requests (TTFT, TPOT) at the share that makes
  /// `quantile` of all requests, rejected ones counted as beyond the bound; over all token
  /// gaps (ITL).
  double value_s = 0;
  bool beyond = false;  ///< rejected requests alone exceed the share allowed past the bound
  bool met = false;     ///< !beyond and value_s ≤ bound
  /// 1 − value/bound: the share of the bound left (negative: missed by that share).
  double margin() const { return beyond ? -1.0 : 1.0 - value_s / target.bound_s; }
};

/// Per request class (workload `classes:`).
struct ClassSummary {
  std::string name;
  int priority = 0;
  uint64_t completed = 0, rejected = 0;
  LatencyStats ttft, tpot, e2e;
  double slo_attainment = 0;  ///< against the class's SLO (or the scenario's where it has none)
};

struct Summary {
  uint64_t requests_arrived = 0, requests_completed = 0, requests_rejected = 0;
  uint64_t rejected_too_long_for_model = 0, rejected_too_long_for_kv = 0,
           rejected_too_long_for_batch = 0;
  uint64_t rejected_queue_full = 0;  ///< load shedding
  uint64_t preemptions = 0;
  uint64_t input_tokens = 0, output_tokens = 0;  ///< of completed requests
  LatencyStats ttft, tpot, itl, e2e, queue;
  double sim_duration_s = 0;
  double input_tok_per_s = 0, output_tok_per_s = 0, requests_per_s = 0;
  double goodput_req_per_s = 0;      ///< completed requests meeting every SLO given, per second
  double slo_attainment = 0;         ///< share of completed requests meeting every SLO given
  double replica_busy_fraction = 0;  ///< mean over replicas of time with an iteration running
  double kv_occupancy_mean = 0;  ///< time-weighted mean over busy time of KV blocks used / total
  double kv_occupancy_peak = 0;
  uint64_t iterations = 0;
  /// Decode tokens per iteration, over all iterations: the mean decode batch (sequences,
  /// or more tokens than sequences with speculative decoding). A load measure, unlike
  /// replica_busy_fraction (any batch running, however small).
  double mean_decode_batch = 0;
  /// Prefix caching: prompt tokens looked up at admission and found cached (not computed).
  uint64_t prefix_lookup_tokens = 0, prefix_hit_tokens = 0;
  double prefix_hit_rate = 0;       ///< hit / lookup tokens (0 without prefix caching)
  uint64_t prefix_host_tokens = 0;  ///< of the hits, loaded back from the host-memory tier
  /// Disaggregation: KV transfers from the prefill to the decode pool.
  uint64_t kv_transfers = 0;
  double kv_transfer_bytes = 0, kv_transfer_mean_s = 0;
  /// network: {model: simgrid} with a live expert-parallel all-to-all: iterations whose
  /// cross-domain all-to-all ran on the SimGrid fabric, its bytes, and how much longer
  /// than alone the flows took (contention; added to those iterations).
  uint64_t alltoall_iterations = 0;
  double alltoall_bytes = 0, alltoall_delay_mean_s = 0, alltoall_delay_max_s = 0;
  uint64_t alltoall_delayed = 0;      ///< iterations with a delay of at least 1 ns
  std::vector<ClassSummary> classes;  ///< empty without request classes
  /// The scenario's percentile targets, then each class's, checked (empty without any).
  std::vector<SloCheck> slo_checks;
  uint64_t response_cache_hits = 0;  ///< requests answered from the response cache
  uint64_t escalations = 0;          ///< cascade: requests the large model answered again
};

/// Whether a completed request met its targets: TTFT within `slo_ttft_s` and, when it had
/// more than one output token (`tpot_s` ≥ 0; -1 otherwise), TPOT within `slo_tpot_s`. A
/// target ≤ 0 is no target. Every simulation judges requests with this one rule.
inline bool meets_slo(double ttft_s, double tpot_s, double slo_ttft_s, double slo_tpot_s) {
  bool ok = slo_ttft_s <= 0 || ttft_s <= slo_ttft_s;
  if (tpot_s >= 0) ok = ok && (slo_tpot_s <= 0 || tpot_s <= slo_tpot_s);
  return ok;
}

class Collector final : public serving::ServingObserver {
 public:
  Collector(int replicas, std::optional<double> slo_ttft_s, std::optional<double> slo_tpot_s);

  void on_arrival(const workload::RequestSpec&, int, SimTime) override { ++arrived_; }
  void on_reject(const workload::RequestSpec&, int, serving::RejectReason r, SimTime) override;
  void on_preemption(const workload::RequestSpec&, int, SimTime) override { ++preemptions_; }
  void on_response_cache_hit() { ++cache_hits_; }
  void on_prefix_host_load(int, int64_t tokens) override {
    prefix_host_ += static_cast<uint64_t>(tokens);
  }
  void on_escalation() { ++escalations_; }
  void on_kv_transfer(double bytes, double seconds) {
    ++kv_transfers_;
    kv_transfer_bytes_ += bytes;
    kv_transfer_s_ += seconds;
  }
  void on_alltoall(double bytes, SimTime delay_ns) {
    ++a2a_iterations_;
    a2a_bytes_ += bytes;
    a2a_delay_ns_ += static_cast<double>(delay_ns);
    if (delay_ns > 0) ++a2a_delayed_;
    a2a_delay_max_ns_ = std::max(a2a_delay_max_ns_, delay_ns);
  }
  void on_prefix_lookup(int, int64_t prefill_tokens, int64_t hit_tokens) override {
    prefix_lookup_ += static_cast<uint64_t>(prefill_tokens);
    prefix_hit_ += static_cast<uint64_t>(hit_tokens);
  }
  void on_completion(const serving::RequestRecord& rec) override;
  void on_token_gaps(SimTime gap_ns, uint64_t count) override;
  void on_token_gap_series(const StepSeries& series, int64_t k, uint64_t per_iteration) override;
  void on_segment(const serving::SegmentRecord& seg) override;

  /// Adds another collector's counts and histograms (a partition of the same run, e.g.
  /// fleet pools simulated apart). Both must have the same classes.
  void merge(const Collector& other);
  /// Its counts and histograms as bytes (not its settings: SLOs, classes, warm-up), and
  /// back into a collector set up like the one written (same classes; else
  /// std::runtime_error): a partition's metrics sent from another process.
  void write_state(core::ByteWriter& w) const;
  void read_state(core::ByteReader& r);
  /// Requests with id < n count towards throughput only, not latency (Workload::warmup_requests).
  void set_warmup_requests(uint64_t n) { warmup_ = n; }
  /// Per-class metrics for these classes (call before the run); their percentile targets
  /// are checked too.
  void set_classes(const std::vector<workload::RequestClass>& classes);
  /// Percentile targets over all requests (cls ""), checked by summarize().
  void set_slo_targets(const std::vector<workload::SloTarget>& targets) { slo_targets_ = targets; }
  /// Summary over [0, sim_end_ns].
  Summary summarize(SimTime sim_end_ns) const;
  uint64_t completed() const { return completed_; }
  uint64_t arrived() const { return arrived_; }
  const Histogram& itl() const { return itl_; }

 private:
  template <class Self, class Io, class Hist>
  static void visit_state(Self& c, Io io, Hist hist);

  int replicas_;
  std::optional<double> slo_ttft_s_, slo_tpot_s_;
  std::vector<workload::SloTarget> slo_targets_;
  uint64_t warmup_ = 0;
  Histogram ttft_, tpot_, itl_, e2e_, queue_;
  struct PerClass {
    workload::RequestClass info;
    Histogram ttft, tpot, e2e;
    uint64_t completed = 0, rejected = 0, good = 0;
  };
  std::vector<PerClass> classes_;
  uint64_t arrived_ = 0, completed_ = 0, rejected_[4] = {0, 0, 0, 0}, preemptions_ = 0, good_ = 0;
  uint64_t input_tokens_ = 0, output_tokens_ = 0, iterations_ = 0, decode_tokens_ = 0;
  uint64_t prefix_lookup_ = 0, prefix_hit_ = 0, prefix_host_ = 0;
  uint64_t kv_transfers_ = 0, cache_hits_ = 0, escalations_ = 0;
  double kv_transfer_bytes_ = 0, kv_transfer_s_ = 0;
  uint64_t a2a_iterations_ = 0, a2a_delayed_ = 0;
  double a2a_bytes_ = 0, a2a_delay_ns_ = 0;
  SimTime a2a_delay_max_ns_ = 0;
  double busy_s_ = 0, kv_weighted_s_ = 0, kv_peak_ = 0;
};

}  // namespace fleetsim::metrics
