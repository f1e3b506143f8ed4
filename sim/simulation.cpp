#include "sim/simulation.h"

#include <chrono>

#include "sim/network/live_transfers.h"
#include "sim/serving/registry.h"

namespace fleetsim {

Simulation::Simulation(const scenario::Scenario& sc, RunOptions options)
    : sc_(sc),
      options_(std::move(options)),
      collector_(sc.replicas_all_pools(), sc.slo_ttft_s, sc.slo_tpot_s) {
  const RngStreams rng(sc.seed);
  workload_ = sc.make_workload(sc.seed);
  collector_.set_classes(workload_->classes());
  collector_.set_slo_targets(sc.slo_targets);
  collector_.set_warmup_requests(workload_->warmup_requests());
  steps_ = std::make_unique<serving::StepModel>(
      serving::StepModelConfig{sc.dep, sc.spec,
                               sc.lora_rank > 0 ? std::optional<serving::Lora>(serving::Lora{
                                                      sc.lora_rank, sc.vllm.lora_slots})
                                                : std::nullopt},
      sc.vllm.max_num_seqs);
  router_ = serving::make_router(sc.router, rng, sc.router_params);
  serving::ServingConfig vcfg = sc.vllm;
  // A live all-to-all runs one iteration per event (its flows start with each iteration).
  if (sc.live_alltoall) vcfg.fast_forward = false;
  if (vcfg.prefix_caching) {
    // The prefix hashes come with the workload (a trace with hash_ids).
    const workload::Trace* trace = workload_->trace();
    vcfg.hashes = &trace->hashes;
    vcfg.prefix_block_tokens = trace->block_tokens;
    vcfg.prefix_host_entries = sc.prefix_host_blocks / (trace->block_tokens / vcfg.block_tokens);
  }
  auto& self = static_cast<serving::ServingObserver&>(*this);
  // Disaggregated: prefill replicas are 0..P-1 and take the arrivals; the decode pool
  // (the scenario's own hardware) follows, P..P+D-1, and takes the handed-over requests.
  int index = 0;
  if (sc.prefill_pool) {
    prefill_steps_ = std::make_unique<serving::StepModel>(
        serving::StepModelConfig{sc.prefill_pool->dep, std::nullopt,
                                 sc.lora_rank > 0 ? std::optional<serving::Lora>(serving::Lora{
                                                        sc.lora_rank, sc.vllm.lora_slots})
                                                  : std::nullopt},
        sc.prefill_pool->vllm.max_num_seqs);
    serving::ServingConfig pcfg = sc.prefill_pool->vllm;
    if (sc.live_alltoall) pcfg.fast_forward = false;
    for (int i = 0; i < sc.prefill_pool->replicas; ++i)
      prefill_replicas_.push_back(
          serving::policy(sc.policy).make(index++, engine_, self, *prefill_steps_, pcfg));
    decode_router_ = serving::make_router(sc.router, RngStreams(sc.seed ^ 0x9e3779b97f4a7c15ULL),
                                          sc.router_params);
    // KV bytes per prompt token of the whole model, moved over min(GPUs) parallel links.
    kv_bytes_per_token_ = sc.model.kv_bytes_per_token(sc.prec.kv_bytes);
    kv_links_ = std::min(sc.prefill_pool->par.gpus(), sc.par.gpus());
  }
  if (sc.small_pool) {
    // Cascade: the small model's replicas are 0..S-1 and take the arrivals.
    first_pool_steps_ = std::make_unique<serving::StepModel>(
        serving::StepModelConfig{sc.small_pool->dep, std::nullopt, std::nullopt},
        sc.small_pool->vllm.max_num_seqs);
    for (int i = 0; i < sc.small_pool->replicas; ++i)
      prefill_replicas_.push_back(serving::policy(sc.policy).make(
          index++, engine_, self, *first_pool_steps_, sc.small_pool->vllm));
    first_pool_size_ = sc.small_pool->replicas;
  }
  if (sc.prefill_pool) first_pool_size_ = sc.prefill_pool->replicas;
  for (int i = 0; i < sc.replicas; ++i)
    replicas_.push_back(serving::policy(sc.policy).make(index++, engine_, self, *steps_, vcfg));
  if (needs_own_engine(sc)) init_live_network();
  if (sc.prefill_pool && sc.network_model != "simgrid" && sc.fabric.regions > 1)
    wan_net_ = std::make_unique<hw::AnalyticNetwork>(sc.fabric);
}

bool Simulation::escalates(const workload::RequestSpec& r) const {
  return sc_.small_pool && unit_hash(r.id, 0xca5cade) < sc_.escalation;
}

uint64_t Simulation::prompt_key(const workload::RequestSpec& r) const {
  // Identical prompts: the same prefix-block hashes and the same length.
  uint64_t k = 1469598103934665603ULL ^ static_cast<uint64_t>(r.prompt_tokens);
  const workload::Trace* t = workload_->trace();
  for (uint32_t i = 0; i < r.hash_count; ++i) {
    k ^= t->hashes[r.hash_begin + i];
    k *= 1099511628211ULL;
  }
  return k;
}

bool Simulation::response_cache_hit(const workload::RequestSpec& r) {
  if (sc_.response_cache_hit_rate >= 0)
    return unit_hash(r.id, 0x5eed) < sc_.response_cache_hit_rate;
  if (r.hash_count == 0) return false;
  auto it = cache_index_.find(prompt_key(r));
  if (it == cache_index_.end()) return false;
  cache_lru_.splice(cache_lru_.end(), cache_lru_, it->second);  // most recently used
  return true;
}

void Simulation::response_cache_insert(const workload::RequestSpec& r) {
  if (!sc_.response_cache || sc_.response_cache_hit_rate >= 0 || r.hash_count == 0) return;
  const uint64_t key = prompt_key(r);
  if (cache_index_.count(key)) return;
  if (static_cast<int64_t>(cache_lru_.size()) >= sc_.response_cache_capacity) {
    cache_index_.erase(cache_lru_.front());
    cache_lru_.pop_front();
  }
  cache_index_[key] = cache_lru_.insert(cache_lru_.end(), key);
}

Simulation::~Simulation() = default;

void Simulation::schedule_arrival(const workload::RequestSpec& r) {
  engine_.schedule(r.arrival_ns, serving::kPhaseArrival, this, 0, pending_.add(r));
}

void Simulation::pull_open_loop() {
  // Open-loop and trace workloads yield requests in arrival order: keep exactly one
  // scheduled, so memory does not grow with the number of requests.
  if (auto next = workload_->next_arrival()) schedule_arrival(*next);
}

void Simulation::on_event(const core::Event& e) {
  if (e.kind() == kKindNetWake) {
    on_network_wake(e.time);
    return;
  }
  if (e.kind() == kKindHandoff) {
    // A KV transfer from the prefill pool ended: the decode pool takes the request.
    serving::Handoff h = handoffs_[static_cast<uint32_t>(e.data)];
    handoffs_.release(static_cast<uint32_t>(e.data));
    h.first_token_ns = e.time;
    const size_t target =
        live_net_ ? handoff_target_[e.data] : decode_router_->route(h.spec, replicas_);
    replicas_[target]->submit_prefilled(h);
    return;
  }
  if (e.kind() == kKindCacheHit) {
    // Answered from the response cache: no model call.
    const workload::RequestSpec r = cached_[static_cast<uint32_t>(e.data)];
    cached_.release(static_cast<uint32_t>(e.data));
    serving::RequestRecord rec;
    rec.spec = &r;
    rec.replica = -1;
    rec.scheduled_ns = r.arrival_ns;
    rec.first_token_ns = rec.done_ns = e.time;
    collector_.on_response_cache_hit();
    on_completion(rec);
    return;
  }
  const auto slot = static_cast<uint32_t>(e.data);
  const workload::RequestSpec r = pending_[slot];
  pending_.release(slot);
  if (r.client < 0 || r.first_turn) pull_open_loop();
  if (sc_.response_cache && response_cache_hit(r)) {
    collector_.on_arrival(r, -1, e.time);
    for (auto* o : options_.observers) o->on_arrival(r, -1, e.time);
    const uint32_t c = cached_.add(r);
    engine_.schedule(e.time + seconds_to_ns(sc_.response_cache_latency_s), serving::kPhaseArrival,
                     this, kKindCacheHit, c);
    return;
  }
  auto& pool = prefill_replicas_.empty() ? replicas_ : prefill_replicas_;
  const size_t target = router_->route(r, pool);
  pool[target]->submit(r);
}

void Simulation::on_prefill_done(const serving::Handoff& h, int replica) {
  for (auto* o : options_.observers) o->on_prefill_done(h, replica);
  const double bytes = kv_bytes_per_token_ * h.spec.prompt_tokens;
  const uint32_t slot = handoffs_.add(h);
  if (live_net_) {
    start_kv_transfer(slot, replica, bytes);
    return;
  }
  // Transfer time over the decode pool's scale-out level, or the WAN link between the
  // pools' regions (α-β; contention between transfers is not modelled by the analytic
  // network).
  const double t = wan_net_ ? wan_net_->wan_transfer_s(bytes, kv_links_)
                            : sc_.dep.network->p2p_s(bytes / kv_links_, true);
  collector_.on_kv_transfer(bytes, t);
  engine_.schedule(engine_.now() + seconds_to_ns(t), serving::kPhaseArrival, this, kKindHandoff,
                   slot);
}

RunResult Simulation::run() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // Closed-loop workloads yield one first request per user (in any order), then nothing;
  // open-loop ones yield requests in order, pulled one at a time.
  while (auto first = workload_->next_arrival()) {
    schedule_arrival(*first);
    if (first->client < 0 || first->first_turn) break;
  }
  auto last_report = t0;
  const bool checking = options_.check_invariants;
  bool more = true;
  while (more) {
    // Check the wall clock only every 64k events: the hot loop stays free of syscalls.
    for (int i = 0; i < 65536 && (more = engine_.step()); ++i) {
      if (checking) {
        for (const auto& rep : replicas_) rep->check_invariants();
        for (const auto& rep : prefill_replicas_) rep->check_invariants();  // or the small pool
      }
    }
    if (more && options_.progress) {
      const auto now = Clock::now();
      const double wall = std::chrono::duration<double>(now - t0).count();
      if (wall > 2.0 && std::chrono::duration<double>(now - last_report).count() >= 1.0) {
        last_report = now;
        options_.progress(
            {ns_to_seconds(engine_.now()), collector_.arrived(), collector_.completed(), wall});
      }
    }
  }
  RunResult res;
  res.summary = collector_.summarize(engine_.now());
  res.events = engine_.events_dispatched();
  res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

// ---- observer fan-out ------------------------------------------------------------------

void Simulation::on_arrival(const workload::RequestSpec& r, int replica, SimTime t) {
  // A cascade's escalated request arrived once already, at the small model.
  if (sc_.small_pool && replica >= first_pool_size_ && escalates(r)) return;
  collector_.on_arrival(r, replica, t);
  for (auto* o : options_.observers) o->on_arrival(r, replica, t);
}

void Simulation::on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                           SimTime t) {
  collector_.on_reject(r, replica, why, t);
  for (auto* o : options_.observers) o->on_reject(r, replica, why, t);
  client_done(r);
}

void Simulation::on_first_token(const workload::RequestSpec& r, int replica, SimTime t) {
  if (sc_.small_pool && replica < first_pool_size_ && escalates(r)) return;  // not the answer
  collector_.on_first_token(r, replica, t);
  for (auto* o : options_.observers) o->on_first_token(r, replica, t);
}

void Simulation::on_prefix_lookup(int replica, int64_t prefill_tokens, int64_t hit_tokens) {
  collector_.on_prefix_lookup(replica, prefill_tokens, hit_tokens);
  for (auto* o : options_.observers) o->on_prefix_lookup(replica, prefill_tokens, hit_tokens);
}

void Simulation::on_prefix_host_load(int replica, int64_t tokens) {
  collector_.on_prefix_host_load(replica, tokens);
  for (auto* o : options_.observers) o->on_prefix_host_load(replica, tokens);
}

void Simulation::on_preemption(const workload::RequestSpec& r, int replica, SimTime t) {
  collector_.on_preemption(r, replica, t);
  for (auto* o : options_.observers) o->on_preemption(r, replica, t);
}

void Simulation::on_completion(const serving::RequestRecord& rec) {
  if (sc_.small_pool && rec.replica >= 0 && rec.replica < first_pool_size_ &&
      escalates(*rec.spec)) {
    // The small model's answer is not good enough: the large model answers again. The
    // request keeps its arrival time, so its TTFT and end-to-end include the small model's.
    collector_.on_escalation();
    const workload::RequestSpec spec = *rec.spec;
    replicas_[router_->route(spec, replicas_)]->submit(spec);
    return;
  }
  if (rec.replica >= 0) response_cache_insert(*rec.spec);
  collector_.on_completion(rec);
  for (auto* o : options_.observers) o->on_completion(rec);
  client_done(*rec.spec);
}

void Simulation::client_done(const workload::RequestSpec& r) {
  if (r.client < 0) return;
  if (auto next = workload_->on_completion(r, engine_.now())) schedule_arrival(*next);
}

void Simulation::on_token_gaps(SimTime gap_ns, uint64_t count) {
  collector_.on_token_gaps(gap_ns, count);
  for (auto* o : options_.observers) o->on_token_gaps(gap_ns, count);
}

void Simulation::on_token_gap_series(const StepSeries& s, int64_t k, uint64_t per) {
  collector_.on_token_gap_series(s, k, per);
  for (auto* o : options_.observers) o->on_token_gap_series(s, k, per);
}

void Simulation::on_segment(const serving::SegmentRecord& seg) {
  collector_.on_segment(seg);
  for (auto* o : options_.observers) o->on_segment(seg);
}

}  // namespace fleetsim
