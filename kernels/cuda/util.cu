// Device utilities for the harness: random inputs (the same values the CPU regenerates),
// full-tensor comparison, and a spin kernel that hides host launch latency from timings.
#include <cmath>

#include "kernels/common/rand.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

constexpr int kThreads = 256;

// Grid-stride kernels: enough blocks to fill the GPU, capped. The emulator runs blocks one
// after another, so it gets few, long blocks (same code, same results).
#if defined(FK_EMULATE)
constexpr std::size_t kMaxBlocks = 16;
#else
constexpr std::size_t kMaxBlocks = 65536 * 16;
#endif

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks > 0 ? blocks : 1) : kMaxBlocks);
}

FK_GLOBAL void fill_bf16_kernel(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16_rn(rand_bf16_exact(seed, i, scale));  // exact: no rounding
}

FK_GLOBAL void fill_f32_kernel(float* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = rand_bf16_exact(seed, i, scale);
}

FK_GLOBAL void fill_fp8_kernel(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = rand_fp8_e4m3_bits(seed, i);
}

struct DiffAccum {
  double sq_err;
  double sq_ref;
  unsigned long long max_abs_bits;  // bit pattern of a non-negative double: ordered as uint
  unsigned long long nonfinite_a;
  unsigned long long nonfinite_b;
};

FK_DEV bool nonfinite_bits(std::uint16_t b) { return (b & 0x7F80u) == 0x7F80u; }

FK_GLOBAL void diff_kernel(const std::uint16_t* a, const std::uint16_t* b, std::size_t n,
                           DiffAccum* acc) {
  double se = 0, sr = 0, mx = 0;
  unsigned long long na = 0, nb = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint16_t ab = a[i];
    const bool bad_a = nonfinite_bits(ab);
    na += bad_a;
    if (b != nullptr) {
      const std::uint16_t bb = b[i];
      const bool bad_b = nonfinite_bits(bb);
      nb += bad_b;
      if (!bad_a && !bad_b) {
        const double x = __uint_as_float(static_cast<unsigned>(ab) << 16);
        const double y = __uint_as_float(static_cast<unsigned>(bb) << 16);
        se += (x - y) * (x - y);
        sr += y * y;
        mx = fmax(mx, fabs(x - y));
      }
    }
  }
  // Warp reduction, then one atomic per warp.
  for (int o = 16; o > 0; o >>= 1) {
    se += __shfl_xor_sync(0xFFFFFFFFu, se, o);
    sr += __shfl_xor_sync(0xFFFFFFFFu, sr, o);
    mx = fmax(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, o));
    na += __shfl_xor_sync(0xFFFFFFFFu, na, o);
    nb += __shfl_xor_sync(0xFFFFFFFFu, nb, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&acc->sq_err, se);
    atomicAdd(&acc->sq_ref, sr);
    atomicMax(&acc->max_abs_bits, static_cast<unsigned long long>(__double_as_longlong(mx)));
    atomicAdd(&acc->nonfinite_a, na);
    atomicAdd(&acc->nonfinite_b, nb);
  }
}

FK_DEV unsigned long long global_ns() {
#if defined(FK_EMULATE)
  return emu::global_ns();
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

FK_GLOBAL void spin_kernel(unsigned long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) {}
}

}  // namespace

double DeviceDiff::rel_l2() const {
  return sq_ref > 0 ? std::sqrt(sq_err / sq_ref) : std::sqrt(sq_err);
}

cudaError_t fill_random_bf16(bf16_bits* p, std::size_t n, std::uint64_t seed, float scale,
                             cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (p == nullptr) return cudaErrorInvalidValue;
  FK_LAUNCH(fill_bf16_kernel, grid_for(n), kThreads, 0, s)
  (reinterpret_cast<__nv_bfloat16*>(p), n, seed, scale);
  return FK_LAST_ERROR();
}

cudaError_t fill_random_f32(float* p, std::size_t n, std::uint64_t seed, float scale,
                            cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (p == nullptr) return cudaErrorInvalidValue;
  FK_LAUNCH(fill_f32_kernel, grid_for(n), kThreads, 0, s)(p, n, seed, scale);
  return FK_LAST_ERROR();
}

cudaError_t fill_random_fp8(fp8_bits* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (p == nullptr) return cudaErrorInvalidValue;
  FK_LAUNCH(fill_fp8_kernel, grid_for(n), kThreads, 0, s)(p, n, seed);
  return FK_LAST_ERROR();
}

std::size_t diff_scratch_bytes() { return sizeof(DiffAccum); }

cudaError_t diff_bf16(const bf16_bits* a, const bf16_bits* b, std::size_t n, void* scratch,
                      DeviceDiff* out, cudaStream_t s) {
  if (a == nullptr || scratch == nullptr || out == nullptr) return cudaErrorInvalidValue;
  auto* acc = static_cast<DiffAccum*>(scratch);
  cudaError_t e = cudaMemsetAsync(acc, 0, sizeof(DiffAccum), s);
  if (e != cudaSuccess) return e;
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  const std::size_t cap = kMaxBlocks < 2048 ? kMaxBlocks : 2048;
  const unsigned grid = static_cast<unsigned>(blocks < cap ? (blocks > 0 ? blocks : 1) : cap);
  FK_LAUNCH(diff_kernel, grid, kThreads, 0, s)(a, b, n, acc);
  if ((e = FK_LAST_ERROR()) != cudaSuccess) return e;
  DiffAccum h{};
  if ((e = cudaMemcpyAsync(&h, acc, sizeof h, cudaMemcpyDeviceToHost, s)) != cudaSuccess) return e;
  if ((e = cudaStreamSynchronize(s)) != cudaSuccess) return e;
  out->sq_err = h.sq_err;
  out->sq_ref = h.sq_ref;
  double mx;
  memcpy(&mx, &h.max_abs_bits, sizeof mx);
  out->max_abs = mx;
  out->nonfinite_a = h.nonfinite_a;
  out->nonfinite_b = h.nonfinite_b;
  return cudaSuccess;
}

cudaError_t gpu_spin(double us, cudaStream_t s) {
  if (us <= 0) return cudaSuccess;
  FK_LAUNCH(spin_kernel, 1, 1, 0, s)(static_cast<unsigned long long>(us * 1e3));
  return FK_LAST_ERROR();
}

}  // namespace fleetsim::kernels
