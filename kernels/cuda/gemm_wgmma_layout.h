// Pure index arithmetic of the Hopper wgmma GEMM (gemm_wgmma.cu), kept in a plain header so
// that the CPU tests (kernels/tests/gemm_wgmma_layout_test.cpp) check it with hand-computed
// values: the tile sizes, the shared-memory matrix descriptor, the 128-byte swizzle that TMA
// writes and wgmma reads, the accumulator fragment → (row, column) map, the block → tile
// raster, and the tensor-map parameters.
//
// Sources (read, not copied): PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-
// Accumulate" — "Matrix Descriptor Format" (start address >> 4 in bits 0–13, leading byte
// offset >> 4 in 16–29, stride byte offset >> 4 in 32–45, base offset in 49–51, swizzle mode
// in 62–63 with 1 = 128-byte swizzle) and "Register Fragments" of .m64nNk16 (warp w of the
// warpgroup owns rows 16w..16w+15; within the warp the m16n8 accumulator pattern repeats
// every 8 columns); CUTLASS cute/arch/mma_sm90_desc.hpp (K-major SW128: canonical layout
// Swizzle<3,4,3> o ((8,n),2):((8,SBO),1) in 16-byte units, SBO = 1024 bytes, LBO unused).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define FK_WG_HD __host__ __device__ __forceinline__
#else
#define FK_WG_HD inline
#endif

namespace fleetsim::kernels::wgmma_layout {

// ---- tile configuration -------------------------------------------------------------------
constexpr int BM = 128;  ///< block rows: 2 consumer warpgroups × 64 (wgmma M)
constexpr int BN = 256;  ///< block columns: one m64n256k16 per consumer and k-step
constexpr int BK = 64;   ///< k per stage: 64 bf16 = 128 bytes = one swizzle row
constexpr int STAGES = 4;
constexpr int WGMMA_K = 16;
constexpr int CONSUMERS = 2;                    ///< consumer warpgroups
constexpr int THREADS = 128 * (1 + CONSUMERS);  ///< + 1 producer warpgroup (TMA)
constexpr int GROUP_M = 8;                      ///< row tiles per raster group (L2 reuse)
constexpr int A_STAGE_BYTES = BM * BK * 2;      ///< 16 KiB
constexpr int B_STAGE_BYTES = BN * BK * 2;      ///< 32 KiB
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int SMEM_ALIGN = 1024;  ///< 128B swizzle repeats every 8 rows
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + SMEM_ALIGN;  ///< dynamic, with slack
constexpr int ACC_REGS = BN / 2;  ///< fp32 accumulators per thread (64·256 / 128)
static_assert(BK * 2 == 128, "one k-stage row must be exactly one 128-byte swizzle row");
static_assert(A_STAGE_BYTES % SMEM_ALIGN == 0 && B_STAGE_BYTES % SMEM_ALIGN == 0, "alignment");

// ---- shared-memory matrix descriptor (wgmma) ----------------------------------------------
constexpr std::uint64_t kSwizzle128B = 1;  ///< layout type, bits 62–63

/// Descriptor of a K-major tile written by TMA with 128-byte swizzle: rows of 128 bytes,
/// 8-row groups 1024 bytes apart (stride byte offset), leading byte offset unused for swizzled
/// K-major layouts (encoded as 1, as CUTLASS does), base offset 0 (tiles are 1024-aligned).
/// `smem_addr` is the shared-window address (cvta.to.shared), 16-byte aligned.
FK_WG_HD constexpr std::uint64_t make_desc_sw128_kmajor(std::uint32_t smem_addr) {
  return (static_cast<std::uint64_t>((smem_addr >> 4) & 0x3FFFu)) |
         (static_cast<std::uint64_t>(1u) << 16) |          // LBO (ignored)
         (static_cast<std::uint64_t>(1024u >> 4) << 32) |  // SBO = 1024 B
         (kSwizzle128B << 62);
}
/// The descriptor of the same tile advanced by `kk` k-steps of 16 bf16 (32 bytes): only the
/// start address moves; the swizzle is a function of the address bits, so inside a 128-byte
/// row this is how CUTLASS and DeepGEMM step along K.
FK_WG_HD constexpr std::uint64_t desc_advance_k(std::uint64_t desc, int kk) {
  return desc + static_cast<std::uint64_t>((kk * WGMMA_K * 2) >> 4);
}

// ---- 128-byte swizzle (CU_TENSOR_MAP_SWIZZLE_128B, wgmma layout type 1) -------------------
/// Byte offset, from a 1024-aligned tile base, of element (row, col) of a K-major bf16 tile
/// with 64 elements (128 bytes) per row: the 16-byte chunk index (col / 8) is XORed with
/// row % 8.
FK_WG_HD constexpr std::uint32_t sw128_offset(int row, int col) {
  const std::uint32_t chunk =
      static_cast<std::uint32_t>(col / 8) ^ static_cast<std::uint32_t>(row % 8);
  return static_cast<std::uint32_t>(row) * 128u + chunk * 16u +
         static_cast<std::uint32_t>(col % 8) * 2u;
}

// ---- accumulator fragment of wgmma .m64nNk16 .f32 ----------------------------------------
/// Row (0..63) of accumulator register `i` of thread `t` (0..127) of the warpgroup.
FK_WG_HD constexpr int acc_row(int t, int i) {
  return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i >> 1) & 1);
}
/// Column (0..N-1) of accumulator register `i` of thread `t`.
FK_WG_HD constexpr int acc_col(int t, int i) { return 8 * (i >> 2) + 2 * (t % 4) + (i & 1); }

// ---- block → output tile raster ----------------------------------------------------------
struct TileCoord {
  int tm, tn;  ///< row-tile and column-tile index
};
/// Grouped raster: GROUP_M row tiles run across all column tiles before the next group, so
/// the blocks resident at one time share their A and W tiles in L2. A bijection of
/// [0, tiles_m·tiles_n) onto the tiles.
FK_WG_HD constexpr TileCoord tile_of_block(int block, int tiles_m, int tiles_n) {
  const int per_group = GROUP_M * tiles_n;
  const int group = block / per_group;
  const int first_m = group * GROUP_M;
  const int rows_in_group = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
  const int in_group = block % per_group;
  return TileCoord{first_m + in_group % rows_in_group, in_group / rows_in_group};
}

// ---- tensor-map parameters (cuTensorMapEncodeTiled) ---------------------------------------
/// A row-major [rows][k] bf16 matrix as a 2-D tensor, innermost dimension first.
struct TensorMapParams {
  std::uint64_t dim[2];     ///< {k, rows}
  std::uint64_t stride[1];  ///< byte stride of dimension 1 (rank - 1 entries)
  std::uint32_t box[2];     ///< {BK, box_rows}
  std::uint32_t elem_stride[2];
};
inline constexpr TensorMapParams tensor_map_params(int rows, int k, int box_rows) {
  return TensorMapParams{{static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(rows)},
                         {static_cast<std::uint64_t>(k) * 2u},
                         {static_cast<std::uint32_t>(BK), static_cast<std::uint32_t>(box_rows)},
                         {1u, 1u}};
}
/// The tensor map's requirements (CUDA driver API, cuTensorMapEncodeTiled): 16-byte aligned
/// global address, byte strides multiples of 16 (so k % 8 == 0 for bf16), box dimensions
/// 1..256, inner box bytes ≤ 128 for 128-byte swizzle and a multiple of 16.
inline constexpr bool tensor_map_params_valid(const TensorMapParams& p) {
  return p.dim[0] > 0 && p.dim[1] > 0 && p.dim[0] < (1ull << 32) && p.dim[1] < (1ull << 32) &&
         p.stride[0] % 16 == 0 && p.stride[0] < (1ull << 40) && p.box[0] >= 1 && p.box[0] <= 256 &&
         p.box[1] >= 1 && p.box[1] <= 256 && p.box[0] * 2 <= 128 && (p.box[0] * 2) % 16 == 0;
}

}  // namespace fleetsim::kernels::wgmma_layout
