// A CPU stand-in for the cuBLASLt wrapper (kernels/cuda/gemm_cublaslt.cu) with the same
// API, for the *_emulated test binaries: C = A·Wᵀ in double, rounded to bf16. It checks
// the harness around the library, not cuBLASLt.
#include <functional>
#include <string>

#include "kernels/common/numeric.h"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {

struct CublasLt {};

CublasLt* cublaslt_create(std::string*) { return new CublasLt; }
void cublaslt_destroy(CublasLt* lt) { delete lt; }
std::string cublaslt_version_string() { return "emulated"; }

namespace {

template <class Get>
int cpu_gemm(bf16_bits* C, int m, int n, int k, Get a, Get w, double scale, std::string* error) {
  if (m <= 0 || n <= 0 || k <= 0 || C == nullptr) {
    if (error) *error = "invalid arguments";
    return 7;  // CUBLAS_STATUS_INVALID_VALUE
  }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int l = 0; l < k; ++l)
        s += static_cast<double>(a(static_cast<std::size_t>(i) * k + l)) *
             w(static_cast<std::size_t>(j) * k + l);
      C[static_cast<std::size_t>(i) * n + j] = float_to_bf16(static_cast<float>(s * scale));
    }
  return 0;
}

}  // namespace

int gemm_cublaslt_bf16(CublasLt*, const bf16_bits* A, const bf16_bits* W, bf16_bits* C, int m,
                       int n, int k, cudaStream_t, std::string* error) {
  auto a = [A](std::size_t i) { return bf16_to_float(A[i]); };
  auto w = [W](std::size_t i) { return bf16_to_float(W[i]); };
  return cpu_gemm<std::function<float(std::size_t)>>(C, m, n, k, a, w, 1.0, error);
}

int gemm_cublaslt_fp8(CublasLt*, const fp8_bits* A, const fp8_bits* W, bf16_bits* C, int m, int n,
                      int k, const float* scale_a, const float* scale_b, cudaStream_t,
                      std::string* error) {
  auto a = [A](std::size_t i) { return fp8_e4m3_to_float(A[i]); };
  auto w = [W](std::size_t i) { return fp8_e4m3_to_float(W[i]); };
  const double scale = (scale_a ? *scale_a : 1.0) * (scale_b ? *scale_b : 1.0);
  return cpu_gemm<std::function<float(std::size_t)>>(C, m, n, k, a, w, scale, error);
}

}  // namespace fleetsim::kernels
