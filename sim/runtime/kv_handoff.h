// Prefill/decode disaggregation: the requests whose prompt a prefill replica finished, while
// their KV cache travels to a decode replica. The transfer is priced by the network model
// (α-β over parallel links) or runs live on SimGrid; either way the request waits here, by
// slot, until it ends.
#pragma once

#include <cstdint>

#include "hw_models/catalog.h"
#include "hw_models/network.h"
#include "sim/core/engine.h"
#include "sim/core/slot_pool.h"
#include "sim/metrics/collector.h"
#include "sim/serving/observer.h"
#include "sim/serving/replica.h"

namespace fleetsim::runtime {

/// KV bytes a prompt of `prompt_tokens` moves: the whole model's KV per token.
inline double kv_bytes(const hw::ModelSpec& model, double kv_dtype_bytes, int64_t prompt_tokens) {
  return model.kv_bytes_per_token(kv_dtype_bytes) * static_cast<double>(prompt_tokens);
}

/// Seconds to move `bytes` from a prefill replica to a decode replica over `links` GPU
/// pairs in parallel (min of the two replicas' GPUs), each over the scale-out level of
/// `net`. Contention between transfers is not modelled here (see net::LiveTransfers).
inline double kv_transfer_s(const hw::NetworkModel& net, double bytes, int links) {
  return net.p2p_s(bytes / links, true);
}

class KvHandoffs {
 public:
  /// Transfer ends are events of `target` of kind `kind` (data: the slot), in the arrival
  /// phase; `collector` counts each transfer.
  KvHandoffs(core::Engine& engine, core::EventTarget* target, uint8_t kind,
             metrics::Collector& collector)
      : engine_(engine), target_(target), kind_(kind), collector_(collector) {}

  /// Holds `h` while its KV cache travels; returns its slot.
  uint32_t add(const serving::Handoff& h) { return slots_.add(h); }
  /// The transfer of `slot` (`bytes`) takes `seconds` from now: counted, and its end
  /// scheduled.
  void priced(uint32_t slot, double bytes, double seconds) {
    collector_.on_kv_transfer(bytes, seconds);
    end_at(slot, engine_.now() + seconds_to_ns(seconds));
  }
  /// The transfer of `slot` ends at `t` (a live transfer, or a retry).
  void end_at(uint32_t slot, SimTime t) {
    engine_.schedule(t, serving::kPhaseArrival, target_, kind_, slot);
  }
  const serving::Handoff& operator[](uint32_t slot) const { return slots_[slot]; }
  /// The transfer of `slot` ended at `now`: the request, its first token at `now`, leaves.
  serving::Handoff take(uint32_t slot, SimTime now) {
    serving::Handoff h = slots_[slot];
    slots_.release(slot);
    h.first_token_ns = now;
    return h;
  }
  /// Drops `slot` without handing it over.
  void drop(uint32_t slot) { slots_.release(slot); }

 private:
  core::Engine& engine_;
  core::EventTarget* target_;
  uint8_t kind_;
  metrics::Collector& collector_;
  core::SlotPool<serving::Handoff> slots_;
};

}  // namespace fleetsim::runtime
