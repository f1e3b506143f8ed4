// The network seam: what collective communication and point-to-point transfers cost.
//
// The performance model asks a NetworkModel for the time of a collective over a group of
// GPUs; it never does α-β arithmetic itself. AnalyticNetwork is the α-β implementation
// (DESIGN.md §network); the SimGrid-backed model (issue 7) implements the same interface.
//
// A group is `size` GPUs, `per_domain` of which share one scale-up domain (NVLink/xGMI);
// a group that fits in one domain runs entirely on the scale-up level, a larger one is
// hierarchical: the scale-up level inside each domain and the scale-out NICs between them.
#pragma once

#include <algorithm>

namespace fleetsim::hw {

/// One level of the fabric: α (latency per message/step) and β⁻¹ (per-GPU bandwidth, one
/// direction).
struct LinkLevel {
  double latency_s = 0;
  double bw_bytes_per_s = 0;
};

struct CommGroup {
  int size = 1;        ///< GPUs taking part
  int per_domain = 1;  ///< of those, GPUs per scale-up domain (≤ size)
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  /// All-reduce of `bytes` (the full buffer each GPU holds) over the group.
  virtual double allreduce_s(double bytes, const CommGroup& g) const = 0;
  /// All-to-all where each GPU sends `bytes_per_gpu` spread evenly over the others
  /// (MoE dispatch or combine).
  virtual double alltoall_s(double bytes_per_gpu, const CommGroup& g) const = 0;
  /// One point-to-point transfer (pipeline hand-off); `cross_domain` when it leaves the
  /// scale-up domain.
  virtual double p2p_s(double bytes, bool cross_domain) const = 0;
};

/// α-β costs:
///   ring all-reduce over n GPUs on one level: 2(n−1)·α + 2(n−1)/n · bytes / bw
///   hierarchical (d domains of m GPUs): reduce-scatter inside (m−1)·α + (m−1)/m·bytes/bw_up,
///     ring all-reduce of bytes/m across domains on the scale-out level, all-gather inside
///     (same as the reduce-scatter)
///   all-to-all over n GPUs: (n−1)·α + (n−1)/n · bytes_per_gpu / bw, with the part leaving
///     the domain ((n−m)/n of it) on the scale-out level when n > m, the slower level bounding
///   point-to-point: α + bytes / bw of the level it crosses
class AnalyticNetwork final : public NetworkModel {
 public:
  AnalyticNetwork() = default;
  AnalyticNetwork(LinkLevel scaleup, LinkLevel scaleout) : up_(scaleup), out_(scaleout) {}

  double allreduce_s(double bytes, const CommGroup& g) const override;
  double alltoall_s(double bytes_per_gpu, const CommGroup& g) const override;
  double p2p_s(double bytes, bool cross_domain) const override;

  const LinkLevel& scaleup() const { return up_; }
  const LinkLevel& scaleout() const { return out_; }

  /// Ring all-reduce on one level.
  static double ring_allreduce_s(double bytes, int n, const LinkLevel& l);

 private:
  LinkLevel up_, out_;
};

}  // namespace fleetsim::hw
