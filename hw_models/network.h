// The network seam: what collective communication and point-to-point transfers cost.
//
// The performance model asks a NetworkModel for the time of a collective over a group of
// GPUs; it never does α-β arithmetic itself. AnalyticNetwork is the α-β implementation
// (DESIGN.md §network); the SimGrid-backed model implements the same interface.
//
// A group is `size` GPUs, `per_domain` of which share one scale-up domain (NVLink/xGMI);
// a group that fits in one domain runs entirely on the scale-up level, a larger one is
// hierarchical: the scale-up level inside each domain and the scale-out NICs between them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

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
  /// Reduce-scatter of a `bytes` buffer (each GPU ends with bytes/size of the sum).
  virtual double reduce_scatter_s(double bytes, const CommGroup& g) const = 0;
  /// All-gather into a `bytes` buffer (each GPU contributes bytes/size).
  virtual double allgather_s(double bytes, const CommGroup& g) const = 0;
  /// All-reduce of `bytes` by binomial trees (reduce to one GPU, then broadcast): fewer
  /// steps than the ring (2·⌈log₂ n⌉ instead of 2(n−1)), each moving the whole buffer.
  virtual double tree_allreduce_s(double bytes, const CommGroup& g) const = 0;
};

/// The physical fabric the network models share (built from the catalog's node and
/// interconnect entries): `gpus` GPUs on nodes of `gpus_per_node`, scale-up domains of
/// `domain_gpus` (a multiple of gpus_per_node: 8 on an HGX node, 72 on a GB200 NVL72 rack)
/// joined by an NVSwitch-like crossbar, and `nics_per_node` scale-out NICs per node on a
/// rail-optimized fat tree: NIC k of every node sits on rail k; a leaf switch per rail
/// serves `nodes_per_leaf` nodes, and its uplinks carry nodes_per_leaf·nic bandwidth /
/// `oversubscription` to the spine. GPU g lives on node g / gpus_per_node and uses NIC
/// (g mod gpus_per_node)·nics_per_node / gpus_per_node.
///
/// `regions` > 1 splits the nodes evenly into regions (consecutive nodes), each with its
/// own fat tree; traffic between two regions climbs to its spine and crosses one WAN link
/// per ordered region pair (`wan`: that link's bandwidth and one-way latency).
struct Fabric {
  int gpus = 8;
  int gpus_per_node = 8;
  int domain_gpus = 8;
  int nics_per_node = 8;
  LinkLevel scaleup;  ///< per GPU, per direction; latency = α of one GPU→GPU step
  LinkLevel nic;      ///< per NIC port, per direction; latency = α of one NIC→NIC step
  int nodes_per_leaf = 32;
  double oversubscription = 1.0;
  int regions = 1;
  LinkLevel wan;  ///< per ordered region pair, per direction (regions > 1)

  /// Scale-out bandwidth per GPU when every GPU of a node sends at once.
  double scaleout_bw_per_gpu() const {
    return gpus_per_node > 0 ? nic.bw_bytes_per_s * nics_per_node / gpus_per_node : 0.0;
  }
  /// Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
  /// A stable text form (one `key=value` per line; doubles in hex-float, so exact).
  std::string serialize() const;
  static Fabric parse(const std::string& text);
  /// FNV-1a of serialize(): names cache files.
  uint64_t hash() const;
};

/// α-β costs:
///   ring all-reduce over n GPUs on one level: 2(n−1)·α + 2(n−1)/n · bytes / bw
///   hierarchical (d domains of m GPUs): reduce-scatter inside (m−1)·α + (m−1)/m·bytes/bw_up,
///     ring all-reduce of bytes/m across domains on the scale-out level, all-gather inside
///     (same as the reduce-scatter)
///   all-to-all over n GPUs: (n−1)·α + (n−1)/n · bytes_per_gpu / bw on one level; with
///     d > 1 domains each GPU sends its m−1 in-domain messages over the scale-up level
///     ((m−1)·α_up + (m−1)/n·bytes/bw_up) while its n−m other messages go out over the NIC
///     ((n−m)·α_out + (n−m)/n·bytes·oversubscription/bw_out): the slower level bounds
///   point-to-point: α + bytes / bw of the level it crosses
///   reduce-scatter and all-gather on one level: (n−1)·α + (n−1)/n·bytes/bw; hierarchical:
///     the scale-up part inside each domain plus the same across the d domains on the
///     scale-out level for bytes/m (a ring all-reduce is exactly reduce-scatter + all-gather)
///   tree all-reduce: 2·(⌈log₂ m⌉·(α_up + bytes/bw_up) + ⌈log₂ d⌉·(α_out + bytes/bw_out))
///     (binomial reduce inside the domain, then across domain leaders; broadcast back)
///
/// `oversubscription` (≥ 1, from the fabric) only slows the all-to-all's scale-out part:
/// ring and tree collectives keep each GPU on its own rail (one flow per leaf uplink), and
/// an isolated point-to-point transfer never fills an uplink.
class AnalyticNetwork final : public NetworkModel {
 public:
  AnalyticNetwork() = default;
  AnalyticNetwork(LinkLevel scaleup, LinkLevel scaleout, double oversubscription = 1.0)
      : up_(scaleup), out_(scaleout), oversub_(oversubscription) {}
  /// The α-β view of a fabric: scale-up as given, scale-out at the per-GPU share of the NICs.
  explicit AnalyticNetwork(const Fabric& f)
      : AnalyticNetwork(f.scaleup, {f.nic.latency_s, f.scaleout_bw_per_gpu()}, f.oversubscription) {
    if (f.regions > 1) {
      wan_link_bw_ = f.wan.bw_bytes_per_s;
      wan_ = {f.nic.latency_s + f.wan.latency_s,
              std::min(f.nic.bw_bytes_per_s,
                       f.nodes_per_leaf * f.nic.bw_bytes_per_s / f.oversubscription)};
    }
  }

  double allreduce_s(double bytes, const CommGroup& g) const override;
  double alltoall_s(double bytes_per_gpu, const CommGroup& g) const override;
  double p2p_s(double bytes, bool cross_domain) const override;
  /// One transfer between regions, alone: α_out + α_wan + bytes / min(NIC, leaf uplink, WAN)
  /// (needs the Fabric constructor with regions > 1).
  double wan_p2p_s(double bytes) const { return wan_transfer_s(bytes, 1); }
  /// `flows` transfers of bytes / flows each between two regions, started together from
  /// distinct NICs (a KV cache moving GPU by GPU): they share the one WAN link, so each
  /// moves at min(NIC, leaf uplink, WAN / flows): α_out + α_wan + bytes / flows / that.
  double wan_transfer_s(double bytes, int flows) const;
  double reduce_scatter_s(double bytes, const CommGroup& g) const override;
  double allgather_s(double bytes, const CommGroup& g) const override;
  double tree_allreduce_s(double bytes, const CommGroup& g) const override;

  const LinkLevel& scaleup() const { return up_; }
  const LinkLevel& scaleout() const { return out_; }

  /// Ring all-reduce on one level.
  static double ring_allreduce_s(double bytes, int n, const LinkLevel& l);
  /// Ring reduce-scatter (= all-gather) on one level: (n−1)·α + (n−1)/n·bytes/bw.
  static double ring_half_s(double bytes, int n, const LinkLevel& l);
  /// ⌈log₂ n⌉ (0 for n ≤ 1).
  static int ceil_log2(int n);

 private:
  LinkLevel up_, out_;
  double oversub_ = 1.0;
  LinkLevel wan_;           // between regions: latency, and the bandwidth of a flow's own links
  double wan_link_bw_ = 0;  // the WAN link, shared by every flow between the two regions
};

}  // namespace fleetsim::hw
