#include "sim/network/live_transfers.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

namespace fleetsim::net {

namespace {
std::atomic<bool> g_in_use{false};

SimGridFabric& claim(const hw::Fabric& fabric) {
  if (g_in_use.exchange(true))
    throw std::runtime_error(
        "network model simgrid: another simulation in this process is using the SimGrid engine "
        "(one engine per process); run simulations with live SimGrid transfers one at a time");
  try {
    return SimGridFabric::acquire(fabric);
  } catch (...) {
    g_in_use = false;
    throw;
  }
}
}  // namespace

LiveTransfers::LiveTransfers(const hw::Fabric& fabric, bool rail_symmetric)
    : fabric_(claim(fabric)), rail_symmetric_(rail_symmetric) {
  try {
    if (rail_symmetric && fabric.nics_per_node != fabric.gpus_per_node)
      throw std::invalid_argument("live transfers: rail symmetry needs one NIC per GPU");
    fabric_.reset_origin();
  } catch (...) {
    g_in_use = false;
    throw;
  }
}

LiveTransfers::~LiveTransfers() {
  // Let what is still in flight finish (a run that stopped early), so the next user of the
  // engine starts from an idle network.
  std::vector<Completion> done;
  try {
    for (int guard = 0; guard < 100000000 && fabric_.advance_to_next_event(done); ++guard) done.clear();
  } catch (const std::logic_error&) {
    // no next event: nothing more will finish
  }
  g_in_use = false;
}

void LiveTransfers::start_group(uint64_t tag, int src_base, int dst_base, int links,
                                double bytes_per_link, SimTime now) {
  if (links < 1) throw std::invalid_argument("live transfers: a group needs at least one flow");
  const int step = rail_symmetric_ ? fabric_.fabric().gpus_per_node : 1;
  if (rail_symmetric_ && (src_base % step != 0 || dst_base % step != 0 || links % step != 0))
    throw std::logic_error("live transfers: a rail-symmetric group must cover whole nodes");
  if (!groups_.emplace(tag, Group{links / step, now}).second)
    throw std::logic_error("live transfers: tag already in flight");
  const double t = ns_to_seconds(now);
  for (int k = 0; k < links; k += step)
    owner_[fabric_.start_transfer(src_base + k, dst_base + k, bytes_per_link, t)] = tag;
}

void LiveTransfers::start_flows(uint64_t tag, const std::vector<std::pair<int, int>>& pairs,
                                double bytes_each, SimTime now) {
  if (pairs.empty()) throw std::invalid_argument("live transfers: a group needs at least one flow");
  if (rail_symmetric_) {
    const int per_node = fabric_.fabric().gpus_per_node;
    for (const auto& [src, dst] : pairs)
      if (src % per_node != 0 || dst % per_node != 0)
        throw std::logic_error("live transfers: a rail-symmetric run takes rail 0's flows only");
  }
  if (!groups_.emplace(tag, Group{static_cast<int>(pairs.size()), now}).second)
    throw std::logic_error("live transfers: tag already in flight");
  const double t = ns_to_seconds(now);
  for (const auto& [src, dst] : pairs) owner_[fabric_.start_transfer(src, dst, bytes_each, t)] = tag;
}

double LiveTransfers::time_alone_s(const std::vector<std::pair<int, int>>& pairs, double bytes_each) {
  if (fabric_.in_flight() > 0 || !groups_.empty())
    throw std::logic_error("live transfers: time_alone_s needs an idle network");
  const double t0 = fabric_.now();
  size_t left = pairs.size();
  for (const auto& [src, dst] : pairs) fabric_.start_transfer(src, dst, bytes_each, t0);
  double end = t0;
  while (left > 0) {
    fabric_.advance_to_next_event(done_);
    for (const Completion& c : done_) end = std::max(end, c.time_s);
    left -= std::min(left, done_.size());
    done_.clear();
  }
  fabric_.reset_origin();
  return end - t0;
}

void LiveTransfers::advance(SimTime now,
                            const std::function<void(uint64_t, SimTime)>& done) {
  fabric_.advance_to(ns_to_seconds(now), done_);
  for (const Completion& c : done_) {
    auto it = owner_.find(c.id);
    if (it == owner_.end()) continue;
    const uint64_t tag = it->second;
    owner_.erase(it);
    auto g = groups_.find(tag);
    if (--g->second.pending == 0) {
      const SimTime started = g->second.started;
      groups_.erase(g);
      last_end_s_ = c.time_s;  // completions come in time order: the group's last flow
      done(tag, started);
    }
  }
  done_.clear();
}

SimTime LiveTransfers::next_wake() const {
  const double t = fabric_.next_event_time();
  if (!std::isfinite(t)) return -1;
  // Round up, so that advancing to the wake-up passes the event.
  return static_cast<SimTime>(std::ceil(t * 1e9));
}

}  // namespace fleetsim::net
