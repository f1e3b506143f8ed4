// Device helpers shared by the kernels: asynchronous copies, the m16n8k16 tensor-core MMA,
// bf16 packing, warp reductions, a block-wide prefix sum; and the few macros that let the
// same kernel source compile for the GPU (nvcc) or for the host emulator (FK_EMULATE,
// kernels/emu/emu.h), which runs the kernels on the CPU in CI.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>

#include "kernels/cuda/kernels.h"

#if defined(FK_EMULATE)
#include "kernels/emu/emu.h"
#define FK_DEV inline
#define FK_GLOBAL
#define FK_LAUNCH_BOUNDS(...)
#define FK_SMEM(type, name) \
  type* name = reinterpret_cast<type*>(::fleetsim::kernels::emu::dynamic_smem())
#define FK_LAUNCH(kernel, grid, block, smem, stream) \
  ::fleetsim::kernels::emu::make_launch(kernel, grid, block, smem)
#define FK_SET_SMEM_ATTR(kernel, bytes) ::fleetsim::kernels::emu::set_smem_attr(kernel, bytes)
#define FK_LAST_ERROR() ::fleetsim::kernels::emu::last_error()
#define FK_MEMSET_ASYNC(ptr, value, bytes, stream) (std::memset(ptr, value, bytes), cudaSuccess)
#else
#include <cuda_runtime.h>
#define FK_DEV __device__ __forceinline__
#define FK_GLOBAL __global__
#define FK_LAUNCH_BOUNDS(...) __launch_bounds__(__VA_ARGS__)
#define FK_SMEM(type, name) extern __shared__ __align__(128) type name[]
#define FK_LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>
#define FK_SET_SMEM_ATTR(kernel, bytes) \
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)
#define FK_LAST_ERROR() cudaGetLastError()
#define FK_MEMSET_ASYNC(ptr, value, bytes, stream) cudaMemsetAsync(ptr, value, bytes, stream)
#endif

namespace fleetsim::kernels::dev {

// ---- cp.async (sm_80+) ------------------------------------------------------------------

#if defined(FK_EMULATE)
FK_DEV void cp_async16(void* smem, const void* gmem, bool valid) {
  emu::cp_async16(smem, gmem, valid);
}
FK_DEV void cp_async_commit() { emu::cp_async_commit(); }
template <int N>
FK_DEV void cp_async_wait() {
  emu::cp_async_wait(N);
}
#else
FK_DEV std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// 16-byte global -> shared copy that bypasses L1. When `valid` is false nothing is read and
/// the 16 destination bytes are zero-filled (src-size 0), which is how tile loads handle
/// rows and columns past the end; `gmem` must still be a valid address.
FK_DEV void cp_async16(void* smem, const void* gmem, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}

FK_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

/// Waits until at most N of this thread's most recent groups are pending.
template <int N>
FK_DEV void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

// ---- mma.sync m16n8k16, BF16 in, FP32 accumulate ------------------------------------------
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"),
// with g = lane >> 2 and t = lane & 3:
//   A 16×16 (row): a[0] = A[g][2t..2t+1],   a[1] = A[g+8][2t..2t+1],
//                  a[2] = A[g][2t+8..2t+9], a[3] = A[g+8][2t+8..2t+9]
//   B 16×8 (col):  b[0] = B[2t..2t+1][g],   b[1] = B[2t+8..2t+9][g]
//   C/D 16×8:      d[0..1] = D[g][2t..2t+1], d[2..3] = D[g+8][2t..2t+1]
// Each 32-bit register holds two bf16, the lower column (A) or row (B) index in the low half.

FK_DEV void mma_bf16_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                           std::uint32_t b1) {
#if defined(FK_EMULATE)
  emu::mma_16816(d, a, b0, b1);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// ---- ldmatrix (sm_75+): four 8×8 b16 matrices from shared memory ---------------------------
//
// Lane i gives the address of row i % 8 of matrix i / 8 (16 contiguous bytes, 16-byte
// aligned). Register j receives matrix j: without .trans, lane l gets row l / 4, elements
// 2(l % 4) and 2(l % 4) + 1 (the B fragment of mma.m16n8k16 when the rows are the n index);
// with .trans, lane l gets elements l / 4 of rows 2(l % 4) and 2(l % 4) + 1 (the B fragment
// when the rows are the k index). The lower element goes to the low half.

#if defined(FK_EMULATE)
template <bool kTrans>
FK_DEV void ldmatrix_x4_emu(std::uint32_t (&r)[4], const void* row_addr) {
  const int lane = static_cast<int>(emu::self->lane);
  const auto mine = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(row_addr));
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (!kTrans) {
      const auto p = __shfl_sync(0xFFFFFFFFu, mine, j * 8 + g);
      const auto* row = reinterpret_cast<const std::uint16_t*>(static_cast<std::uintptr_t>(p));
      r[j] = static_cast<std::uint32_t>(row[2 * t]) |
             (static_cast<std::uint32_t>(row[2 * t + 1]) << 16);
    } else {
      const auto p0 = __shfl_sync(0xFFFFFFFFu, mine, j * 8 + 2 * t);
      const auto p1 = __shfl_sync(0xFFFFFFFFu, mine, j * 8 + 2 * t + 1);
      const auto* row0 = reinterpret_cast<const std::uint16_t*>(static_cast<std::uintptr_t>(p0));
      const auto* row1 = reinterpret_cast<const std::uint16_t*>(static_cast<std::uintptr_t>(p1));
      r[j] = static_cast<std::uint32_t>(row0[g]) | (static_cast<std::uint32_t>(row1[g]) << 16);
    }
  }
  __syncwarp();  // the instruction is warp-wide: nobody overwrites the rows before all read
}
FK_DEV void ldmatrix_x4(std::uint32_t (&r)[4], const void* row_addr) {
  ldmatrix_x4_emu<false>(r, row_addr);
}
FK_DEV void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row_addr) {
  ldmatrix_x4_emu<true>(r, row_addr);
}
#else
FK_DEV void ldmatrix_x4(std::uint32_t (&r)[4], const void* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row_addr))
               : "memory");
}
FK_DEV void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row_addr))
               : "memory");
}
#endif

/// Two floats -> bf16x2 register, `lo` in the low half (round to nearest even).
FK_DEV std::uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  std::uint32_t r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}

/// Two bf16 bit patterns -> one register, `lo` in the low half.
FK_DEV std::uint32_t pack_bits(std::uint16_t lo, std::uint16_t hi) {
  return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
}

/// 32-bit load of two adjacent bf16 from shared memory (4-byte aligned).
FK_DEV std::uint32_t ld_u32(const __nv_bfloat16* p) {
  return *reinterpret_cast<const std::uint32_t*>(p);
}

FK_DEV std::uint16_t bits_of(__nv_bfloat16 x) {
  std::uint16_t r;
  std::memcpy(&r, &x, sizeof r);
  return r;
}

/// 8 bf16 (one 16-byte vector) -> 8 floats.
FK_DEV void unpack8(const uint4& v, float (&f)[8]) {
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

/// 8 floats -> 8 bf16 (round to nearest even) in one 16-byte vector.
FK_DEV uint4 pack8(const float (&f)[8]) {
  uint4 v;
  v.x = pack_bf16x2(f[0], f[1]);
  v.y = pack_bf16x2(f[2], f[3]);
  v.z = pack_bf16x2(f[4], f[5]);
  v.w = pack_bf16x2(f[6], f[7]);
  return v;
}

// ---- online softmax on mma.sync accumulators ------------------------------------------------

/// One online-softmax step (FlashAttention, log2 domain) for the two rows a thread holds in
/// m16n8 accumulators: row r = 0 is the thread's upper row (elements 0, 1 of each n8-tile),
/// r = 1 its lower row (elements 2, 3). A row's columns sit in the 4 lanes of a quad, so the
/// max and the sum reduce with xor 1 and 2. `s` (scores, scaled to log2) becomes the
/// unnormalised probabilities; m_run and l_run are the running max and sum; the output
/// accumulators `o` are rescaled by 2^(m_old − m_new). A row still fully masked (max −∞)
/// uses base 0 so that it gives zeros, not NaN.
template <int NT>
FK_DEV void online_softmax_rows(float (&s)[NT][4], float (&m_run)[2], float (&l_run)[2], float (&o)[16][4]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = fmaxf(s[0][2 * r], s[0][2 * r + 1]);
#pragma unroll
    for (int nt = 1; nt < NT; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 2));
    const float m_new = fmaxf(m_run[r], mx);
    const float base = m_new == -INFINITY ? 0.0f : m_new;
    const float corr = exp2f(m_run[r] - base);
    m_run[r] = m_new;
    float rs = 0.0f;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      s[nt][2 * r] = exp2f(s[nt][2 * r] - base);
      s[nt][2 * r + 1] = exp2f(s[nt][2 * r + 1] - base);
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
}

// ---- warp and block reductions ------------------------------------------------------------

FK_DEV float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}

FK_DEV float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

/// Inclusive prefix sum over the block (blockDim.x a power of two <= 1024) of one int per
/// thread; `buf` is shared memory of 2·blockDim.x ints. All threads must call it.
FK_DEV int block_inclusive_scan(int x, int* buf) {
  const int tid = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(blockDim.x);
  int pin = 0;
  buf[tid] = x;
  __syncthreads();
  for (int off = 1; off < n; off <<= 1) {
    int v = buf[pin * n + tid];
    if (tid >= off) v += buf[pin * n + tid - off];
    buf[(1 - pin) * n + tid] = v;
    pin = 1 - pin;
    __syncthreads();
  }
  return buf[pin * n + tid];
}

}  // namespace fleetsim::kernels::dev
