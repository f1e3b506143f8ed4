#include "sim/metrics/time_buckets.h"

#include <algorithm>
#include <stdexcept>

namespace fleetsim::metrics {

TimeBuckets::TimeBuckets(SimTime width_ns, size_t max_buckets, double rel_error)
    : width_ns_(width_ns), max_buckets_(max_buckets), rel_error_(rel_error) {
  if (width_ns <= 0) throw std::invalid_argument("TimeBuckets: width must be > 0");
  if (max_buckets < 2 || max_buckets % 2)
    throw std::invalid_argument("TimeBuckets: max_buckets must be even and >= 2");
  Histogram probe(rel_error);  // checks rel_error
}

void TimeBuckets::write(core::ByteWriter& w) const {
  w.put(width_ns_);
  w.put<uint64_t>(max_buckets_);
  w.put(rel_error_);
  w.put<uint64_t>(buckets_.size());
  for (const Bucket& b : buckets_) {
    b.latency.write(w);
    w.put(b.busy_s);
    w.put(b.held_s);
    w.put(b.iterations);
    w.put(b.decode_tokens);
  }
}

TimeBuckets TimeBuckets::read(core::ByteReader& r) {
  const auto width_ns = r.get<SimTime>();
  const auto max_buckets = static_cast<size_t>(r.get<uint64_t>());
  const auto rel_error = r.get<double>();
  TimeBuckets t(width_ns, max_buckets, rel_error);
  const size_t n = r.length(8 * 6);
  for (size_t i = 0; i < n; ++i) {
    Bucket b{Histogram::read(r)};
    b.busy_s = r.get<double>();
    b.held_s = r.get<double>();
    b.iterations = r.get<double>();
    b.decode_tokens = r.get<double>();
    t.buckets_.push_back(std::move(b));
  }
  return t;
}

void TimeBuckets::absorb(Bucket& into, const Bucket& from) {
  into.latency.merge(from.latency);
  into.busy_s += from.busy_s;
  into.held_s += from.held_s;
  into.iterations += from.iterations;
  into.decode_tokens += from.decode_tokens;
}

void TimeBuckets::coarsen() {
  // Bucket k of width 2w covers old buckets 2k and 2k+1.
  std::vector<Bucket> merged;
  merged.reserve(max_buckets_);
  for (size_t i = 0; i < buckets_.size(); i += 2) {
    Bucket b = std::move(buckets_[i]);
    if (i + 1 < buckets_.size()) absorb(b, buckets_[i + 1]);
    merged.push_back(std::move(b));
  }
  buckets_ = std::move(merged);
  width_ns_ *= 2;
}

TimeBuckets::Bucket& TimeBuckets::at(SimTime t) {
  if (t < 0) throw std::invalid_argument("TimeBuckets: time must be >= 0");
  auto k = static_cast<size_t>(t / width_ns_);
  while (k >= max_buckets_) {
    coarsen();
    k = static_cast<size_t>(t / width_ns_);
  }
  while (buckets_.size() <= k) buckets_.push_back(Bucket{Histogram(rel_error_)});
  return buckets_[k];
}

void TimeBuckets::add_latency(SimTime t, double value_s) { at(t).latency.add(value_s); }

template <class F>
void TimeBuckets::spread(SimTime start, SimTime end, F f) {
  if (end <= start) return;
  at(end - 1);  // coarsen first: the widths below are then final
  const double len = static_cast<double>(end - start);
  for (SimTime lo = start; lo < end;) {
    const SimTime hi = std::min(end, (lo / width_ns_ + 1) * width_ns_);
    f(buckets_[static_cast<size_t>(lo / width_ns_)], static_cast<double>(hi - lo) / len);
    lo = hi;
  }
}

void TimeBuckets::add_segment(SimTime start, SimTime end, int64_t iterations,
                              int64_t decode_tokens) {
  const double len_s = ns_to_seconds(end - start);
  spread(start, end, [&](Bucket& b, double share) {
    b.busy_s += share * len_s;
    b.iterations += share * static_cast<double>(iterations);
    b.decode_tokens += share * static_cast<double>(decode_tokens);
  });
}

void TimeBuckets::add_held(SimTime start, SimTime end, double replicas) {
  const double len_s = ns_to_seconds(end - start);
  spread(start, end, [&](Bucket& b, double share) { b.held_s += share * len_s * replicas; });
}

void TimeBuckets::merge(const TimeBuckets& other) {
  if (other.max_buckets_ != max_buckets_)
    throw std::invalid_argument("TimeBuckets::merge: bucket limits differ");
  TimeBuckets o = other;
  while (width_ns_ < o.width_ns_) coarsen();
  while (o.width_ns_ < width_ns_) o.coarsen();
  if (o.width_ns_ != width_ns_)
    throw std::invalid_argument("TimeBuckets::merge: initial widths differ");
  if (buckets_.size() < o.buckets_.size())
    buckets_.resize(o.buckets_.size(), Bucket{Histogram(rel_error_)});
  for (size_t i = 0; i < o.buckets_.size(); ++i) absorb(buckets_[i], o.buckets_[i]);
}

Histogram TimeBuckets::total_latency() const {
  Histogram h(rel_error_);
  for (const auto& b : buckets_) h.merge(b.latency);
  return h;
}

TimeBucketsObserver::TimeBucketsObserver(int replicas, SimTime width_ns)
    : replicas_(replicas), buckets_(width_ns) {}

void TimeBucketsObserver::on_completion(const serving::RequestRecord& rec) {
  buckets_.add_latency(rec.first_token_ns,
                       ns_to_seconds(rec.first_token_ns - rec.spec->arrival_ns));
}

void TimeBucketsObserver::on_segment(const serving::SegmentRecord& seg) {
  buckets_.add_segment(seg.start_ns, seg.end_ns, seg.iterations, seg.decode_tokens);
}

void TimeBucketsObserver::finish(SimTime end_ns) { buckets_.add_held(0, end_ns, replicas_); }

}  // namespace fleetsim::metrics
