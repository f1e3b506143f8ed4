#include "sim/fleet/result_codec.h"

#include <stdexcept>
#include <type_traits>

namespace fleetsim::fleet {

namespace {

// One field list per type serves both directions: `S` is `const T` when writing and `T`
// when reading, and the Io object does the one or the other.
struct Out {
  core::ByteWriter& w;
  template <class T>
  void num(const T& v) {
    w.put(v);
  }
  void str(const std::string& s) { w.put_string(s); }
  template <class T>
  void vec(const std::vector<T>& v) {
    w.put_vector(v);
  }
  template <class T, class F>
  void list(const std::vector<T>& v, F each) {
    w.put<uint64_t>(v.size());
    for (const T& x : v) each(x);
  }
  void buckets(const metrics::TimeBuckets& t) { t.write(w); }
};

struct In {
  core::ByteReader& r;
  template <class T>
  void num(T& v) {
    v = r.get<T>();
  }
  void str(std::string& s) { s = r.get_string(); }
  template <class T>
  void vec(std::vector<T>& v) {
    v = r.get_vector<T>();
  }
  template <class T, class F>
  void list(std::vector<T>& v, F each) {
    v.resize(r.length(1));
    for (T& x : v) each(x);
  }
  void buckets(metrics::TimeBuckets& t) { t = metrics::TimeBuckets::read(r); }
};

template <class S, class Io>
void stats(S& s, Io& io) {
  io.num(s.count);
  io.num(s.mean_s);
  io.num(s.p50_s);
  io.num(s.p90_s);
  io.num(s.p99_s);
  io.num(s.max_s);
}

template <class S, class Io>
void sample(S& s, Io& io) {
  io.num(s.t_s);
  io.num(s.arrivals);
  io.num(s.served);
  io.num(s.good);
  io.num(s.replicas_mean);
  io.num(s.gpus_mean);
  io.num(s.capacity_slots);
  io.num(s.outstanding_peak);
  io.num(s.failures);
}

template <class S, class Io>
void region(S& g, Io& io) {
  io.str(g.name);
  io.num(g.arrivals);
  io.num(g.served);
  io.num(g.good);
  io.num(g.spilled_out);
  io.num(g.spilled_in);
  io.vec(g.side_served);
  io.vec(g.side_good);
  stats(g.ttft, io);
  io.list(g.series, [&io](auto& x) { sample(x, io); });
  io.buckets(g.over_time);
}

template <class S, class Io>
void pool(S& p, Io& io) {
  io.num(p.index);
  io.num(p.region);
  io.str(p.name);
  io.str(p.model);
  io.str(p.gpu);
  io.num(p.gpus_per_replica);
  io.num(p.replicas_configured);
  io.num(p.replicas_simulated);
  io.num(p.replicas_peak);
  io.num(p.replica_hours);
  io.num(p.busy_hours);
  io.num(p.iterations);
  io.num(p.decode_tokens);
  io.num(p.completed);
  io.num(p.failures);
  io.num(p.scale_ups);
  io.num(p.scale_downs);
  io.num(p.input_tokens);
  io.num(p.output_tokens);
  stats(p.tpot, io);
  io.num(p.load_time_s);
  io.num(p.down_peak);
}

template <class S, class Io>
void failure_class(S& f, Io& io) {
  io.num(f.events);
  io.num(f.replicas_down);
  io.num(f.calls_retried);
  io.num(f.retried_completed);
  io.num(f.retried_good);
  io.num(f.calls_failed);
}

template <class S, class Io>
void outage(S& o, Io& io) {
  io.num(o.region);
  io.num(o.start_s);
  io.num(o.end_s);
  io.num(o.calls);
  io.num(o.completed);
  io.num(o.good);
  io.num(o.ttft_min_s);
  io.num(o.replicas_down);
  io.num(o.calls_retried);
  io.list(o.surviving, [&io](auto& l) {
    io.num(l.region);
    io.num(l.model);
    io.str(l.model_id);
    io.num(l.outstanding_peak);
    io.num(l.slots_at_peak);
    io.num(l.replicas_at_peak);
    io.num(l.extra_replicas);
  });
}

template <class S, class Io>
void fleet_result(S& f, Io& io) {
  io.list(f.regions, [&io](auto& g) { region(g, io); });
  io.list(f.pools, [&io](auto& p) { pool(p, io); });
  io.num(f.retried);
  io.num(f.retried_completed);
  stats(f.retried_e2e, io);
  io.num(f.failed_calls);
  io.num(f.unfinished);
  for (auto& c : f.failure_classes) failure_class(c, io);
  io.list(f.outages, [&io](auto& o) { outage(o, io); });
  io.num(f.sessions);
  io.num(f.sample);
  io.num(f.sim_end_s);
  io.num(f.peak_rss_bytes);
  io.num(f.events);
  io.num(f.wall_s);
}

}  // namespace

std::string encode_partition(const FleetResult& res, const metrics::Collector& collector,
                             const metrics::Histogram& retried_e2e) {
  core::ByteWriter w;
  Out out{w};
  fleet_result(res, out);
  collector.write_state(w);
  retried_e2e.write(w);
  return w.take();
}

PartitionResult decode_partition(const std::string& bytes, const metrics::Collector& blank,
                                 const FleetSpec& spec, const std::string& what) {
  core::ByteReader r(bytes, what);
  In in{r};
  PartitionResult p{FleetResult{}, blank, metrics::Histogram{}};
  fleet_result(p.result, in);
  p.collector.read_state(r);
  p.retried_e2e = metrics::Histogram::read(r);
  r.expect_end();
  // Pools by their index in the scenario's order (regions, then pools).
  std::vector<const FleetPool*> by_index;
  for (const auto& g : spec.regions)
    for (const auto& fp : g.pools) by_index.push_back(&fp);
  for (PoolResult& pr : p.result.pools) {
    if (pr.index < 0 || static_cast<size_t>(pr.index) >= by_index.size() ||
        by_index[static_cast<size_t>(pr.index)]->name != pr.name)
      throw std::runtime_error(what + ": pool " + std::to_string(pr.index) + " (" + pr.name +
                               ") is not a pool of this fleet");
    pr.spec = by_index[static_cast<size_t>(pr.index)];
  }
  return p;
}

}  // namespace fleetsim::fleet
