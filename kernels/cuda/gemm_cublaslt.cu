// cuBLASLt BF16 and FP8 GEMMs: the reference for what a vendor library reaches.
//
// Row-major C[m×n] = A[m×k]·W[n×k]ᵀ is, in cuBLAS's column-major terms, Cᵀ[n×m] =
// op(W)·Aᵀ with W seen as a k×n column-major matrix (ld k) transposed and A as a k×m
// column-major matrix (ld k) not transposed: the "TN" layout, which is also the only one
// cuBLASLt supports for FP8 (cuBLAS documentation, cublasLtMatmul, FP8 requirements).
// A plan (descriptors plus the heuristic's first algorithm) is built on the first call of a
// shape and reused, so timed calls do only the launch.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <tuple>

#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;  // NVIDIA's recommendation for Hopper

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
  std::string error;
};

}  // namespace

struct CublasLt {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::map<std::tuple<int, int, int, int>, Plan> plans;  // (fp8?, m, n, k)
};

namespace {

std::string status_str(cublasStatus_t s) {
  return std::string(cublasLtGetStatusString(s)) + " (" + std::to_string(static_cast<int>(s)) + ")";
}

Plan make_plan(CublasLt* lt, bool fp8, int m, int n, int k) {
  Plan p;
  auto fail = [&](const char* what, cublasStatus_t s) {
    p.error = std::string(what) + ": " + status_str(s);
    return p;
  };
  cublasStatus_t s;
  if ((s = cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) !=
      CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtMatmulDescCreate", s);
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  if ((s = cublasLtMatrixLayoutCreate(&p.a, in, static_cast<std::uint64_t>(k),
                                      static_cast<std::uint64_t>(n), k)) != CUBLAS_STATUS_SUCCESS)
    return fail("layout A", s);
  if ((s = cublasLtMatrixLayoutCreate(&p.b, in, static_cast<std::uint64_t>(k),
                                      static_cast<std::uint64_t>(m), k)) != CUBLAS_STATUS_SUCCESS)
    return fail("layout B", s);
  if ((s = cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, static_cast<std::uint64_t>(n),
                                      static_cast<std::uint64_t>(m), n)) != CUBLAS_STATUS_SUCCESS)
    return fail("layout C", s);
  cublasLtMatmulPreference_t pref = nullptr;
  if ((s = cublasLtMatmulPreferenceCreate(&pref)) != CUBLAS_STATUS_SUCCESS)
    return fail("preference", s);
  const std::size_t ws = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof ws);
  cublasLtMatmulHeuristicResult_t res[4] = {};
  int found = 0;
  s = cublasLtMatmulAlgoGetHeuristic(lt->handle, p.desc, p.a, p.b, p.c, p.c, pref, 4, res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulAlgoGetHeuristic", s);
  for (int i = 0; i < found; ++i)
    if (res[i].state == CUBLAS_STATUS_SUCCESS) {
      p.algo = res[i].algo;
      p.ok = true;
      return p;
    }
  p.error = "cuBLASLt has no algorithm for this shape/type";
  return p;
}

void destroy_plan(Plan& p) {
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  p = Plan{};
}

int run(CublasLt* lt, bool fp8, const void* A, const void* W, bf16_bits* C, int m, int n, int k,
        const float* scale_a, const float* scale_b, cudaStream_t s, std::string* error) {
  if (lt == nullptr || m <= 0 || n <= 0 || k <= 0 || A == nullptr || W == nullptr || C == nullptr) {
    if (error) *error = "invalid arguments";
    return static_cast<int>(CUBLAS_STATUS_INVALID_VALUE);
  }
  auto key = std::make_tuple(fp8 ? 1 : 0, m, n, k);
  auto it = lt->plans.find(key);
  if (it == lt->plans.end()) it = lt->plans.emplace(key, make_plan(lt, fp8, m, n, k)).first;
  Plan& p = it->second;
  if (!p.ok) {
    if (error) *error = p.error;
    return static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED);
  }
  if (fp8) {
    // The cuBLAS A operand is W and the B operand is the activations.
    cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_b,
                                   sizeof scale_b);
    cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_a,
                                   sizeof scale_a);
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st = cublasLtMatmul(lt->handle, p.desc, &alpha, W, p.a, A, p.b, &beta, C,
                                           p.c, C, p.c, &p.algo, lt->workspace, kWorkspaceBytes, s);
  if (st != CUBLAS_STATUS_SUCCESS) {
    if (error) *error = "cublasLtMatmul: " + status_str(st);
    return static_cast<int>(st);
  }
  return 0;
}

}  // namespace

CublasLt* cublaslt_create(std::string* error) {
  auto* lt = new CublasLt;
  const cublasStatus_t s = cublasLtCreate(&lt->handle);
  if (s != CUBLAS_STATUS_SUCCESS) {
    if (error) *error = "cublasLtCreate: " + status_str(s);
    delete lt;
    return nullptr;
  }
  const cudaError_t e = cudaMalloc(&lt->workspace, kWorkspaceBytes);
  if (e != cudaSuccess) {
    if (error) *error = std::string("cudaMalloc(workspace): ") + cudaGetErrorString(e);
    cublasLtDestroy(lt->handle);
    delete lt;
    return nullptr;
  }
  return lt;
}

void cublaslt_destroy(CublasLt* lt) {
  if (lt == nullptr) return;
  for (auto& kv : lt->plans) destroy_plan(kv.second);
  cudaFree(lt->workspace);
  cublasLtDestroy(lt->handle);
  delete lt;
}

std::string cublaslt_version_string() {
  const std::size_t v = cublasLtGetVersion();  // major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

int gemm_cublaslt_bf16(CublasLt* lt, const bf16_bits* A, const bf16_bits* W, bf16_bits* C, int m,
                       int n, int k, cudaStream_t s, std::string* error) {
  return run(lt, false, A, W, C, m, n, k, nullptr, nullptr, s, error);
}

int gemm_cublaslt_fp8(CublasLt* lt, const fp8_bits* A, const fp8_bits* W, bf16_bits* C, int m,
                      int n, int k, const float* scale_a, const float* scale_b, cudaStream_t s,
                      std::string* error) {
  return run(lt, true, A, W, C, m, n, k, scale_a, scale_b, s, error);
}

}  // namespace fleetsim::kernels
