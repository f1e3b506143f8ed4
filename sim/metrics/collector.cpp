#include "sim/metrics/collector.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace fleetsim::metrics {

LatencyStats stats_of(const Histogram& h) {
  LatencyStats s;
  s.count = h.count();
  if (s.count == 0) return s;
  s.mean_s = h.mean();
  s.p50_s = h.quantile(0.50);
  s.p90_s = h.quantile(0.90);
  s.p99_s = h.quantile(0.99);
  s.max_s = h.max();
  return s;
}

namespace {

// Quantile `q` of all `completed + rejected` requests, rejected ones beyond every bound:
// q·(n + r) requests must be within the bound, all of them among the n in `h`, so the
// quantile of `h` at q' = q·(n + r)/n; past 1 the rejected alone exceed the allowance.
SloCheck check_requests(const workload::SloTarget& t, const Histogram& h, uint64_t rejected) {
  SloCheck c;
  c.target = t;
  const double n = static_cast<double>(h.count());
  const double all = n + static_cast<double>(rejected);
  if (all == 0) {
    c.met = true;
    return c;
  }
  const double q = n > 0 ? t.quantile * all / n : 2.0;
  if (q > 1.0 + 1e-12) {
    c.beyond = true;
    return c;
  }
  c.value_s = h.quantile(std::min(q, 1.0));
  c.met = c.value_s <= t.bound_s;
  return c;
}

}  // namespace

Collector::Collector(int replicas, std::optional<double> slo_ttft_s,
                     std::optional<double> slo_tpot_s)
    : replicas_(replicas), slo_ttft_s_(slo_ttft_s), slo_tpot_s_(slo_tpot_s) {}

void Collector::merge(const Collector& o) {
  if (o.classes_.size() != classes_.size())
    throw std::invalid_argument("Collector::merge: different classes");
  ttft_.merge(o.ttft_);
  tpot_.merge(o.tpot_);
  itl_.merge(o.itl_);
  e2e_.merge(o.e2e_);
  queue_.merge(o.queue_);
  for (size_t i = 0; i < classes_.size(); ++i) {
    classes_[i].ttft.merge(o.classes_[i].ttft);
    classes_[i].tpot.merge(o.classes_[i].tpot);
    classes_[i].e2e.merge(o.classes_[i].e2e);
    classes_[i].completed += o.classes_[i].completed;
    classes_[i].rejected += o.classes_[i].rejected;
    classes_[i].good += o.classes_[i].good;
  }
  arrived_ += o.arrived_;
  completed_ += o.completed_;
  for (int i = 0; i < 4; ++i) rejected_[i] += o.rejected_[i];
  preemptions_ += o.preemptions_;
  good_ += o.good_;
  input_tokens_ += o.input_tokens_;
  output_tokens_ += o.output_tokens_;
  iterations_ += o.iterations_;
  decode_tokens_ += o.decode_tokens_;
  prefix_lookup_ += o.prefix_lookup_;
  prefix_hit_ += o.prefix_hit_;
  prefix_host_ += o.prefix_host_;
  kv_transfers_ += o.kv_transfers_;
  cache_hits_ += o.cache_hits_;
  escalations_ += o.escalations_;
  kv_transfer_bytes_ += o.kv_transfer_bytes_;
  kv_transfer_s_ += o.kv_transfer_s_;
  a2a_iterations_ += o.a2a_iterations_;
  a2a_delayed_ += o.a2a_delayed_;
  a2a_bytes_ += o.a2a_bytes_;
  a2a_delay_ns_ += o.a2a_delay_ns_;
  a2a_delay_max_ns_ = std::max(a2a_delay_max_ns_, o.a2a_delay_max_ns_);
  busy_s_ += o.busy_s_;
  kv_weighted_s_ += o.kv_weighted_s_;
  kv_peak_ = std::max(kv_peak_, o.kv_peak_);
  replicas_ += o.replicas_;
}

// Every counter and histogram of the state, in one order for both directions: `io` is called
// on each counter (a reference) and `hist` on each histogram.
template <class Self, class Io, class Hist>
void Collector::visit_state(Self& c, Io io, Hist hist) {
  for (auto* h : {&c.ttft_, &c.tpot_, &c.itl_, &c.e2e_, &c.queue_}) hist(*h);
  for (auto& k : c.classes_) {
    hist(k.ttft);
    hist(k.tpot);
    hist(k.e2e);
    io(k.completed);
    io(k.rejected);
    io(k.good);
  }
  io(c.arrived_);
  io(c.completed_);
  for (auto& r : c.rejected_) io(r);
  io(c.preemptions_);
  io(c.good_);
  io(c.input_tokens_);
  io(c.output_tokens_);
  io(c.iterations_);
  io(c.decode_tokens_);
  io(c.prefix_lookup_);
  io(c.prefix_hit_);
  io(c.prefix_host_);
  io(c.kv_transfers_);
  io(c.cache_hits_);
  io(c.escalations_);
  io(c.kv_transfer_bytes_);
  io(c.kv_transfer_s_);
  io(c.a2a_iterations_);
  io(c.a2a_delayed_);
  io(c.a2a_bytes_);
  io(c.a2a_delay_ns_);
  io(c.a2a_delay_max_ns_);
  io(c.busy_s_);
  io(c.kv_weighted_s_);
  io(c.kv_peak_);
}

void Collector::write_state(core::ByteWriter& w) const {
  w.put<uint64_t>(classes_.size());
  visit_state(
      *this, [&w](const auto& v) { w.put(v); }, [&w](const Histogram& h) { h.write(w); });
}

void Collector::read_state(core::ByteReader& r) {
  if (r.get<uint64_t>() != classes_.size())
    throw std::runtime_error("Collector::read_state: a collector of other classes");
  visit_state(
      *this, [&r](auto& v) { v = r.get<std::remove_reference_t<decltype(v)>>(); },
      [&r](Histogram& h) { h = Histogram::read(r); });
}

void Collector::set_classes(const std::vector<workload::RequestClass>& classes) {
  classes_.clear();
  for (const auto& c : classes) {
    PerClass p;
    p.info = c;
    classes_.push_back(std::move(p));
  }
}

void Collector::on_reject(const workload::RequestSpec& spec, int, serving::RejectReason r,
                          SimTime) {
  static_assert(static_cast<int>(serving::RejectReason::kQueueFull) == 3, "one counter per reason");
  ++rejected_[static_cast<int>(r)];
  if (spec.cls < classes_.size()) ++classes_[spec.cls].rejected;
}

void Collector::on_completion(const serving::RequestRecord& rec) {
  const auto& spec = *rec.spec;
  ++completed_;
  input_tokens_ += static_cast<uint64_t>(spec.prompt_tokens);
  output_tokens_ += static_cast<uint64_t>(spec.output_tokens);
  if (spec.id < warmup_) return;  // warm-up: throughput only
  const double ttft = ns_to_seconds(rec.first_token_ns - spec.arrival_ns);
  ttft_.add(ttft);
  e2e_.add(ns_to_seconds(rec.done_ns - spec.arrival_ns));
  queue_.add(ns_to_seconds(rec.scheduled_ns - spec.arrival_ns));
  bool good = !slo_ttft_s_ || ttft <= *slo_ttft_s_;
  double tpot = -1;
  if (spec.output_tokens > 1) {
    // TPOT: mean time per output token after the first.
    tpot = ns_to_seconds(rec.done_ns - rec.first_token_ns) / (spec.output_tokens - 1);
    tpot_.add(tpot);
    good = good && (!slo_tpot_s_ || tpot <= *slo_tpot_s_);
  }
  if (good) ++good_;
  if (spec.cls < classes_.size()) {
    PerClass& c = classes_[spec.cls];
    ++c.completed;
    c.ttft.add(ttft);
    c.e2e.add(ns_to_seconds(rec.done_ns - spec.arrival_ns));
    // The class's own targets, or the scenario's where the class has none.
    const double t_slo = c.info.slo_ttft_s > 0 ? c.info.slo_ttft_s : slo_ttft_s_.value_or(0);
    const double p_slo = c.info.slo_tpot_s > 0 ? c.info.slo_tpot_s : slo_tpot_s_.value_or(0);
    if (tpot >= 0) c.tpot.add(tpot);
    if (meets_slo(ttft, tpot, t_slo, p_slo)) ++c.good;
  }
}

void Collector::on_token_gaps(SimTime gap_ns, uint64_t count) {
  itl_.add(ns_to_seconds(gap_ns), count);
}

void Collector::on_token_gap_series(const StepSeries& series, int64_t k, uint64_t per_iteration) {
  // step(j) is non-decreasing: add the run j in [1, k) one histogram bucket at a time, each
  // bucket's extent found by binary search, with the exact sum of the values it holds.
  if (k <= 1) return;
  const double first = ns_to_seconds(series.step_ns(1));
  const double last = ns_to_seconds(series.step_ns(k - 1));
  if (itl_.bucket_of(first) == itl_.bucket_of(last)) {
    // The common case: a stretch's step time changes by less than a bucket's width.
    const double sum = ns_to_seconds(series.sum_ns(1, k)) * static_cast<double>(per_iteration);
    itl_.add_bulk(first, static_cast<uint64_t>(k - 1) * per_iteration, sum, first, last);
    return;
  }
  int64_t j = 1;
  while (j < k) {
    const double v = ns_to_seconds(series.step_ns(j));
    const int64_t bucket = itl_.bucket_of(v);
    int64_t lo = j, hi = k - 1;  // last index in the same bucket
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (itl_.bucket_of(ns_to_seconds(series.step_ns(mid))) == bucket)
        lo = mid;
      else
        hi = mid - 1;
    }
    const uint64_t n = static_cast<uint64_t>(lo - j + 1) * per_iteration;
    const double sum = ns_to_seconds(series.sum_ns(j, lo + 1)) * static_cast<double>(per_iteration);
    itl_.add_bulk(v, n, sum, v, ns_to_seconds(series.step_ns(lo)));
    j = lo + 1;
  }
}

void Collector::on_segment(const serving::SegmentRecord& seg) {
  const double dur = ns_to_seconds(seg.end_ns - seg.start_ns);
  busy_s_ += dur;
  iterations_ += static_cast<uint64_t>(seg.iterations);
  decode_tokens_ += static_cast<uint64_t>(seg.decode_tokens);
  if (seg.kv_blocks_total > 0) {
    // KV use grows monotonically inside a segment: the trapezoid is the time average to
    // within one block per sequence.
    const double total = static_cast<double>(seg.kv_blocks_total);
    const double a = static_cast<double>(seg.kv_blocks_start) / total;
    const double b = static_cast<double>(seg.kv_blocks_end) / total;
    kv_weighted_s_ += dur * 0.5 * (a + b);
    kv_peak_ = std::max(kv_peak_, std::max(a, b));
  }
}

Summary Collector::summarize(SimTime sim_end_ns) const {
  Summary s;
  s.requests_arrived = arrived_;
  s.requests_completed = completed_;
  s.rejected_too_long_for_model = rejected_[0];
  s.rejected_too_long_for_kv = rejected_[1];
  s.rejected_too_long_for_batch = rejected_[2];
  s.rejected_queue_full = rejected_[3];
  s.requests_rejected = rejected_[0] + rejected_[1] + rejected_[2] + rejected_[3];
  s.preemptions = preemptions_;
  s.kv_transfers = kv_transfers_;
  s.response_cache_hits = cache_hits_;
  for (const auto& c : classes_) {
    ClassSummary cs;
    cs.name = c.info.name;
    cs.priority = c.info.priority;
    cs.completed = c.completed;
    cs.rejected = c.rejected;
    cs.ttft = stats_of(c.ttft);
    cs.tpot = stats_of(c.tpot);
    cs.e2e = stats_of(c.e2e);
    cs.slo_attainment =
        c.completed > 0 ? static_cast<double>(c.good) / static_cast<double>(c.completed) : 0.0;
    s.classes.push_back(cs);
  }
  for (const auto& t : slo_targets_) {
    if (t.metric == workload::SloMetric::kItl) {
      SloCheck c;
      c.target = t;
      c.value_s = itl_.count() ? itl_.quantile(t.quantile) : 0.0;
      c.met = c.value_s <= t.bound_s;
      s.slo_checks.push_back(c);
    } else {
      s.slo_checks.push_back(check_requests(
          t, t.metric == workload::SloMetric::kTtft ? ttft_ : tpot_, s.requests_rejected));
    }
  }
  for (const auto& c : classes_)
    for (const auto& t : c.info.slo_targets)
      s.slo_checks.push_back(
          check_requests(t, t.metric == workload::SloMetric::kTtft ? c.ttft : c.tpot, c.rejected));
  s.escalations = escalations_;
  s.kv_transfer_bytes = kv_transfer_bytes_;
  s.kv_transfer_mean_s =
      kv_transfers_ > 0 ? kv_transfer_s_ / static_cast<double>(kv_transfers_) : 0.0;
  s.alltoall_iterations = a2a_iterations_;
  s.alltoall_delayed = a2a_delayed_;
  s.alltoall_bytes = a2a_bytes_;
  s.alltoall_delay_mean_s =
      a2a_iterations_ > 0 ? a2a_delay_ns_ * 1e-9 / static_cast<double>(a2a_iterations_) : 0.0;
  s.alltoall_delay_max_s = ns_to_seconds(a2a_delay_max_ns_);
  s.prefix_lookup_tokens = prefix_lookup_;
  s.prefix_hit_tokens = prefix_hit_;
  s.prefix_host_tokens = prefix_host_;
  s.prefix_hit_rate = prefix_lookup_ > 0
                          ? static_cast<double>(prefix_hit_) / static_cast<double>(prefix_lookup_)
                          : 0.0;
  s.input_tokens = input_tokens_;
  s.output_tokens = output_tokens_;
  s.ttft = stats_of(ttft_);
  s.tpot = stats_of(tpot_);
  s.itl = stats_of(itl_);
  s.e2e = stats_of(e2e_);
  s.queue = stats_of(queue_);
  s.iterations = iterations_;
  s.mean_decode_batch =
      iterations_ > 0 ? static_cast<double>(decode_tokens_) / static_cast<double>(iterations_) : 0;
  s.sim_duration_s = ns_to_seconds(sim_end_ns);
  if (s.sim_duration_s > 0) {
    s.input_tok_per_s = static_cast<double>(input_tokens_) / s.sim_duration_s;
    s.output_tok_per_s = static_cast<double>(output_tokens_) / s.sim_duration_s;
    s.requests_per_s = static_cast<double>(completed_) / s.sim_duration_s;
    s.goodput_req_per_s = static_cast<double>(good_) / s.sim_duration_s;
    s.replica_busy_fraction = busy_s_ / (s.sim_duration_s * replicas_);
  }
  s.slo_attainment =
      completed_ > 0 ? static_cast<double>(good_) / static_cast<double>(completed_) : 0;
  s.kv_occupancy_mean = busy_s_ > 0 ? kv_weighted_s_ / busy_s_ : 0;
  s.kv_occupancy_peak = kv_peak_;
  return s;
}

}  // namespace fleetsim::metrics
