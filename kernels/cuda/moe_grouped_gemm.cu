// MoE grouped GEMM: for every expert e, Y[rows of e] = X[rows of e]·W_eᵀ, with uneven row
// counts per expert (the output of moe_permute). One launch covers all experts: the M
// dimension is cut into 128-row tiles that never cross an expert (as vLLM's
// moe_align_block_size pads each expert to the block size), a small scan turns the
// per-expert counts into tile offsets, and each block finds its expert by binary search.
// Each tile is the same code as the dense GEMM (gemm_tile.cuh).
#include <cstdint>

#include "kernels/cuda/gemm_tile.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

// tile_offsets[e] = Σ_{e' < e} ceil(rows_e' / BM); one block, power-of-two threads >= experts.
FK_GLOBAL void tile_offsets_kernel(const int* __restrict__ offsets, int experts,
                                   int* tile_offsets) {
  FK_SMEM(int, buf);
  const int tid = static_cast<int>(threadIdx.x);
  const int tiles =
      tid < experts ? (offsets[tid + 1] - offsets[tid] + gemm_tile::BM - 1) / gemm_tile::BM : 0;
  const int incl = dev::block_inclusive_scan(tiles, buf);
  if (tid < experts) tile_offsets[tid + 1] = incl;
  if (tid == 0) tile_offsets[0] = 0;
}

FK_GLOBAL void FK_LAUNCH_BOUNDS(gemm_tile::THREADS)
    grouped_gemm_kernel(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W,
                        __nv_bfloat16* __restrict__ Y, const int* __restrict__ offsets,
                        const int* __restrict__ tile_offsets, int experts, int n, int k) {
  FK_SMEM(unsigned char, smem);
  const int tile = static_cast<int>(blockIdx.y);
  if (tile >= tile_offsets[experts]) return;  // block-uniform, before any barrier
  // The last expert e with tile_offsets[e] <= tile (empty experts share an offset with the
  // next one and are skipped by taking the last).
  int lo = 0, hi = experts - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (tile_offsets[mid] <= tile)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int e = lo;
  const int row0 = offsets[e] + (tile - tile_offsets[e]) * gemm_tile::BM;
  const int rows = min(gemm_tile::BM, offsets[e + 1] - row0);
  const int col0 = static_cast<int>(blockIdx.x) * gemm_tile::BN;
  gemm_tile::tile(X + static_cast<std::size_t>(row0) * k, k, rows,
                  W + static_cast<std::size_t>(e) * n * k, k, n, col0, k,
                  Y + static_cast<std::size_t>(row0) * n, n, smem);
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

cudaError_t moe_grouped_gemm_bf16(const bf16_bits* x_perm, const bf16_bits* w, bf16_bits* y_perm,
                                  const int* offsets, int* tile_offsets, int experts,
                                  int total_rows, int n, int k, cudaStream_t s) {
  if (experts <= 0 || experts > 1024 || total_rows <= 0 || n <= 0 || k <= 0 || k % 8 != 0 ||
      offsets == nullptr || tile_offsets == nullptr)
    return cudaErrorInvalidValue;
  if (!aligned16(x_perm) || !aligned16(w) || !aligned16(y_perm)) return cudaErrorInvalidValue;
  // Upper bound on the tiles: each non-empty expert adds at most one partial tile.
  const long max_tiles = (total_rows + gemm_tile::BM - 1) / gemm_tile::BM +
                         (experts < total_rows ? experts : total_rows);
  if (max_tiles > 65535) return cudaErrorInvalidValue;
  int threads = 32;
  while (threads < experts) threads *= 2;
  FK_LAUNCH(tile_offsets_kernel, 1, threads, 2 * threads * sizeof(int), s)
  (offsets, experts, tile_offsets);
  cudaError_t e = FK_LAST_ERROR();
  if (e != cudaSuccess) return e;
  static const cudaError_t attr = FK_SET_SMEM_ATTR(grouped_gemm_kernel, gemm_tile::SMEM_BYTES);
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>((n + gemm_tile::BN - 1) / gemm_tile::BN),
                  static_cast<unsigned>(max_tiles));
  FK_LAUNCH(grouped_gemm_kernel, grid, gemm_tile::THREADS, gemm_tile::SMEM_BYTES, s)
  (reinterpret_cast<const __nv_bfloat16*>(x_perm), reinterpret_cast<const __nv_bfloat16*>(w),
   reinterpret_cast<__nv_bfloat16*>(y_perm), offsets, tile_offsets, experts, n, k);
  return FK_LAST_ERROR();
}

}  // namespace fleetsim::kernels
