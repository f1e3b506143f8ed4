#include "sim/serving/step_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fleetsim::serving {

namespace {
// Σ_{i=0}^{n-1} floor((a·i + b) / m): reduce a, b below m, then swap the roles of the axes
// (the lattice points under the line y = (a·x + b)/m counted by rows instead of columns).
// Instantiated for 128 bits (general) and 64 bits (operands below 2^32 and n below 2^31,
// where every intermediate fits and division is native rather than a library call).
template <class U>
U floor_sum_impl(U n, U m, U a, U b) {
  U ans = 0;
  while (true) {
    if (a >= m) {
      ans += (n * (n - 1) / 2) * (a / m);
      a %= m;
    }
    if (b >= m) {
      ans += n * (b / m);
      b %= m;
    }
    const U y_max = a * n + b;
    if (y_max < m) break;
    n = y_max / m;
    b = y_max % m;
    std::swap(m, a);
  }
  return ans;
}
}  // namespace

u128 floor_sum(u128 n, u128 m, u128 a, u128 b) { return floor_sum_impl<u128>(n, m, a, b); }

StepModel::StepModel(StepModelConfig cfg, int64_t max_seqs) : cfg_(std::move(cfg)) {
  fixed_ns_.resize(static_cast<size_t>(max_seqs) + 1);
  double slope_s = 0;
  for (int64_t n = 0; n <= max_seqs; ++n) {
    hw::DecodeAffine a;
    if (cfg_.spec) {
      // Verify k + 1 positions per sequence on the target, k draft steps (see the header).
      const int64_t k = cfg_.spec->k;
      const hw::DecodeAffine t = hw::decode_affine(cfg_.dep, n * (k + 1));
      const hw::DecodeAffine d = hw::decode_affine(cfg_.spec->draft, n);
      a.fixed_s = t.fixed_s + static_cast<double>(k) * d.fixed_s;
      a.per_ctx_token_s = static_cast<double>(k + 1) * t.per_ctx_token_s +
                          static_cast<double>(k) * d.per_ctx_token_s;
    } else {
      a = hw::decode_affine(cfg_.dep, n);
    }
    if (cfg_.lora && n > 0) {
      const double rows = static_cast<double>(n) * (cfg_.spec ? cfg_.spec->k + 1 : 1);
      a.fixed_s += hw::lora_step_s(cfg_.dep, rows,
                                   static_cast<double>(std::min<int64_t>(n, cfg_.lora->slots)),
                                   cfg_.lora->rank);
    }
    // At least 1 ns per iteration so that time always advances.
    fixed_ns_[static_cast<size_t>(n)] = n == 0 ? 0 : std::max<SimTime>(1, seconds_to_ns(a.fixed_s));
    slope_s = a.per_ctx_token_s;  // independent of n by construction
  }
  slope_ns_q32_ = static_cast<uint64_t>(std::llround(slope_s * 1e9 * 4294967296.0));
}

StepModel::StepModel(std::vector<SimTime> decode_fixed_ns, double per_ctx_token_ns,
                     std::function<SimTime(const hw::BatchShape&)> mixed_ns)
    : mixed_fn_(std::move(mixed_ns)), fixed_ns_(std::move(decode_fixed_ns)) {
  slope_ns_q32_ = static_cast<uint64_t>(std::llround(per_ctx_token_ns * 4294967296.0));
}

SimTime StepModel::decode_run_ns(int64_t n, int64_t g, int64_t ctx0, int64_t k) const {
  if (k <= 0) return 0;
  // Σ_{j<k} floor((ctx0 + g·j)·s / 2^32) = floor_sum(k, 2^32, g·s, ctx0·s). The first
  // reduction step of floor_sum (a, b ≥ m = 2^32) is a shift here; the rest is small.
  const u128 a = static_cast<u128>(g) * slope_ns_q32_;
  const u128 b = static_cast<u128>(ctx0) * slope_ns_q32_;
  const u128 kk = static_cast<u128>(k);
  const u128 whole = (kk * (kk - 1) / 2) * (a >> 32) + kk * (b >> 32);
  constexpr uint64_t kMask = 0xffffffffull;
  uint64_t frac;
  if (k < (int64_t{1} << 31)) {
    frac = floor_sum_impl<uint64_t>(static_cast<uint64_t>(k), uint64_t{1} << 32,
                                    static_cast<uint64_t>(a) & kMask,
                                    static_cast<uint64_t>(b) & kMask);
  } else {
    frac = static_cast<uint64_t>(floor_sum(kk, static_cast<u128>(1) << 32, a & kMask, b & kMask));
  }
  return k * fixed_ns_[static_cast<size_t>(n)] + static_cast<SimTime>(whole + frac);
}

int64_t StepModel::decode_iterations_to_reach(int64_t n, int64_t g, int64_t ctx0, int64_t k_max,
                                              SimTime delta_ns, SimTime* run_ns) const {
  // T(k) ≈ k·F + σ·(k·ctx0 + g·k(k-1)/2) with σ = slope in ns; the floors make the exact
  // T(k) smaller by less than k ns, so the real-valued root is within a step or two of the
  // answer. Solve the quadratic, then settle with exact evaluations.
  const double F = static_cast<double>(fixed_ns_[static_cast<size_t>(n)]);
  const double sigma = static_cast<double>(slope_ns_q32_) / 4294967296.0;
  const double qa = 0.5 * sigma * static_cast<double>(g);
  const double qb = F + sigma * static_cast<double>(ctx0) - qa;
  const double d = static_cast<double>(delta_ns);
  double guess = qa > 0 ? (-qb + std::sqrt(qb * qb + 4 * qa * d)) / (2 * qa) : d / qb;
  int64_t k = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(guess)), 1, k_max);
  SimTime t = decode_run_ns(n, g, ctx0, k);
  while (k < k_max && t < delta_ns) t = decode_run_ns(n, g, ctx0, ++k);
  while (k > 1) {
    const SimTime before = decode_run_ns(n, g, ctx0, k - 1);
    if (before < delta_ns) break;
    --k;
    t = before;
  }
  *run_ns = t;
  return k;
}

hw::StepBreakdown StepModel::breakdown(const hw::BatchShape& shape) const {
  return hw::estimate_step(cfg_.dep, shape, &target_cache_);
}

SimTime StepModel::mixed_step_ns(const hw::BatchShape& shape) const {
  // At least 1 ns so that time always advances.
  SimTime t;
  if (mixed_fn_) {
    t = mixed_fn_(shape);
  } else if (cfg_.spec && shape.decode_seqs > 0) {
    // The decodes verify k + 1 positions each; the draft runs k decode steps and prefills
    // the same prompt chunks (it needs their KV too).
    const int64_t k = cfg_.spec->k, n = shape.decode_seqs;
    hw::BatchShape target = shape;
    target.decode_seqs = n * (k + 1);
    target.decode_ctx_tokens = shape.decode_ctx_tokens * (k + 1);
    target.logits_tokens = shape.logits_tokens + n * k;
    hw::BatchShape draft_decode;
    draft_decode.decode_seqs = n;
    draft_decode.logits_tokens = n;
    draft_decode.decode_ctx_tokens = shape.decode_ctx_tokens;
    hw::BatchShape draft_prefill = shape;
    draft_prefill.decode_seqs = draft_prefill.decode_ctx_tokens = 0;
    draft_prefill.logits_tokens -= n;
    const double s =
        hw::estimate_step(cfg_.dep, target, &target_cache_).total_s() +
        static_cast<double>(k) *
            hw::estimate_step(cfg_.spec->draft, draft_decode, &draft_cache_).total_s() +
        hw::estimate_step(cfg_.spec->draft, draft_prefill, &draft_cache_).total_s();
    t = seconds_to_ns(s);
  } else if (cfg_.spec) {
    t = seconds_to_ns(breakdown(shape).total_s() +
                      hw::estimate_step(cfg_.spec->draft, shape, &draft_cache_).total_s());
  } else {
    t = seconds_to_ns(breakdown(shape).total_s());
  }
  if (cfg_.lora && !mixed_fn_) {
    const int64_t seqs = shape.decode_seqs + shape.logits_tokens;  // an upper bound on adapters
    const double rows = static_cast<double>(shape.prefill_tokens + shape.decode_seqs);
    t += seconds_to_ns(hw::lora_step_s(
        cfg_.dep, rows, static_cast<double>(std::min<int64_t>(seqs, cfg_.lora->slots)),
        cfg_.lora->rank));
  }
  return t > 0 ? t : 1;
}

}  // namespace fleetsim::serving
