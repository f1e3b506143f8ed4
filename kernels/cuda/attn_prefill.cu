// Prefill attention forward, BF16, head dim 128: FlashAttention-2-style tiling (Dao 2023,
// arXiv:2307.08691, Algorithm 1) written plainly.
//
// Block = 4 warps, 64 query rows of one (sequence, head); each warp owns 16 rows. Keys and
// values stream through shared memory in tiles of 64 (cp.async, two buffers). Per tile a
// warp computes S = Q·Kᵀ (16×64) with mma.sync m16n8k16, masks (sequence end, causal),
// updates its rows' running max m and sum l in the log2 domain, rescales its O accumulator
// (16×128, FP32 registers) and adds P·V, P taken straight from the S accumulators as the A
// operand (the C fragment of two adjacent n8 tiles is the A fragment of one k16 slice).
// GQA: head h reads KV head h / (heads / kv_heads). Causal blocks stop at the last key
// tile their rows can see; the heaviest query tiles are scheduled first.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

constexpr int D = 128;        // head dim
constexpr int BR = 64;        // query rows per block
constexpr int BC = 64;        // keys per tile
constexpr int THREADS = 128;  // 4 warps × 16 rows
constexpr int LD = D + 8;     // shared row stride (elements): 272 bytes, 16-byte aligned
constexpr int SMEM_BYTES = (BR + 4 * BC) * LD * 2;  // Q + 2×K + 2×V = 87040

struct Args {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  __nv_bfloat16* o;
  int q_len, kv_len, heads, kv_heads;
  int causal;
  float scale_log2;  // softmax_scale · log2(e)
};

// Copies `nrows` (= 64) rows of 128 bf16, row r from base + r·stride, into shared rows of
// LD; rows r >= valid are zero-filled. 1024 chunks of 16 bytes over 128 threads.
FK_DEV void load_rows(__nv_bfloat16* dst, const __nv_bfloat16* base, std::size_t stride,
                      int valid) {
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < (64 * D / 8) / THREADS; ++i) {
    const int c = tid + i * THREADS;
    const int r = c / (D / 8), cc = (c % (D / 8)) * 8;
    const bool ok = r < valid;
    const __nv_bfloat16* src = ok ? base + static_cast<std::size_t>(r) * stride + cc : base;
    dev::cp_async16(dst + r * LD + cc, src, ok);
  }
}

FK_GLOBAL void FK_LAUNCH_BOUNDS(THREADS) attn_prefill_kernel(Args a) {
  FK_SMEM(unsigned char, smem_raw);
  auto* Qs = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* Ks = Qs + BR * LD;      // 2 buffers of BC×LD
  __nv_bfloat16* Vs = Ks + 2 * BC * LD;  // 2 buffers of BC×LD

  const int qt = static_cast<int>(gridDim.x - 1 - blockIdx.x);  // heavy (late) tiles first
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int hk = h / (a.heads / a.kv_heads);
  const int q0 = qt * BR;
  const int offset = a.kv_len - a.q_len;  // >= 0: bottom-right causal alignment
  const int last_row = min(q0 + BR, a.q_len) - 1;
  const int kv_end = a.causal ? min(a.kv_len, last_row + offset + 1) : a.kv_len;
  const int n_tiles = (kv_end + BC - 1) / BC;

  const std::size_t q_stride = static_cast<std::size_t>(a.heads) * D;
  const std::size_t kv_stride = static_cast<std::size_t>(a.kv_heads) * D;
  const __nv_bfloat16* q_base = a.q + (static_cast<std::size_t>(b) * a.q_len + q0) * q_stride +
                                static_cast<std::size_t>(h) * D;
  const __nv_bfloat16* k_base =
      a.k + static_cast<std::size_t>(b) * a.kv_len * kv_stride + static_cast<std::size_t>(hk) * D;
  const __nv_bfloat16* v_base =
      a.v + static_cast<std::size_t>(b) * a.kv_len * kv_stride + static_cast<std::size_t>(hk) * D;

  // Group 0: Q and the first K/V tile.
  load_rows(Qs, q_base, q_stride, a.q_len - q0);
  load_rows(Ks, k_base, kv_stride, a.kv_len);
  load_rows(Vs, v_base, kv_stride, a.kv_len);
  dev::cp_async_commit();

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, t4 = lane & 3;
  const int row_a = q0 + warp * 16 + g;  // query rows of this thread's fragments
  const int row_b = row_a + 8;

  float o[16][4];
#pragma unroll
  for (int u = 0; u < 16; ++u)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[u][e] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY};
  float l_run[2] = {0.0f, 0.0f};
  std::uint32_t qf[8][4];

  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_tiles) {
      const int buf = (j + 1) & 1;
      const std::size_t off = static_cast<std::size_t>(j + 1) * BC * kv_stride;
      load_rows(Ks + buf * BC * LD, k_base + off, kv_stride, a.kv_len - (j + 1) * BC);
      load_rows(Vs + buf * BC * LD, v_base + off, kv_stride, a.kv_len - (j + 1) * BC);
      dev::cp_async_commit();
      dev::cp_async_wait<1>();  // tile j (and Q) complete, tile j+1 may be in flight
    } else {
      dev::cp_async_wait<0>();
    }
    __syncthreads();

    if (j == 0) {
#pragma unroll
      for (int ks = 0; ks < 8; ++ks) {
        const __nv_bfloat16* qa = Qs + (warp * 16 + g) * LD + ks * 16 + t4 * 2;
        qf[ks][0] = dev::ld_u32(qa);
        qf[ks][1] = dev::ld_u32(qa + 8 * LD);
        qf[ks][2] = dev::ld_u32(qa + 8);
        qf[ks][3] = dev::ld_u32(qa + 8 * LD + 8);
      }
    }
    const __nv_bfloat16* Kb = Ks + (j & 1) * BC * LD;
    const __nv_bfloat16* Vb = Vs + (j & 1) * BC * LD;

    // S = Q·Kᵀ: 8 n8-tiles of keys, 8 k16-slices of the head dim.
    float s[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = 0.0f;
      const __nv_bfloat16* kb = Kb + (nt * 8 + g) * LD + t4 * 2;  // B(k=dim, n=key) = K[key][dim]
#pragma unroll
      for (int ks = 0; ks < 8; ++ks)
        dev::mma_bf16_16816(s[nt], qf[ks], dev::ld_u32(kb + ks * 16),
                            dev::ld_u32(kb + ks * 16 + 8));
    }

    // Scale into the log2 domain and mask: keys past the end, and the future when causal.
    const int key0 = j * BC;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + nt * 8 + t4 * 2 + (e & 1);
        const int row = e < 2 ? row_a : row_b;
        const bool ok = key < a.kv_len && (!a.causal || key <= row + offset);
        s[nt][e] = ok ? s[nt][e] * a.scale_log2 : -INFINITY;
      }

    // Online softmax per row (r = 0: row_a, r = 1: row_b). A row's 64 columns sit in the
    // 4 lanes of its quad: reduce with xor 1 and 2.
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 2));
      const float m_new = fmaxf(m_run[r], mx);
      base[r] = m_new == -INFINITY ? 0.0f : m_new;  // row fully masked so far: no NaN
      const float corr = exp2f(m_run[r] - base[r]);
      m_run[r] = m_new;
      float rs = 0.0f;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        s[nt][2 * r] = exp2f(s[nt][2 * r] - base[r]);
        s[nt][2 * r + 1] = exp2f(s[nt][2 * r + 1] - base[r]);
        rs += s[nt][2 * r] + s[nt][2 * r + 1];
      }
      rs += __shfl_xor_sync(0xFFFFFFFFu, rs, 1);
      rs += __shfl_xor_sync(0xFFFFFFFFu, rs, 2);
      l_run[r] = l_run[r] * corr + rs;
#pragma unroll
      for (int u = 0; u < 16; ++u) {
        o[u][2 * r] *= corr;
        o[u][2 * r + 1] *= corr;
      }
    }

    // O += P·V: P (16×64) as 4 k16-slices; V tile (64 keys × 128 dims) as 16 n8-tiles.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const std::uint32_t pa[4] = {
          dev::pack_bf16x2(s[2 * kk][0], s[2 * kk][1]),           // row g,   keys 16kk+2t..
          dev::pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),           // row g+8, keys 16kk+2t..
          dev::pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),   // row g,   keys 16kk+8+2t..
          dev::pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};  // row g+8, keys 16kk+8+2t..
      const auto* vrow = reinterpret_cast<const std::uint16_t*>(Vb + (kk * 16 + t4 * 2) * LD + g);
#pragma unroll
      for (int u = 0; u < 16; ++u) {
        // B(k=key, n=dim) = V[key][dim]: b0 = keys 2t, 2t+1; b1 = keys 2t+8, 2t+9; dim g.
        const std::uint16_t* v0 = vrow + u * 8;
        const std::uint32_t b0 = dev::pack_bits(v0[0], v0[LD]);
        const std::uint32_t b1 = dev::pack_bits(v0[8 * LD], v0[9 * LD]);
        dev::mma_bf16_16816(o[u], pa, b0, b1);
      }
    }
    __syncthreads();  // everyone is done with buffer j&1 before tile j+2 is loaded into it
  }

  // Normalise and store rows inside the sequence.
  const float inv_a = l_run[0] > 0.0f ? 1.0f / l_run[0] : 0.0f;
  const float inv_b = l_run[1] > 0.0f ? 1.0f / l_run[1] : 0.0f;
  const std::size_t ho = static_cast<std::size_t>(h) * D + static_cast<std::size_t>(t4) * 2;
  if (row_a < a.q_len) {
    auto* dst = reinterpret_cast<std::uint32_t*>(
        a.o + (static_cast<std::size_t>(b) * a.q_len + row_a) * q_stride + ho);
#pragma unroll
    for (int u = 0; u < 16; ++u) dst[u * 4] = dev::pack_bf16x2(o[u][0] * inv_a, o[u][1] * inv_a);
  }
  if (row_b < a.q_len) {
    auto* dst = reinterpret_cast<std::uint32_t*>(
        a.o + (static_cast<std::size_t>(b) * a.q_len + row_b) * q_stride + ho);
#pragma unroll
    for (int u = 0; u < 16; ++u) dst[u * 4] = dev::pack_bf16x2(o[u][2] * inv_b, o[u][3] * inv_b);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

cudaError_t attn_prefill_bf16(const PrefillArgs& p, cudaStream_t s) {
  if (p.head_dim != D || p.batch <= 0 || p.q_len <= 0 || p.kv_len < p.q_len || p.heads <= 0 ||
      p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    return cudaErrorInvalidValue;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
    return cudaErrorInvalidValue;
  if (p.heads > 65535 || p.batch > 65535) return cudaErrorInvalidValue;
  static const cudaError_t attr = FK_SET_SMEM_ATTR(attn_prefill_kernel, SMEM_BYTES);
  if (attr != cudaSuccess) return attr;
  Args a;
  a.q = reinterpret_cast<const __nv_bfloat16*>(p.q);
  a.k = reinterpret_cast<const __nv_bfloat16*>(p.k);
  a.v = reinterpret_cast<const __nv_bfloat16*>(p.v);
  a.o = reinterpret_cast<__nv_bfloat16*>(p.o);
  a.q_len = p.q_len;
  a.kv_len = p.kv_len;
  a.heads = p.heads;
  a.kv_heads = p.kv_heads;
  a.causal = p.causal ? 1 : 0;
  const float scale =
      p.softmax_scale > 0 ? p.softmax_scale : 1.0f / std::sqrt(static_cast<float>(D));
  a.scale_log2 = scale * 1.4426950408889634f;
  const dim3 grid(static_cast<unsigned>((p.q_len + BR - 1) / BR), static_cast<unsigned>(p.heads),
                  static_cast<unsigned>(p.batch));
  FK_LAUNCH(attn_prefill_kernel, grid, THREADS, SMEM_BYTES, s)(a);
  return FK_LAST_ERROR();
}

}  // namespace fleetsim::kernels
