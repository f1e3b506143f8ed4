// CPU attention references: hand-checkable cases and the properties the kernels rely on
// (softmax rows sum to 1, causal mask, GQA mapping, paged == contiguous, the online and
// split-K formulations equal the direct softmax).
#include "kernels/ref/attention_ref.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/common/rand.h"

namespace fleetsim::kernels::ref {
namespace {

std::vector<float> random_vec(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = rand_bf16_exact(seed, i, scale);
  return v;
}

double max_abs_diff(const double* a, const double* b, int n) {
  double m = 0;
  for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(AttentionRef, OneKeyReturnsItsValue) {
  const int d = 4;
  const std::vector<float> q = {1, 2, 3, 4}, k = {0.5f, -1, 2, 0}, v = {7, 8, 9, 10};
  std::vector<double> out(d);
  attention_row(
      q.data(), d, 1, [&](int) { return k.data(); }, [&](int) { return v.data(); }, 0.5,
      out.data());
  for (int e = 0; e < d; ++e) EXPECT_DOUBLE_EQ(out[e], v[e]);
}

TEST(AttentionRef, EqualScoresAverageTheValues) {
  const int d = 2, n = 3;
  const std::vector<float> q = {0, 0};  // every score 0
  const std::vector<std::vector<float>> K = {{1, 2}, {3, 4}, {5, 6}}, V = {{1, 0}, {0, 1}, {2, 2}};
  std::vector<double> out(d), probs;
  attention_row(
      q.data(), d, n, [&](int j) { return K[j].data(); }, [&](int j) { return V[j].data(); }, 1.0,
      out.data(), &probs);
  EXPECT_NEAR(out[0], 1.0, 1e-15);
  EXPECT_NEAR(out[1], 1.0, 1e-15);
  for (double p : probs) EXPECT_NEAR(p, 1.0 / 3, 1e-15);
}

TEST(AttentionRef, HandCheckedTwoKeys) {
  // q·k = (0, ln 3) at scale 1: p = (1/4, 3/4).
  const int d = 1;
  const std::vector<float> q = {1};
  const std::vector<float> K = {0.0f, static_cast<float>(std::log(3.0))}, V = {4, 8};
  std::vector<double> out(d);
  attention_row(
      q.data(), d, 2, [&](int j) { return &K[j]; }, [&](int j) { return &V[j]; }, 1.0, out.data());
  EXPECT_NEAR(out[0], 0.25 * 4 + 0.75 * 8, 1e-6);
}

TEST(AttentionRef, SoftmaxRowsSumToOneAndStayFiniteForLargeScores) {
  const int d = 128, n = 300;
  const auto q = random_vec(d, 1, 64.0f);  // scores of order 10^3: needs max subtraction
  const auto K = random_vec(static_cast<std::size_t>(n) * d, 2, 64.0f);
  const auto V = random_vec(static_cast<std::size_t>(n) * d, 3);
  std::vector<double> out(d), probs;
  attention_row(
      q.data(), d, n, [&](int j) { return &K[static_cast<std::size_t>(j) * d]; },
      [&](int j) { return &V[static_cast<std::size_t>(j) * d]; }, 1 / std::sqrt(128.0), out.data(),
      &probs);
  EXPECT_NEAR(std::accumulate(probs.begin(), probs.end(), 0.0), 1.0, 1e-12);
  for (double p : probs) EXPECT_GE(p, 0.0);
  for (double o : out) EXPECT_TRUE(std::isfinite(o));
}

TEST(AttentionRef, AllowedKeysFollowsTheBottomRightCausalMask) {
  AttnDims s;
  s.q_len = 4;
  s.kv_len = 4;
  EXPECT_EQ(allowed_keys(s, 0), 1);
  EXPECT_EQ(allowed_keys(s, 3), 4);
  s.q_len = 2;
  s.kv_len = 10;  // a chunk of 2 new tokens after 8 cached ones
  EXPECT_EQ(allowed_keys(s, 0), 9);
  EXPECT_EQ(allowed_keys(s, 1), 10);
  s.causal = false;
  EXPECT_EQ(allowed_keys(s, 0), 10);
}

struct PrefillCase {
  AttnDims s;
  std::vector<float> Q, K, V;
  explicit PrefillCase(AttnDims dims, std::uint64_t seed = 11) : s(dims) {
    const std::size_t d = static_cast<std::size_t>(s.head_dim);
    Q = random_vec(static_cast<std::size_t>(s.batch) * s.q_len * s.heads * d, seed, 2.0f);
    K = random_vec(static_cast<std::size_t>(s.batch) * s.kv_len * s.kv_heads * d, seed + 1);
    V = random_vec(static_cast<std::size_t>(s.batch) * s.kv_len * s.kv_heads * d, seed + 2);
  }
  std::vector<double> run() const {
    std::vector<double> O(static_cast<std::size_t>(s.batch) * s.q_len * s.heads * s.head_dim);
    prefill(Q.data(), K.data(), V.data(), O.data(), s);
    return O;
  }
  const double* row(const std::vector<double>& O, int b, int i, int h) const {
    return &O[((static_cast<std::size_t>(b) * s.q_len + i) * s.heads + h) * s.head_dim];
  }
  const float* kv(const std::vector<float>& X, int b, int j, int hk) const {
    return &X[((static_cast<std::size_t>(b) * s.kv_len + j) * s.kv_heads + hk) * s.head_dim];
  }
};

TEST(AttentionRef, CausalFirstRowIsTheFirstValue) {
  AttnDims s;
  s.batch = 2;
  s.q_len = s.kv_len = 9;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 16;
  PrefillCase c(s);
  const auto O = c.run();
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 4; ++h)
      for (int e = 0; e < 16; ++e)
        EXPECT_NEAR(c.row(O, b, 0, h)[e], c.kv(c.V, b, 0, h / 2)[e], 1e-12);
}

TEST(AttentionRef, CausalRowsIgnoreFutureKeys) {
  AttnDims s;
  s.q_len = s.kv_len = 12;
  s.heads = s.kv_heads = 1;
  s.head_dim = 8;
  PrefillCase c(s);
  const auto before = c.run();
  // Change keys and values of positions 6..11: rows 0..5 must not move, row 11 must.
  for (int j = 6; j < 12; ++j)
    for (int e = 0; e < 8; ++e) {
      c.K[static_cast<std::size_t>(j) * 8 + e] += 1.0f;
      c.V[static_cast<std::size_t>(j) * 8 + e] -= 2.0f;
    }
  const auto after = c.run();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(max_abs_diff(c.row(before, 0, i, 0), c.row(after, 0, i, 0), 8), 0.0) << i;
  EXPECT_GT(max_abs_diff(c.row(before, 0, 11, 0), c.row(after, 0, 11, 0), 8), 1e-3);
}

TEST(AttentionRef, GqaHeadsShareTheirKvHead) {
  AttnDims s;
  s.q_len = s.kv_len = 5;
  s.heads = 8;
  s.kv_heads = 2;  // group 4: heads 0-3 -> KV head 0, heads 4-7 -> KV head 1
  s.head_dim = 8;
  s.causal = false;
  PrefillCase c(s);
  // Same query for every head: heads of one group agree, the two groups differ.
  for (int i = 0; i < s.q_len; ++i)
    for (int h = 1; h < 8; ++h)
      for (int e = 0; e < 8; ++e)
        c.Q[(static_cast<std::size_t>(i) * 8 + h) * 8 + e] =
            c.Q[(static_cast<std::size_t>(i) * 8) * 8 + e];
  const auto O = c.run();
  for (int i = 0; i < s.q_len; ++i) {
    for (int h : {1, 2, 3}) EXPECT_EQ(max_abs_diff(c.row(O, 0, i, 0), c.row(O, 0, i, h), 8), 0.0);
    for (int h : {5, 6, 7}) EXPECT_EQ(max_abs_diff(c.row(O, 0, i, 4), c.row(O, 0, i, h), 8), 0.0);
    EXPECT_GT(max_abs_diff(c.row(O, 0, i, 0), c.row(O, 0, i, 4), 8), 1e-6);
  }
}

TEST(AttentionRef, OnlineSoftmaxEqualsDirectForAnyTiling) {
  const int d = 128;
  for (int n : {1, 2, 63, 64, 65, 200, 1000}) {
    const auto q = random_vec(d, 5, 2.0f);
    const auto K = random_vec(static_cast<std::size_t>(n) * d, 6);
    const auto V = random_vec(static_cast<std::size_t>(n) * d, 7);
    auto key = [&](int j) { return &K[static_cast<std::size_t>(j) * d]; };
    auto val = [&](int j) { return &V[static_cast<std::size_t>(j) * d]; };
    const double scale = 1 / std::sqrt(128.0);
    std::vector<double> ref(d);
    attention_row(q.data(), d, n, key, val, scale, ref.data());
    for (int tile : {16, 64}) {
      std::vector<float> out(d);
      attention_row_online(q.data(), d, n, key, val, static_cast<float>(scale), tile, out.data());
      for (int e = 0; e < d; ++e)
        EXPECT_NEAR(out[e], ref[e], 2e-5) << "n=" << n << " tile=" << tile;
    }
    for (int chunk : {64, 128, 256}) {
      std::vector<float> out(d);
      attention_row_splitk(q.data(), d, n, key, val, static_cast<float>(scale), chunk, 64,
                           out.data());
      for (int e = 0; e < d; ++e)
        EXPECT_NEAR(out[e], ref[e], 2e-5) << "n=" << n << " chunk=" << chunk;
    }
  }
}

TEST(AttentionRef, EmptyContextGivesZeros) {
  const int d = 8;
  std::vector<float> q(d, 1.0f), out(d, 5.0f);
  auto none = [](int) -> const float* { return nullptr; };
  attention_row_online(q.data(), d, 0, none, none, 1.0f, 64, out.data());
  for (float o : out) EXPECT_EQ(o, 0.0f);
  attention_row_splitk(q.data(), d, 0, none, none, 1.0f, 128, 64, out.data());
  for (float o : out) EXPECT_EQ(o, 0.0f);
}

// Scatter contiguous sequences into shuffled pages and decode: the result must equal the
// causal prefill's row of the last token (same query), i.e. paged == contiguous.
TEST(AttentionRef, PagedDecodeEqualsContiguousAttention) {
  const int d = 16, heads = 4, kv_heads = 2, page = 4, batch = 3;
  const std::vector<int> lens = {1, 7, 13};
  const int max_blocks = 4;  // ceil(13 / 4)
  const int num_blocks = batch * max_blocks;
  std::vector<int> table(static_cast<std::size_t>(batch) * max_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(5);
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<float> kc(static_cast<std::size_t>(num_blocks) * kv_heads * page * d, 99.0f), vc = kc;
  std::vector<float> q = random_vec(static_cast<std::size_t>(batch) * heads * d, 21, 2.0f);
  std::vector<double> out(static_cast<std::size_t>(batch) * heads * d);
  std::vector<std::vector<float>> Ks, Vs;
  for (int b = 0; b < batch; ++b) {
    Ks.push_back(random_vec(static_cast<std::size_t>(lens[b]) * kv_heads * d, 100 + b));
    Vs.push_back(random_vec(static_cast<std::size_t>(lens[b]) * kv_heads * d, 200 + b));
    for (int t = 0; t < lens[b]; ++t)
      for (int hk = 0; hk < kv_heads; ++hk)
        for (int e = 0; e < d; ++e) {
          const std::size_t dst =
              ((static_cast<std::size_t>(table[b * max_blocks + t / page]) * kv_heads + hk) * page +
               t % page) *
                  d +
              e;
          const std::size_t src = (static_cast<std::size_t>(t) * kv_heads + hk) * d + e;
          kc[dst] = Ks[b][src];
          vc[dst] = Vs[b][src];
        }
  }
  PagedKv kv{kc.data(), vc.data(), table.data(), max_blocks, page, kv_heads, d};
  decode_paged(q.data(), kv, lens.data(), batch, heads, 0.25, out.data());
  for (int b = 0; b < batch; ++b) {
    AttnDims s;
    s.q_len = 1;  // the new token attends its whole context
    s.kv_len = lens[b];
    s.heads = heads;
    s.kv_heads = kv_heads;
    s.head_dim = d;
    s.scale = 0.25;
    std::vector<double> ref(static_cast<std::size_t>(heads) * d);
    prefill(&q[static_cast<std::size_t>(b) * heads * d], Ks[b].data(), Vs[b].data(), ref.data(), s);
    EXPECT_LT(max_abs_diff(&out[static_cast<std::size_t>(b) * heads * d], ref.data(), heads * d),
              1e-12)
        << b;
  }
}

}  // namespace
}  // namespace fleetsim::kernels::ref
