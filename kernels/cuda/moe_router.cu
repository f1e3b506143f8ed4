// MoE router: softmax over each token's expert logits, then top-k selection.
// One warp per token; lane l holds experts l, l+32, ... (up to 256 experts: 8 per lane, in
// registers indexed only by unrolled constants). Selection is k rounds of a warp arg-max
// over (logit, -index), so equal logits go to the lower expert index, as in the CPU
// reference; selecting by logit equals selecting by probability (softmax is monotone).
#include <climits>
#include <cmath>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

constexpr int kWarps = 4;

// (v, i) beats (w, j): larger value, or equal value and lower index; j == INT_MAX is "none".
FK_DEV bool better(float v, int i, float w, int j) {
  if (i == INT_MAX) return false;
  if (j == INT_MAX) return true;
  return v > w || (v == w && i < j);
}

template <int VPL>
FK_GLOBAL void FK_LAUNCH_BOUNDS(kWarps * 32)
    router_kernel(const float* __restrict__ logits, int tokens, int experts, int top_k,
                  int renormalize, int* __restrict__ ids, float* __restrict__ weights) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int tok = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x) / 32;
  if (tok >= tokens) return;  // whole warp; no block barriers below
  const float* l = logits + static_cast<std::size_t>(tok) * experts;
  float v[VPL];
#pragma unroll
  for (int i = 0; i < VPL; ++i) {
    const int e = lane + 32 * i;
    v[i] = e < experts ? l[e] : -INFINITY;
  }
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < VPL; ++i) mx = fmaxf(mx, v[i]);
  mx = dev::warp_max(mx);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < VPL; ++i)
    if (lane + 32 * i < experts) sum += expf(v[i] - mx);
  sum = dev::warp_sum(sum);

  unsigned taken = 0;  // bit i: expert lane + 32 i already selected
  float sel_p[16];
  int sel_i[16];
  float sel_sum = 0.0f;
#pragma unroll
  for (int s = 0; s < 16; ++s) {
    if (s < top_k) {
      float bv = -INFINITY;
      int bi = INT_MAX;
#pragma unroll
      for (int i = 0; i < VPL; ++i) {
        const int e = lane + 32 * i;
        if (e < experts && !((taken >> i) & 1u) && better(v[i], e, bv, bi)) {
          bv = v[i];
          bi = e;
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xFFFFFFFFu, bv, o);
        const int oi = __shfl_xor_sync(0xFFFFFFFFu, bi, o);
        if (better(ov, oi, bv, bi)) {
          bv = ov;
          bi = oi;
        }
      }
      // Every lane now holds the same winner.
#pragma unroll
      for (int i = 0; i < VPL; ++i)
        if (lane + 32 * i == bi) taken |= 1u << i;
      sel_i[s] = bi;
      sel_p[s] = expf(bv - mx) / sum;
      sel_sum += sel_p[s];
    }
  }
  if (lane == 0) {
    const float div = renormalize ? sel_sum : 1.0f;
#pragma unroll
    for (int s = 0; s < 16; ++s)
      if (s < top_k) {
        ids[static_cast<std::size_t>(tok) * top_k + s] = sel_i[s];
        weights[static_cast<std::size_t>(tok) * top_k + s] = sel_p[s] / div;
      }
  }
}

}  // namespace

cudaError_t moe_router_topk(const float* logits, int tokens, int experts, int top_k,
                            bool renormalize, int* ids, float* weights, cudaStream_t s) {
  if (tokens <= 0 || experts <= 0 || experts > 256 || top_k <= 0 || top_k > 16 || top_k > experts ||
      logits == nullptr || ids == nullptr || weights == nullptr)
    return cudaErrorInvalidValue;
  const unsigned grid = static_cast<unsigned>((tokens + kWarps - 1) / kWarps);
  const int r = renormalize ? 1 : 0;
  if (experts <= 32) FK_LAUNCH(router_kernel<1>, grid, kWarps * 32, 0, s)
  (logits, tokens, experts, top_k, r, ids, weights);
  else if (experts <= 64) FK_LAUNCH(router_kernel<2>, grid, kWarps * 32, 0, s)(
      logits, tokens, experts, top_k, r, ids, weights);
  else if (experts <= 128) FK_LAUNCH(router_kernel<4>, grid, kWarps * 32, 0, s)(
      logits, tokens, experts, top_k, r, ids, weights);
  else FK_LAUNCH(router_kernel<8>, grid, kWarps * 32, 0, s)(logits, tokens, experts, top_k, r, ids,
                                                            weights);
  return FK_LAST_ERROR();
}

}  // namespace fleetsim::kernels
