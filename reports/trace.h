// A Chrome/Perfetto trace of a run (`fleetsim run --trace FILE`): one track per replica
// with its batch segments (an iteration or a closed-form stretch of decode iterations),
// and each request as an async slice (queue → prefill → decode). Open it in
// https://ui.perfetto.dev or chrome://tracing. Meant for small runs: it stops writing
// after `max_events` events and says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw_models/files.h"
#include "sim/serving/observer.h"

namespace fleetsim::reports {

class PerfettoTrace final : public serving::ServingObserver {
 public:
  /// Writes to a temporary file that finish() renames into place; destroyed without finish()
  /// (an error, an interruption) it leaves nothing.
  explicit PerfettoTrace(const std::string& path, uint64_t max_events = 2'000'000);
  void on_segment(const serving::SegmentRecord& seg) override;
  void on_completion(const serving::RequestRecord& rec) override;
  void on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                 SimTime t) override;
  /// Closes the JSON array and the file (InputError naming it if a write failed). Returns the
  /// events written.
  uint64_t finish();
  bool truncated() const { return truncated_; }

 private:
  bool room(int n);
  void event(const std::string& record);
  void name_replica(int replica);

  files::AtomicFile file_;
  std::ostream& out_;
  uint64_t max_events_, events_ = 0;
  bool first_ = true, truncated_ = false, closed_ = false;
  std::vector<bool> named_;
};

}  // namespace fleetsim::reports
