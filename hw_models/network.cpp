#include "hw_models/network.h"

#include <stdexcept>

namespace fleetsim::hw {

namespace {
void need_bw(const LinkLevel& l, const char* what) {
  if (!(l.bw_bytes_per_s > 0))
    throw std::invalid_argument(std::string("network: the ") + what +
                                " level has no bandwidth but the group spans it");
}
}  // namespace

double AnalyticNetwork::ring_allreduce_s(double bytes, int n, const LinkLevel& l) {
  if (n <= 1) return 0.0;
  const double steps = 2.0 * (n - 1);
  return steps * l.latency_s + steps / n * bytes / l.bw_bytes_per_s;
}

double AnalyticNetwork::allreduce_s(double bytes, const CommGroup& g) const {
  if (g.size <= 1) return 0.0;
  const int m = std::clamp(g.per_domain, 1, g.size);
  if (m >= g.size) {
    need_bw(up_, "scale-up");
    return ring_allreduce_s(bytes, g.size, up_);
  }
  need_bw(out_, "scale-out");
  const int domains = (g.size + m - 1) / m;
  double t = 0;
  if (m > 1) {
    need_bw(up_, "scale-up");
    // Reduce-scatter and all-gather inside the domain: each (m−1) steps of bytes/m.
    t += 2.0 * ((m - 1) * up_.latency_s + (m - 1.0) / m * bytes / up_.bw_bytes_per_s);
  }
  // Each GPU then all-reduces its 1/m shard with its peers in the other domains.
  t += ring_allreduce_s(bytes / m, domains, out_);
  return t;
}

double AnalyticNetwork::alltoall_s(double bytes_per_gpu, const CommGroup& g) const {
  if (g.size <= 1) return 0.0;
  const int n = g.size, m = std::clamp(g.per_domain, 1, g.size);
  need_bw(up_, "scale-up");
  const double inside = (m - 1.0) / n * bytes_per_gpu;
  double t = (n - 1) * up_.latency_s + inside / up_.bw_bytes_per_s;
  if (m < n) {
    need_bw(out_, "scale-out");
    const double outside = static_cast<double>(n - m) / n * bytes_per_gpu;
    t = std::max(t, (n - 1) * out_.latency_s + outside / out_.bw_bytes_per_s);
  }
  return t;
}

double AnalyticNetwork::p2p_s(double bytes, bool cross_domain) const {
  const LinkLevel& l = cross_domain ? out_ : up_;
  need_bw(l, cross_domain ? "scale-out" : "scale-up");
  return l.latency_s + bytes / l.bw_bytes_per_s;
}

}  // namespace fleetsim::hw
