// GPU-versus-CPU validation of every kernel, shared by the device tests and the benchmark
// harness (which runs it at every benchmarked shape before timing).
//
// Inputs are generated on the device from (seed, index) (common/rand.h), so the CPU
// regenerates exactly the elements a reference needs. Large outputs are checked on samples
// chosen to include the first and last rows and columns and the 64/128-element tile
// boundaries, plus random ones; small outputs (every dimension under the sample limits)
// are checked completely. Outputs are poisoned before the kernel runs, so an unwritten
// element is NaN and fails; the full-tensor non-finite count is taken on the device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/numeric.h"
#include "kernels/cuda/kernels.h"
#include "kernels/ref/attention_ref.h"

namespace fleetsim::kernels {

struct CheckResult {
  bool ok = false;
  std::string detail;  ///< what was compared and how far off it was, or what failed
  ErrorStats stats;
};

// ---- GEMM -----------------------------------------------------------------------------

struct GemmProblem {
  int m = 0, n = 0, k = 0;
  bool fp8 = false;  ///< inputs are e4m3 (rand_fp8_e4m3_bits) instead of bf16
  std::uint64_t seed_a = 1, seed_w = 2;
  float scale_a = 1.0f, scale_w = 1.0f;  ///< bf16 input scales (powers of two)
  float a(int i, int l) const;           ///< A[i][l] as the device holds it
  float w(int j, int l) const;           ///< W[j][l]
};
/// Fills A and W on the device for `p` (bf16 or fp8 buffers as p.fp8 says).
void fill_gemm_inputs(const GemmProblem& p, void* d_a, void* d_w);
/// Compares C [m×n] (bf16) with the double-precision reference on `max_rows` sampled rows
/// (each on `max_cols` sampled columns) and `max_rows` sampled columns (each on `max_cols`
/// sampled rows); plus the full non-finite count.
CheckResult check_gemm(const GemmProblem& p, const bf16_bits* d_c, int max_rows = 8,
                       int max_cols = 256);

/// Debug aid for a failed GEMM check: the full reference on the CPU (for outputs up to
/// `max_macs` multiply-adds), the number of wrong elements (|error| > 0.06·RMS(reference) or
/// non-finite), the first few of them with expected and got values, the residues of their
/// columns mod 8/16/64/256 and rows mod 8/16/64 (a pattern that repeats with a period points
/// to a fragment or swizzle layout bug, errors everywhere or in whole tiles to a
/// synchronisation bug), and the 128×256 output tiles they fall in. Empty when all match.
std::string gemm_mismatch_report(const GemmProblem& p, const bf16_bits* d_c, double max_macs = 4e9);

// ---- attention ------------------------------------------------------------------------

struct PrefillProblem {
  ref::AttnDims dims;
  std::uint64_t seed_q = 1, seed_k = 2, seed_v = 3;
  float scale_q = 2.0f;  ///< larger queries make the softmax peakier (a stronger test)
};
void fill_prefill_inputs(const PrefillProblem& p, bf16_bits* d_q, bf16_bits* d_k, bf16_bits* d_v);
/// Sampled (sequence, head) pairs × sampled query rows, each a full output row of 128.
CheckResult check_prefill(const PrefillProblem& p, const bf16_bits* d_o, int max_bh = 4,
                          int max_rows = 12);

struct DecodeProblem {
  int batch = 1, heads = 1, kv_heads = 1, head_dim = 128;
  int page_size = 16;
  int max_blocks_per_seq = 0;
  int num_blocks = 0;            ///< pages in the cache
  std::vector<int> seq_lens;     ///< [batch]
  std::vector<int> block_table;  ///< [batch][max_blocks_per_seq]
  std::uint64_t seed_q = 1, seed_k = 2, seed_v = 3;
  float scale_q = 2.0f;
  int max_seq_len() const;
  /// A cache with shuffled pages for the given lengths (seeded).
  static DecodeProblem make(int batch, int heads, int kv_heads, const std::vector<int>& lens,
                            int page_size, std::uint64_t seed);
};
/// Fills q and the whole cache (num_blocks pages).
void fill_decode_inputs(const DecodeProblem& p, bf16_bits* d_q, bf16_bits* d_kc, bf16_bits* d_vc);
/// Sampled sequences, all heads.
CheckResult check_decode(const DecodeProblem& p, const bf16_bits* d_o, int max_seqs = 4);

// ---- MoE --------------------------------------------------------------------------------

/// Router: every token (logits regenerated from seed, scale 4), ids exact, weights 1e-5.
CheckResult check_router(const int* d_ids, const float* d_weights, int tokens, int experts,
                         int top_k, bool renormalize, std::uint64_t seed_logits, float logit_scale);

/// Permutation of x (bf16, regenerated from seed_x) by host_ids: offsets and dst_row valid,
/// and sampled x_perm rows bit-identical to their token rows; full non-finite count.
CheckResult check_permute(const std::vector<int>& host_ids, int tokens, int top_k, int experts,
                          int hidden, std::uint64_t seed_x, const int* d_offsets,
                          const int* d_dst_row, const bf16_bits* d_x_perm);

/// Grouped GEMM: x_perm rows regenerated from seed_x ([rows][k]), W [experts][n][k] from
/// seed_w, offsets from the host copy; sampled rows × sampled columns.
CheckResult check_grouped_gemm(const std::vector<int>& offsets, int n, int k, std::uint64_t seed_x,
                               std::uint64_t seed_w, const bf16_bits* d_y, int max_rows = 16,
                               int max_cols = 256);

/// Un-permute: sampled tokens against Σ_slot w·y_perm rows read back from the device.
CheckResult check_unpermute(const std::vector<int>& dst_row, const std::vector<float>& weights,
                            int tokens, int top_k, int hidden, const bf16_bits* d_y_perm,
                            const bf16_bits* d_out, int max_tokens = 32);

/// Full-tensor comparison of two device bf16 tensors (e.g. own kernel vs cuBLASLt):
/// rel_l2 <= 1e-2, max/rms <= 0.1 (two bf16 roundings), no NaN/Inf in either.
CheckResult check_device_diff(const bf16_bits* a, const bf16_bits* b, std::size_t n,
                              const std::string& what);

}  // namespace fleetsim::kernels
