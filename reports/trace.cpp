#include "reports/trace.h"

#include <cstdio>
#include <vector>

#include "hw_models/error.h"

namespace fleetsim::reports {

namespace {
// Trace timestamps are microseconds (doubles: nanosecond resolution survives).
double us(SimTime ns) { return static_cast<double>(ns) / 1e3; }
}  // namespace

PerfettoTrace::PerfettoTrace(const std::string& path, uint64_t max_events)
    : file_(path), out_(file_.stream()), max_events_(max_events) {
  out_ << "[\n";
  event(
      R"J({"ph":"M","pid":1,"name":"process_name","args":{"name":"replicas (batch segments)"}})J");
  event(R"({"ph":"M","pid":2,"name":"process_name","args":{"name":"requests"}})");
}

uint64_t PerfettoTrace::finish() {
  if (!closed_) {
    out_ << "\n]\n";
    file_.commit();
    closed_ = true;
  }
  return events_;
}

bool PerfettoTrace::room(int n) {
  if (events_ + static_cast<uint64_t>(n) <= max_events_) return true;
  truncated_ = true;
  return false;
}

void PerfettoTrace::event(const std::string& record) {
  if (!first_) out_ << ",\n";
  out_ << record;
  first_ = false;
  ++events_;
  if ((events_ & 1023) == 0) file_.check();
}

void PerfettoTrace::name_replica(int replica) {
  if (replica < 0) return;
  if (static_cast<size_t>(replica) >= named_.size())
    named_.resize(static_cast<size_t>(replica) + 1, false);
  if (named_[static_cast<size_t>(replica)]) return;
  named_[static_cast<size_t>(replica)] = true;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                R"({"ph":"M","pid":1,"tid":%d,"name":"thread_name","args":{"name":"replica %d"}})",
                replica, replica);
  event(buf);
}

void PerfettoTrace::on_segment(const serving::SegmentRecord& seg) {
  if (!room(2)) return;
  name_replica(seg.replica);
  const char* name =
      seg.prefill_tokens > 0 ? (seg.decode_tokens > 0 ? "prefill+decode" : "prefill") : "decode";
  char buf[400];
  std::snprintf(
      buf, sizeof buf,
      R"({"ph":"X","pid":1,"tid":%d,"name":"%s","ts":%.3f,"dur":%.3f,"args":{"iterations":%lld,)"
      R"("prefill_tokens":%lld,"decode_tokens":%lld,"kv_blocks_used":%lld,"kv_blocks_total":%lld}})",
      seg.replica, name, us(seg.start_ns), us(seg.end_ns - seg.start_ns),
      static_cast<long long>(seg.iterations), static_cast<long long>(seg.prefill_tokens),
      static_cast<long long>(seg.decode_tokens), static_cast<long long>(seg.kv_blocks_end),
      static_cast<long long>(seg.kv_blocks_total));
  event(buf);
}

void PerfettoTrace::on_completion(const serving::RequestRecord& rec) {
  if (!room(8)) return;
  const auto& r = *rec.spec;
  // One async slice per request, with its phases nested inside (same id and category).
  struct Phase {
    const char* name;
    SimTime b, e;
  };
  const Phase phases[] = {{"request", r.arrival_ns, rec.done_ns},
                          {"queue", r.arrival_ns, rec.scheduled_ns},
                          {"prefill", rec.scheduled_ns, rec.first_token_ns},
                          {"decode", rec.first_token_ns, rec.done_ns}};
  char buf[400];
  for (const Phase& p : phases) {
    std::snprintf(
        buf, sizeof buf,
        R"({"ph":"b","pid":2,"cat":"request","id":%llu,"name":"%s","ts":%.3f,"args":{"replica":%d,)"
        R"("prompt_tokens":%d,"output_tokens":%d}})",
        static_cast<unsigned long long>(r.id), p.name, us(p.b), rec.replica, r.prompt_tokens,
        r.output_tokens);
    event(buf);
    std::snprintf(buf, sizeof buf,
                  R"({"ph":"e","pid":2,"cat":"request","id":%llu,"name":"%s","ts":%.3f})",
                  static_cast<unsigned long long>(r.id), p.name, us(p.e));
    event(buf);
  }
}

void PerfettoTrace::on_reject(const workload::RequestSpec& r, int replica,
                              serving::RejectReason why, SimTime t) {
  if (!room(1)) return;
  char buf[300];
  std::snprintf(
      buf, sizeof buf,
      R"({"ph":"n","pid":2,"cat":"request","id":%llu,"name":"rejected: %s","ts":%.3f,"args":{"replica":%d}})",
      static_cast<unsigned long long>(r.id), serving::reject_reason_name(why), us(t), replica);
  event(buf);
}

}  // namespace fleetsim::reports
