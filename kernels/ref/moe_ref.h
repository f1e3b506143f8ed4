// CPU reference for the mixture-of-experts kernels: router top-k (cuda/moe_router.cu),
// token permutation (cuda/moe_permute.cu), grouped GEMM (cuda/moe_grouped_gemm.cu) and
// un-permute with weighted combine (cuda/moe_unpermute.cu).
//
// An assignment is a (token, slot) pair, a = token·top_k + slot; topk_ids[a] is its expert.
// The permutation puts the assignments' token rows grouped by expert: expert e owns rows
// [offsets[e], offsets[e+1]) of x_perm, and dst_row[a] is the row of assignment a.
// Expert weights are W [experts][n][k] (row-major per expert, like a linear layer), so
// y_perm[r] = x_perm[r]·W_eᵀ for the expert e that owns row r.
#pragma once

#include <string>
#include <vector>

namespace fleetsim::kernels::ref {

/// Softmax over each token's `experts` logits, then the top_k experts by logit (equal
/// logits: the lower expert index first). weights = the selected softmax probabilities,
/// divided by their sum when `renormalize` (Mixtral; top-k of the softmax). ids and weights
/// are [tokens][top_k] in descending order of probability. `probs` (optional) receives the
/// full softmax [tokens][experts].
void router_topk(const float* logits, int tokens, int experts, int top_k, bool renormalize,
                 int* ids, float* weights, std::vector<double>* probs = nullptr);

struct Permutation {
  std::vector<int> counts;   ///< [experts] assignments per expert
  std::vector<int> offsets;  ///< [experts + 1] exclusive prefix sum of counts
  std::vector<int> dst_row;  ///< [tokens·top_k] row of each assignment in x_perm
};

/// The stable permutation: inside an expert, rows in assignment order.
Permutation permute_plan(const int* ids, int tokens, int top_k, int experts);

/// True when dst_row is a permutation of [0, tokens·top_k) that puts every assignment in
/// its expert's range of `offsets` and `offsets` is the prefix sum of the counts of `ids`;
/// the order inside an expert is free (the GPU fills it with atomics). `why` says what fails.
bool valid_permutation(const int* ids, int tokens, int top_k, int experts, const int* offsets,
                       const int* dst_row, std::string* why);

/// x_perm[dst_row[a]] = x[a / top_k].
void permute_rows(const float* x, int tokens, int top_k, int hidden, const int* dst_row,
                  float* x_perm);

/// y_perm[r] = x_perm[r]·W_eᵀ for every row r of expert e (double accumulation).
void grouped_gemm(const float* x_perm, const float* w, const int* offsets, int experts, int n,
                  int k, double* y_perm);

/// out[t] = Σ_slot weights[t][slot]·y_perm[dst_row[t·top_k + slot]].
void unpermute(const double* y_perm, const int* dst_row, const float* weights, int tokens,
               int top_k, int n, double* out);

/// The same MoE output computed directly, without permuting:
/// out[t] = Σ_slot weights[t][slot]·x[t]·W_{ids[t][slot]}ᵀ.
void moe_direct(const float* x, const int* ids, const float* weights, const float* w, int tokens,
                int top_k, int n, int k, double* out);

}  // namespace fleetsim::kernels::ref
