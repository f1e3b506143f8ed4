// CPU MoE references: router top-k, permutation, grouped GEMM, un-permute.
#include "kernels/ref/moe_ref.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/common/rand.h"

namespace fleetsim::kernels::ref {
namespace {

std::vector<float> random_vec(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = rand_bf16_exact(seed, i, scale);
  return v;
}

TEST(RouterRef, HandChecked) {
  // Logits ln(1), ln(2), ln(3), ln(4): softmax = (0.1, 0.2, 0.3, 0.4); top-2 = experts 3, 2.
  const std::vector<float> logits = {0.0f, static_cast<float>(std::log(2.0)),
                                     static_cast<float>(std::log(3.0)),
                                     static_cast<float>(std::log(4.0))};
  int ids[2];
  float w[2];
  router_topk(logits.data(), 1, 4, 2, false, ids, w);
  EXPECT_EQ(ids[0], 3);
  EXPECT_EQ(ids[1], 2);
  EXPECT_NEAR(w[0], 0.4, 1e-6);
  EXPECT_NEAR(w[1], 0.3, 1e-6);
  router_topk(logits.data(), 1, 4, 2, true, ids, w);
  EXPECT_NEAR(w[0], 0.4 / 0.7, 1e-6);
  EXPECT_NEAR(w[1], 0.3 / 0.7, 1e-6);
}

TEST(RouterRef, TiesGoToTheLowerExpert) {
  const std::vector<float> logits(8, 0.5f);
  int ids[3];
  float w[3];
  router_topk(logits.data(), 1, 8, 3, false, ids, w);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 1);
  EXPECT_EQ(ids[2], 2);
  for (float x : w) EXPECT_NEAR(x, 1.0 / 8, 1e-7);
}

TEST(RouterRef, SelectsTheLargestProbabilitiesInOrder) {
  const int T = 50, E = 256, K = 8;
  const auto logits = random_vec(static_cast<std::size_t>(T) * E, 3, 4.0f);
  std::vector<int> ids(T * K);
  std::vector<float> w(T * K);
  std::vector<double> probs;
  router_topk(logits.data(), T, E, K, true, ids.data(), w.data(), &probs);
  for (int t = 0; t < T; ++t) {
    const double* p = &probs[static_cast<std::size_t>(t) * E];
    EXPECT_NEAR(std::accumulate(p, p + E, 0.0), 1.0, 1e-12);
    std::vector<double> sorted(p, p + E);
    std::sort(sorted.rbegin(), sorted.rend());
    double wsum = 0;
    for (int s = 0; s < K; ++s) {
      EXPECT_EQ(p[ids[t * K + s]], sorted[s]) << "token " << t << " slot " << s;
      wsum += w[t * K + s];
      if (s > 0) {
        EXPECT_GE(w[t * K + s - 1], w[t * K + s]);
      }
    }
    EXPECT_NEAR(wsum, 1.0, 1e-6);
  }
}

TEST(PermuteRef, OffsetsAreThePrefixSumAndOrderIsStable) {
  // 4 tokens, top-2, 3 experts (expert 1 receives nothing).
  const std::vector<int> ids = {2, 0, 0, 2, 2, 0, 0, 2};
  const Permutation p = permute_plan(ids.data(), 4, 2, 3);
  EXPECT_EQ(p.counts, (std::vector<int>{4, 0, 4}));
  EXPECT_EQ(p.offsets, (std::vector<int>{0, 4, 4, 8}));
  // Expert 0 gets assignments 1, 2, 5, 6 in that order; expert 2 gets 0, 3, 4, 7.
  EXPECT_EQ(p.dst_row, (std::vector<int>{4, 0, 1, 5, 6, 2, 3, 7}));
  std::string why;
  EXPECT_TRUE(valid_permutation(ids.data(), 4, 2, 3, p.offsets.data(), p.dst_row.data(), &why))
      << why;
}

TEST(PermuteRef, ValidationAcceptsAnyOrderInsideAnExpertAndRejectsErrors) {
  const std::vector<int> ids = {2, 0, 0, 2, 2, 0, 0, 2};
  const Permutation p = permute_plan(ids.data(), 4, 2, 3);
  std::string why;
  auto dst = p.dst_row;
  std::swap(dst[1], dst[2]);  // two rows of expert 0 swapped: still valid
  EXPECT_TRUE(valid_permutation(ids.data(), 4, 2, 3, p.offsets.data(), dst.data(), &why)) << why;
  dst = p.dst_row;
  std::swap(dst[0], dst[1]);  // an expert-2 assignment in expert 0's rows
  EXPECT_FALSE(valid_permutation(ids.data(), 4, 2, 3, p.offsets.data(), dst.data(), &why));
  dst = p.dst_row;
  dst[2] = dst[1];  // one row twice
  EXPECT_FALSE(valid_permutation(ids.data(), 4, 2, 3, p.offsets.data(), dst.data(), &why));
  auto off = p.offsets;
  off[1] = 3;
  EXPECT_FALSE(valid_permutation(ids.data(), 4, 2, 3, off.data(), p.dst_row.data(), &why));
}

TEST(MoeRef, PermuteThenUnpermuteWithWeightsIsTheIdentity) {
  const int T = 37, E = 8, K = 2, H = 24;
  const auto logits = random_vec(static_cast<std::size_t>(T) * E, 9, 4.0f);
  std::vector<int> ids(T * K);
  std::vector<float> w(T * K);
  router_topk(logits.data(), T, E, K, /*renormalize=*/true, ids.data(), w.data());
  const auto x = random_vec(static_cast<std::size_t>(T) * H, 10);
  const Permutation p = permute_plan(ids.data(), T, K, E);
  std::vector<float> xp(static_cast<std::size_t>(T) * K * H);
  permute_rows(x.data(), T, K, H, p.dst_row.data(), xp.data());
  std::vector<double> yp(xp.begin(), xp.end()), out(static_cast<std::size_t>(T) * H);
  unpermute(yp.data(), p.dst_row.data(), w.data(), T, K, H, out.data());
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], x[i], 1e-6);
}

TEST(MoeRef, GroupedGemmThroughThePermutationEqualsTheDirectSum) {
  const int T = 29, E = 6, K = 3, N = 10, D = 16;
  // Skewed router: expert e gets a bias of -e, so counts are uneven; expert 5 may be empty.
  auto logits = random_vec(static_cast<std::size_t>(T) * E, 31, 2.0f);
  for (int t = 0; t < T; ++t)
    for (int e = 0; e < E; ++e)
      logits[static_cast<std::size_t>(t) * E + e] -= static_cast<float>(e);
  std::vector<int> ids(T * K);
  std::vector<float> w(T * K);
  router_topk(logits.data(), T, E, K, false, ids.data(), w.data());
  const auto x = random_vec(static_cast<std::size_t>(T) * D, 32);
  const auto W = random_vec(static_cast<std::size_t>(E) * N * D, 33);
  const Permutation p = permute_plan(ids.data(), T, K, E);
  EXPECT_NE(p.counts.front(), p.counts.back());
  std::vector<float> xp(static_cast<std::size_t>(T) * K * D);
  permute_rows(x.data(), T, K, D, p.dst_row.data(), xp.data());
  std::vector<double> yp(static_cast<std::size_t>(T) * K * N), out(static_cast<std::size_t>(T) * N),
      direct(out.size());
  grouped_gemm(xp.data(), W.data(), p.offsets.data(), E, N, D, yp.data());
  unpermute(yp.data(), p.dst_row.data(), w.data(), T, K, N, out.data());
  moe_direct(x.data(), ids.data(), w.data(), W.data(), T, K, N, D, direct.data());
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], direct[i], 1e-12);
}

}  // namespace
}  // namespace fleetsim::kernels::ref
