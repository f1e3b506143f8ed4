// The project's second own BF16 GEMM, for Hopper only (sm_90a): C[m×n] = A[m×k]·W[n×k]ᵀ,
// row-major, FP32 accumulation, bf16 output (the semantics of gemm_tiled_bf16).
//
// Design (the layout arithmetic and its tests: gemm_wgmma_layout.h):
// - one 128×256 output tile per block, k in steps of 64, grouped raster over the tiles;
// - 384 threads = 3 warpgroups. Warpgroup 0 is the producer: one thread issues the TMA
//   loads (cp.async.bulk.tensor.2d, 128-byte swizzle) of the A tile [128][64] and the W tile
//   [256][64] into a 4-stage ring, each stage completed on its "full" mbarrier by the
//   transaction count (expect_tx). Warpgroups 1 and 2 are consumers: each waits for the
//   stage, issues 4 × wgmma.mma_async m64n256k16 (both operands from shared memory through
//   K-major 128B-swizzle descriptors) for its 64 rows, waits for them, and arrives on the
//   stage's "empty" mbarrier, which the producer waits on before reusing the stage;
// - setmaxnreg gives the producer 40 registers and the consumers 232 (128 accumulators);
// - edges: the tensor maps carry the true m, n, k, so TMA zero-fills rows, columns and the k
//   tail outside the matrices (and still counts the full box in the transaction bytes); the
//   epilogue stores bf16 pairs straight from the accumulators, predicated on row < m and
//   column < n (n % 8 == 0, so a pair never straddles the edge).
//
// Grouped (MoE) mode, moe_grouped_gemm_wgmma_bf16: the same mainloop over the permuted tokens
// of all experts in one launch. Each block computes one (m-tile, n-tile); m-tiles are 128-row
// tiles that never cross an expert (a scan of the per-expert tile counts, then a binary search
// per block, as in moe_grouped_gemm.cu), in the dense GEMM's grouped raster. A is loaded as two 64-row boxes, the second only if
// the expert has rows there; the W box starts at row e·n + col0 of the [experts·n][k] view.
// Loads past an expert's rows or columns read the next expert's data (or TMA's zeros past the
// end); the epilogue stores only row < the expert's end and col < n.
//
// Built only for sm_90a (kernels/CMakeLists.txt: -gencode=arch=compute_90a,code=sm_90a).
// The device code is guarded by __CUDA_ARCH_FEAT_SM90_ALL; the launcher refuses
// (cudaErrorNotSupported) any device that is not compute capability 9.0. Not emulated:
// kernels/emu/gemm_wgmma_emu.cpp is a stub that reports "not supported".
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <mutex>

#include "kernels/cuda/gemm_wgmma_layout.h"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

namespace L = wgmma_layout;

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FK_WGMMA_DEVICE 1
#endif

#if defined(FK_WGMMA_DEVICE)

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier ----------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
/// Waits until the phase of parity `parity` of the barrier has completed. Every wait here is
/// inside one block (no block waits on another), so a wait of seconds means a hang (a TMA
/// that never completes, a wrong transaction count or parity): trap instead of hanging the
/// test run, which then fails with a launch error.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
  const long long t0 = clock64();
  while (!mbar_try_wait(bar, parity))
    if (clock64() - t0 > (1ll << 33)) __trap();  // ~4 s at 2 GHz
}

// ---- TMA ------------------------------------------------------------------------------------
/// 2-D tile load: box at coordinates (c0 = k, c1 = row) of the tensor map into shared memory
/// at `dst`, completing `bytes` transactions on `bar`.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map,
                                            std::uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// ---- wgmma --------------------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/// Keeps the compiler from moving accesses of the accumulators across the asynchronous
/// wgmma (its results are defined only after wgmma.wait_group).
__device__ __forceinline__ void fence_acc(float (&d)[L::ACC_REGS]) {
#pragma unroll
  for (int i = 0; i < L::ACC_REGS; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// D[64×256] (+)= A[64×16]·B[256×16]ᵀ, both K-major in shared memory (descriptors).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[L::ACC_REGS], std::uint64_t desc_a,
                                                 std::uint64_t desc_b, std::uint32_t scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127"
      "}, %128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void setmaxnreg_dec40() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
}
__device__ __forceinline__ void setmaxnreg_inc232() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
}

#endif  // FK_WGMMA_DEVICE

/// kOverlap: a consumer keeps one group of wgmma (one k-stage) in flight while it issues the
/// next, and releases a stage one iteration later (the CUTLASS mainloop pattern). Without it,
/// each consumer waits for its own wgmma before releasing the stage it just read (simpler;
/// the other consumer warpgroup still keeps the tensor cores busy).
/// Grouped (MoE) mode: the A rows are the permuted tokens, grouped by expert
/// (offsets[e] .. offsets[e + 1]), W holds the experts' [n][k] matrices one after another
/// ([experts·n][k] for the tensor map). Each block computes one (m-tile, n-tile), where the
/// m-tiles are 128-row tiles that never cross an expert (tile_offsets: exclusive scan of each
/// expert's tile count). A tile's TMA loads may reach into the next expert's rows or weights
/// (at an expert's last partial tile or n-tile); those rows and columns are never stored.
struct Grouped {
  const int* offsets = nullptr;       ///< [experts + 1], device
  const int* tile_offsets = nullptr;  ///< [experts + 1], device
  int experts = 0;
  int max_tiles = 0;  ///< m-tiles the grid covers (an upper bound on tile_offsets[experts])
};

template <bool kOverlap, bool kGrouped>
__global__ void __launch_bounds__(L::THREADS, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_w, __nv_bfloat16* __restrict__ C,
                      int m, int n, int k, Grouped g) {
#if defined(FK_WGMMA_DEVICE)
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) std::uint64_t full_bar[L::STAGES];
  __shared__ __align__(8) std::uint64_t empty_bar[L::STAGES];

  // The ring, 1024-aligned in the shared window (128B swizzle phase = address bits 7..9).
  const std::uint32_t ring = (smem_u32(smem_raw) + (L::SMEM_ALIGN - 1)) & ~(L::SMEM_ALIGN - 1u);
  int row0 = 0, col0 = 0, w_row0 = 0, row_end = m;
  if constexpr (kGrouped) {
    // The dense GEMM's grouped raster over (m-tile, n-tile): GROUP_M consecutive m-tiles (of
    // one expert, or of several small ones) sweep the n-tiles together, so the blocks resident
    // at one time share their W slices and A rows in L2.
    const L::TileCoord tc =
        L::tile_of_block(static_cast<int>(blockIdx.x), g.max_tiles, (n + L::BN - 1) / L::BN);
    const int tile = tc.tm;
    if (tile >= g.tile_offsets[g.experts]) return;  // block-uniform, before any barrier
    // The last expert e with tile_offsets[e] <= tile (empty experts share their offset with
    // the next one; taking the last skips them).
    int lo = 0, hi = g.experts - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (g.tile_offsets[mid] <= tile)
        lo = mid;
      else
        hi = mid - 1;
    }
    row0 = g.offsets[lo] + (tile - g.tile_offsets[lo]) * L::BM;
    row_end = g.offsets[lo + 1];
    col0 = tc.tn * L::BN;
    w_row0 = lo * n + col0;
  } else {
    const int tiles_m = (m + L::BM - 1) / L::BM;
    const int tiles_n = (n + L::BN - 1) / L::BN;
    const L::TileCoord tile = L::tile_of_block(static_cast<int>(blockIdx.x), tiles_m, tiles_n);
    row0 = tile.tm * L::BM;
    col0 = tile.tn * L::BN;
    w_row0 = col0;
  }
  const bool second_half = row0 + L::BM / 2 < row_end;  // rows for the second consumer
  const int k_tiles = (k + L::BK - 1) / L::BK;
  const int wg = static_cast<int>(threadIdx.x) / 128;
  const int t = static_cast<int>(threadIdx.x) % 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < L::STAGES; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);
      mbar_init(smem_u32(&empty_bar[s]), L::CONSUMERS * 128);
    }
    // Make the initialised barriers visible to the async proxy (TMA) and the other threads.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ---- producer warpgroup: one thread drives TMA ----
    setmaxnreg_dec40();
    if (t == 0) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % L::STAGES;
        const int round = kt / L::STAGES;
        // Round r > 0 reuses the stage: wait until both consumers released round r - 1.
        if (round > 0)
          mbar_wait(smem_u32(&empty_bar[s]), static_cast<std::uint32_t>((round - 1) & 1));
        const std::uint32_t a_dst = ring + static_cast<std::uint32_t>(s) * L::STAGE_BYTES;
        const std::uint32_t b_dst = a_dst + L::A_STAGE_BYTES;
        const std::uint32_t fb = smem_u32(&full_bar[s]);
        if constexpr (kGrouped) {
          // A in two 64-row boxes, the second only when the expert has rows there (a small
          // expert's tile then reads 64 rows of A, not 128).
          mbar_arrive_expect_tx(
              fb, (second_half ? L::A_STAGE_BYTES : L::A_STAGE_BYTES / 2) + L::B_STAGE_BYTES);
          tma_load_2d(a_dst, &map_a, fb, kt * L::BK, row0);
          if (second_half)
            tma_load_2d(a_dst + L::A_STAGE_BYTES / 2, &map_a, fb, kt * L::BK, row0 + L::BM / 2);
        } else {
          mbar_arrive_expect_tx(fb, L::STAGE_BYTES);
          tma_load_2d(a_dst, &map_a, fb, kt * L::BK, row0);
        }
        tma_load_2d(b_dst, &map_w, fb, kt * L::BK, w_row0);
      }
    }
  } else {
    // ---- consumer warpgroups: rows row0 + 64·cw .. +63 of the tile ----
    setmaxnreg_inc232();
    const int cw = wg - 1;
    float acc[L::ACC_REGS];
#pragma unroll
    for (int i = 0; i < L::ACC_REGS; ++i) acc[i] = 0.0f;

    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = kt % L::STAGES;
      const int round = kt / L::STAGES;
      mbar_wait(smem_u32(&full_bar[s]), static_cast<std::uint32_t>(round & 1));
      __syncwarp();  // the warp reconverged before the .sync.aligned wgmma instructions
      const std::uint32_t a_tile = ring + static_cast<std::uint32_t>(s) * L::STAGE_BYTES +
                                   static_cast<std::uint32_t>(cw) * (64 * L::BK * 2);
      const std::uint32_t b_tile =
          ring + static_cast<std::uint32_t>(s) * L::STAGE_BYTES + L::A_STAGE_BYTES;
      const std::uint64_t da = L::make_desc_sw128_kmajor(a_tile);
      const std::uint64_t db = L::make_desc_sw128_kmajor(b_tile);
      fence_acc(acc);
      wgmma_fence();
      // (grouped: when the second consumer's rows all lie past the expert's end, its half of
      // the A stage was not loaded this round; it multiplies what the stage holds anyway and
      // never stores the result. Skipping the wgmma there would be a divergent branch, and
      // ptxas then serialises every wgmma of the kernel, C7520: measured 540 TFLOP/s against
      // 750 for the dense GEMM on Mixtral's experts.)
#pragma unroll
      for (int kk = 0; kk < L::BK / L::WGMMA_K; ++kk)
        wgmma_m64n256k16(acc, L::desc_advance_k(da, kk), L::desc_advance_k(db, kk), 1u);
      wgmma_commit();
      if constexpr (kOverlap) {
        // The group of k-tile kt - 1 is complete: release its stage.
        wgmma_wait<1>();
        fence_acc(acc);
        if (kt > 0) mbar_arrive(smem_u32(&empty_bar[(kt - 1) % L::STAGES]));
      } else {
        wgmma_wait<0>();
        fence_acc(acc);
        // This thread's reads of the stage are complete: release it to the producer.
        mbar_arrive(smem_u32(&empty_bar[s]));
      }
    }
    if constexpr (kOverlap) {
      wgmma_wait<0>();  // the last group (its stage is never reused)
      fence_acc(acc);
    }

    // ---- epilogue: bf16 pairs straight from the accumulators ----
    const int rbase = row0 + 64 * cw;
#pragma unroll
    for (int i = 0; i < L::ACC_REGS; i += 2) {
      const int row = rbase + L::acc_row(t, i);
      const int col = col0 + L::acc_col(t, i);
      if (row < row_end && col < n) {
        const __nv_bfloat162 v = __floats2bfloat162_rn(acc[i], acc[i + 1]);
        *reinterpret_cast<__nv_bfloat162*>(C + static_cast<std::size_t>(row) * n + col) = v;
      }
    }
  }
#else
  // Not built for sm_90a: no wgmma. The launcher never launches this (it checks the device).
  (void)map_a;
  (void)map_w;
  (void)C;
  (void)m;
  (void)n;
  (void)k;
  (void)g;
#endif
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

PFN_cuTensorMapEncodeTiled_v12000 encode_fn(cudaError_t* err) {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static cudaError_t status = cudaSuccess;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                              cudaEnableDefault, &q);
    if (status == cudaSuccess && (q != cudaDriverEntryPointSuccess || p == nullptr))
      status = cudaErrorNotSupported;
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  *err = status;
  return fn;
}

cudaError_t encode_map(PFN_cuTensorMapEncodeTiled_v12000 fn, CUtensorMap* map, const void* base,
                       int rows, int k, int box_rows) {
  const L::TensorMapParams p = L::tensor_map_params(rows, k, box_rows);
  if (!L::tensor_map_params_valid(p)) return cudaErrorInvalidValue;
  const CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), p.dim,
                        p.stride, p.box, p.elem_stride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // NONE: out-of-bounds reads are 0
  if (r == CUDA_SUCCESS) return cudaSuccess;
  std::fprintf(stderr,
               "gemm_wgmma_bf16: cuTensorMapEncodeTiled failed (CUresult %d) for a [%d][%d] bf16 "
               "matrix at %p, box %u x %u\n",
               static_cast<int>(r), rows, k, base, p.box[1], p.box[0]);
  return cudaErrorInvalidValue;
}

bool device_is_cc90() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
    return false;
  return major == 9 && minor == 0;
}

template <bool kOverlap, bool kGrouped>
cudaError_t launch_wgmma(const CUtensorMap& map_a, const CUtensorMap& map_w, bf16_bits* C, int m,
                         int n, int k, dim3 grid, Grouped g, cudaStream_t s) {
  static const cudaError_t attr =
      cudaFuncSetAttribute(gemm_wgmma_kernel<kOverlap, kGrouped>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM_BYTES);
  if (attr != cudaSuccess) return attr;
  gemm_wgmma_kernel<kOverlap, kGrouped><<<grid, L::THREADS, L::SMEM_BYTES, s>>>(
      map_a, map_w, reinterpret_cast<__nv_bfloat16*>(C), m, n, k, g);
  return cudaGetLastError();
}

/// tile_offsets[e + 1] = Σ_{e' <= e} ceil(rows_e' / BM), tile_offsets[0] = 0: one block of a
/// power-of-two number of threads >= experts (<= 1024), Hillis–Steele scan in shared memory.
__global__ void grouped_tile_offsets_kernel(const int* __restrict__ offsets, int experts,
                                            int* __restrict__ tile_offsets) {
  __shared__ int buf[1024];
  const int tid = static_cast<int>(threadIdx.x);
  buf[tid] = tid < experts ? (offsets[tid + 1] - offsets[tid] + L::BM - 1) / L::BM : 0;
  __syncthreads();
  for (int d = 1; d < static_cast<int>(blockDim.x); d <<= 1) {
    const int add = tid >= d ? buf[tid - d] : 0;
    __syncthreads();
    buf[tid] += add;
    __syncthreads();
  }
  if (tid < experts) tile_offsets[tid + 1] = buf[tid];
  if (tid == 0) tile_offsets[0] = 0;
}

}  // namespace

bool gemm_wgmma_supported() {
  if (!device_is_cc90()) return false;
  // The fatbin holds sm_90a code for this device (a kernel image loads).
  cudaFuncAttributes fa{};
  const bool ok = cudaFuncGetAttributes(&fa, gemm_wgmma_kernel<true, false>) == cudaSuccess &&
                  cudaFuncGetAttributes(&fa, gemm_wgmma_kernel<false, false>) == cudaSuccess &&
                  cudaFuncGetAttributes(&fa, gemm_wgmma_kernel<true, true>) == cudaSuccess;
  if (!ok) (void)cudaGetLastError();  // not sticky; clear it for the caller
  return ok;
}

cudaError_t gemm_wgmma_bf16(const bf16_bits* A, const bf16_bits* W, bf16_bits* C, int m, int n,
                            int k, cudaStream_t s, bool overlap_stages) {
  if (m <= 0 || n <= 0 || k <= 0 || k % 8 != 0 || n % 8 != 0) return cudaErrorInvalidValue;
  if (!aligned16(A) || !aligned16(W) || !aligned16(C)) return cudaErrorInvalidValue;
  const long long tiles = static_cast<long long>((m + L::BM - 1) / L::BM) *
                          static_cast<long long>((n + L::BN - 1) / L::BN);
  if (tiles > 0x7FFFFFFFLL) return cudaErrorInvalidValue;
  if (!device_is_cc90()) return cudaErrorNotSupported;
  cudaError_t err = cudaSuccess;
  const PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn(&err);
  if (err != cudaSuccess) return err;
  CUtensorMap map_a, map_w;
  if ((err = encode_map(fn, &map_a, A, m, k, L::BM)) != cudaSuccess) return err;
  if ((err = encode_map(fn, &map_w, W, n, k, L::BN)) != cudaSuccess) return err;
  const dim3 grid(static_cast<unsigned>(tiles));
  return overlap_stages ? launch_wgmma<true, false>(map_a, map_w, C, m, n, k, grid, Grouped{}, s)
                        : launch_wgmma<false, false>(map_a, map_w, C, m, n, k, grid, Grouped{}, s);
}

cudaError_t moe_grouped_gemm_wgmma_bf16(const bf16_bits* x_perm, const bf16_bits* w,
                                        bf16_bits* y_perm, const int* offsets, int* tile_offsets,
                                        int experts, int total_rows, int n, int k, cudaStream_t s) {
  if (experts <= 0 || experts > 1024 || total_rows <= 0 || n <= 0 || k <= 0 || k % 8 != 0 ||
      n % 8 != 0 || offsets == nullptr || tile_offsets == nullptr)
    return cudaErrorInvalidValue;
  if (static_cast<long long>(experts) * n > 0x7FFFFFFFLL) return cudaErrorInvalidValue;
  if (!aligned16(x_perm) || !aligned16(w) || !aligned16(y_perm)) return cudaErrorInvalidValue;
  // Upper bound on the m-tiles: each non-empty expert adds at most one partial tile.
  const long long max_tiles =
      (total_rows + L::BM - 1) / L::BM + (experts < total_rows ? experts : total_rows);
  const long long tiles_n = (n + L::BN - 1) / L::BN;
  if (max_tiles * tiles_n > 0x7FFFFFFFLL) return cudaErrorInvalidValue;
  if (!device_is_cc90()) return cudaErrorNotSupported;
  cudaError_t err = cudaSuccess;
  const PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn(&err);
  if (err != cudaSuccess) return err;
  CUtensorMap map_a, map_w;
  if ((err = encode_map(fn, &map_a, x_perm, total_rows, k, L::BM / 2)) != cudaSuccess) return err;
  if ((err = encode_map(fn, &map_w, w, experts * n, k, L::BN)) != cudaSuccess) return err;
  int threads = 32;
  while (threads < experts) threads *= 2;
  grouped_tile_offsets_kernel<<<1, threads, 0, s>>>(offsets, experts, tile_offsets);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  const dim3 grid(static_cast<unsigned>(max_tiles * tiles_n));
  return launch_wgmma<true, true>(
      map_a, map_w, y_perm, total_rows, n, k, grid,
      Grouped{offsets, tile_offsets, experts, static_cast<int>(max_tiles)}, s);
}

}  // namespace fleetsim::kernels
