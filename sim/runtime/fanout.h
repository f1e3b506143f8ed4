// What a simulation tells about its requests goes to its metrics collector and then to the
// run's extra observers (per-request CSV, time buckets, invariant checks), in that order.
// One forwarder, inline and not virtual, so every simulation fans out the same way at no
// cost; a simulation decides what to forward (a cascade's first answer, a failed replica's
// news are not).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/metrics/collector.h"
#include "sim/serving/observer.h"

namespace fleetsim::runtime {

class Fanout {
 public:
  Fanout(metrics::Collector& collector, const std::vector<serving::ServingObserver*>& extra)
      : c_(collector), extra_(extra) {}

  metrics::Collector& collector() { return c_; }
  const std::vector<serving::ServingObserver*>& extra() const { return extra_; }

  void on_arrival(const workload::RequestSpec& r, int replica, SimTime t) {
    c_.on_arrival(r, replica, t);
    for (auto* o : extra_) o->on_arrival(r, replica, t);
  }
  void on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                 SimTime t) {
    c_.on_reject(r, replica, why, t);
    for (auto* o : extra_) o->on_reject(r, replica, why, t);
  }
  void on_first_token(const workload::RequestSpec& r, int replica, SimTime t) {
    c_.on_first_token(r, replica, t);
    for (auto* o : extra_) o->on_first_token(r, replica, t);
  }
  void on_preemption(const workload::RequestSpec& r, int replica, SimTime t) {
    c_.on_preemption(r, replica, t);
    for (auto* o : extra_) o->on_preemption(r, replica, t);
  }
  void on_prefix_lookup(int replica, int64_t prefill_tokens, int64_t hit_tokens) {
    c_.on_prefix_lookup(replica, prefill_tokens, hit_tokens);
    for (auto* o : extra_) o->on_prefix_lookup(replica, prefill_tokens, hit_tokens);
  }
  void on_prefix_host_load(int replica, int64_t tokens) {
    c_.on_prefix_host_load(replica, tokens);
    for (auto* o : extra_) o->on_prefix_host_load(replica, tokens);
  }
  void on_completion(const serving::RequestRecord& rec) {
    c_.on_completion(rec);
    for (auto* o : extra_) o->on_completion(rec);
  }
  /// The collector keeps no handoffs: only the extra observers hear of them.
  void on_prefill_done(const serving::Handoff& h, int replica) {
    for (auto* o : extra_) o->on_prefill_done(h, replica);
  }
  void on_token_gaps(SimTime gap_ns, uint64_t count) {
    c_.on_token_gaps(gap_ns, count);
    for (auto* o : extra_) o->on_token_gaps(gap_ns, count);
  }
  void on_token_gap_series(const serving::ServingObserver::StepSeries& s, int64_t k, uint64_t per) {
    c_.on_token_gap_series(s, k, per);
    for (auto* o : extra_) o->on_token_gap_series(s, k, per);
  }
  void on_segment(const serving::SegmentRecord& seg) {
    c_.on_segment(seg);
    for (auto* o : extra_) o->on_segment(seg);
  }
  /// Answered from the response cache: no replica (-1), first token and end at `now`. The
  /// record it returns points to `r`.
  serving::RequestRecord on_response_cache_hit(const workload::RequestSpec& r, SimTime now) {
    serving::RequestRecord rec;
    rec.spec = &r;
    rec.replica = -1;
    rec.scheduled_ns = r.arrival_ns;
    rec.first_token_ns = rec.done_ns = now;
    c_.on_response_cache_hit();
    on_completion(rec);
    return rec;
  }

 private:
  metrics::Collector& c_;
  const std::vector<serving::ServingObserver*>& extra_;
};

}  // namespace fleetsim::runtime
