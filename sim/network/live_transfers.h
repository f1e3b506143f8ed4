// Contended transfers run live on the SimGrid fabric, driven by our event loop: the
// simulation starts a group of parallel flows (a KV cache moving from a prefill replica's
// GPUs to a decode replica's, one flow per GPU pair), schedules a wake-up event at
// next_wake(), and on it calls advance(now), which reports the groups that ended.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hw_models/network.h"
#include "sim/core/time.h"
#include "sim/network/simgrid_network.h"

namespace fleetsim::net {

class LiveTransfers {
 public:
  /// Takes the process's SimGrid engine for `fabric` (see SimGridFabric::acquire) and
  /// makes its clock our t = 0.
  ///
  /// `rail_symmetric`: the caller promises that every group starts and ends on node
  /// boundaries (src_base, dst_base and links multiples of gpus_per_node) on a fabric with
  /// one NIC per GPU, and that nothing else is live. Then rail k carries exactly the flows
  /// rail 0 carries (same node pairs, same bytes, same start times) and so ends them at the
  /// same times: only the rail-0 flow of each node pair is simulated, 1/gpus_per_node of
  /// the flows (tests/simgrid/live_transfers_test.cpp checks the times equal).
  /// One LiveTransfers at a time per process (the engine is the process's): a second one
  /// while the first lives throws std::runtime_error.
  LiveTransfers(const hw::Fabric& fabric, bool rail_symmetric);
  ~LiveTransfers();
  LiveTransfers(const LiveTransfers&) = delete;
  LiveTransfers& operator=(const LiveTransfers&) = delete;

  /// Starts `links` flows of `bytes_per_link`, GPU src_base + k → dst_base + k; `tag` is
  /// reported when the last ends.
  void start_group(uint64_t tag, int src_base, int dst_base, int links, double bytes_per_link,
                   SimTime now);
  /// Starts one flow of `bytes_each` per (src GPU, dst GPU) pair, all at `now`; `tag` is
  /// reported when the last ends. With rail_symmetric the caller passes rail 0's flows only
  /// (both GPUs on rail 0), standing for the same flows on every rail.
  void start_flows(uint64_t tag, const std::vector<std::pair<int, int>>& pairs, double bytes_each,
                   SimTime now);
  /// How long the flows of start_flows take alone on the fabric (seconds, exact). Only
  /// before the run starts (nothing in flight; the clock's origin goes back to now).
  double time_alone_s(const std::vector<std::pair<int, int>>& pairs, double bytes_each);
  /// Runs the network to `now`; calls done(tag, started_at) for each group that ended.
  /// Inside `done`, last_end_s() is that group's exact end (seconds since the origin).
  void advance(SimTime now, const std::function<void(uint64_t tag, SimTime started)>& done);
  /// The next instant (ns, rounded up) at which the network changes; -1 when idle.
  SimTime next_wake() const;
  size_t groups_in_flight() const { return groups_.size(); }
  double last_end_s() const { return last_end_s_; }

 private:
  struct Group {
    int pending = 0;
    SimTime started = 0;
  };
  SimGridFabric& fabric_;
  bool rail_symmetric_ = false;
  std::unordered_map<uint64_t, Group> groups_;     // by tag
  std::unordered_map<uint64_t, uint64_t> owner_;   // flow id → tag
  std::vector<Completion> done_;
  double last_end_s_ = 0;
};

}  // namespace fleetsim::net
