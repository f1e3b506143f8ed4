// MoE token permutation: groups the (token, slot) assignments by expert so that each
// expert's rows are contiguous for the grouped GEMM.
//   1. count:  counts[e] = number of assignments to e (atomics);
//   2. scan:   offsets = exclusive prefix sum of counts (one block), cursor = 0;
//   3. scatter: one warp per assignment takes a slot in its expert (atomic on cursor[e]),
//      records dst_row[a] and copies the token's row into x_perm with 16-byte vectors.
// The order inside an expert depends on the atomics; nothing downstream depends on it.
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

FK_GLOBAL void count_kernel(const int* __restrict__ ids, int n, int experts, int* counts) {
  const int a = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (a < n) {
    const int e = ids[a];
    if (e >= 0 && e < experts) atomicAdd(&counts[e], 1);
  }
}

// One block of a power-of-two number of threads >= experts.
FK_GLOBAL void scan_kernel(const int* __restrict__ counts, int experts, int* offsets, int* cursor) {
  FK_SMEM(int, buf);  // 2·blockDim.x
  const int tid = static_cast<int>(threadIdx.x);
  const int incl = dev::block_inclusive_scan(tid < experts ? counts[tid] : 0, buf);
  if (tid < experts) {
    offsets[tid + 1] = incl;
    cursor[tid] = 0;
  }
  if (tid == 0) offsets[0] = 0;
}

constexpr int kWarps = 8;

FK_GLOBAL void FK_LAUNCH_BOUNDS(kWarps * 32)
    scatter_kernel(const uint4* __restrict__ x, const int* __restrict__ ids, int n, int top_k,
                   int chunks, int experts, const int* __restrict__ offsets, int* cursor,
                   int* __restrict__ dst_row, uint4* __restrict__ x_perm) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int a = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x) / 32;
  if (a >= n) return;
  const int e = ids[a];
  if (e < 0 || e >= experts) {
    if (lane == 0) dst_row[a] = -1;
    return;
  }
  int pos = 0;
  if (lane == 0) pos = atomicAdd(&cursor[e], 1);
  pos = __shfl_sync(0xFFFFFFFFu, pos, 0);
  const int row = offsets[e] + pos;
  if (lane == 0) dst_row[a] = row;
  const uint4* src = x + static_cast<std::size_t>(a / top_k) * chunks;
  uint4* dst = x_perm + static_cast<std::size_t>(row) * chunks;
  for (int c = lane; c < chunks; c += 32) dst[c] = src[c];
}

}  // namespace

cudaError_t moe_permute(const bf16_bits* x, const int* topk_ids, int tokens, int top_k, int hidden,
                        int experts, const MoePermuteScratch& sc, int* dst_row, bf16_bits* x_perm,
                        cudaStream_t s) {
  if (tokens <= 0 || top_k <= 0 || hidden <= 0 || hidden % 8 != 0 || experts <= 0 ||
      experts > 1024 || x == nullptr || topk_ids == nullptr || sc.counts == nullptr ||
      sc.offsets == nullptr || sc.cursor == nullptr || dst_row == nullptr || x_perm == nullptr)
    return cudaErrorInvalidValue;
  if ((reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(x_perm)) & 15u)
    return cudaErrorInvalidValue;
  const int n = tokens * top_k;
  cudaError_t e = FK_MEMSET_ASYNC(sc.counts, 0, sizeof(int) * static_cast<std::size_t>(experts), s);
  if (e != cudaSuccess) return e;
  const unsigned count_grid = static_cast<unsigned>((n + 255) / 256);
  FK_LAUNCH(count_kernel, count_grid, 256, 0, s)(topk_ids, n, experts, sc.counts);
  if ((e = FK_LAST_ERROR()) != cudaSuccess) return e;
  int threads = 32;
  while (threads < experts) threads *= 2;
  FK_LAUNCH(scan_kernel, 1, threads, 2 * threads * sizeof(int), s)
  (sc.counts, experts, sc.offsets, sc.cursor);
  if ((e = FK_LAST_ERROR()) != cudaSuccess) return e;
  const unsigned scatter_grid = static_cast<unsigned>((n + kWarps - 1) / kWarps);
  FK_LAUNCH(scatter_kernel, scatter_grid, kWarps * 32, 0, s)
  (reinterpret_cast<const uint4*>(x), topk_ids, n, top_k, hidden / 8, experts, sc.offsets,
   sc.cursor, dst_row, reinterpret_cast<uint4*>(x_perm));
  return FK_LAST_ERROR();
}

}  // namespace fleetsim::kernels
