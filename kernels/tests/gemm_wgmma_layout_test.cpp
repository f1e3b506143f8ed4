// The host-checkable arithmetic of the Hopper wgmma GEMM (cuda/gemm_wgmma_layout.h) against
// hand-computed values: the shared-memory descriptor bits, the 128-byte swizzle, the
// accumulator fragment map, the block raster and the tensor-map parameters.
#include "kernels/cuda/gemm_wgmma_layout.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

namespace fleetsim::kernels::wgmma_layout {
namespace {

TEST(WgmmaLayout, DescriptorBitsFollowThePtxMatrixDescriptorFormat) {
  // start 0x400 >> 4 = 0x40 in bits 0-13; LBO 1 in bits 16-29; SBO 1024 >> 4 = 64 in bits
  // 32-45; base offset 0 (bits 49-51); swizzle 128B = 1 in bits 62-63.
  EXPECT_EQ(make_desc_sw128_kmajor(0x400u), 0x4000004000010040ull);
  EXPECT_EQ(make_desc_sw128_kmajor(0u), 0x4000004000010000ull);
  // The largest shared address (227 KiB window) still fits the 14-bit field.
  EXPECT_EQ(make_desc_sw128_kmajor(0x38C00u) & 0x3FFFull, 0x38C0ull);
  EXPECT_EQ((make_desc_sw128_kmajor(0x1000u) >> 62) & 3u, 1u);
  EXPECT_EQ((make_desc_sw128_kmajor(0x1000u) >> 32) & 0x3FFFu, 64u);
  EXPECT_EQ((make_desc_sw128_kmajor(0x1000u) >> 49) & 7u, 0u);
  // A k-step of 16 bf16 = 32 bytes = 2 units of 16 bytes in the start address only.
  const std::uint64_t d = make_desc_sw128_kmajor(0x2000u);
  EXPECT_EQ(desc_advance_k(d, 0), d);
  EXPECT_EQ(desc_advance_k(d, 1), d + 2);
  EXPECT_EQ(desc_advance_k(d, 3), make_desc_sw128_kmajor(0x2000u + 96u));
}

TEST(WgmmaLayout, Swizzle128XorsTheChunkWithTheRowInItsGroupOfEight) {
  EXPECT_EQ(sw128_offset(0, 0), 0u);
  EXPECT_EQ(sw128_offset(0, 8), 16u);
  EXPECT_EQ(sw128_offset(0, 9), 18u);
  EXPECT_EQ(sw128_offset(1, 0), 128u + 16u);                   // chunk 0 ^ 1
  EXPECT_EQ(sw128_offset(1, 8), 128u);                         // chunk 1 ^ 1 = 0
  EXPECT_EQ(sw128_offset(7, 63), 7u * 128u + 0u * 16u + 14u);  // chunk 7 ^ 7
  EXPECT_EQ(sw128_offset(8, 0), 1024u);                        // the pattern repeats
  EXPECT_EQ(sw128_offset(13, 17), 13u * 128u + (2u ^ 5u) * 16u + 2u);
  // Each row's 64 elements fill exactly its own 128 bytes.
  for (int r = 0; r < 16; ++r) {
    std::set<std::uint32_t> bytes;
    for (int c = 0; c < BK; ++c) {
      const std::uint32_t o = sw128_offset(r, c);
      EXPECT_EQ(o / 128u, static_cast<std::uint32_t>(r));
      EXPECT_EQ(o % 2u, 0u);
      bytes.insert(o);
    }
    EXPECT_EQ(bytes.size(), static_cast<std::size_t>(BK));
  }
}

// The address wgmma reads for element (row, k) of a K-major 128B-swizzled operand, as the
// PTX ISA describes the canonical layout: 8-row core-matrix groups SBO bytes apart, rows of
// 128 bytes, then bits 4-6 of the address XORed with bits 7-9. Decoded from the descriptor.
std::uint32_t wgmma_read_address(std::uint64_t desc, int row, int k) {
  const std::uint32_t start = static_cast<std::uint32_t>(desc & 0x3FFFu) << 4;
  const std::uint32_t sbo = static_cast<std::uint32_t>((desc >> 32) & 0x3FFFu) << 4;
  EXPECT_EQ((desc >> 62) & 3u, 1u);
  const std::uint32_t linear = start + static_cast<std::uint32_t>(row / 8) * sbo +
                               static_cast<std::uint32_t>(row % 8) * 128u +
                               static_cast<std::uint32_t>(k) * 2u;
  return linear ^ (((linear >> 7) & 7u) << 4);
}

TEST(WgmmaLayout, DescriptorStepsReadWhatTmaWrote) {
  // TMA writes element (row, col) of a [rows][64] box at tile + sw128_offset(row, col); each
  // k-step kk of a consumer reads (row, 16·kk + j) through desc_advance_k(desc, kk), for the
  // A tile of either consumer (64-row halves) and the 256-row W tile of every stage.
  for (int stage = 0; stage < STAGES; ++stage) {
    const std::uint32_t ring = 0x400u;  // 1024-aligned, as the kernel aligns it
    const std::uint32_t a_tile = ring + static_cast<std::uint32_t>(stage) * STAGE_BYTES;
    const std::uint32_t b_tile = a_tile + A_STAGE_BYTES;
    for (int cw = 0; cw < CONSUMERS; ++cw) {
      const std::uint64_t da =
          make_desc_sw128_kmajor(a_tile + static_cast<std::uint32_t>(cw) * 64u * 128u);
      for (int kk = 0; kk < BK / WGMMA_K; ++kk)
        for (int r = 0; r < 64; ++r)
          for (int j = 0; j < WGMMA_K; ++j)
            ASSERT_EQ(wgmma_read_address(desc_advance_k(da, kk), r, j),
                      a_tile + sw128_offset(64 * cw + r, WGMMA_K * kk + j))
                << "stage " << stage << " consumer " << cw << " kk " << kk << " row " << r;
    }
    const std::uint64_t db = make_desc_sw128_kmajor(b_tile);
    for (int kk = 0; kk < BK / WGMMA_K; ++kk)
      for (int r = 0; r < BN; ++r)
        for (int j = 0; j < WGMMA_K; ++j)
          ASSERT_EQ(wgmma_read_address(desc_advance_k(db, kk), r, j),
                    b_tile + sw128_offset(r, WGMMA_K * kk + j));
  }
}

TEST(WgmmaLayout, AccumulatorFragmentMapCoversTheTileOnce) {
  // Hand values (PTX ISA, wgmma .m64nNk16 D fragments).
  EXPECT_EQ(acc_row(0, 0), 0);
  EXPECT_EQ(acc_col(0, 0), 0);
  EXPECT_EQ(acc_col(0, 1), 1);
  EXPECT_EQ(acc_row(0, 2), 8);
  EXPECT_EQ(acc_col(0, 2), 0);
  EXPECT_EQ(acc_row(0, 3), 8);
  EXPECT_EQ(acc_col(0, 3), 1);
  EXPECT_EQ(acc_row(0, 4), 0);
  EXPECT_EQ(acc_col(0, 4), 8);
  EXPECT_EQ(acc_row(5, 0), 1);  // lane 5: row 5 / 4, columns 2·(5 % 4)
  EXPECT_EQ(acc_col(5, 0), 2);
  EXPECT_EQ(acc_row(37, 0), 17);  // warp 1, lane 5
  EXPECT_EQ(acc_col(37, 0), 2);
  EXPECT_EQ(acc_row(127, 127), 63);
  EXPECT_EQ(acc_col(127, 127), 255);
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < ACC_REGS; ++i) {
      const int r = acc_row(t, i), c = acc_col(t, i);
      ASSERT_GE(r, 0);
      ASSERT_LT(r, 64);
      ASSERT_GE(c, 0);
      ASSERT_LT(c, BN);
      seen.insert({r, c});
      if (i % 2 == 0) {  // the epilogue stores registers (i, i + 1) as one bf16 pair
        EXPECT_EQ(acc_row(t, i + 1), r);
        EXPECT_EQ(acc_col(t, i + 1), c + 1);
        EXPECT_EQ(c % 2, 0);
      }
    }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(64 * BN));
}

TEST(WgmmaLayout, GroupedRasterIsABijection) {
  // tiles_m = 10, tiles_n = 3: the first group holds row tiles 0..7, the second 8..9.
  EXPECT_EQ(tile_of_block(0, 10, 3).tm, 0);
  EXPECT_EQ(tile_of_block(0, 10, 3).tn, 0);
  EXPECT_EQ(tile_of_block(1, 10, 3).tm, 1);
  EXPECT_EQ(tile_of_block(7, 10, 3).tm, 7);
  EXPECT_EQ(tile_of_block(8, 10, 3).tm, 0);
  EXPECT_EQ(tile_of_block(8, 10, 3).tn, 1);
  EXPECT_EQ(tile_of_block(23, 10, 3).tm, 7);
  EXPECT_EQ(tile_of_block(23, 10, 3).tn, 2);
  EXPECT_EQ(tile_of_block(24, 10, 3).tm, 8);
  EXPECT_EQ(tile_of_block(24, 10, 3).tn, 0);
  EXPECT_EQ(tile_of_block(25, 10, 3).tm, 9);
  EXPECT_EQ(tile_of_block(26, 10, 3).tm, 8);
  EXPECT_EQ(tile_of_block(26, 10, 3).tn, 1);
  EXPECT_EQ(tile_of_block(29, 10, 3).tm, 9);
  EXPECT_EQ(tile_of_block(29, 10, 3).tn, 2);
  for (const auto& [tm_n, tn_n] : std::vector<std::pair<int, int>>{
           {1, 1}, {1, 7}, {7, 1}, {8, 8}, {9, 2}, {64, 32}, {65, 57}, {128, 112}, {3, 100}}) {
    std::set<std::pair<int, int>> seen;
    for (int b = 0; b < tm_n * tn_n; ++b) {
      const TileCoord c = tile_of_block(b, tm_n, tn_n);
      ASSERT_GE(c.tm, 0);
      ASSERT_LT(c.tm, tm_n);
      ASSERT_GE(c.tn, 0);
      ASSERT_LT(c.tn, tn_n);
      seen.insert({c.tm, c.tn});
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(tm_n * tn_n)) << tm_n << "x" << tn_n;
  }
}

TEST(WgmmaLayout, TensorMapParametersAndLimits) {
  const TensorMapParams a = tensor_map_params(77, 264, BM);
  EXPECT_EQ(a.dim[0], 264u);  // innermost: k
  EXPECT_EQ(a.dim[1], 77u);
  EXPECT_EQ(a.stride[0], 528u);
  EXPECT_EQ(a.box[0], 64u);
  EXPECT_EQ(a.box[1], 128u);
  EXPECT_EQ(a.elem_stride[0], 1u);
  EXPECT_TRUE(tensor_map_params_valid(a));
  EXPECT_TRUE(tensor_map_params_valid(tensor_map_params(1, 8, BM)));  // box past the end
  EXPECT_TRUE(tensor_map_params_valid(tensor_map_params(28672, 8192, BN)));
  EXPECT_FALSE(tensor_map_params_valid(tensor_map_params(16, 12, BM)));   // 24-byte stride
  EXPECT_FALSE(tensor_map_params_valid(tensor_map_params(16, 64, 512)));  // box > 256
  // The shared-memory budget: ring + alignment slack + the barriers' 1 KiB static block
  // within the 227 KiB a Hopper block may opt into.
  EXPECT_LE(SMEM_BYTES + 1024, 227 * 1024);
  EXPECT_EQ(STAGE_BYTES, 48 * 1024);
}

}  // namespace
}  // namespace fleetsim::kernels::wgmma_layout
