// One 128×128 output tile of C = A·Wᵀ on the tensor cores (WMMA, BF16 in, FP32 accumulate),
// shared by the dense GEMM (gemm_tiled.cu) and the MoE grouped GEMM (moe_grouped_gemm.cu).
//
// The classic multistage scheme (as in CUTLASS's sm80 pipelines, kept deliberately plain):
//  - 256 threads (8 warps as 2×4), block tile BM×BN = 128×128, k-slices of BK = 32;
//  - A and W tiles go global -> shared with 16-byte cp.async, STAGES = 4 deep; rows and
//    k-chunks past the matrix end are zero-filled, so any m, n and k % 8 == 0 work;
//  - each warp owns a 64×32 piece of C: 4×2 WMMA 16×16×16 accumulators;
//  - the epilogue stages each 16×16 accumulator through a per-warp float scratch, converts
//    to bf16 and writes only elements inside the matrix.
// Shared-memory rows are padded by 8 bf16 (16 bytes) so that successive rows start in
// different banks, and every WMMA pointer stays 32-byte aligned (rows of 80 bytes, fragment
// rows at multiples of 16).
#pragma once

#include "kernels/cuda/device_util.cuh"

#if defined(FK_EMULATE)
#include "kernels/emu/wmma_emu.h"
#else
#include <mma.h>
#endif

namespace fleetsim::kernels::gemm_tile {

constexpr int BM = 128, BN = 128, BK = 32, STAGES = 4, THREADS = 256, WARPS = 8;
constexpr int LDS = BK + 8;  // shared row stride (elements): 80 bytes
constexpr int A_STAGE = BM * LDS;
constexpr int B_STAGE = BN * LDS;
constexpr int SMEM_PIPE = STAGES * (A_STAGE + B_STAGE) * 2;  // bytes: 81920
constexpr int SMEM_EPI = WARPS * 16 * 16 * 4;                // per-warp float 16×16: 8192
constexpr int SMEM_BYTES = SMEM_PIPE + SMEM_EPI;             // 90112

static_assert((BM * BK / 8) % THREADS == 0 && (BN * BK / 8) % THREADS == 0, "chunking");
static_assert((LDS * 2) % 16 == 0, "cp.async destinations must stay 16-byte aligned");
static_assert((16 * LDS * 2) % 32 == 0, "WMMA fragment pointers must be 32-byte aligned");

/// Issues the cp.async copies of k-slice [k0, k0 + BK) of the A rows [0, rows) and the W
/// rows [col0, col0 + BN) into one stage.
FK_DEV void load_stage(__nv_bfloat16* As, __nv_bfloat16* Bs, const __nv_bfloat16* A, int lda,
                       int rows, const __nv_bfloat16* W, int ldw, int n, int col0, int k, int k0) {
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < (BM * BK / 8) / THREADS; ++i) {
    const int c = tid + i * THREADS;
    const int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
    const bool ok = r < rows && k0 + kc < k;
    const __nv_bfloat16* src = ok ? A + static_cast<std::size_t>(r) * lda + k0 + kc : A;
    dev::cp_async16(As + r * LDS + kc, src, ok);
  }
#pragma unroll
  for (int i = 0; i < (BN * BK / 8) / THREADS; ++i) {
    const int c = tid + i * THREADS;
    const int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
    const bool ok = col0 + r < n && k0 + kc < k;
    const __nv_bfloat16* src = ok ? W + static_cast<std::size_t>(col0 + r) * ldw + k0 + kc : W;
    dev::cp_async16(Bs + r * LDS + kc, src, ok);
  }
}

/// C[r][col0 + j] = Σ_l A[r][l]·W[col0 + j][l] for r < rows (<= BM... more rows are
/// ignored), col0 + j < n. A, C point at the tile's first row; W at the whole matrix.
/// `smem` holds SMEM_BYTES of dynamic shared memory. Block-uniform arguments; all
/// THREADS threads must call it.
FK_DEV void tile(const __nv_bfloat16* A, int lda, int rows, const __nv_bfloat16* W, int ldw, int n,
                 int col0, int k, __nv_bfloat16* C, int ldc, unsigned char* smem) {
  using namespace nvcuda;
  auto* As = reinterpret_cast<__nv_bfloat16*>(smem);
  auto* Bs = As + STAGES * A_STAGE;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int wm = warp / 4;  // 0..1: rows wm*64
  const int wn = warp % 4;  // 0..3: cols wn*32

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int ktiles = (k + BK - 1) / BK;
  // Prologue: stages 0..STAGES-2 in flight, one commit group per stage (empty when past
  // the end, so that the group count stays uniform).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles)
      load_stage(As + s * A_STAGE, Bs + s * B_STAGE, A, lda, rows, W, ldw, n, col0, k, s * BK);
    dev::cp_async_commit();
  }

  for (int kt = 0; kt < ktiles; ++kt) {
    // Groups committed so far: STAGES-1+kt. Leaving STAGES-2 pending means groups 0..kt
    // are complete: k-slice kt has landed (for this thread; the barrier makes it all).
    dev::cp_async_wait<STAGES - 2>();
    __syncthreads();
    // The barrier also means every warp is done with k-slice kt-1, whose stage
    // ((kt-1) % STAGES == (kt+STAGES-1) % STAGES) is refilled now.
    const int next = kt + STAGES - 1;
    if (next < ktiles) {
      const int s = next % STAGES;
      load_stage(As + s * A_STAGE, Bs + s * B_STAGE, A, lda, rows, W, ldw, n, col0, k, next * BK);
    }
    dev::cp_async_commit();

    const __nv_bfloat16* as = As + (kt % STAGES) * A_STAGE;
    const __nv_bfloat16* bs = Bs + (kt % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> af[4];
      // B(k, j) = W[j][k]: W rows stored k-contiguous are B in column-major order.
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> bf[2];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        wmma::load_matrix_sync(af[i], as + (wm * 64 + i * 16) * LDS + kk, LDS);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(bf[j], bs + (wn * 32 + j * 16) * LDS + kk, LDS);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
    }
  }
  dev::cp_async_wait<0>();  // only empty groups can remain; keep the pipeline clean

  // Epilogue through a per-warp scratch (not shared with the pipeline stages).
  float* scratch = reinterpret_cast<float*>(smem + SMEM_PIPE) + warp * 256;
  const bool vec_ok = (ldc % 8) == 0;  // 16-byte stores stay aligned
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int r = lane / 2, c0 = (lane % 2) * 8;
      const int row = wm * 64 + i * 16 + r;
      const int col = col0 + wn * 32 + j * 16 + c0;
      if (row < rows && row < BM) {
        const float* src = scratch + r * 16 + c0;
        __nv_bfloat16* dst = C + static_cast<std::size_t>(row) * ldc + col;
        if (vec_ok && col + 8 <= n) {
          float f[8];
#pragma unroll
          for (int e = 0; e < 8; ++e) f[e] = src[e];
          *reinterpret_cast<uint4*>(dst) = dev::pack8(f);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e)
            if (col + e < n) dst[e] = __float2bfloat16_rn(src[e]);
        }
      }
      __syncwarp();
    }
}

}  // namespace fleetsim::kernels::gemm_tile
