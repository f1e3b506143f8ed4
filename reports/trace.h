// A Chrome/Perfetto trace of a run (`fleetsim run --trace FILE`): one track per replica
// with its batch segments (an iteration or a closed-form stretch of decode iterations),
// and each request as an async slice (queue → prefill → decode). Open it in
// https://ui.perfetto.dev or chrome://tracing. Meant for small runs: it stops writing
// after `max_events` events and says so.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "sim/serving/observer.h"

namespace fleetsim::reports {

class PerfettoTrace final : public serving::ServingObserver {
 public:
  explicit PerfettoTrace(const std::string& path, uint64_t max_events = 2'000'000);
  ~PerfettoTrace() override;
  void on_segment(const serving::SegmentRecord& seg) override;
  void on_completion(const serving::RequestRecord& rec) override;
  void on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                 SimTime t) override;
  /// Closes the JSON array (also done by the destructor). Returns the events written.
  uint64_t finish();
  bool truncated() const { return truncated_; }

 private:
  bool room(int n);
  void event(const std::string& record);
  void name_replica(int replica);

  std::ofstream out_;
  std::string path_;
  uint64_t max_events_, events_ = 0;
  bool first_ = true, truncated_ = false, closed_ = false;
  std::vector<bool> named_;
};

}  // namespace fleetsim::reports
