#include "sim/simulation.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <numeric>
#include <thread>

#include "sim/dist/dist.h"
#include "sim/fleet/one_pool.h"
#include "sim/fleet/result_codec.h"
#include "sim/network/live_transfers.h"
#include "sim/runtime/cascade.h"
#include "sim/runtime/drive.h"
#include "sim/runtime/routers.h"
#include "sim/serving/registry.h"

namespace fleetsim {

namespace {

enum Kind : uint32_t {
  kArrive = 0,   // a call reaches its users' region (data: slot); routed there
  kDeliver = 1,  // a spilled call reaches the region that serves it (data: slot)
  kReady = 2,    // a replica finished loading (data: replica)
  kFail = 3,     // a replica's hardware fails (data: replica)
  kRepair = 4,   // a failed replica is repaired (data: replica)
  kAutoscale = 5,
  kSample = 6,       // end of a report interval
  kNextSession = 7,  // pull the next session from the population
  kBucket = 8,       // move the next second's calls from the wheel into the event queue
  kCacheHit = 9,     // a call answered from the response cache (data: slot)
  kHandoff = 10,     // a KV transfer from a prefill to a decode pool ended (data: handoff)
  // 11: Simulation::kNetWake, the live network changes next (simulation_network.cpp)
  kRackFail = 12,    // a rack of a pool fails (data: pool)
  kRegionDown = 13,  // a region outage starts (data: outage)
  kRegionUp = 14,    // ... and ends (data: outage)
};

using fleet::FailureClass;

constexpr SimTime kBucketNs = 1'000'000'000;

int scaled(int n, double s, int at_least) {
  return std::max(at_least, static_cast<int>(std::llround(n * s)));
}

}  // namespace

Simulation::Simulation(const scenario::Scenario& sc, RunOptions options, std::vector<int> models)
    : Simulation(sc, sc.fleet ? sc.make_population(sc.seed) : nullptr,
                 sc.fleet ? nullptr : sc.make_workload(sc.seed), std::move(options),
                 std::move(models)) {}

Simulation::Simulation(const scenario::Scenario& sc, std::unique_ptr<fleet::Population> pop,
                       std::unique_ptr<workload::Workload> workload, RunOptions options,
                       std::vector<int> models)
    : sc_(sc),
      workload_(std::move(workload)),
      own_spec_(workload_ ? std::make_unique<fleet::FleetSpec>(
                                fleet::one_pool_fleet(sc, workload_->classes().size()))
                          : nullptr),
      spec_(own_spec_ ? *own_spec_ : *sc.fleet),
      options_(std::move(options)),
      pop_(std::move(pop)),
      collector_(workload_ ? sc.replicas_all_pools() : 1, sc.slo_ttft_s, sc.slo_tpot_s),
      out_(collector_, options_.observers),
      cache_(sc.response_cache, sc.response_cache_hit_rate, sc.response_cache_capacity,
             sc.response_cache_latency_s,
             workload_ && workload_->trace() != nullptr ? &workload_->trace()->hashes : nullptr),
      handoffs_(engine_, this, kHandoff, collector_),
      route_rng_(RngStreams(sc.seed).stream("fleet-routing")),
      fail_rng_(RngStreams(sc.seed).stream("failures")),
      geo_(spec_.wan_rtt_s, spec_.spill_load, spec_.region_router,
           RngStreams(sc.seed).stream("region-routing")) {
  collector_.set_classes(workload_ ? workload_->classes() : pop_->request_classes());
  collector_.set_slo_targets(sc.slo_targets);
  if (workload_) collector_.set_warmup_requests(workload_->warmup_requests());
  // A fleet of one runs until its workload is done: its span is known at the end (run()).
  end_ns_ = pop_ ? pop_->duration_ns() : std::numeric_limits<SimTime>::max() / 4;
  n_models_ = static_cast<int>(spec_.models.size());
  if (models.empty())
    for (int m = 0; m < n_models_; ++m) models.push_back(m);
  auto mine = [&](int m) { return std::find(models.begin(), models.end(), m) != models.end(); };
  if (pop_) {
    std::vector<bool> keep, lora;
    for (int m : spec_.class_model) {
      keep.push_back(mine(m));
      lora.push_back(m == 0);  // LoRA adapters are the scenario's model's
    }
    pop_->keep_classes(keep);
    pop_->set_adapter_classes(lora);
  }
  const size_t nr = spec_.regions.size();
  n_lanes_ = std::max<int>(2, static_cast<int>(spec_.side_names.size()));
  groups_.resize(nr * static_cast<size_t>(n_models_) * static_cast<size_t>(n_lanes_));
  decode_groups_.resize(nr * static_cast<size_t>(n_models_));
  split_.assign(decode_groups_.size(), 0);
  lanes_.assign(groups_.size(), 0);
  regions_.resize(nr);
  current_.resize(nr);
  held_ns_acc_.assign(nr, 0.0);
  gpu_ns_acc_.assign(nr, 0.0);
  for (size_t r = 0; r < nr; ++r) {
    user_rtt_ns_.push_back(seconds_to_ns(spec_.regions[r].user_rtt_s));
    regions_[r].name = spec_.regions[r].traffic.name;
    regions_[r].side_served.assign(spec_.side_names.size(), 0);
    regions_[r].side_good.assign(spec_.side_names.size(), 0);
    regions_[r].over_time = metrics::TimeBuckets(seconds_to_ns(spec_.report_interval_s));
  }
  size_t n_pools = 0;
  bool prefix = false;
  for (const auto& reg : spec_.regions) {
    n_pools += reg.pools.size();
    for (const auto& fp : reg.pools) prefix = prefix || fp.pool.vllm.prefix_caching;
  }
  // Prefix caching: a fleet's calls carry their prompts' generated block hashes (a
  // session's turns share its context, all sessions the system prompt); a fleet of one's
  // come from its trace.
  const workload::Trace* trace = workload_ ? workload_->trace() : nullptr;
  if (prefix && pop_) pop_->set_prefix_blocks(sc.vllm.prefix_block_tokens);
  if (workload_) {
    routers_.push_back(runtime::numbered_router(spec_.router, sc.seed, 0, sc.router_params));
    decode_router_ = runtime::numbered_router(spec_.router, sc.seed, 1, sc.router_params);
  } else if (!spec_.router.empty()) {
    // Numbered as before lanes existed (region × model + 1), the other lanes after them.
    const size_t n = decode_groups_.size(), k = static_cast<size_t>(n_lanes_);
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      routers_.push_back(runtime::numbered_router(spec_.router, sc.seed, gi / k + 1 + (gi % k) * n,
                                                  sc.router_params));
  }
  if (workload_ && sc.prefill_pool && sc.network_model != "simgrid" && sc.fabric.regions > 1)
    wan_net_ = std::make_unique<hw::AnalyticNetwork>(sc.fabric);
  // The KV cache of the whole model moves over min(GPUs) parallel links.
  if (sc.prefill_pool) kv_links_ = std::min(sc.prefill_pool->par.gpus(), sc.par.gpus());
  const bool live = workload_ && needs_own_engine(sc);
  pools_.reserve(n_pools);  // replicas keep references to a pool's step model and config
  const double s = pop_ ? pop_->sample() : 1.0;
  int index = 0;
  for (size_t r = 0; r < nr; ++r) {
    for (const auto& fp : spec_.regions[r].pools) {
      PoolState p;
      p.result.index = index++;
      p.result.region = static_cast<int>(r);
      p.region = static_cast<int>(r);
      p.model =
          static_cast<int>(std::find(spec_.models.begin(), spec_.models.end(), fp.pool.model.id) -
                           spec_.models.begin());
      p.lane = std::max(0, fp.side);
      if (fp.side >= 0) {
        split_[static_cast<size_t>(p.region * n_models_ + p.model)] = 1;
        lanes_[group_index(p.region, p.model, p.lane)] = 1;
      }
      if (!mine(p.model)) continue;
      const std::optional<serving::Lora> lora =
          fp.pool.lora_rank > 0 ? std::optional<serving::Lora>(
                                      serving::Lora{fp.pool.lora_rank, fp.pool.vllm.lora_slots})
                                : std::nullopt;
      p.steps = std::make_unique<serving::StepModel>(
          serving::StepModelConfig{fp.pool.dep, fp.pool.spec, lora}, fp.pool.vllm.max_num_seqs);
      p.vllm = fp.pool.vllm;
      if (live) {
        // On the fabric: the prefill pool from GPU 0, the main pool from decode_gpu_base (a
        // cascade's small model is not). A live all-to-all runs one iteration per event
        // (its flows start with each iteration).
        if (p.vllm.role == serving::EngineConfig::Role::kPrefill)
          p.gpu_base = 0;
        else if (&fp == &spec_.regions[r].pools.back())
          p.gpu_base = sc.decode_gpu_base;
        if (p.gpu_base >= 0 && sc.live_alltoall) p.vllm.fast_forward = false;
      }
      if (p.vllm.prefix_caching && trace != nullptr) {
        p.vllm.hashes = &trace->hashes;
        p.vllm.prefix_block_tokens = trace->block_tokens;
        p.vllm.prefix_host_entries =
            fp.pool.prefix_host_blocks / (trace->block_tokens / p.vllm.block_tokens);
      } else if (p.vllm.prefix_caching) {
        p.vllm.hashes = nullptr;
        p.vllm.generated_shared_blocks = pop_->shared_prefix_blocks();
        p.vllm.prefix_host_entries =
            fp.pool.prefix_host_blocks / (sc.vllm.prefix_block_tokens / p.vllm.block_tokens);
      }
      p.result.name = fp.name;
      p.result.model = fp.pool.model.id;
      p.result.gpu = fp.pool.gpu.id;
      p.result.gpus_per_replica = fp.pool.par.gpus();
      p.result.replicas_configured = fp.pool.replicas + fp.spares;
      p.result.load_time_s = fp.load_time_s;
      p.result.spec = &fp;
      const int n =
          fp.pool.replicas + fp.spares == 0 ? 0 : scaled(fp.pool.replicas + fp.spares, s, 1);
      p.desired = n;
      p.result.replicas_simulated = n;
      pools_.push_back(std::move(p));
    }
  }
  if (live) init_live_network();
  // Region outages: the scheduled ones, then those drawn from the region MTBF (a stream of
  // their own, so every partition of the run sees the same outages).
  region_down_.assign(nr, 0);
  if (pop_ && spec_.failures.enabled) {
    std::vector<fleet::Failures::Outage> all = spec_.failures.outages;
    if (spec_.failures.region_mtbf_s > 0) {
      Rng rng = RngStreams(sc.seed).stream("region-outages");
      for (size_t r = 0; r < nr; ++r)
        for (double t = rng.exponential(spec_.failures.region_mtbf_s);
             seconds_to_ns(t) < end_ns_;) {
          const double d = rng.exponential(spec_.failures.region_mttr_s);
          all.push_back({static_cast<int>(r), t, d});
          t += d + rng.exponential(spec_.failures.region_mtbf_s);
        }
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.at_s < b.at_s; });
    for (const auto& o : all) {
      fleet::OutageResult res;
      res.region = o.region;
      res.start_s = o.at_s;
      res.end_s = o.at_s + o.duration_s;
      outages_.push_back(res);
      OutageRun run;
      run.start = seconds_to_ns(o.at_s);
      run.end = seconds_to_ns(o.at_s + o.duration_s);
      run.loads.resize(groups_.size());
      outage_runs_.push_back(std::move(run));
    }
    rack_rng_ = RngStreams(sc.seed).stream("rack-failures");
  }
}

Simulation::~Simulation() = default;

// ---- replicas ------------------------------------------------------------------------

int Simulation::start_replica(int pool, SimTime ready_at) {
  PoolState& p = pools_[static_cast<size_t>(pool)];
  const int index = static_cast<int>(replicas_.size());
  replicas_.push_back(serving::policy(sc_.policy).make(index, engine_, *this, *p.steps, p.vllm));
  ReplicaInfo ri;
  ri.pool = pool;
  ri.state = State::kStarting;
  ri.in_pool = p.started++;
  ri.held_since = engine_.now();
  // The lowest free seat whose server is not in repair (a repaired server's seats are free
  // again); else a new one past the last.
  const SimTime now = engine_.now();
  auto blocked = [&](size_t seat) {
    return seat < p.seat_up_at.size() && p.seat_up_at[seat] > now;
  };
  std::vector<int32_t> aside;  // free but in repair
  while (!p.free_seats.empty() && ri.seat < 0) {
    std::pop_heap(p.free_seats.begin(), p.free_seats.end(), std::greater<>());
    const int32_t seat = p.free_seats.back();
    p.free_seats.pop_back();
    if (blocked(static_cast<size_t>(seat)))
      aside.push_back(seat);
    else
      ri.seat = seat;
  }
  for (int32_t seat : aside) {
    p.free_seats.push_back(seat);
    std::push_heap(p.free_seats.begin(), p.free_seats.end(), std::greater<>());
  }
  while (ri.seat < 0) {
    const size_t seat = p.seats.size();
    p.seats.push_back(-1);
    if (blocked(seat)) {
      p.free_seats.push_back(static_cast<int32_t>(seat));
      std::push_heap(p.free_seats.begin(), p.free_seats.end(), std::greater<>());
    } else {
      ri.seat = static_cast<int32_t>(seat);
    }
  }
  p.seats[static_cast<size_t>(ri.seat)] = index;
  info_.push_back(ri);
  ++p.held;
  ++p.starting;
  p.result.replicas_peak = std::max(p.result.replicas_peak, p.held);
  if (ready_at <= engine_.now())
    activate(index, engine_.now());
  else
    engine_.schedule(ready_at, serving::kPhaseArrival, this, kReady, static_cast<uint64_t>(index));
  return index;
}

void Simulation::activate(int replica, SimTime now) {
  ReplicaInfo& ri = info_[static_cast<size_t>(replica)];
  if (ri.state != State::kStarting) return;
  PoolState& p = pools_[static_cast<size_t>(ri.pool)];
  --p.starting;
  ++p.active;
  held_ns_acc_[static_cast<size_t>(p.region)] -= static_cast<double>(now);  // + now at the end
  gpu_ns_acc_[static_cast<size_t>(p.region)] -=
      static_cast<double>(now) * p.result.gpus_per_replica;
  ri.state = State::kActive;
  Group& g = group_of(p);
  ri.active_pos = static_cast<int32_t>(g.active.size());
  g.active.push_back(replica);
  g.slots += p.vllm.max_num_seqs;
  g.outstanding += ri.outstanding;
  if (spec_.failures.enabled && p.result.spec->failure_rate_per_s > 0) {
    const SimTime t =
        now + seconds_to_ns(fail_rng_.exponential(1.0 / p.result.spec->failure_rate_per_s));
    if (t < end_ns_)
      engine_.schedule(t, serving::kPhaseArrival, this, kFail, static_cast<uint64_t>(replica));
  }
}

void Simulation::deactivate(int replica) {
  ReplicaInfo& ri = info_[static_cast<size_t>(replica)];
  if (ri.state != State::kActive) return;
  PoolState& p = pools_[static_cast<size_t>(ri.pool)];
  --p.active;
  held_ns_acc_[static_cast<size_t>(p.region)] += static_cast<double>(engine_.now());
  gpu_ns_acc_[static_cast<size_t>(p.region)] +=
      static_cast<double>(engine_.now()) * p.result.gpus_per_replica;
  Group& g = group_of(p);
  const int32_t last = g.active.back();
  g.active[static_cast<size_t>(ri.active_pos)] = last;
  info_[static_cast<size_t>(last)].active_pos = ri.active_pos;
  g.active.pop_back();
  ri.active_pos = -1;
  g.slots -= p.vllm.max_num_seqs;
  g.outstanding -= ri.outstanding;
}

void Simulation::hold_end(int replica, SimTime now) {
  ReplicaInfo& ri = info_[static_cast<size_t>(replica)];
  PoolState& p = pools_[static_cast<size_t>(ri.pool)];
  // GPU time is counted within the run's span only: calls that finish after it do not
  // make the day longer.
  p.result.replica_hours +=
      ns_to_seconds(std::min(now, end_ns_) - std::min(ri.held_since, end_ns_)) / 3600.0;
  regions_[static_cast<size_t>(p.region)].over_time.add_held(std::min(ri.held_since, end_ns_),
                                                             std::min(now, end_ns_));
  --p.held;
  p.seats[static_cast<size_t>(ri.seat)] = -1;
  p.free_seats.push_back(ri.seat);
  std::push_heap(p.free_seats.begin(), p.free_seats.end(), std::greater<>());
}

void Simulation::fail(int replica, SimTime now) {
  ReplicaInfo& ri = info_[static_cast<size_t>(replica)];
  if (ri.state != State::kActive && ri.state != State::kDraining) return;
  PoolState& p = pools_[static_cast<size_t>(ri.pool)];
  // Which part failed decides the repair time and what goes down with it: a GPU takes its
  // replica; a server or its link every replica on the server.
  const fleet::FleetPool& fp = *p.result.spec;
  const double u = fail_rng_.uniform01();
  const FailureClass c = u < fp.gpu_fail_share                        ? FailureClass::kGpu
                         : u < fp.gpu_fail_share + fp.node_fail_share ? FailureClass::kNode
                                                                      : FailureClass::kLink;
  const double mttr = c == FailureClass::kGpu    ? spec_.failures.gpu_mttr_s
                      : c == FailureClass::kNode ? spec_.failures.node_mttr_s
                                                 : spec_.failures.link_mttr_s;
  const SimTime repaired = now + seconds_to_ns(fail_rng_.exponential(mttr));
  ++classes_[static_cast<size_t>(c)].events;
  down_.clear();
  if (c == FailureClass::kGpu || fp.replicas_per_server == 1) {
    take_down(replica, c);  // a replica spanning servers is alone on them
  } else {
    const int server = ri.seat / fp.replicas_per_server;
    const size_t first = static_cast<size_t>(server * fp.replicas_per_server);
    for (size_t seat = first; seat < first + static_cast<size_t>(fp.replicas_per_server); ++seat)
      if (seat < p.seats.size() && p.seats[seat] >= 0) take_down(p.seats[seat], c);
    // No replica starts on the server's empty seats until it is repaired.
    block_seats(p, first, first + static_cast<size_t>(fp.replicas_per_server), repaired);
  }
  retry_lost(c, now);
  schedule_repairs(repaired);
}

std::pair<int, int> Simulation::servers_of(const PoolState& p, int seat) const {
  const fleet::FleetPool& fp = *p.result.spec;
  if (fp.replicas_per_server > 1) return {seat / fp.replicas_per_server, 1};
  return {seat * fp.servers_per_replica, fp.servers_per_replica};
}

bool Simulation::take_down(int replica, FailureClass c) {
  ReplicaInfo& ri = info_[static_cast<size_t>(replica)];
  if (ri.state == State::kFailed || ri.state == State::kRetired) return false;
  PoolState& p = pools_[static_cast<size_t>(ri.pool)];
  if (ri.state == State::kDraining) --p.draining;
  if (ri.state == State::kStarting) --p.starting;  // its kReady finds it failed
  deactivate(replica);
  ri.state = State::kFailed;
  ri.down_by = static_cast<uint8_t>(c);
  ++p.failed;
  if (c != FailureClass::kRegion) {
    ++p.down;
    p.result.down_peak = std::max(p.result.down_peak, p.down);
  }
  ++p.result.failures;
  ++current_[static_cast<size_t>(p.region)].failures;
  ++classes_[static_cast<size_t>(c)].replicas_down;
  replicas_[static_cast<size_t>(replica)]->halt();
  p.outstanding -= ri.outstanding;
  ri.outstanding = 0;
  if (victim_.size() < replicas_.size()) victim_.resize(replicas_.size(), 0);
  victim_[static_cast<size_t>(replica)] = 1;
  down_.push_back(replica);
  return true;
}

uint64_t Simulation::retry_lost(FailureClass c, SimTime now) {
  if (down_.empty()) return 0;
  // Their calls in flight are lost: the clients retry after retry_delay. One pass over the
  // calls (no per-replica list: linking every call into one cost two cache misses per
  // call, ~10 % of a full-scale run; a failure is rare next to a call).
  const SimTime retry_at = now + seconds_to_ns(spec_.failures.retry_delay_s);
  uint64_t n = 0;
  for (uint32_t slot = 0; slot < slots_.capacity(); ++slot) {
    const int32_t rep = slots_[slot].replica;
    if (rep < 0 || victim_[static_cast<size_t>(rep)] == 0) continue;
    slots_[slot].replica = -1;
    slots_[slot].retried = static_cast<uint8_t>(c);
    ++n;
    engine_.schedule(retry_at + front_door_ns(slots_[slot].spec), serving::kPhaseArrival, this,
                     kArrive, slot);
  }
  for (int32_t r : down_) victim_[static_cast<size_t>(r)] = 0;
  retried_ += n;
  classes_[static_cast<size_t>(c)].calls_retried += n;
  return n;
}

void Simulation::schedule_repairs(SimTime repaired) {
  // A repair after the end of the run is not simulated: the replicas stay failed (and
  // held) to the end.
  if (repaired >= end_ns_) return;
  for (int32_t r : down_) {
    ++pools_[static_cast<size_t>(info_[static_cast<size_t>(r)].pool)].repairs;
    engine_.schedule(repaired, serving::kPhaseArrival, this, kRepair, static_cast<uint64_t>(r));
  }
}

void Simulation::block_seats(PoolState& p, size_t first, size_t last, SimTime until) {
  if (p.seat_up_at.size() < last) p.seat_up_at.resize(last, 0);
  for (size_t seat = first; seat < last; ++seat)
    p.seat_up_at[seat] = std::max(p.seat_up_at[seat], until);
}

void Simulation::rack_fail(int pool, SimTime now) {
  // Racks of the pool: those its hardware fills (replicas + spares, or its autoscaling
  // ceiling, at the run's sample), or more when failed seats pushed it further. Each rack
  // fails at rack.mtbf: the pool's rate is racks / mtbf, a failure hits a rack chosen
  // uniformly, and one that is already down (in repair) does not fail again (thinning).
  PoolState& p = pools_[static_cast<size_t>(pool)];
  const fleet::FleetPool& fp = *p.result.spec;
  const int seats = std::max({static_cast<int>(p.seats.size()), p.result.replicas_simulated,
                              scaled(fp.max_replicas, pop_->sample(), 1)});
  const auto [first, count] = servers_of(p, seats - 1);
  const int racks = (first + count + fp.servers_per_rack - 1) / fp.servers_per_rack;
  if (p.rack_up_at.size() < static_cast<size_t>(racks))
    p.rack_up_at.resize(static_cast<size_t>(racks), 0);
  if (now > 0) {
    const int k = static_cast<int>(rack_rng_.uniform_u64(static_cast<uint64_t>(racks)));
    if (p.rack_up_at[static_cast<size_t>(k)] <= now) {
      const SimTime repaired =
          now + seconds_to_ns(rack_rng_.exponential(spec_.failures.rack_mttr_s));
      p.rack_up_at[static_cast<size_t>(k)] = repaired;
      ++classes_[static_cast<size_t>(FailureClass::kRack)].events;
      down_.clear();
      const int lo = k * fp.servers_per_rack, hi = lo + fp.servers_per_rack;
      size_t seat_lo = 0, seat_hi = 0;  // the seats on the rack's servers
      for (size_t seat = 0;; ++seat) {
        const auto [f, n] = servers_of(p, static_cast<int>(seat));
        if (f >= hi) break;
        if (f + n <= lo) continue;
        if (seat_hi == 0) seat_lo = seat;
        seat_hi = seat + 1;
        if (seat < p.seats.size() && p.seats[seat] >= 0)
          take_down(p.seats[seat], FailureClass::kRack);
      }
      block_seats(p, seat_lo, seat_hi, repaired);
      retry_lost(FailureClass::kRack, now);
      schedule_repairs(repaired);
    }
  }
  const SimTime next =
      now +
      seconds_to_ns(rack_rng_.exponential(spec_.failures.rack_mtbf_s / static_cast<double>(racks)));
  if (next < end_ns_)
    engine_.schedule(next, serving::kPhaseArrival, this, kRackFail, static_cast<uint64_t>(pool));
}

void Simulation::region_down(size_t outage, SimTime now) {
  fleet::OutageResult& o = outages_[outage];
  OutageRun& run = outage_runs_[outage];
  run.active = true;
  ++outages_active_;
  if (region_down_[static_cast<size_t>(o.region)]++ > 0) return;  // already down
  ++classes_[static_cast<size_t>(FailureClass::kRegion)].events;
  down_.clear();
  for (size_t r = 0; r < info_.size(); ++r)
    if (pools_[static_cast<size_t>(info_[r].pool)].region == o.region)
      take_down(static_cast<int>(r), FailureClass::kRegion);
  o.replicas_down += down_.size();
  o.calls_retried += retry_lost(FailureClass::kRegion, now);
  // They come back when the outage ends (region_up); until then a call waiting for a
  // replica of the model may wait for them.
  if (run.end < end_ns_)
    for (int32_t r : down_)
      ++pools_[static_cast<size_t>(info_[static_cast<size_t>(r)].pool)].repairs;
}

void Simulation::region_up(size_t outage, SimTime now) {
  const fleet::OutageResult& o = outages_[outage];
  outage_runs_[outage].active = false;
  --outages_active_;
  if (--region_down_[static_cast<size_t>(o.region)] > 0) return;  // another outage goes on
  for (size_t r = 0; r < info_.size(); ++r) {
    ReplicaInfo& ri = info_[r];
    PoolState& p = pools_[static_cast<size_t>(ri.pool)];
    if (p.region != o.region || ri.state != State::kFailed ||
        ri.down_by != static_cast<uint8_t>(FailureClass::kRegion))
      continue;
    --p.failed;
    --p.repairs;
    ri.state = State::kRetired;
    hold_end(static_cast<int>(r), now);
  }
  // The region's pools load their weights again, up to what they should hold (replicas
  // whose hardware repair ended during the outage come back too).
  if (now >= end_ns_) return;
  for (size_t i = 0; i < pools_.size(); ++i) {
    PoolState& p = pools_[i];
    if (p.region != o.region) continue;
    while (p.active + p.starting < std::max(p.desired, 1) && p.result.replicas_simulated > 0)
      start_replica(static_cast<int>(i), now + seconds_to_ns(p.result.load_time_s));
  }
}

void Simulation::count_failed(uint32_t slot) {
  ++failed_calls_;
  const uint8_t c = slots_[slot].retried;
  if (c != 0) ++classes_[c].calls_failed;
}

void Simulation::outage_completion(const Slot& s, const serving::RequestRecord& rec, bool good) {
  const double ttft = ns_to_seconds(rec.first_token_ns - s.spec.arrival_ns);
  for (size_t k = 0; k < outages_.size(); ++k) {
    fleet::OutageResult& o = outages_[k];
    const OutageRun& run = outage_runs_[k];
    if (o.region != s.spec.region || s.spec.arrival_ns < run.start || s.spec.arrival_ns >= run.end)
      continue;
    ++o.completed;
    if (good) ++o.good;
    if (o.ttft_min_s < 0 || ttft < o.ttft_min_s) o.ttft_min_s = ttft;
  }
}

// ---- calls ---------------------------------------------------------------------------

SimTime Simulation::front_door_ns(const workload::RequestSpec& r) const {
  return user_rtt_ns_[r.region];
}

uint32_t Simulation::new_slot(const workload::RequestSpec& r) {
  Slot s;
  s.spec = r;
  const uint32_t slot = slots_.add(s);
  slots_[slot].spec.tag = slot;
  return slot;
}

void Simulation::schedule_request(const workload::RequestSpec& r) {
  // A fleet of one keeps one open-loop request scheduled at a time (memory does not grow
  // with the number of requests) and sends its users' next requests as they come.
  engine_.schedule(r.arrival_ns + front_door_ns(r), serving::kPhaseArrival, this, kArrive,
                   new_slot(r));
}

void Simulation::schedule_calls() {
  // A full-scale day holds millions of next turns waiting out their users' think time. In
  // the event heap they made every push and pop a chain of cache misses (170k calls/s);
  // they wait in a wheel of one-second buckets instead, and enter the heap a second ahead.
  // A bucket's memory is released when it empties: kept, every bucket of the wheel would
  // hold the capacity of its busiest second (4,096 × ~17k calls × 4 B = 280 MB at full
  // scale once the wheel has turned). (Buckets of 1/16 s, which keep the heap at ~20k
  // events instead of ~50k, measured no faster: 35.8 s against 33.8 s, medians of 3-4
  // interleaved runs of a 5-minute full-scale slice.)
  const SimTime now = engine_.now();
  for (const auto& r : calls_) {
    const uint32_t slot = new_slot(r);
    const SimTime at = r.arrival_ns + front_door_ns(r);
    const int64_t b = at / kBucketNs;
    if (!ticking_) {
      next_flush_ = now / kBucketNs + 2;
    }
    if (b < next_flush_ || b >= next_flush_ + static_cast<int64_t>(wheel_.size())) {
      engine_.schedule(at, serving::kPhaseArrival, this, kArrive, slot);
      continue;
    }
    wheel_[static_cast<size_t>(b) % wheel_.size()].push_back(slot);
    ++wheel_count_;
    if (!ticking_) {
      ticking_ = true;
      engine_.schedule((next_flush_ - 1) * kBucketNs, serving::kPhaseArrival, this, kBucket);
    }
  }
  calls_.clear();
}

void Simulation::flush_bucket() {
  auto& bucket = wheel_[static_cast<size_t>(next_flush_) % wheel_.size()];
  for (uint32_t slot : bucket) {
    const workload::RequestSpec& r = slots_[slot].spec;
    engine_.schedule(r.arrival_ns + front_door_ns(r), serving::kPhaseArrival, this, kArrive, slot);
  }
  wheel_count_ -= bucket.size();
  std::vector<uint32_t>().swap(bucket);
  ++next_flush_;
  if (wheel_count_ > 0)
    engine_.schedule((next_flush_ - 1) * kBucketNs, serving::kPhaseArrival, this, kBucket);
  else
    ticking_ = false;
}

void Simulation::arrive(uint32_t slot, SimTime now) {
  const int home = slots_[slot].spec.region;
  if (!slots_[slot].counted) {
    slots_[slot].counted = true;
    ++regions_[static_cast<size_t>(home)].arrivals;
    ++current_[static_cast<size_t>(home)].arrivals;
    if (workload_) {
      // The next open-loop request (or trace session) is scheduled as this one arrives
      // (adding a slot may move the others). The replica that takes the call counts its
      // arrival (on_arrival).
      const workload::RequestSpec& r = slots_[slot].spec;
      if (r.client < 0 || r.first_turn)
        if (auto next = workload_->next_arrival()) schedule_request(*next);
    } else {
      collector_.on_arrival(slots_[slot].spec, -1, now);
      for (size_t k = 0; k < outages_.size(); ++k)  // none unless region outages are set
        if (outages_[k].region == home && slots_[slot].spec.arrival_ns >= outage_runs_[k].start &&
            slots_[slot].spec.arrival_ns < outage_runs_[k].end)
          ++outages_[k].calls;
    }
    // The response cache at the users' front door answers its share of calls (chosen per
    // call id) without a model call.
    if (cache_.hit(slots_[slot].spec)) {
      if (workload_) out_.on_arrival(slots_[slot].spec, -1, now);
      slots_[slot].region = static_cast<int16_t>(home);
      engine_.schedule(now + cache_.latency_ns(), serving::kPhaseArrival, this, kCacheHit, slot);
      return;
    }
  }
  Slot& s = slots_[slot];
  const int model = target_model(s);
  int r = geo_.pick(home, [&](int region) -> const Group& {
    return group(region, model, lane_of(region, model, s));
  });
  if (r < 0) {
    // No active replica of this model anywhere. Wait for one that is starting or being
    // repaired within the run; with none coming, the call fails.
    bool coming = false;
    for (const auto& p : pools_)
      coming = coming || (p.model == model && p.lane == lane_of(p.region, model, s) &&
                          (p.starting > 0 || p.repairs > 0));
    if (!coming) {
      collector_.on_reject(s.spec, -1, serving::RejectReason::kQueueFull, now);
      count_failed(slot);
      finish_call(slot, now);
      return;
    }
    engine_.schedule(now + seconds_to_ns(std::max(1.0, spec_.failures.retry_delay_s)),
                     serving::kPhaseArrival, this, kArrive, slot);
    return;
  }
  if (r != home) {
    ++regions_[static_cast<size_t>(home)].spilled_out;
    ++regions_[static_cast<size_t>(r)].spilled_in;
  }
  s.region = static_cast<int16_t>(r);
  // The users' round trip is behind it (the call arrived at their region's front door);
  // a spilled call pays the WAN round trip on top.
  if (r == home) {
    deliver(slot, now);
    return;
  }
  const double wan = spec_.wan_rtt_s[static_cast<size_t>(home)][static_cast<size_t>(r)];
  engine_.schedule(now + seconds_to_ns(wan), serving::kPhaseArrival, this, kDeliver, slot);
}

void Simulation::deliver(uint32_t slot, SimTime now) {
  Slot& s = slots_[slot];
  const int model = target_model(s);
  const size_t gi = group_index(s.region, model, lane_of(s.region, model, s));
  Group& g = groups_[gi];
  if (g.active.empty()) {
    // The region lost its replicas while the call travelled: route again.
    arrive(slot, now);
    return;
  }
  serving::Router* router = router_for(gi);
  const int32_t pick =
      router != nullptr ? g.active[router->route(s.spec, serving::ReplicaSet(replicas_, g.active))]
                        : power_of_two(g);
  assign(s, g, pick);
  auto& cur = current_[static_cast<size_t>(s.region)];
  cur.outstanding_peak = std::max(cur.outstanding_peak, g.outstanding);
  if (outages_active_ > 0) {
    // During a region outage: the surviving regions' peak load (the capacity they need).
    for (size_t k = 0; k < outage_runs_.size(); ++k) {
      if (!outage_runs_[k].active || outages_[k].region == s.region) continue;
      fleet::OutageLoad& l = outage_runs_[k].loads[gi];
      if (g.outstanding > l.outstanding_peak) {
        l.outstanding_peak = g.outstanding;
        l.slots_at_peak = g.slots;
        l.replicas_at_peak = static_cast<int>(g.active.size());
      }
    }
  }
  replicas_[static_cast<size_t>(pick)]->submit(s.spec);  // may reject at once (on_reject)
}

serving::Router* Simulation::router_for(size_t group) {
  if (routers_.empty()) return nullptr;
  return routers_.size() == 1 ? routers_[0].get() : routers_[group].get();
}

bool Simulation::escalating(const workload::RequestSpec& r, int replica) const {
  return spec_.cascade_model >= 0 && spec_.class_model[r.cls] == 0 &&
         pools_[static_cast<size_t>(info_[static_cast<size_t>(replica)].pool)].model ==
             spec_.cascade_model &&
         runtime::escalates(r.id, spec_.escalation);
}

int Simulation::target_model(const Slot& s) const {
  const int m = spec_.class_model[s.spec.cls];
  return m == 0 && spec_.cascade_model >= 0 && !s.escalated ? spec_.cascade_model : m;
}

int32_t Simulation::power_of_two(const Group& g) {
  // Two replicas at random (possibly the same), the one with fewer outstanding calls per
  // batch slot: pools of different batch sizes are weighed fairly.
  const size_t n = g.active.size();
  int32_t pick = g.active[route_rng_.uniform_u64(n)];
  if (n > 1) {
    const int32_t other = g.active[route_rng_.uniform_u64(n)];
    const auto& a = info_[static_cast<size_t>(pick)];
    const auto& b = info_[static_cast<size_t>(other)];
    const int64_t sa = pools_[static_cast<size_t>(a.pool)].vllm.max_num_seqs;
    const int64_t sb = pools_[static_cast<size_t>(b.pool)].vllm.max_num_seqs;
    if (b.outstanding * sa < a.outstanding * sb) pick = other;
  }
  return pick;
}

void Simulation::assign(Slot& s, Group& g, int32_t replica) {
  ReplicaInfo& ri = info_[static_cast<size_t>(replica)];
  s.replica = replica;
  ++ri.outstanding;
  ++g.outstanding;
  ++pools_[static_cast<size_t>(ri.pool)].outstanding;
}

void Simulation::finish_call(uint32_t slot, SimTime now) {
  Slot& s = slots_[slot];
  release_replica(s, now);
  const workload::RequestSpec spec = s.spec;
  slots_.release(slot);
  if (workload_) {
    // A closed-loop user sends its next request (or a trace session its next turn).
    if (spec.client >= 0)
      if (auto next = workload_->on_completion(spec, now)) schedule_request(*next);
    return;
  }
  pop_->on_done(spec, now, calls_);
  schedule_calls();
}

void Simulation::release_replica(Slot& s, SimTime now) {
  if (s.replica >= 0) {
    const int rep = s.replica;
    ReplicaInfo& ri = info_[static_cast<size_t>(rep)];
    PoolState& p = pools_[static_cast<size_t>(ri.pool)];
    s.replica = -1;
    --ri.outstanding;
    --p.outstanding;
    if (ri.state == State::kActive) --group_of(p).outstanding;
    if (ri.state == State::kDraining && ri.outstanding == 0) {
      ri.state = State::kRetired;
      --p.draining;
      hold_end(rep, now);
    }
  }
}

void Simulation::cache_hit(uint32_t slot, SimTime now) {
  Slot& s = slots_[slot];
  const serving::RequestRecord rec = out_.on_response_cache_hit(s.spec, now);
  const auto region = static_cast<size_t>(s.region);
  ++regions_[region].served;
  ++current_[region].served;
  if (meets_slo(rec)) {
    ++regions_[region].good;
    ++current_[region].good;
  }
  regions_[region].over_time.add_latency(std::min(now, end_ns_ - 1),
                                         ns_to_seconds(now - s.spec.arrival_ns));
  finish_call(slot, now);
}

bool Simulation::meets_slo(const serving::RequestRecord& rec) const {
  workload::RequestClass none;
  const workload::RequestClass& cls =
      pop_ ? pop_->classes()[rec.spec->cls].info
           : (workload_->classes().empty() ? none : workload_->classes()[rec.spec->cls]);
  const double t_slo = cls.slo_ttft_s > 0 ? cls.slo_ttft_s : sc_.slo_ttft_s.value_or(0);
  const double p_slo = cls.slo_tpot_s > 0 ? cls.slo_tpot_s : sc_.slo_tpot_s.value_or(0);
  const double ttft = ns_to_seconds(rec.first_token_ns - rec.spec->arrival_ns);
  const double tpot =
      rec.spec->output_tokens > 1
          ? ns_to_seconds(rec.done_ns - rec.first_token_ns) / (rec.spec->output_tokens - 1)
          : -1;
  return metrics::meets_slo(ttft, tpot, t_slo, p_slo);
}

// ---- replica notifications -----------------------------------------------------------

void Simulation::on_completion(const serving::RequestRecord& rec) {
  if (!alive(rec.replica)) return;
  const uint32_t slot = rec.spec->tag;
  Slot& s = slots_[slot];
  PoolState& pool = pools_[static_cast<size_t>(info_[static_cast<size_t>(rec.replica)].pool)];
  if (spec_.cascade_model >= 0 && !s.escalated && spec_.class_model[s.spec.cls] == 0 &&
      runtime::escalates(s.spec.id, spec_.escalation)) {
    // Cascade: the small model's answer is not good enough (the same share and choice as in
    // single-pool runs); the large model answers again in the same region. The call keeps
    // its arrival time, so its TTFT and end-to-end latency include the small model's.
    ++pool.result.completed;
    pool.result.input_tokens += static_cast<uint64_t>(rec.spec->prompt_tokens);
    pool.result.output_tokens += static_cast<uint64_t>(rec.spec->output_tokens);
    collector_.on_escalation();
    s.escalated = true;
    release_replica(s, engine_.now());
    deliver(slot, engine_.now());
    return;
  }
  cache_.insert(*rec.spec);  // exact matching remembers the prompt
  out_.on_completion(rec);
  if (workload_) {  // a fleet of one reports its collector's summary only
    finish_call(slot, engine_.now());
    return;
  }
  const auto region = static_cast<size_t>(s.region);
  ++regions_[region].served;
  ++current_[region].served;
  ++pool.window_done;
  const bool good = meets_slo(rec);
  if (good) {
    ++regions_[region].good;
    ++current_[region].good;
    ++pool.window_good;
  }
  if (!regions_[region].side_served.empty()) {
    const auto lane = static_cast<size_t>(lane_of(s.region, target_model(s), s));
    ++regions_[region].side_served[lane];
    if (good) ++regions_[region].side_good[lane];
  }
  if (!outages_.empty()) outage_completion(s, rec, good);
  // A first token after the run's end counts in its last bucket (the plots cover the run).
  regions_[region].over_time.add_latency(std::min(rec.first_token_ns, end_ns_ - 1),
                                         ns_to_seconds(rec.first_token_ns - rec.spec->arrival_ns));
  if (s.retried != 0) {
    ++retried_completed_;
    retried_e2e_.add(ns_to_seconds(rec.done_ns - rec.spec->arrival_ns));
    fleet::FailureClassResult& fc = classes_[s.retried];
    ++fc.retried_completed;
    if (good) ++fc.retried_good;
  }
  ++pool.result.completed;
  // A decode pool's calls were prefilled (and counted) by a prefill pool.
  if (pool.vllm.role != serving::EngineConfig::Role::kDecode)
    pool.result.input_tokens += static_cast<uint64_t>(rec.spec->prompt_tokens);
  pool.result.output_tokens += static_cast<uint64_t>(rec.spec->output_tokens);
  if (rec.spec->output_tokens > 1)
    pool.tpot.add(ns_to_seconds(rec.done_ns - rec.first_token_ns) / (rec.spec->output_tokens - 1));
  finish_call(slot, engine_.now());
}

void Simulation::on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                           SimTime t) {
  if (!alive(replica)) return;
  out_.on_reject(r, replica, why, t);
  count_failed(r.tag);
  finish_call(r.tag, t);
}

void Simulation::on_arrival(const workload::RequestSpec& r, int replica, SimTime t) {
  // A fleet counts its calls at the front door; a fleet of one where its replicas take
  // them, as the one-pool reports expect (a cascade's escalated call arrived once already).
  if (!workload_ || !alive(replica) || slots_[r.tag].escalated) return;
  out_.on_arrival(r, replica, t);
}

void Simulation::on_first_token(const workload::RequestSpec& r, int replica, SimTime t) {
  if (!workload_ || !alive(replica) || escalating(r, replica)) return;  // not the answer
  out_.on_first_token(r, replica, t);
}

// Inter-token gaps are collected in a fleet of one only: a fleet's report does not use
// them, and a fleet day has billions of iterations (bucketing each gap cost ~18 % of it).
void Simulation::on_token_gaps(SimTime gap_ns, uint64_t count) {
  if (workload_) out_.on_token_gaps(gap_ns, count);
}
void Simulation::on_token_gap_series(const StepSeries& s, int64_t k, uint64_t per) {
  if (workload_) out_.on_token_gap_series(s, k, per);
}
void Simulation::on_prefix_host_load(int replica, int64_t tokens) {
  if (alive(replica)) out_.on_prefix_host_load(replica, tokens);
}
void Simulation::on_preemption(const workload::RequestSpec& r, int replica, SimTime t) {
  if (alive(replica)) out_.on_preemption(r, replica, t);
}
void Simulation::on_prefix_lookup(int replica, int64_t prefill_tokens, int64_t hit_tokens) {
  if (!alive(replica)) return;
  out_.on_prefix_lookup(replica, prefill_tokens, hit_tokens);
}
void Simulation::on_prefill_done(const serving::Handoff& h, int replica) {
  if (!alive(replica)) return;
  out_.on_prefill_done(h, replica);
  // The prompt is done: the call leaves its prefill replica and its KV cache travels to a
  // decode replica of the region over the scale-out network (α-β, over min(GPUs) links in
  // parallel, as in single-pool runs; contention is not modelled).
  PoolState& p = pools_[static_cast<size_t>(info_[static_cast<size_t>(replica)].pool)];
  Slot& s = slots_[h.spec.tag];
  ++p.result.completed;
  p.result.input_tokens += static_cast<uint64_t>(h.spec.prompt_tokens);
  release_replica(s, engine_.now());
  // One rule for every run: the transfer is priced on the receiving pool's network (the
  // region's decode pool of the model; the prefill pool's while none is up) over
  // min(prefill GPUs, decode GPUs) links.
  const scenario::Pool& pool = p.result.spec->pool;
  const double bytes = runtime::kv_bytes(pool.model, pool.dep.prec.kv_bytes, h.spec.prompt_tokens);
  if (live_net_) {
    start_kv_transfer(handoffs_.add(h), replica, bytes);
    return;
  }
  const Group& dg = decode_groups_[static_cast<size_t>(p.region * n_models_ + p.model)];
  int links = pool.par.gpus();
  const hw::NetworkModel* network = pool.dep.network.get();
  if (!dg.active.empty()) {
    const PoolState& d = pools_[static_cast<size_t>(info_[static_cast<size_t>(dg.active[0])].pool)];
    links = std::min(links, d.result.gpus_per_replica);
    network = d.result.spec->pool.dep.network.get();
  }
  // A single pool's two regions (network.regions: 2): the transfer crosses the WAN link.
  handoffs_.priced(handoffs_.add(h), bytes,
                   wan_net_ ? wan_net_->wan_transfer_s(bytes, links)
                            : runtime::kv_transfer_s(*network, bytes, links));
}

void Simulation::hand_over(uint32_t handoff, SimTime now) {
  const uint32_t slot = handoffs_[handoff].spec.tag;
  Slot& s = slots_[slot];
  const int model = target_model(s);
  Group& g = decode_groups_[static_cast<size_t>(s.region * n_models_ + model)];
  if (live_net_) {  // the KV cache went to the decode replica chosen when it left
    const int32_t target = handoff_target_[handoff];
    const serving::Handoff h = handoffs_.take(handoff, now);
    assign(s, g, target);
    replicas_[static_cast<size_t>(target)]->submit_prefilled(h);
    return;
  }
  if (g.active.empty()) {
    // No decode replica is up in the region (failures, or all still starting): the KV
    // cache waits for one that is starting or being repaired within the run; with none
    // coming, the call fails.
    bool coming = false;
    for (const auto& p : pools_)
      coming = coming || (p.region == s.region && p.model == model &&
                          p.vllm.role == serving::EngineConfig::Role::kDecode &&
                          (p.starting > 0 || p.repairs > 0));
    if (!coming) {
      collector_.on_reject(s.spec, -1, serving::RejectReason::kQueueFull, now);
      count_failed(slot);
      handoffs_.drop(handoff);
      finish_call(slot, now);
      return;
    }
    handoffs_.end_at(handoff, now + seconds_to_ns(std::max(1.0, spec_.failures.retry_delay_s)));
    return;
  }
  const serving::Handoff h = handoffs_.take(handoff, now);
  // Among the region's decode replicas of the model.
  assign(s, g,
         decode_router_
             ? g.active[decode_router_->route(h.spec, serving::ReplicaSet(replicas_, g.active))]
             : power_of_two(g));
  const int32_t pick = s.replica;
  replicas_[static_cast<size_t>(pick)]->submit_prefilled(h);
}

void Simulation::on_segment(const serving::SegmentRecord& seg) {
  if (!alive(seg.replica)) return;
  out_.on_segment(seg);
  if (workload_) return;  // a fleet of one reports its collector's summary only
  PoolState& p = pools_[static_cast<size_t>(info_[static_cast<size_t>(seg.replica)].pool)];
  const SimTime start = std::min(seg.start_ns, end_ns_), end = std::min(seg.end_ns, end_ns_);
  p.result.busy_hours += ns_to_seconds(end - start) / 3600.0;
  p.result.iterations += static_cast<uint64_t>(seg.iterations);
  p.result.decode_tokens += static_cast<uint64_t>(seg.decode_tokens);
  regions_[static_cast<size_t>(p.region)].over_time.add_segment(start, end, seg.iterations,
                                                                seg.decode_tokens);
}

// ---- control -------------------------------------------------------------------------

void Simulation::autoscale(SimTime now) {
  const fleet::Autoscaling& a = spec_.autoscaling;
  const double s = pop_->sample();
  for (size_t i = 0; i < pools_.size(); ++i) {
    PoolState& p = pools_[i];
    const fleet::FleetPool& fp = *p.result.spec;
    if (fp.pool.replicas + fp.spares == 0) continue;
    if (region_down_[static_cast<size_t>(p.region)] > 0) continue;  // nothing starts there
    const int lo = scaled(fp.min_replicas, s, 0), hi = scaled(fp.max_replicas, s, 1);
    const double slots = static_cast<double>(p.vllm.max_num_seqs);
    int desired = p.active + p.starting;
    if (a.mode == fleet::Autoscaling::Mode::kScheduled) {
      // Follow the region's curve, one provisioning delay plus one interval ahead, so the
      // replicas are up when the load arrives: the peak hour gets max_replicas.
      const fleet::RegionTraffic& tr = spec_.regions[static_cast<size_t>(p.region)].traffic;
      const double peak = *std::max_element(tr.hourly.begin(), tr.hourly.end()) *
                          *std::max_element(tr.weekly.begin(), tr.weekly.end());
      const SimTime ahead = now + seconds_to_ns(fp.load_time_s + a.interval_s);
      const double per_s = pop_->sessions_per_day(static_cast<size_t>(p.region)) * s / 86400.0;
      const double m =
          per_s > 0 ? pop_->session_rate(static_cast<size_t>(p.region), ahead) / per_s : 0;
      desired = static_cast<int>(std::ceil(hi * m / peak - 1e-9));
    } else if (a.metric == fleet::Autoscaling::Metric::kSlo) {
      // Below the target attainment over the last interval: 10 % more replicas (at least
      // one). Well above it with batch slots to spare: shrink toward 60 % utilization.
      const double util = static_cast<double>(p.outstanding) / (std::max(1, p.active) * slots);
      if (p.window_done > 0) {
        const double att = static_cast<double>(p.window_good) / static_cast<double>(p.window_done);
        if (att < a.target)
          desired = p.active + std::max(1, static_cast<int>(std::ceil(0.1 * p.active)));
        else if (util < 0.5)
          desired = static_cast<int>(std::ceil(p.active * util / 0.6 - 1e-9));
      }
      p.window_done = p.window_good = 0;
    } else if (a.metric == fleet::Autoscaling::Metric::kUtilization) {
      const double cap = std::max(1, p.active) * slots;
      const double util = static_cast<double>(p.outstanding) / cap;
      desired = static_cast<int>(std::ceil(std::max(1, p.active) * util / a.target - 1e-9));
    } else {
      const double queued = std::max(0.0, static_cast<double>(p.outstanding) - p.active * slots);
      if (queued / std::max(1, p.active) > a.target) {
        desired = p.active + static_cast<int>(std::ceil(queued / slots));
      } else if (queued == 0) {
        const double util = static_cast<double>(p.outstanding) / (std::max(1, p.active) * slots);
        if (util < 0.5) desired = static_cast<int>(std::ceil(p.active * util / 0.7));
      }
    }
    desired = std::clamp(desired, lo, hi);
    p.desired = desired;
    const int provisioned = p.active + p.starting;
    if (desired > provisioned) {
      for (int k = provisioned; k < desired; ++k)
        start_replica(static_cast<int>(i), now + seconds_to_ns(fp.load_time_s));
      p.result.scale_ups += static_cast<uint64_t>(desired - provisioned);
      p.last_change = now;
    } else if (desired < p.active && now - p.last_change >= seconds_to_ns(a.cooldown_s)) {
      // Drain the least loaded replicas of this pool: they take no new calls and leave
      // when their last call completes.
      std::vector<int32_t> mine;
      for (int32_t r : group_of(p).active)
        if (info_[static_cast<size_t>(r)].pool == static_cast<int>(i)) mine.push_back(r);
      std::stable_sort(mine.begin(), mine.end(), [&](int32_t x, int32_t y) {
        return info_[static_cast<size_t>(x)].outstanding <
               info_[static_cast<size_t>(y)].outstanding;
      });
      const int n = p.active - desired;
      for (int k = 0; k < n; ++k) {
        const int r = mine[static_cast<size_t>(k)];
        deactivate(r);
        ReplicaInfo& ri = info_[static_cast<size_t>(r)];
        if (ri.outstanding == 0) {
          ri.state = State::kRetired;
          hold_end(r, now);
        } else {
          ri.state = State::kDraining;
          ++p.draining;
        }
      }
      p.result.scale_downs += static_cast<uint64_t>(n);
      p.last_change = now;
    }
  }
}

void Simulation::sample_series(SimTime now) {
  const double dt = ns_to_seconds(now - last_sample_);
  for (size_t r = 0; r < regions_.size(); ++r) {
    // Active replica·ns: the running sum holds −t at each activation and +t at each
    // deactivation; the replicas still active contribute +now.
    int active = 0, gpus = 0;
    for (const auto& p : pools_)
      if (p.region == static_cast<int>(r)) {
        active += p.active;
        gpus += p.active * p.result.gpus_per_replica;
      }
    const double acc = held_ns_acc_[r] + static_cast<double>(active) * static_cast<double>(now);
    const double gacc = gpu_ns_acc_[r] + static_cast<double>(gpus) * static_cast<double>(now);
    fleet::RegionSample& cur = current_[r];
    cur.t_s = ns_to_seconds(last_sample_);
    cur.replicas_mean = dt > 0 ? acc / 1e9 / dt : active;
    cur.gpus_mean = dt > 0 ? gacc / 1e9 / dt : gpus;
    double slots = 0;
    for (const auto& p : pools_)
      if (p.region == static_cast<int>(r))
        slots += static_cast<double>(p.active) * static_cast<double>(p.vllm.max_num_seqs);
    cur.capacity_slots = slots;
    regions_[r].series.push_back(cur);
    cur = fleet::RegionSample{};
    held_ns_acc_[r] = -static_cast<double>(active) * static_cast<double>(now);
    gpu_ns_acc_[r] = -static_cast<double>(gpus) * static_cast<double>(now);
  }
  last_sample_ = now;
}

void Simulation::on_event(const core::Event& e) {
  const SimTime now = e.time;
  switch (e.kind()) {
    case kNextSession:
      if (pop_->next_session(calls_)) {
        const SimTime t = calls_.front().arrival_ns;
        schedule_calls();
        engine_.schedule(t, serving::kPhaseArrival, this, kNextSession);
      }
      return;
    case kArrive: arrive(static_cast<uint32_t>(e.data), now); return;
    case kBucket: flush_bucket(); return;
    case kCacheHit: cache_hit(static_cast<uint32_t>(e.data), now); return;
    case kHandoff: hand_over(static_cast<uint32_t>(e.data), now); return;
    case kNetWake: on_network_wake(now); return;
    case kDeliver: deliver(static_cast<uint32_t>(e.data), now); return;
    case kReady: activate(static_cast<int>(e.data), now); return;
    case kFail:
      if (now < end_ns_) fail(static_cast<int>(e.data), now);
      return;
    case kRepair: {
      const int old = static_cast<int>(e.data);
      ReplicaInfo& ri = info_[static_cast<size_t>(old)];
      PoolState& p = pools_[static_cast<size_t>(ri.pool)];
      --p.failed;
      --p.repairs;
      --p.down;
      ri.state = State::kRetired;
      hold_end(old, now);
      // The repaired hardware loads the weights again and rejoins, unless the pool has
      // since scaled down below what it holds or its region is down (it rejoins when the
      // region comes back: region_up).
      if (now < end_ns_ && region_down_[static_cast<size_t>(p.region)] == 0 &&
          p.active + p.starting < std::max(p.desired, 1))
        start_replica(ri.pool, now + seconds_to_ns(p.result.load_time_s));
      return;
    }
    case kRackFail: rack_fail(static_cast<int>(e.data), now); return;
    case kRegionDown: region_down(static_cast<size_t>(e.data), now); return;
    case kRegionUp: region_up(static_cast<size_t>(e.data), now); return;
    case kAutoscale:
      autoscale(now);
      if (now + seconds_to_ns(spec_.autoscaling.interval_s) < end_ns_)
        engine_.schedule(now + seconds_to_ns(spec_.autoscaling.interval_s),
                         serving::kPhaseReplica + 1, this, kAutoscale);
      return;
    case kSample:
      sample_series(now);
      if (now < end_ns_)
        engine_.schedule(std::min(end_ns_, now + seconds_to_ns(spec_.report_interval_s)),
                         serving::kPhaseReplica + 1, this, kSample);
      return;
    default: throw std::logic_error("Simulation: unknown event kind");
  }
}

fleet::FleetResult Simulation::run() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < pools_.size(); ++i)
    for (int k = 0; k < pools_[i].result.replicas_simulated; ++k)
      start_replica(static_cast<int>(i), 0);
  if (live_net_ && sc_.live_alltoall) init_live_alltoall();
  if (workload_) {
    // Closed-loop workloads yield one first request per user (in any order), then
    // nothing; open-loop ones yield requests in order, pulled one at a time (arrive()).
    while (auto first = workload_->next_arrival()) {
      schedule_request(*first);
      if (first->client < 0 || first->first_turn) break;
    }
  } else {
    engine_.schedule(0, serving::kPhaseArrival, this, kNextSession);
    if (spec_.autoscaling.mode != fleet::Autoscaling::Mode::kOff)
      engine_.schedule(0, serving::kPhaseReplica + 1, this, kAutoscale);
    engine_.schedule(std::min(end_ns_, seconds_to_ns(spec_.report_interval_s)),
                     serving::kPhaseReplica + 1, this, kSample);
    if (spec_.failures.enabled && spec_.failures.rack_mtbf_s > 0)
      for (size_t i = 0; i < pools_.size(); ++i)
        if (pools_[i].result.replicas_simulated > 0) rack_fail(static_cast<int>(i), 0);
    for (size_t k = 0; k < outage_runs_.size(); ++k) {
      if (outage_runs_[k].start >= end_ns_) continue;
      engine_.schedule(outage_runs_[k].start, serving::kPhaseArrival, this, kRegionDown, k);
      // An outage that outlasts the run keeps its replicas down (and held) to the end.
      if (outage_runs_[k].end < end_ns_)
        engine_.schedule(outage_runs_[k].end, serving::kPhaseArrival, this, kRegionUp, k);
    }
  }
  runtime::drive(engine_, options_, collector_, t0, [&] {
    for (size_t r = 0; r < replicas_.size(); ++r)
      if (alive(static_cast<int>(r))) replicas_[r]->check_invariants();
  });
  if (workload_) end_ns_ = engine_.now();
  const SimTime end = std::max(engine_.now(), end_ns_);
  fleet::FleetResult res;
  res.summary = collector_.summarize(end);
  // The collector counts one busy denominator: report busy per pool instead.
  for (size_t i = 0; i < pools_.size(); ++i) {
    for (size_t r = 0; r < info_.size(); ++r) {
      const ReplicaInfo& ri = info_[r];
      if (ri.pool == static_cast<int>(i) && ri.state != State::kRetired) {
        pools_[i].result.replica_hours +=
            ns_to_seconds(end_ns_ - std::min(ri.held_since, end_ns_)) / 3600.0;
        regions_[static_cast<size_t>(pools_[i].region)].over_time.add_held(
            std::min(ri.held_since, end_ns_), end_ns_);
      }
    }
    pools_[i].result.tpot = metrics::stats_of(pools_[i].tpot);
    res.pools.push_back(pools_[i].result);
  }
  for (size_t r = 0; r < regions_.size(); ++r) {
    regions_[r].ttft = metrics::stats_of(regions_[r].over_time.total_latency());
    res.regions.push_back(regions_[r]);
  }
  res.unfinished = slots_.live();
  res.retried = retried_;
  res.retried_completed = retried_completed_;
  res.retried_e2e = metrics::stats_of(retried_e2e_);
  res.failed_calls = failed_calls_;
  res.failure_classes = classes_;
  for (size_t k = 0; k < outages_.size(); ++k) {
    fleet::OutageResult o = outages_[k];
    for (size_t gi = 0; gi < outage_runs_[k].loads.size(); ++gi) {
      fleet::OutageLoad l = outage_runs_[k].loads[gi];
      if (l.replicas_at_peak == 0) continue;  // no call of that model went there
      l.region = static_cast<int>(gi / static_cast<size_t>(n_lanes_)) / n_models_;
      l.model = static_cast<int>(gi / static_cast<size_t>(n_lanes_)) % n_models_;
      l.model_id = spec_.models[static_cast<size_t>(l.model)];
      const double per_replica =
          spec_.spill_load * static_cast<double>(l.slots_at_peak) / l.replicas_at_peak;
      l.extra_replicas =
          std::max(0, static_cast<int>(
                          std::ceil(static_cast<double>(l.outstanding_peak) / per_replica - 1e-9)) -
                          l.replicas_at_peak);
      o.surviving.push_back(l);
    }
    res.outages.push_back(std::move(o));
  }
  res.sessions = pop_ ? pop_->sessions_started() : 0;
  res.sample = pop_ ? pop_->sample() : 1.0;
  res.sim_end_s = ns_to_seconds(end);
  res.events = engine_.events_dispatched();
  res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  res.peak_rss_bytes = static_cast<double>(ru.ru_maxrss) * 1024.0;
  return res;
}

RunResult run_one_pool(const scenario::Scenario& sc, const RunOptions& options) {
  return RunResult(Simulation(sc, options).run());
}

metrics::Collector fleet_collector(const scenario::Scenario& sc) {
  // As a fleet Simulation sets up its collector (one "replica": busy time is per pool).
  metrics::Collector c(1, sc.slo_ttft_s, sc.slo_tpot_s);
  c.set_classes(sc.make_population(sc.seed)->request_classes());
  c.set_slo_targets(sc.slo_targets);
  return c;
}

fleet::FleetResult run_fleet(const scenario::Scenario& sc, const RunOptions& options, int threads) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const std::vector<std::vector<int>> partitions = sc.fleet->partitions();
  const size_t n = partitions.size();
  // Each partition runs alone and hands back its outcome as bytes (fleet/result_codec.h),
  // whether it ran on a thread of this process or on another MPI rank, so the merge below
  // sees the same inputs in the same order however the partitions were run.
  auto run_partition = [&](size_t m, bool report) {
    RunOptions o = options;
    if (!report) o.progress = nullptr;  // one partition reports progress
    Simulation sim(sc, o, partitions[m]);
    const fleet::FleetResult r = sim.run();
    return fleet::encode_partition(r, sim.collector(), sim.retried_e2e());
  };
  std::vector<std::string> encoded;
  const bool distributed = options.distribute && options.observers.empty() && dist::size() > 1;
  if (distributed) {
    encoded = dist::map(n, threads, [&](size_t m) { return run_partition(m, m == 0); });
    if (dist::rank() != 0) return {};
  } else {
    // Observers see one run's events in order: one thread then.
    if (!options.observers.empty()) threads = 1;
    threads = std::clamp<int>(threads, 1, static_cast<int>(n));
    encoded.resize(n);
    std::vector<std::exception_ptr> errors(n);
    std::atomic<size_t> next{0};
    auto worker = [&](bool first) {
      for (size_t m; (m = next++) < n;) {
        try {
          encoded[m] = run_partition(m, first && m == 0);
        } catch (...) {
          errors[m] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker, false);
    worker(true);
    for (auto& t : pool) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
  // Merge in partition order: the same for any thread or rank count.
  const metrics::Collector blank = fleet_collector(sc);
  auto part = [&](size_t m) {
    return fleet::decode_partition(encoded[m], blank, *sc.fleet,
                                   "result of fleet partition " + std::to_string(m));
  };
  fleet::PartitionResult first = part(0);
  fleet::FleetResult res = std::move(first.result);
  metrics::Collector all = std::move(first.collector);
  metrics::Histogram retried_e2e = std::move(first.retried_e2e);
  const uint64_t region_outages =
      res.failure_classes[static_cast<size_t>(FailureClass::kRegion)].events;
  for (size_t m = 1; m < n; ++m) {
    const fleet::PartitionResult pr = part(m);
    const fleet::FleetResult& p = pr.result;
    all.merge(pr.collector);
    retried_e2e.merge(pr.retried_e2e);
    for (size_t r = 0; r < res.regions.size(); ++r) res.regions[r].add(p.regions[r]);
    res.pools.insert(res.pools.end(), p.pools.begin(), p.pools.end());
    res.retried += p.retried;
    res.retried_completed += p.retried_completed;
    res.failed_calls += p.failed_calls;
    for (int c = 0; c < fleet::kFailureClasses; ++c)
      res.failure_classes[static_cast<size_t>(c)].add(p.failure_classes[static_cast<size_t>(c)]);
    // Every partition sees the same region outages: count them once.
    res.failure_classes[static_cast<size_t>(FailureClass::kRegion)].events = region_outages;
    for (size_t k = 0; k < res.outages.size() && k < p.outages.size(); ++k)
      res.outages[k].add(p.outages[k]);
    res.unfinished += p.unfinished;
    res.sessions += p.sessions;
    res.events += p.events;
    res.sim_end_s = std::max(res.sim_end_s, p.sim_end_s);
  }
  std::stable_sort(
      res.pools.begin(), res.pools.end(),
      [](const fleet::PoolResult& a, const fleet::PoolResult& b) { return a.index < b.index; });
  res.summary = all.summarize(seconds_to_ns(res.sim_end_s));
  res.retried_e2e = metrics::stats_of(retried_e2e);
  res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  res.peak_rss_bytes = static_cast<double>(ru.ru_maxrss) * 1024.0;
  res.mpi_ranks = distributed ? dist::size() : 1;
  return res;
}

}  // namespace fleetsim
