// The token gaps of a run of k decode-only iterations of an unchanging batch, for
// ServingObserver::on_token_gap_series: step(j) = decode_step_ns(n, ctx0 + g·j), where the
// attended context grows by g tokens per iteration (n without speculative decoding). Shared
// by every policy that advances decode runs in closed form.
#pragma once

#include <cstdint>

#include "sim/serving/observer.h"
#include "sim/serving/step_model.h"

namespace fleetsim::serving {

class DecodeRunSeries final : public ServingObserver::StepSeries {
 public:
  /// `total_ns` is the whole run's time (all k steps), which sum_ns(1, k) reuses.
  DecodeRunSeries(const StepModel& m, int64_t n, int64_t g, int64_t ctx0, int64_t k, SimTime total_ns)
      : m_(m), n_(n), g_(g), ctx0_(ctx0), k_(k), total_ns_(total_ns) {}
  /// A run of one iteration took total_ns, which the model's step time equals unless live
  /// communication stretched the iteration (SegmentComm).
  SimTime step_ns(int64_t j) const override {
    return k_ == 1 && j == 0 ? total_ns_ : m_.decode_step_ns(n_, ctx0_ + g_ * j);
  }
  SimTime sum_ns(int64_t b, int64_t e) const override {
    if (b == 1 && e == k_) return total_ns_ - step_ns(0);  // the whole run but the first
    return m_.decode_run_ns(n_, g_, ctx0_ + g_ * b, e - b);
  }

 private:
  const StepModel& m_;
  int64_t n_, g_, ctx0_, k_;
  SimTime total_ns_;
};

}  // namespace fleetsim::serving
