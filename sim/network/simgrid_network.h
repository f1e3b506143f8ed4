// The SimGrid adapter: the fabric of hw::Fabric built through SimGrid's C++ API, driven by
// our event loop. This header does not include SimGrid (slow to compile, and the project
// builds without it): simgrid_network.cpp holds all of it; simgrid_stub.cpp stands in when
// SimGrid is not installed (every entry point then throws, saying so).
//
// Platform (one full zone with explicit routes, so every GPU has its own path):
//   - each GPU has an up and a down scale-up link (NVLink into the NVSwitch) of
//     fabric.scaleup bandwidth and α_up/2 latency each; a route inside a domain is
//     [up(src), down(dst)]: α_up + bytes/bw_up alone;
//   - each NIC has an up and a down link of fabric.nic bandwidth and α_out/2 latency; a
//     route between domains on the same rail and leaf is [nic_up(src), nic_down(dst)];
//     otherwise it climbs to the spine: [nic_up, leaf_up(leaf, rail), leaf_down(leaf', rail'),
//     nic_down], leaf links carrying nodes_per_leaf·nic_bw/oversubscription, no latency.
// Model: network/model:CM02, network/crosstraffic:0, network/TCP-gamma:0, so one flow alone
// takes exactly latency + bytes/bandwidth and flows sharing a link share it max-min fairly.
//
// SimGrid allows one engine per process: SimGridFabric::acquire creates it for the first
// fabric asked for and refuses a different one later. Time: SimGrid's clock in seconds;
// reset_origin() makes the current clock our t = 0.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "hw_models/network.h"

namespace fleetsim::net {

/// True when this build has SimGrid (FLEETSIM_HAVE_SIMGRID).
bool simgrid_available();

struct Completion {
  uint64_t id = 0;
  double time_s = 0;  ///< since the origin
};

class SimGridFabric {
 public:
  /// The process's fabric; creates the SimGrid engine and platform on first use. Throws
  /// std::runtime_error when SimGrid is missing or a different fabric already owns the
  /// engine, std::invalid_argument for an inconsistent fabric.
  static SimGridFabric& acquire(const hw::Fabric& fabric);

  const hw::Fabric& fabric() const;
  /// Our t = 0 becomes SimGrid's current clock. Throws when transfers are in flight.
  void reset_origin();
  /// The network's clock, since the origin.
  double now() const;
  /// Starts moving `bytes` from GPU `src` to GPU `dst` at `now_s` (≥ the last advance).
  /// src == dst completes at once (at the next advance_to).
  uint64_t start_transfer(int src_gpu, int dst_gpu, double bytes, double now_s);
  /// Runs the network up to `t_s`; appends the transfers that finished by then, in time order.
  void advance_to(double t_s, std::vector<Completion>& done);
  /// When the network next changes (a transfer ends or leaves its latency phase), since the
  /// origin; +infinity when nothing is in flight.
  double next_event_time() const;
  /// advance_to(next_event_time()), nudged 1 ps (relative, past 1 s) beyond a next event
  /// that rounds to the current clock and so would not move it. False when nothing is in
  /// flight; throws std::logic_error when transfers are in flight but no event is due.
  bool advance_to_next_event(std::vector<Completion>& done);
  size_t in_flight() const;
  /// The route's links (for tests): scale-up, NIC and leaf link names in order.
  std::vector<std::string> route(int src_gpu, int dst_gpu) const;

  ~SimGridFabric();
  SimGridFabric(const SimGridFabric&) = delete;
  SimGridFabric& operator=(const SimGridFabric&) = delete;

  struct Impl;

 private:
  explicit SimGridFabric(const hw::Fabric& fabric);
  std::unique_ptr<Impl> impl_;
};

/// The collectives the tables hold, with the algorithm SimGrid runs for each (the same the
/// analytic model prices; see hw_models/network.h).
enum class Collective { kRingAllReduce, kTreeAllReduce, kReduceScatter, kAllGather, kAllToAll, kP2p };
const char* collective_name(Collective c);
std::vector<Collective> all_collectives();

/// Runs one collective of `bytes` (per the NetworkModel method's meaning) on `fabric` over a
/// group of g.size GPUs, g.per_domain in each of the first ⌈size/per_domain⌉ domains (for
/// kP2p: GPU 0 to GPU 1 when g.per_domain > 1, else GPU 0 to the first GPU of domain 1), and
/// returns its time in seconds. Nothing else may be in flight.
double run_collective(SimGridFabric& fabric, Collective op, double bytes, const hw::CommGroup& g);

}  // namespace fleetsim::net
