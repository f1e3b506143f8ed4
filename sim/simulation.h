// One simulation run of a scenario: engine, workload, router, replicas, metrics.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hw_models/network.h"
#include "sim/core/engine.h"
#include "sim/core/slot_pool.h"
#include "sim/metrics/collector.h"
#include "sim/run_result.h"
#include "sim/runtime/fanout.h"
#include "sim/runtime/kv_handoff.h"
#include "sim/runtime/response_cache.h"
#include "sim/scenario/scenario.h"
#include "sim/serving/registry.h"
#include "sim/serving/step_model.h"

namespace fleetsim {

namespace net {
class LiveTransfers;
}

class Simulation final : public core::EventTarget,
                         private serving::ServingObserver,
                         private serving::SegmentComm {
 public:
  explicit Simulation(const scenario::Scenario& sc, RunOptions options = {});
  ~Simulation() override;
  RunResult run();
  void on_event(const core::Event& event) override;

  const serving::StepModel& step_model() const { return *steps_; }

 private:
  // ServingObserver: fan out to the collector and the extra observers; closed-loop users
  // send their next request when one completes (or is rejected).
  void on_arrival(const workload::RequestSpec& r, int replica, SimTime t) override;
  void on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                 SimTime t) override;
  void on_first_token(const workload::RequestSpec& r, int replica, SimTime t) override;
  void on_preemption(const workload::RequestSpec& r, int replica, SimTime t) override;
  void on_prefix_lookup(int replica, int64_t prefill_tokens, int64_t hit_tokens) override;
  void on_prefix_host_load(int replica, int64_t tokens) override;
  void on_completion(const serving::RequestRecord& rec) override;
  void on_prefill_done(const serving::Handoff& h, int replica) override;
  void on_token_gaps(SimTime gap_ns, uint64_t count) override;
  void on_token_gap_series(const StepSeries& s, int64_t k, uint64_t per) override;
  void on_segment(const serving::SegmentRecord& seg) override;

  void schedule_arrival(const workload::RequestSpec& r);
  void pull_open_loop();
  void client_done(const workload::RequestSpec& r);

  const scenario::Scenario& sc_;
  RunOptions options_;
  core::Engine engine_;
  metrics::Collector collector_;
  runtime::Fanout out_;  // collector_, then options_.observers
  std::unique_ptr<workload::Workload> workload_;
  std::unique_ptr<serving::StepModel> steps_;
  std::unique_ptr<serving::Router> router_;
  std::vector<std::unique_ptr<serving::Replica>> replicas_;  // the decode pool when disaggregated
  // Disaggregation: the prefill pool, its step model and router for the decode pool, and
  // the KV transfers in flight (event kind kKindHandoff, data = slot).
  static constexpr uint8_t kKindHandoff = 1;
  static constexpr uint8_t kKindCacheHit = 2;
  // Cascade: the small model's pool (in prefill_replicas_, indices 0..first_pool_size_-1).
  std::unique_ptr<serving::StepModel> first_pool_steps_;
  int first_pool_size_ = 0;
  bool escalates(const workload::RequestSpec& r) const;
  // Response cache, and its hits waiting for their latency.
  std::unique_ptr<runtime::ResponseCache> cache_;
  core::SlotPool<workload::RequestSpec> cached_;
  std::unique_ptr<serving::StepModel> prefill_steps_;
  std::vector<std::unique_ptr<serving::Replica>> prefill_replicas_;
  std::unique_ptr<serving::Router> decode_router_;
  runtime::KvHandoffs handoffs_;
  int kv_links_ = 1;
  // Requests scheduled to arrive, by slot (open loop: one at a time; closed loop: one per user).
  core::SlotPool<workload::RequestSpec> pending_;

  // network: {model: simgrid} (sim/simulation_network.cpp): KV transfers run live
  // on the SimGrid fabric, contending for NICs and uplinks. The decode replica is chosen
  // when the transfer starts (its GPUs are the destination); a wake-up event (kind
  // kKindNetWake) fires whenever the network changes next.
  static constexpr uint8_t kKindNetWake = 9;
  std::unique_ptr<net::LiveTransfers> live_net_;
  std::vector<uint32_t> handoff_target_;
  std::vector<double> handoff_bytes_;
  SimTime net_wake_at_ = -1;  // the earliest wake-up scheduled, -1 when none
  // regions: 2 with the analytic network: KV transfers cross the WAN link (α-β).
  std::unique_ptr<hw::AnalyticNetwork> wan_net_;
  void init_live_network();
  void start_kv_transfer(uint32_t slot, int prefill_replica, double bytes);
  void on_network_wake(SimTime t);
  void arm_network(bool from_wake);

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
  static constexpr uint64_t kAllToAllTag = 1ull << 63;  // live-transfer tags (KV: the slot)
  std::vector<AllToAllReplica> a2a_;                    // by replica index
  std::unordered_map<uint64_t, AllToAllIteration> a2a_live_;
  uint64_t a2a_next_ = 0;
  void init_live_alltoall(bool rail0_only);
  void iteration(serving::Replica& replica, uint64_t gen, SimTime start, SimTime end,
                 int64_t prefill_tokens, int64_t decode_seqs) override;
  void finish_alltoall(uint64_t tag, SimTime started, SimTime now);
};

/// True when `sc` runs live transfers on the process's SimGrid engine (network: {model:
/// simgrid} with disaggregation or a live all-to-all).
bool needs_own_engine(const scenario::Scenario& sc);

/// Simulation(sc).run() for batches (sweeps, plans, replications): a scenario that needs
/// the SimGrid engine runs in a process of its own (the helper `fleetsim-simgrid run`),
/// since SimGrid allows one engine, for one fabric, per process; any number can then run
/// side by side on threads. The helper's InputError and other errors are rethrown here.
RunResult run_in_own_process(const scenario::Scenario& sc);

}  // namespace fleetsim
