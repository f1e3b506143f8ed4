#include "sim/simulation.h"

#include <chrono>

#include "sim/network/live_transfers.h"
#include "sim/runtime/cascade.h"
#include "sim/runtime/drive.h"
#include "sim/runtime/routers.h"
#include "sim/serving/registry.h"

namespace fleetsim {

Simulation::Simulation(const scenario::Scenario& sc, RunOptions options)
    : sc_(sc),
      options_(std::move(options)),
      collector_(sc.replicas_all_pools(), sc.slo_ttft_s, sc.slo_tpot_s),
      out_(collector_, options_.observers),
      handoffs_(engine_, this, kKindHandoff, collector_) {
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
  router_ = runtime::numbered_router(sc.router, sc.seed, 0, sc.router_params);
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
    decode_router_ = runtime::numbered_router(sc.router, sc.seed, 1, sc.router_params);
    // The KV cache of the whole model moves over min(GPUs) parallel links.
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
  const workload::Trace* trace = workload_->trace();
  cache_ = std::make_unique<runtime::ResponseCache>(
      sc.response_cache, sc.response_cache_hit_rate, sc.response_cache_capacity,
      sc.response_cache_latency_s, trace != nullptr ? &trace->hashes : nullptr);
}

bool Simulation::escalates(const workload::RequestSpec& r) const {
  return sc_.small_pool && runtime::escalates(r.id, sc_.escalation);
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
    const serving::Handoff h = handoffs_.take(static_cast<uint32_t>(e.data), e.time);
    const size_t target =
        live_net_ ? handoff_target_[e.data] : decode_router_->route(h.spec, replicas_);
    replicas_[target]->submit_prefilled(h);
    return;
  }
  if (e.kind() == kKindCacheHit) {
    // Answered from the response cache: no model call.
    const workload::RequestSpec r = cached_[static_cast<uint32_t>(e.data)];
    cached_.release(static_cast<uint32_t>(e.data));
    out_.on_response_cache_hit(r, e.time);
    client_done(r);
    return;
  }
  const auto slot = static_cast<uint32_t>(e.data);
  const workload::RequestSpec r = pending_[slot];
  pending_.release(slot);
  if (r.client < 0 || r.first_turn) pull_open_loop();
  if (cache_->hit(r)) {
    out_.on_arrival(r, -1, e.time);
    const uint32_t c = cached_.add(r);
    engine_.schedule(e.time + cache_->latency_ns(), serving::kPhaseArrival, this, kKindCacheHit, c);
    return;
  }
  auto& pool = prefill_replicas_.empty() ? replicas_ : prefill_replicas_;
  const size_t target = router_->route(r, pool);
  pool[target]->submit(r);
}

void Simulation::on_prefill_done(const serving::Handoff& h, int replica) {
  out_.on_prefill_done(h, replica);
  const double bytes = runtime::kv_bytes(sc_.model, sc_.prec.kv_bytes, h.spec.prompt_tokens);
  const uint32_t slot = handoffs_.add(h);
  if (live_net_) {
    start_kv_transfer(slot, replica, bytes);
    return;
  }
  // Transfer time over the decode pool's scale-out level, or the WAN link between the
  // pools' regions (α-β; contention between transfers is not modelled by the analytic
  // network).
  const double t = wan_net_ ? wan_net_->wan_transfer_s(bytes, kv_links_)
                            : runtime::kv_transfer_s(*sc_.dep.network, bytes, kv_links_);
  handoffs_.priced(slot, bytes, t);
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
  runtime::drive(engine_, options_, collector_, t0, [&] {
    for (const auto& rep : replicas_) rep->check_invariants();
    for (const auto& rep : prefill_replicas_) rep->check_invariants();  // or the small pool
  });
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
  out_.on_arrival(r, replica, t);
}

void Simulation::on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                           SimTime t) {
  out_.on_reject(r, replica, why, t);
  client_done(r);
}

void Simulation::on_first_token(const workload::RequestSpec& r, int replica, SimTime t) {
  if (sc_.small_pool && replica < first_pool_size_ && escalates(r)) return;  // not the answer
  out_.on_first_token(r, replica, t);
}

void Simulation::on_prefix_lookup(int replica, int64_t prefill_tokens, int64_t hit_tokens) {
  out_.on_prefix_lookup(replica, prefill_tokens, hit_tokens);
}

void Simulation::on_prefix_host_load(int replica, int64_t tokens) {
  out_.on_prefix_host_load(replica, tokens);
}

void Simulation::on_preemption(const workload::RequestSpec& r, int replica, SimTime t) {
  out_.on_preemption(r, replica, t);
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
  if (rec.replica >= 0) cache_->insert(*rec.spec);
  out_.on_completion(rec);
  client_done(*rec.spec);
}

void Simulation::client_done(const workload::RequestSpec& r) {
  if (r.client < 0) return;
  if (auto next = workload_->on_completion(r, engine_.now())) schedule_arrival(*next);
}

void Simulation::on_token_gaps(SimTime gap_ns, uint64_t count) {
  out_.on_token_gaps(gap_ns, count);
}

void Simulation::on_token_gap_series(const StepSeries& s, int64_t k, uint64_t per) {
  out_.on_token_gap_series(s, k, per);
}

void Simulation::on_segment(const serving::SegmentRecord& seg) { out_.on_segment(seg); }

}  // namespace fleetsim
