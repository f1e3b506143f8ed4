// The simulator: one model for every scenario. A scenario is pools of replicas in regions,
// the requests that reach them and the network between them. A fleet scenario's calls come
// from its population of users in regions (sim/fleet/population.h); a single-pool scenario
// is a fleet of one (sim/fleet/one_pool.h): one region whose users sit at its datacenter,
// its pools (prefill, a cascade's small model, the main pool) and its requests from its
// workload (open loop, closed loop or a trace). Every serving technique runs in both:
// prefix caching, speculative decoding, disaggregation, cascades, response caches, LoRA.
//
// Routing: a call reaches its users' home region one user round trip after it is sent and
// is served there unless that region is saturated for the call's model (outstanding calls
// ≥ spill_load × batch slots of its active replicas); then it goes on to the nearest region
// (by round trip) that is not, or, when all are, to the least loaded, paying the WAN round
// trip. Inside a region: the scenario's router (serving.router, any of the registry's),
// else power of two choices over the active replicas of every pool serving the model, by
// outstanding calls per batch slot. The round trips are paid before the call reaches the
// replica, so TTFT and end-to-end latency include them.
//
// Failures: each replica fails at the summed rate of its GPUs and its share of its servers'
// and links' rates; a GPU failure takes down that replica, a server or link failure every
// replica on the server (replicas sit on seats: replicas_per_server to a server, or one
// replica spanning servers_per_replica servers), a rack failure (per rack of a pool, at
// rack.mtbf) every server of the rack, a region outage (scheduled, or at region.mtbf)
// every replica of the region. Their calls in flight are retried after retry_delay (they
// keep their arrival time, so their latency includes the loss; a down region's users' calls
// go to the other regions, paying the WAN round trip) and the replicas come back after the
// repair time plus the weight load. Autoscaling: every interval, per pool, from the batch-slot utilization (or queue
// per replica) against the target, or on a schedule that follows the region's diurnal
// curve.
//
// Sampling: with users.sample = s, every pool runs round(s · replicas) replicas (at least
// one) and the report scales counts and GPUs back by 1/s.
//
// Live network (network: {model: simgrid}, single-pool scenarios; simulation_network.cpp):
// KV transfers and a cross-domain expert all-to-all run as flows on the SimGrid fabric.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hw_models/network.h"
#include "sim/core/engine.h"
#include "sim/core/slot_pool.h"
#include "sim/fleet/fleet_result.h"
#include "sim/fleet/geo_routing.h"
#include "sim/metrics/collector.h"
#include "sim/metrics/histogram.h"
#include "sim/metrics/time_buckets.h"
#include "sim/runtime/fanout.h"
#include "sim/runtime/kv_handoff.h"
#include "sim/runtime/response_cache.h"
#include "sim/scenario/scenario.h"
#include "sim/serving/replica.h"
#include "sim/serving/router.h"
#include "sim/serving/step_model.h"

namespace fleetsim::net {
class LiveTransfers;
}

namespace fleetsim {

/// Runs a single-pool scenario (one without a fleet: section) in this process: the
/// summary of its requests, the number of events and the wall time.
RunResult run_one_pool(const scenario::Scenario& sc, const RunOptions& options = {});

/// Runs a fleet scenario. The pools of different models never share a call (except a
/// cascade's two models, which run together), so each model's pools are simulated apart
/// (a partition, FleetSpec::partitions, with the same users: see
/// Population::keep_classes) on up to `threads` threads and merged; the result is the same
/// for any thread count. Extra observers force one thread. With options.distribute under
/// MPI the partitions run on the job's ranks (every rank calls this; rank 0 gets the result,
/// the others an empty one).
fleet::FleetResult run_fleet(const scenario::Scenario& sc, const RunOptions& options, int threads);

/// A metrics collector set up as a fleet simulation of `sc` sets up its own (SLOs, the
/// population's request classes), empty: what a partition's metrics decode into
/// (fleet::decode_partition).
metrics::Collector fleet_collector(const scenario::Scenario& sc);

/// True when `sc` runs live transfers on the process's SimGrid engine (network: {model:
/// simgrid} with disaggregation or a live all-to-all).
bool needs_own_engine(const scenario::Scenario& sc);

/// run_one_pool(sc) for batches (sweeps, plans, replications): a scenario that needs the
/// SimGrid engine runs in a process of its own (the helper `fleetsim-simgrid run`), since
/// SimGrid allows one engine, for one fabric, per process; any number can then run side by
/// side on threads. The helper's InputError and other errors are rethrown here.
RunResult run_in_own_process(const scenario::Scenario& sc);

class Simulation final : public core::EventTarget,
                         private serving::ServingObserver,
                         private serving::SegmentComm {
 public:
  /// Simulates `sc`: a fleet's pools serving `models` (indices into FleetSpec::models;
  /// empty = all), or a single-pool scenario as a fleet of one (`models` empty). A fleet of
  /// one's observers see every replica's notifications (arrivals, first tokens, token
  /// gaps), as the one-pool reports need.
  explicit Simulation(const scenario::Scenario& sc, RunOptions options = {},
                      std::vector<int> models = {});
  ~Simulation() override;
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;
  fleet::FleetResult run();
  void on_event(const core::Event& e) override;
  const metrics::Collector& collector() const { return collector_; }
  const metrics::Histogram& retried_e2e() const { return retried_e2e_; }

 private:
  enum class State : uint8_t { kStarting, kActive, kDraining, kFailed, kRetired };
  struct ReplicaInfo {
    int pool = 0;
    State state = State::kStarting;
    int32_t active_pos = -1;  // index in its group's active list
    int32_t in_pool = 0;      // its number among its pool's replicas (its GPUs on a fabric)
    int64_t outstanding = 0;
    SimTime held_since = 0;
    int32_t seat = -1;    // its place in its pool's servers (servers_of)
    uint8_t down_by = 0;  // fleet::FailureClass that took it down
  };
  struct Slot {  // a call from generation to completion
    workload::RequestSpec spec;
    int32_t replica = -1;    // the replica serving it, -1 before delivery and after
    int16_t region = -1;     // serving region, once routed
    bool counted = false;    // its arrival has been counted
    uint8_t retried = 0;     // lost to a failed replica: the last loss's fleet::FailureClass
    bool escalated = false;  // cascade: the small model answered; the large one answers now
  };
  struct Group {  // the active replicas of one model in one region
    std::vector<int32_t> active;
    int64_t outstanding = 0, slots = 0;
  };
  struct PoolState {
    int region = 0, model = 0;
    int lane = 0;  // the side of its region's split of its model's calls it takes (0: all)
    std::unique_ptr<serving::StepModel> steps;
    serving::ServingConfig vllm;
    int held = 0;  // starting + active + draining + failed (counted as held)
    int active = 0, starting = 0, draining = 0, failed = 0;
    int repairs = 0;    // failed replicas whose repair falls within the run
    int started = 0;    // replicas started so far
    int gpu_base = -1;  // live network: replica k starts at GPU gpu_base + k · GPUs/replica
    int down = 0;       // failed by hardware (not a region outage), for down_peak
    std::vector<int32_t> seats;       // by seat: the replica there, -1 when free
    std::vector<int32_t> free_seats;  // a min-heap of the free seats below seats.size()
    std::vector<SimTime> rack_up_at;  // by rack: when its repair ends (0: up)
    std::vector<SimTime> seat_up_at;  // by seat: its server or rack is in repair until then
    int desired = 0;
    SimTime last_change = 0;
    int64_t outstanding = 0;
    uint64_t window_done = 0, window_good = 0;  // completions since the last autoscaling tick
    metrics::Histogram tpot{0.01};
    fleet::PoolResult result;
  };

  Simulation(const scenario::Scenario& sc, std::unique_ptr<fleet::Population> pop,
             std::unique_ptr<workload::Workload> workload, RunOptions options,
             std::vector<int> models);

  // ServingObserver (replica notifications; a failed replica's are dropped).
  void on_arrival(const workload::RequestSpec& r, int replica, SimTime t) override;
  void on_first_token(const workload::RequestSpec& r, int replica, SimTime t) override;
  void on_token_gaps(SimTime gap_ns, uint64_t count) override;
  void on_token_gap_series(const StepSeries& s, int64_t k, uint64_t per) override;
  void on_prefix_host_load(int replica, int64_t tokens) override;
  void on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                 SimTime t) override;
  void on_completion(const serving::RequestRecord& rec) override;
  void on_segment(const serving::SegmentRecord& seg) override;
  void on_preemption(const workload::RequestSpec& r, int replica, SimTime t) override;
  void on_prefix_lookup(int replica, int64_t prefill_tokens, int64_t hit_tokens) override;
  void on_prefill_done(const serving::Handoff& h, int replica) override;
  void hand_over(uint32_t handoff, SimTime now);  // the KV transfer ended: to a decode replica

  uint32_t new_slot(const workload::RequestSpec& r);
  void schedule_request(const workload::RequestSpec& r);  // a fleet of one's: straight in
  /// The small model of a cascade answered a call that the large model answers again.
  bool escalating(const workload::RequestSpec& r, int replica) const;
  serving::Router* router_for(size_t group);
  SimTime front_door_ns(const workload::RequestSpec& r) const;  // the users' round trip
  void schedule_calls();  // calls_ → arrival events (or the wheel)
  void flush_bucket();
  void arrive(uint32_t slot, SimTime now);   // at the users' region: pick the serving region
  void deliver(uint32_t slot, SimTime now);  // pick a replica in the serving region
  void finish_call(uint32_t slot, SimTime now);
  void release_replica(Slot& s, SimTime now);       // the call leaves its replica
  int32_t power_of_two(const Group& g);             // the default choice among g's replicas
  void assign(Slot& s, Group& g, int32_t replica);  // the call joins the replica's counts
  int target_model(const Slot& s) const;            // the model that serves the call next
  /// The side of the call where `region` splits `model`'s calls (FleetSpec::side_of; a
  /// class whose side has no pool in the region takes its other-classes side 0), else 0.
  int lane_of(int region, int model, const Slot& s) const {
    const auto rm = static_cast<size_t>(region * n_models_ + model);
    if (!split_[rm]) return 0;
    const int side = spec_.side_of(s.spec.prompt_tokens, s.spec.cls);
    return lanes_[rm * static_cast<size_t>(n_lanes_) + static_cast<size_t>(side)] ? side : 0;
  }
  void cache_hit(uint32_t slot, SimTime now);  // answered from the response cache
  int start_replica(int pool, SimTime ready_at);
  void activate(int replica, SimTime now);
  void deactivate(int replica);             // leaves its group's active list
  void hold_end(int replica, SimTime now);  // stops counting its replica-hours
  void fail(int replica, SimTime now);
  // Correlated failures (the hierarchy GPU → server → rack → region).
  /// Servers [first, first + count) that the replica on `seat` of pool `p` sits on.
  std::pair<int, int> servers_of(const PoolState& p, int seat) const;
  /// Takes down a replica that is starting, active or draining (false otherwise): it leaves
  /// its group, counts as failed by class `c` and is marked for retry_lost.
  bool take_down(int replica, fleet::FailureClass c);
  /// Retries the calls in flight on the replicas taken down (down_): returns their number.
  uint64_t retry_lost(fleet::FailureClass c, SimTime now);
  void schedule_repairs(SimTime repaired);  // of down_ (not when after the run)
  /// No replica starts on the seats [first, last) until `until` (their hardware is in repair).
  static void block_seats(PoolState& p, size_t first, size_t last, SimTime until);
  void rack_fail(int pool, SimTime now);
  void region_down(size_t outage, SimTime now);
  void region_up(size_t outage, SimTime now);
  void count_failed(uint32_t slot);  // a call given up
  void outage_completion(const Slot& s, const serving::RequestRecord& rec, bool good);
  void autoscale(SimTime now);
  void sample_series(SimTime now);
  bool alive(int replica) const {
    return info_[static_cast<size_t>(replica)].state != State::kFailed &&
           info_[static_cast<size_t>(replica)].state != State::kRetired;
  }
  // Arrival groups by region × model × lane (lanes past 0 only where the region splits the
  // model's calls); their index, and the region × model one of the rest.
  size_t group_index(int region, int model, int lane) const {
    return static_cast<size_t>((region * n_models_ + model) * n_lanes_ + lane);
  }
  Group& group(int region, int model, int lane) {
    return groups_[group_index(region, model, lane)];
  }
  /// The group a pool's active replicas are in: its region's arrivals for the model, or the
  /// region's decode replicas of the model (role decode).
  Group& group_of(const PoolState& p) {
    return p.vllm.role == serving::EngineConfig::Role::kDecode
               ? decode_groups_[static_cast<size_t>(p.region * n_models_ + p.model)]
               : group(p.region, p.model, p.lane);
  }
  const Group& group(int region, int model, int lane) const {
    return groups_[group_index(region, model, lane)];
  }
  bool meets_slo(const serving::RequestRecord& rec) const;

  const scenario::Scenario& sc_;
  std::unique_ptr<workload::Workload> workload_;  // a fleet of one's requests, else null
  std::unique_ptr<fleet::FleetSpec> own_spec_;    // a fleet of one's spec
  const fleet::FleetSpec& spec_;
  RunOptions options_;
  core::Engine engine_;
  std::unique_ptr<fleet::Population> pop_;  // a fleet's users, else null
  metrics::Collector collector_;
  runtime::Fanout out_;  // collector_, then options_.observers
  runtime::ResponseCache cache_;
  std::vector<std::unique_ptr<serving::Replica>> replicas_;
  std::vector<ReplicaInfo> info_;
  std::vector<PoolState> pools_;
  std::vector<Group> groups_;         // region × model × lane (group_index)
  std::vector<Group> decode_groups_;  // region × model: active replicas of decode pools
  std::vector<char> split_;           // region × model: calls split among sides
  std::vector<char> lanes_;           // region × model × lane: a pool takes that side
  int n_lanes_ = 2;                   // lanes per region × model: max(2, the split's sides)
  runtime::KvHandoffs handoffs_;      // KV transfers in flight
  /// serving.router: one per group (region × model); empty for the default power of two.
  /// A fleet of one has one for all its groups (router 0 of the run, as a single pool's
  /// arrivals and a cascade's escalations share it) and one for its decode pool (router 1).
  std::vector<std::unique_ptr<serving::Router>> routers_;
  std::unique_ptr<serving::Router> decode_router_;
  /// A single pool whose prefill and decode pools are in two regions (network.regions: 2,
  /// analytic): its KV transfers cross the WAN link (α-β).
  std::unique_ptr<hw::AnalyticNetwork> wan_net_;

  // network: {model: simgrid} in a fleet of one (sim/simulation_network.cpp): KV transfers
  // run live on the SimGrid fabric, contending for NICs and uplinks. The decode replica is
  // chosen when the transfer starts (its GPUs are the destination); a wake-up event
  // (kind kNetWake) fires whenever the network changes next.
  static constexpr uint32_t kNetWake = 11;  // event kind (the others: simulation.cpp)
  std::unique_ptr<net::LiveTransfers> live_net_;
  std::vector<int32_t> handoff_target_;  // by handoff: the decode replica
  std::vector<double> handoff_bytes_;
  SimTime net_wake_at_ = -1;  // the earliest wake-up scheduled, -1 when none
  int kv_links_ = 1;          // GPU pairs a KV cache moves over: min(prefill, decode GPUs)
  void init_live_network();
  void start_kv_transfer(uint32_t handoff, int prefill_replica, double bytes);
  void on_network_wake(SimTime t);
  void arm_network(bool from_wake);
  /// The first GPU of `replica` on the fabric.
  int gpu_of(int replica) const;

  // network.live_alltoall: every iteration of a replica whose expert-parallel group leaves
  // the scale-up domain starts its cross-domain all-to-all flows on the fabric (one flow
  // per ordered GPU pair in different domains, rail-aligned, carrying that pair's share of
  // all the iteration's dispatch and combine calls); the iteration ends later by as much as
  // the flows took longer than they take alone (contention), see README.
  struct AllToAllReplica {
    const serving::StepModel* steps = nullptr;  // null: this replica's all-to-all is not live
    std::vector<std::pair<int, int>> pairs;     // (src GPU, dst GPU) simulated (rail 0's only
                                                // when the run is rail-symmetric)
    double flows = 0;                           // all of them, every rail
    double alone_s0 = 0, alone_s_per_byte = 0;  // the flows alone: s0 + per_byte · bytes each
  };
  struct AllToAllIteration {
    serving::Replica* replica = nullptr;
    uint64_t gen = 0;
    SimTime end = 0;     // as the step model priced it
    double alone_s = 0;  // the flows' time alone
    double bytes = 0;    // all flows together
  };
  static constexpr uint64_t kAllToAllTag = 1ull << 63;  // live-transfer tags (KV: the handoff)
  std::vector<AllToAllReplica> a2a_;                    // by replica index
  std::unordered_map<uint64_t, AllToAllIteration> a2a_live_;
  uint64_t a2a_next_ = 0;
  bool rail0_only_ = false;
  void init_live_alltoall();
  void iteration(serving::Replica& replica, uint64_t gen, SimTime start, SimTime end,
                 int64_t prefill_tokens, int64_t decode_seqs) override;
  void finish_alltoall(uint64_t tag, SimTime started, SimTime now);
  int n_models_ = 1;
  std::vector<SimTime> user_rtt_ns_;  // per region
  core::SlotPool<Slot> slots_;
  std::vector<workload::RequestSpec> calls_;  // scratch: calls to schedule
  std::vector<std::vector<uint32_t>> wheel_ =
      std::vector<std::vector<uint32_t>>(4096);  // by second
  size_t wheel_count_ = 0;
  int64_t next_flush_ = 0;  // the bucket the next kBucket event moves
  bool ticking_ = false;
  Rng route_rng_, fail_rng_;
  fleet::RegionRouting geo_;  // across regions
  SimTime end_ns_ = 0;
  // Results.
  std::vector<fleet::RegionResult> regions_;
  metrics::Histogram retried_e2e_{0.01};
  std::vector<fleet::RegionSample> current_;  // per region, the open interval
  std::vector<double> held_ns_acc_;           // per region: replica·ns active in the interval
  std::vector<double> gpu_ns_acc_;            // per region: GPU·ns active in the interval
  SimTime last_sample_ = 0;
  uint64_t retried_ = 0, retried_completed_ = 0, failed_calls_ = 0;
  std::array<fleet::FailureClassResult, fleet::kFailureClasses> classes_{};
  std::vector<int32_t> down_;     // scratch: replicas taken down by one failure
  std::vector<char> victim_;      // by replica: in down_
  Rng rack_rng_{0};               // rack failures (their own stream: the others stay as they were)
  std::vector<int> region_down_;  // by region: outages in progress
  struct OutageRun {
    SimTime start = 0, end = 0;
    bool active = false;
    std::vector<fleet::OutageLoad> loads;  // by region × model × lane (group_index)
  };
  std::vector<OutageRun> outage_runs_;  // by outage, with outages_
  std::vector<fleet::OutageResult> outages_;
  int outages_active_ = 0;
};

}  // namespace fleetsim
