// CPU GEMM reference: C = A·Wᵀ with row-major A [m×k], W [n×k].
#include "kernels/ref/gemm_ref.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/common/rand.h"

namespace fleetsim::kernels::ref {
namespace {

TEST(GemmRef, HandChecked) {
  const std::vector<float> A = {1, 2, 3,  //
                                4, 5, 6};
  const std::vector<float> W = {1, 0, -1,  // output feature 0
                                2, 1, 0};  // output feature 1
  std::vector<double> C(4);
  gemm(A.data(), W.data(), C.data(), 2, 2, 3);
  EXPECT_EQ(C[0], -2);  // 1 - 3
  EXPECT_EQ(C[1], 4);   // 2 + 2
  EXPECT_EQ(C[2], -2);  // 4 - 6
  EXPECT_EQ(C[3], 13);  // 8 + 5
}

TEST(GemmRef, IdentityWeightsCopyTheInput) {
  const int m = 5, k = 7;
  std::vector<float> A(m * k), W(k * k, 0.0f);
  for (int i = 0; i < m * k; ++i) A[i] = rand_bf16_exact(3, i, 1.0f);
  for (int i = 0; i < k; ++i) W[i * k + i] = 1.0f;
  std::vector<double> C(m * k);
  gemm(A.data(), W.data(), C.data(), m, k, k);
  for (int i = 0; i < m * k; ++i) EXPECT_EQ(C[i], A[i]);
}

TEST(GemmRef, MatchesElementwiseDots) {
  const int m = 13, n = 11, k = 37;
  std::vector<float> A(m * k), W(n * k);
  for (int i = 0; i < m * k; ++i) A[i] = rand_bf16_exact(1, i, 1.0f);
  for (int i = 0; i < n * k; ++i) W[i] = rand_bf16_exact(2, i, 1.0f);
  std::vector<double> C(m * n);
  gemm(A.data(), W.data(), C.data(), m, n, k);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      EXPECT_NEAR(C[i * n + j], dot(&A[i * k], &W[j * k], k), 1e-12) << i << "," << j;
}

}  // namespace
}  // namespace fleetsim::kernels::ref
