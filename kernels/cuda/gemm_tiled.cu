// The project's own BF16 tensor-core GEMM: C[m×n] = A[m×k]·W[n×k]ᵀ (row-major), one
// 128×128 tile per block (gemm_tile.cuh). Correct first: a plain WMMA multistage kernel, no
// Hopper-specific instructions (wgmma/TMA), so it reaches a fraction of cuBLASLt on H100.
#include <cstdint>

#include "kernels/cuda/gemm_tile.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

FK_GLOBAL void FK_LAUNCH_BOUNDS(gemm_tile::THREADS)
    gemm_tiled_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ W,
                      __nv_bfloat16* __restrict__ C, int m, int n, int k) {
  FK_SMEM(unsigned char, smem);
  const int row0 = static_cast<int>(blockIdx.y) * gemm_tile::BM;
  const int col0 = static_cast<int>(blockIdx.x) * gemm_tile::BN;
  const int rows = m - row0 < gemm_tile::BM ? m - row0 : gemm_tile::BM;
  gemm_tile::tile(A + static_cast<std::size_t>(row0) * k, k, rows, W, k, n, col0, k,
                  C + static_cast<std::size_t>(row0) * n, n, smem);
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

cudaError_t gemm_tiled_bf16(const bf16_bits* A, const bf16_bits* W, bf16_bits* C, int m, int n,
                            int k, cudaStream_t s) {
  if (m <= 0 || n <= 0 || k <= 0 || k % 8 != 0) return cudaErrorInvalidValue;
  if (!aligned16(A) || !aligned16(W) || !aligned16(C)) return cudaErrorInvalidValue;
  const unsigned gy = static_cast<unsigned>((m + gemm_tile::BM - 1) / gemm_tile::BM);
  if (gy > 65535u) return cudaErrorInvalidValue;
  static const cudaError_t attr = FK_SET_SMEM_ATTR(gemm_tiled_kernel, gemm_tile::SMEM_BYTES);
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>((n + gemm_tile::BN - 1) / gemm_tile::BN), gy);
  FK_LAUNCH(gemm_tiled_kernel, grid, gemm_tile::THREADS, gemm_tile::SMEM_BYTES, s)
  (reinterpret_cast<const __nv_bfloat16*>(A), reinterpret_cast<const __nv_bfloat16*>(W),
   reinterpret_cast<__nv_bfloat16*>(C), m, n, k);
  return FK_LAST_ERROR();
}

}  // namespace fleetsim::kernels
