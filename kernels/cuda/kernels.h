// Host API of the device kernels (one kernel per .cu file in this folder). Plain C++: the
// harness, tests and benchmarks include it without nvcc.
//
// Device buffers of bf16 are passed as raw 16-bit patterns (bf16_bits) and FP8 e4m3 as
// bytes; layouts are those of the CPU references (kernels/ref/*.h). Every launcher checks
// its arguments (returning cudaErrorInvalidValue when a precondition fails, before any
// launch) and returns cudaGetLastError() after launching.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fleetsim::kernels {

using bf16_bits = std::uint16_t;
using fp8_bits = std::uint8_t;

// ---- util.cu: inputs, checks, timing aids -----------------------------------------------

/// p[i] = rand_bf16_exact(seed, i, scale) (common/rand.h); scale a power of two.
cudaError_t fill_random_bf16(bf16_bits* p, std::size_t n, std::uint64_t seed, float scale,
                             cudaStream_t s);
/// p[i] = rand_bf16_exact(seed, i, scale) as float.
cudaError_t fill_random_f32(float* p, std::size_t n, std::uint64_t seed, float scale,
                            cudaStream_t s);
/// p[i] = rand_fp8_e4m3_bits(seed, i).
cudaError_t fill_random_fp8(fp8_bits* p, std::size_t n, std::uint64_t seed, cudaStream_t s);

/// Full-tensor comparison of two bf16 tensors on the device: sums of (a-b)^2 and b^2, the
/// largest |a-b|, and non-finite counts of each. `b` may be null (only a's statistics).
struct DeviceDiff {
  double sq_err = 0;
  double sq_ref = 0;
  double max_abs = 0;
  unsigned long long nonfinite_a = 0;
  unsigned long long nonfinite_b = 0;
  double rel_l2() const;
};
/// `scratch` is a device buffer of at least diff_scratch_bytes(); synchronous on `s`.
std::size_t diff_scratch_bytes();
cudaError_t diff_bf16(const bf16_bits* a, const bf16_bits* b, std::size_t n, void* scratch,
                      DeviceDiff* out, cudaStream_t s);

/// Keeps the GPU busy for about `us` microseconds, so that the work enqueued after it
/// (event record, kernel launches) is queued before the GPU reaches it and host launch
/// latency stays out of the event-timed region (the idea of nvbench's blocking kernel).
cudaError_t gpu_spin(double us, cudaStream_t s);

// ---- gemm_cublaslt.cu: the library reference --------------------------------------------

/// A cuBLASLt handle, a 32 MiB workspace and cached matmul plans (one per shape and type).
struct CublasLt;
CublasLt* cublaslt_create(std::string* error);
void cublaslt_destroy(CublasLt* lt);
std::string cublaslt_version_string();

/// C[m×n] (bf16) = A[m×k]·W[n×k]ᵀ, row-major, BF16 inputs, FP32 accumulation.
/// Returns 0 or a cublasStatus_t; *error says what failed.
int gemm_cublaslt_bf16(CublasLt* lt, const bf16_bits* A, const bf16_bits* W, bf16_bits* C, int m,
                       int n, int k, cudaStream_t s, std::string* error);
/// The same with FP8 e4m3 inputs and a bf16 output; scale_a and scale_b are device float
/// scalars (per-tensor dequantisation scales; null means 1).
int gemm_cublaslt_fp8(CublasLt* lt, const fp8_bits* A, const fp8_bits* W, bf16_bits* C, int m,
                      int n, int k, const float* scale_a, const float* scale_b, cudaStream_t s,
                      std::string* error);

// ---- gemm_tiled.cu: the project's own tensor-core GEMM ----------------------------------

/// C[m×n] (bf16) = A[m×k]·W[n×k]ᵀ, row-major, BF16 WMMA with FP32 accumulation.
/// Requires k % 8 == 0 and 16-byte aligned A, W, C.
cudaError_t gemm_tiled_bf16(const bf16_bits* A, const bf16_bits* W, bf16_bits* C, int m, int n,
                            int k, cudaStream_t s);

// ---- gemm_wgmma.cu: the own Hopper GEMM (sm_90a: TMA + wgmma) -----------------------------

/// True when gemm_wgmma_bf16 can run here: a compute capability 9.0 device (H100/H200) and a
/// build with its sm_90a code. False on other GPUs and in the host emulator.
bool gemm_wgmma_supported();
/// C[m×n] (bf16) = A[m×k]·W[n×k]ᵀ, row-major, FP32 accumulation: the semantics of
/// gemm_tiled_bf16, on Hopper's wgmma tensor-core instructions fed by TMA (128×256×64 tiles,
/// 4 stages, 1 producer + 2 consumer warpgroups). Requires k % 8 == 0, n % 8 == 0 and 16-byte
/// aligned A, W, C (cudaErrorInvalidValue); returns cudaErrorNotSupported where
/// gemm_wgmma_supported() is false. `overlap_stages` false selects the simpler mainloop
/// (each consumer waits for its wgmma before releasing the stage): for diagnosis only.
cudaError_t gemm_wgmma_bf16(const bf16_bits* A, const bf16_bits* W, bf16_bits* C, int m, int n,
                            int k, cudaStream_t s, bool overlap_stages = true);

// ---- attn_prefill.cu ----------------------------------------------------------------------

struct PrefillArgs {
  const bf16_bits* q = nullptr;  ///< [batch][q_len][heads][128]
  const bf16_bits* k = nullptr;  ///< [batch][kv_len][kv_heads][128]
  const bf16_bits* v = nullptr;  ///< [batch][kv_len][kv_heads][128]
  bf16_bits* o = nullptr;        ///< [batch][q_len][heads][128]
  int batch = 1, q_len = 1, kv_len = 1, heads = 1, kv_heads = 1;
  int head_dim = 128;       ///< must be 128
  bool causal = true;       ///< bottom-right aligned: row i sees keys j <= i + kv_len - q_len
  float softmax_scale = 0;  ///< 0: 1/sqrt(head_dim)
};
/// Flash-style attention forward: 64 query rows per block, key/value tiles of 64 through
/// shared memory (cp.async, double-buffered), online softmax, mma.sync m16n8k16 BF16.
/// Requires q_len <= kv_len, heads % kv_heads == 0.
cudaError_t attn_prefill_bf16(const PrefillArgs& a, cudaStream_t s);

// ---- attn_decode.cu -----------------------------------------------------------------------

struct DecodeArgs {
  const bf16_bits* q = nullptr;        ///< [batch][heads][128]
  const bf16_bits* k_cache = nullptr;  ///< [num_blocks][kv_heads][page_size][128]
  const bf16_bits* v_cache = nullptr;
  const int* block_table = nullptr;  ///< [batch][max_blocks_per_seq]
  const int* seq_lens = nullptr;     ///< [batch], each <= max_seq_len
  bf16_bits* o = nullptr;            ///< [batch][heads][128]
  int batch = 1, heads = 1, kv_heads = 1;
  int head_dim = 128;  ///< must be 128
  int page_size = 16;
  int max_blocks_per_seq = 0;
  int max_seq_len = 0;
  float softmax_scale = 0;  ///< 0: 1/sqrt(head_dim)
  int num_splits = 0;       ///< split-K chunks per sequence; 0: chosen from sm_count
  int sm_count = 132;
  float* workspace = nullptr;  ///< device, attn_decode_workspace_bytes(args) bytes
};
/// The split count used (after the automatic choice and rounding to 64-token tiles).
int attn_decode_splits(const DecodeArgs& a);
std::size_t attn_decode_workspace_bytes(const DecodeArgs& a);
/// Paged decode attention: one block per (split, KV head, sequence) reads its chunk of the
/// KV cache once for all the GQA group's query heads, then a combine kernel merges the
/// splits by log-sum-exp. GQA group (heads / kv_heads) must be 1, 2, 4, 8 or 16.
cudaError_t attn_decode_bf16(const DecodeArgs& a, cudaStream_t s);

// ---- MoE: moe_router.cu, moe_permute.cu, moe_grouped_gemm.cu, moe_unpermute.cu ----------

/// Softmax over each token's logits [tokens][experts] (float), then the top_k experts
/// (ties: lower index). ids, weights [tokens][top_k], descending. experts <= 256,
/// top_k <= min(experts, 16).
cudaError_t moe_router_topk(const float* logits, int tokens, int experts, int top_k,
                            bool renormalize, int* ids, float* weights, cudaStream_t s);

/// Device scratch of the permutation: counts [experts], offsets [experts + 1],
/// cursor [experts] (int each).
struct MoePermuteScratch {
  int* counts = nullptr;
  int* offsets = nullptr;
  int* cursor = nullptr;
};
/// Groups the assignments by expert: offsets (exclusive prefix sum of the counts),
/// dst_row [tokens·top_k] and x_perm [tokens·top_k][hidden] with
/// x_perm[dst_row[a]] = x[a / top_k]. The order inside an expert follows atomics (free).
/// hidden % 8 == 0, experts <= 1024.
cudaError_t moe_permute(const bf16_bits* x, const int* topk_ids, int tokens, int top_k, int hidden,
                        int experts, const MoePermuteScratch& scratch, int* dst_row,
                        bf16_bits* x_perm, cudaStream_t s);

/// y_perm[r] = x_perm[r]·W_eᵀ for the rows r of each expert e ([offsets[e], offsets[e+1])),
/// W [experts][n][k]; the same tile code as gemm_tiled_bf16, with 128-row tiles that never
/// cross an expert. `tile_offsets` is device scratch of experts + 1 ints.
/// k % 8 == 0, experts <= 1024.
cudaError_t moe_grouped_gemm_bf16(const bf16_bits* x_perm, const bf16_bits* w, bf16_bits* y_perm,
                                  const int* offsets, int* tile_offsets, int experts,
                                  int total_rows, int n, int k, cudaStream_t s);

/// The same on Hopper (sm_90a, compute capability 9.0 only): the TMA + wgmma mainloop of
/// gemm_wgmma_bf16 with 128-row tiles that never cross an expert, W viewed as one
/// [experts·n][k] matrix. k % 8 == 0, n % 8 == 0, experts <= 1024. cudaErrorNotSupported
/// elsewhere (and in the emulator).
cudaError_t moe_grouped_gemm_wgmma_bf16(const bf16_bits* x_perm, const bf16_bits* w,
                                        bf16_bits* y_perm, const int* offsets, int* tile_offsets,
                                        int experts, int total_rows, int n, int k, cudaStream_t s);

/// out[t] = Σ_slot weights[t][slot]·y_perm[dst_row[t·top_k + slot]] (FP32 sum, bf16 out).
/// hidden % 8 == 0.
cudaError_t moe_unpermute(const bf16_bits* y_perm, const int* dst_row, const float* weights,
                          int tokens, int top_k, int hidden, bf16_bits* out, cudaStream_t s);

}  // namespace fleetsim::kernels
