// Step times for the serving loop, from the performance model (hw_models/perf_model.h),
// converted to integer nanoseconds once, with a cache so the hot loop does no roofline work.
//
// Decode-only iterations use an integer form that is exact to sum in closed form:
//     step_ns(n, ctx) = fixed_ns[n] + floor(ctx * slope_ns_q32 / 2^32)
// where fixed_ns[n] = round(decode_affine(n).fixed_s · 1e9) and slope_ns_q32 =
// round(per_ctx_token_s · 1e9 · 2^32). Both the one-iteration path and the closed-form
// fast path use this same formula, so they agree to the nanosecond. (The quantisation error
// is below 1 ns per iteration.)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "hw_models/perf_model.h"
#include "sim/core/time.h"

namespace fleetsim::serving {

// 128-bit unsigned for exact sums of fixed-point step times (GCC/Clang extension).
__extension__ typedef unsigned __int128 u128;

/// Speculative decoding (Leviathan et al., "Fast Inference from Transformers via
/// Speculative Decoding", ICML 2023; Chen et al., arXiv:2302.01318): a draft model proposes
/// k tokens per sequence (k sequential draft decode steps), the target verifies k + 1
/// positions in one forward pass. A decode iteration of n sequences at Σctx then costs
///   target(rows n·(k+1), attended context (k+1)·Σctx) + k · draft(n, Σctx),
/// still affine in Σctx. Iterations with prompt chunks also prefill them on the draft.
struct Speculative {
  int k = 0;             ///< draft tokens per iteration
  hw::Deployment draft;  ///< the draft model (or an MTP head) on the same GPUs
};

/// Multi-LoRA: every iteration also runs the adapters (hw::lora_step_s), with
/// min(sequences, slots) distinct adapters — an upper bound that keeps decode steps a
/// function of the batch size only.
struct Lora {
  int rank = 0;
  int slots = 0;
};

struct StepModelConfig {
  hw::Deployment dep;
  std::optional<Speculative> spec;
  std::optional<Lora> lora;
};

class StepModel {
 public:
  /// Precomputes the decode cache for batch sizes 0..max_seqs.
  StepModel(StepModelConfig cfg, int64_t max_seqs);

  /// A step model given directly by its costs (hand-checkable tests, what-if studies):
  /// decode_fixed_ns[n] for n = 0..max_seqs, the per-attended-token slope in ns, and the
  /// cost of any iteration with prefill work.
  StepModel(std::vector<SimTime> decode_fixed_ns, double per_ctx_token_ns,
            std::function<SimTime(const hw::BatchShape&)> mixed_ns);

  /// One decode-only iteration of n sequences attending `ctx_tokens` in total.
  SimTime decode_step_ns(int64_t n, int64_t ctx_tokens) const {
    return fixed_ns_[static_cast<size_t>(n)] +
           static_cast<SimTime>((static_cast<u128>(ctx_tokens) * slope_ns_q32_) >> 32);
  }
  /// Σ_{j<k} decode_step_ns(n, ctx0 + g·j): k decode iterations of an unchanging batch
  /// whose attended context grows by g tokens per iteration (g = n without speculative
  /// decoding; the tokens accepted per iteration with it). O(log) time.
  SimTime decode_run_ns(int64_t n, int64_t g, int64_t ctx0, int64_t k) const;
  SimTime decode_run_ns(int64_t n, int64_t ctx0, int64_t k) const {
    return decode_run_ns(n, n, ctx0, k);
  }

  /// The smallest k in [1, k_max] with decode_run_ns(n, ctx0, k) >= delta_ns (k_max when
  /// none): the first iteration boundary at or after delta_ns into a stretch. Stores
  /// decode_run_ns(n, ctx0, k) in *run_ns.
  int64_t decode_iterations_to_reach(int64_t n, int64_t g, int64_t ctx0, int64_t k_max,
                                     SimTime delta_ns, SimTime* run_ns) const;
  int64_t decode_iterations_to_reach(int64_t n, int64_t ctx0, int64_t k_max, SimTime delta_ns,
                                     SimTime* run_ns) const {
    return decode_iterations_to_reach(n, n, ctx0, k_max, delta_ns, run_ns);
  }

  /// Any iteration with prefill work.
  SimTime mixed_step_ns(const hw::BatchShape& shape) const;
  hw::StepBreakdown breakdown(const hw::BatchShape& shape) const;

  /// The target model's expert-parallel all-to-all in an iteration that prefills
  /// `prefill_tokens` and decodes `decode_seqs` sequences (k + 1 rows each with speculative
  /// decoding; the draft's own traffic is not counted). calls = 0 without one.
  hw::EpAllToAll ep_alltoall(int64_t prefill_tokens, int64_t decode_seqs) const {
    const int64_t rows = decode_seqs * (cfg_.spec ? cfg_.spec->k + 1 : 1);
    return cfg_.dep.model ? hw::ep_alltoall(cfg_.dep, static_cast<double>(prefill_tokens + rows))
                          : hw::EpAllToAll{};
  }

  const StepModelConfig& config() const { return cfg_; }
  int64_t max_seqs() const { return static_cast<int64_t>(fixed_ns_.size()) - 1; }

 private:
  StepModelConfig cfg_;
  std::function<SimTime(const hw::BatchShape&)> mixed_fn_;  // set: replaces the roofline
  std::vector<SimTime> fixed_ns_;
  uint64_t slope_ns_q32_ = 0;  // ns per attended context token, 32.32 fixed point
  // Token-count terms of mixed iterations met before, for the target and the draft: the
  // same results, less work (one StepModel serves one simulation, on one thread).
  mutable hw::StepCache target_cache_, draft_cache_;
};

/// Σ_{i=0}^{n-1} floor((a·i + b) / m), the classic floor-sum in O(log m) steps.
u128 floor_sum(u128 n, u128 m, u128 a, u128 b);

}  // namespace fleetsim::serving
