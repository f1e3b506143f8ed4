// The simulator × a live network (network: {model: simgrid} in a single-pool scenario): KV
// caches between disaggregated pools and the cross-domain expert all-to-all of every
// iteration run as flows on the SimGrid fabric. Kept apart from simulation.cpp so the
// network wiring stays in one place.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/network/live_transfers.h"
#include "sim/simulation.h"

namespace fleetsim {

int Simulation::gpu_of(int replica) const {
  const ReplicaInfo& ri = info_[static_cast<size_t>(replica)];
  const PoolState& p = pools_[static_cast<size_t>(ri.pool)];
  return p.gpu_base + ri.in_pool * p.result.gpus_per_replica;
}

void Simulation::init_live_network() {
  // GPUs on the fabric: the prefill pool's replicas from GPU 0, the decode pool's from
  // sc_.decode_gpu_base (scenario::size_simgrid_fabric sized the fabric the same way).
  const hw::Fabric& fab = sc_.fabric;
  const int per_node = fab.gpus_per_node;
  // Whole-node replicas on one-NIC-per-GPU nodes move their KV caches rail by rail in
  // lockstep, and their rail-aligned all-to-alls too: simulate rail 0 only (exact; see
  // LiveTransfers) — unless the rails meet on a WAN link.
  rail0_only_ = fab.nics_per_node == per_node && fab.regions == 1 &&
                sc_.par.gpus() % per_node == 0 &&
                (!sc_.prefill_pool ||
                 (sc_.prefill_pool->par.gpus() % per_node == 0 && kv_links_ % per_node == 0));
  live_net_ = std::make_unique<net::LiveTransfers>(fab, rail0_only_);
}

void Simulation::init_live_alltoall() {
  const hw::Fabric& fab = sc_.fabric;
  const int D = fab.domain_gpus;
  a2a_.assign(replicas_.size(), {});
  // Each flow alone costs latency + bytes / rate with the rates fixed by the pattern, so
  // the group's time alone is affine in the bytes per flow: two runs give it exactly.
  constexpr double kBytes1 = 1e8, kBytes2 = 2e8;  // per flow
  for (size_t r = 0; r < replicas_.size(); ++r) {
    const PoolState& p = pools_[static_cast<size_t>(info_[r].pool)];
    if (p.gpu_base < 0) continue;  // not on the fabric (a cascade's small model)
    const hw::Deployment& d = p.steps->config().dep;
    const int G = d.par.gpus();
    if (!hw::ep_alltoall_leaves_domain(d)) continue;  // it stays inside a domain
    const int first = gpu_of(static_cast<int>(r));
    if (d.par.pp != 1 || G % D != 0 || first % D != 0)
      throw std::logic_error("live all-to-all: replicas must be pp 1 on whole domains");
    AllToAllReplica& a = a2a_[r];
    // Rail-aligned (NCCL's PXN, DeepEP's internode kernels): GPU s's data for GPU t in
    // another domain first crosses s's domain over NVLink to the GPU with t's local index,
    // whose NIC is on t's rail, then goes NIC to NIC. One flow per (s, t), from that GPU;
    // the NVLink hop is not simulated (a domain's links carry only its own replica's
    // traffic).
    for (int s = first; s < first + G; ++s)
      for (int t = first; t < first + G; ++t) {
        if (s / D == t / D) continue;
        ++a.flows;
        const int src = s / D * D + t % D;
        if (!rail0_only_ || src % fab.gpus_per_node == 0) a.pairs.emplace_back(src, t);
      }
    const double t1 = live_net_->time_alone_s(a.pairs, kBytes1);
    const double t2 = live_net_->time_alone_s(a.pairs, kBytes2);
    a.alone_s_per_byte = (t2 - t1) / (kBytes2 - kBytes1);
    a.alone_s0 = t1 - a.alone_s_per_byte * kBytes1;
    a.steps = p.steps.get();
    replicas_[r]->attach_comm(this);
  }
}

void Simulation::iteration(serving::Replica& replica, uint64_t gen, SimTime start, SimTime end,
                           int64_t prefill_tokens, int64_t decode_seqs) {
  const AllToAllReplica& a = a2a_[static_cast<size_t>(replica.index())];
  const hw::EpAllToAll t = a.steps->ep_alltoall(prefill_tokens, decode_seqs);
  // Each GPU sends bytes_per_gpu / size to every other member per call.
  const double bytes_per_flow = t.calls * t.bytes_per_gpu / t.group.size;
  if (!(bytes_per_flow > 0)) {
    replica.end_segment_at(end, gen);
    return;
  }
  const uint64_t tag = kAllToAllTag | a2a_next_++;
  a2a_live_[tag] = {&replica, gen, end, a.alone_s0 + a.alone_s_per_byte * bytes_per_flow,
                    bytes_per_flow * a.flows};
  live_net_->start_flows(tag, a.pairs, bytes_per_flow, start);
  arm_network(false);
}

void Simulation::finish_alltoall(uint64_t tag, SimTime started, SimTime now) {
  const auto it = a2a_live_.find(tag);
  const AllToAllIteration done = it->second;
  a2a_live_.erase(it);
  // The iteration waits as much longer as its flows took over their time alone. Rounded to
  // the nanosecond, so an uncontended iteration ends exactly where the tables put it.
  const double took = live_net_->last_end_s() - ns_to_seconds(started);
  const SimTime delay = std::max<SimTime>(0, std::llround((took - done.alone_s) * 1e9));
  collector_.on_alltoall(done.bytes, delay);
  done.replica->end_segment_at(std::max(done.end + delay, now), done.gen);
}

void Simulation::start_kv_transfer(uint32_t handoff, int prefill_replica, double bytes) {
  // The decode replica is chosen now: its GPUs are where the KV cache goes. One flow per
  // GPU pair, kv_links_ of them, GPU k of the prefill replica to GPU k of the decode one.
  const workload::RequestSpec& spec = handoffs_[handoff].spec;
  const Group& g = decode_groups_[static_cast<size_t>(slots_[spec.tag].region * n_models_ +
                                                      target_model(slots_[spec.tag]))];
  const int32_t target =
      g.active[decode_router_->route(spec, serving::ReplicaSet(replicas_, g.active))];
  if (handoff_target_.size() <= handoff) {
    handoff_target_.resize(handoff + 1);
    handoff_bytes_.resize(handoff + 1);
  }
  handoff_target_[handoff] = target;
  handoff_bytes_[handoff] = bytes;
  live_net_->start_group(handoff, gpu_of(prefill_replica), gpu_of(target), kv_links_,
                         bytes / kv_links_, engine_.now());
  arm_network(false);
}

void Simulation::on_network_wake(SimTime t) {
  if (t == net_wake_at_) net_wake_at_ = -1;
  live_net_->advance(t, [&](uint64_t tag, SimTime started) {
    if (tag & kAllToAllTag) return finish_alltoall(tag, started, t);
    collector_.on_kv_transfer(handoff_bytes_[tag], ns_to_seconds(t - started));
    handoffs_.end_at(static_cast<uint32_t>(tag), t);
  });
  arm_network(true);
}

void Simulation::arm_network(bool from_wake) {
  SimTime w = live_net_->next_wake();
  if (w < 0) return;
  // A wake-up that found nothing (the event rounds to this very nanosecond) tries 1 ns later.
  if (from_wake && w <= engine_.now()) w = engine_.now() + 1;
  w = std::max(w, engine_.now());
  if (net_wake_at_ >= 0 && net_wake_at_ >= engine_.now() && net_wake_at_ <= w) return;
  net_wake_at_ = w;
  engine_.schedule(w, serving::kPhaseArrival, this, kNetWake, 0);
}

}  // namespace fleetsim
