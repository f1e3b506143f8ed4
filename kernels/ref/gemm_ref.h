// CPU reference for the GEMM kernels (cuda/gemm_cublaslt.cu, cuda/gemm_tiled.cu and the
// per-expert products of cuda/moe_grouped_gemm.cu).
//
// Layout (the one serving engines use for a linear layer, and the "TN" layout cuBLASLt
// requires for FP8): row-major A [m×k] (activations), row-major W [n×k] (weights, one row
// per output feature), row-major C [m×n]:  C = A·Wᵀ,  C[i][j] = Σ_l A[i][l]·W[j][l].
#pragma once

namespace fleetsim::kernels::ref {

/// C = A·Wᵀ in double precision (Eigen).
void gemm(const float* A, const float* W, double* C, int m, int n, int k);

/// One element: Σ_l a[l]·w[l] in double.
double dot(const float* a, const float* w, int k);

}  // namespace fleetsim::kernels::ref
