// Simulation × live SimGrid network (network: {model: simgrid}, issue 7). Kept apart from
// simulation.cpp so the network wiring stays in one place.
#include <algorithm>

#include "sim/network/live_transfers.h"
#include "sim/simulation.h"

namespace fleetsim {

void Simulation::init_live_network() {
  // GPUs on the fabric: the prefill pool's replicas first, then the decode pool's from the
  // next node boundary (scenario::size_simgrid_fabric sized the fabric the same way).
  const int per_node = sc_.fabric.gpus_per_node;
  const int prefill_gpus = sc_.prefill_pool->replicas * sc_.prefill_pool->par.gpus();
  decode_gpu_base_ = (prefill_gpus + per_node - 1) / per_node * per_node;
  // Whole-node replicas on one-NIC-per-GPU nodes move their KV caches rail by rail in
  // lockstep: simulate rail 0 only (exact; see LiveTransfers).
  const bool whole_nodes = sc_.fabric.nics_per_node == per_node &&
                           sc_.prefill_pool->par.gpus() % per_node == 0 &&
                           sc_.par.gpus() % per_node == 0 && kv_links_ % per_node == 0;
  live_net_ = std::make_unique<net::LiveTransfers>(sc_.fabric, whole_nodes);
}

void Simulation::start_kv_transfer(uint32_t slot, int prefill_replica, double bytes) {
  // The decode replica is chosen now: its GPUs are where the KV cache goes. One flow per
  // GPU pair, kv_links_ of them, GPU k of the prefill replica to GPU k of the decode one.
  const size_t target = decode_router_->route(handoffs_[slot].spec, replicas_);
  if (handoff_target_.size() <= slot) {
    handoff_target_.resize(slot + 1);
    handoff_bytes_.resize(slot + 1);
  }
  handoff_target_[slot] = static_cast<uint32_t>(target);
  handoff_bytes_[slot] = bytes;
  const int src = prefill_replica * sc_.prefill_pool->par.gpus();
  const int dst = decode_gpu_base_ + static_cast<int>(target) * sc_.par.gpus();
  live_net_->start_group(slot, src, dst, kv_links_, bytes / kv_links_, engine_.now());
  arm_network(false);
}

void Simulation::on_network_wake(SimTime t) {
  if (t == net_wake_at_) net_wake_at_ = -1;
  live_net_->advance(t, [&](uint64_t slot, SimTime started) {
    collector_.on_kv_transfer(handoff_bytes_[slot], ns_to_seconds(t - started));
    engine_.schedule(t, serving::kPhaseArrival, this, kKindHandoff, slot);
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
  engine_.schedule(w, serving::kPhaseArrival, this, kKindNetWake, 0);
}

}  // namespace fleetsim
