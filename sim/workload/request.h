// A request as the workload generates it (before any serving state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/workload/slo.h"

namespace fleetsim::workload {

struct RequestSpec {
  uint64_t id = 0;  ///< 0, 1, 2, ... in generation order
  SimTime arrival_ns = 0;
  int32_t prompt_tokens = 0;  ///< >= 1
  int32_t output_tokens = 0;  ///< >= 1 (the first comes out of prefill)
  int32_t client = -1;        ///< closed-loop user index, -1 for open-loop/trace
  uint32_t hash_begin = 0;    ///< prefix-block hashes: [hash_begin, hash_begin + hash_count)
  uint32_t hash_count = 0;    ///< into Trace::hashes (Mooncake traces), 0 otherwise
  uint32_t tag = 0;           ///< the owner's handle (fleet: the call's slot); not read by replicas
  uint32_t adapter = 0;       ///< LoRA adapter (1-based; 0 = the base model)
  uint8_t cls = 0;            ///< request class (index into the workload's classes; 0 if none)
  uint8_t priority = 0;       ///< scheduling priority of its class (higher goes first)
  uint8_t region = 0;         ///< fleet: the users' home region (index into the fleet's regions)
  bool first_turn = false;    ///< conversations: a new conversation's first request, which
                              ///< the open-loop stream of conversation starts continues from
};

/// The content hash of block `b` (0-based) of a generated conversation's prompt: blocks
/// inside the shared system prompt have owner 0, the rest the conversation's own owner
/// (its identity + 1). Equal content, equal hash: every conversation shares the system
/// prompt's blocks, and a conversation's next turn starts with its previous turn's blocks.
inline uint64_t conversation_block_hash(uint64_t owner, int64_t b) {
  return owner * 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(b) + 1) * 0xbf58476d1ce4e5b9ULL;
}

/// A request class (chat, reasoning, agent, ...): a share of the traffic with its own
/// lengths (optional), scheduling priority and latency targets.
struct RequestClass {
  std::string name;
  double share = 1;
  int priority = 0;
  double slo_ttft_s = 0, slo_tpot_s = 0;  ///< per-request bounds; 0 = none
  std::vector<SloTarget> slo_targets;     ///< percentile targets (cls = name)
};

}  // namespace fleetsim::workload
