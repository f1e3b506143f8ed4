#include "kernels/ref/attention_ref.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace fleetsim::kernels::ref {

double AttnDims::softmax_scale() const {
  return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

int allowed_keys(const AttnDims& s, int i) {
  if (!s.causal) return s.kv_len;
  return std::clamp(i + (s.kv_len - s.q_len) + 1, 0, s.kv_len);
}

void attention_row(const float* q, int d, int n_keys, const RowFn& key, const RowFn& value,
                   double scale, double* out, std::vector<double>* probs) {
  std::fill(out, out + d, 0.0);
  if (probs) probs->assign(static_cast<std::size_t>(std::max(n_keys, 0)), 0.0);
  if (n_keys <= 0) return;
  std::vector<double> s(static_cast<std::size_t>(n_keys));
  double mx = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < n_keys; ++j) {
    const float* k = key(j);
    double acc = 0;
    for (int e = 0; e < d; ++e) acc += static_cast<double>(q[e]) * k[e];
    s[static_cast<std::size_t>(j)] = acc * scale;
    mx = std::max(mx, s[static_cast<std::size_t>(j)]);
  }
  double sum = 0;
  for (auto& x : s) {
    x = std::exp(x - mx);
    sum += x;
  }
  for (int j = 0; j < n_keys; ++j) {
    const double p = s[static_cast<std::size_t>(j)] / sum;
    if (probs) (*probs)[static_cast<std::size_t>(j)] = p;
    const float* v = value(j);
    for (int e = 0; e < d; ++e) out[e] += p * v[e];
  }
}

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Running state of one row over a range of keys: max m (log2 domain), sum l, accumulator o.
struct Online {
  float m = kNegInf;
  float l = 0;
  std::vector<float> o;
};

// Keys [begin, end) in tiles of `tile`, exactly the per-tile update of the kernels.
Online online_range(const float* q, int d, int begin, int end, const RowFn& key, const RowFn& value,
                    float scale, int tile) {
  Online st;
  st.o.assign(static_cast<std::size_t>(d), 0.0f);
  const float sl2 = scale * kLog2e;
  std::vector<float> s(static_cast<std::size_t>(tile));
  for (int t0 = begin; t0 < end; t0 += tile) {
    float tmax = kNegInf;
    for (int jj = 0; jj < tile; ++jj) {
      const int j = t0 + jj;
      float v = kNegInf;  // keys past the end are masked, as zero-filled tiles are
      if (j < end) {
        const float* k = key(j);
        float acc = 0;
        for (int e = 0; e < d; ++e) acc += q[e] * k[e];
        v = acc * sl2;
      }
      s[static_cast<std::size_t>(jj)] = v;
      tmax = std::max(tmax, v);
    }
    const float m_new = std::max(st.m, tmax);
    const float base = m_new == kNegInf ? 0.0f : m_new;  // all masked so far: no NaN
    const float corr = std::exp2(st.m - base);
    float rs = 0;
    for (auto& x : s) {
      x = std::exp2(x - base);
      rs += x;
    }
    st.l = st.l * corr + rs;
    st.m = m_new;
    for (auto& x : st.o) x *= corr;
    for (int jj = 0; jj < tile && t0 + jj < end; ++jj) {
      const float* v = value(t0 + jj);
      for (int e = 0; e < d; ++e)
        st.o[static_cast<std::size_t>(e)] += s[static_cast<std::size_t>(jj)] * v[e];
    }
  }
  return st;
}

}  // namespace

void attention_row_online(const float* q, int d, int n_keys, const RowFn& key, const RowFn& value,
                          float scale, int tile, float* out) {
  const Online st = online_range(q, d, 0, n_keys, key, value, scale, tile);
  const float inv = st.l > 0 ? 1.0f / st.l : 0.0f;
  for (int e = 0; e < d; ++e) out[e] = st.o[static_cast<std::size_t>(e)] * inv;
}

void attention_row_splitk(const float* q, int d, int n_keys, const RowFn& key, const RowFn& value,
                          float scale, int chunk, int tile, float* out) {
  std::vector<Online> parts;
  for (int c0 = 0; c0 < std::max(n_keys, 1); c0 += chunk)
    parts.push_back(online_range(q, d, c0, std::min(n_keys, c0 + chunk), key, value, scale, tile));
  float M = kNegInf;
  for (const auto& p : parts)
    if (p.l > 0) M = std::max(M, p.m);
  float L = 0;
  std::vector<float> acc(static_cast<std::size_t>(d), 0.0f);
  for (const auto& p : parts) {
    if (!(p.l > 0)) continue;
    const float w = std::exp2(p.m - M);
    L += w * p.l;
    for (int e = 0; e < d; ++e)
      acc[static_cast<std::size_t>(e)] += w * p.o[static_cast<std::size_t>(e)];
  }
  for (int e = 0; e < d; ++e) out[e] = L > 0 ? acc[static_cast<std::size_t>(e)] / L : 0.0f;
}

void prefill_row(const float* Q, const float* K, const float* V, const AttnDims& s, int b, int i,
                 int h, double* out) {
  const int d = s.head_dim;
  const int hk = h / (s.heads / s.kv_heads);
  const float* q = Q + ((static_cast<std::size_t>(b) * s.q_len + i) * s.heads + h) * d;
  auto kv_row = [&](const float* base, int j) {
    return base + ((static_cast<std::size_t>(b) * s.kv_len + j) * s.kv_heads + hk) * d;
  };
  attention_row(
      q, d, allowed_keys(s, i), [&](int j) { return kv_row(K, j); },
      [&](int j) { return kv_row(V, j); }, s.softmax_scale(), out);
}

void prefill(const float* Q, const float* K, const float* V, double* O, const AttnDims& s) {
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.q_len; ++i)
      for (int h = 0; h < s.heads; ++h)
        prefill_row(Q, K, V, s, b, i, h,
                    O + ((static_cast<std::size_t>(b) * s.q_len + i) * s.heads + h) * s.head_dim);
}

const float* PagedKv::k_row(int b, int hk, int t) const {
  const int block = block_table[static_cast<std::size_t>(b) * max_blocks_per_seq + t / page_size];
  return k_cache +
         ((static_cast<std::size_t>(block) * kv_heads + hk) * page_size + t % page_size) * head_dim;
}

const float* PagedKv::v_row(int b, int hk, int t) const {
  const int block = block_table[static_cast<std::size_t>(b) * max_blocks_per_seq + t / page_size];
  return v_cache +
         ((static_cast<std::size_t>(block) * kv_heads + hk) * page_size + t % page_size) * head_dim;
}

void decode_paged(const float* q, const PagedKv& kv, const int* seq_lens, int batch, int heads,
                  double scale, double* out) {
  const int d = kv.head_dim;
  const int group = heads / kv.kv_heads;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      const int hk = h / group;
      attention_row(
          q + (static_cast<std::size_t>(b) * heads + h) * d, d, seq_lens[b],
          [&](int t) { return kv.k_row(b, hk, t); }, [&](int t) { return kv.v_row(b, hk, t); },
          scale, out + (static_cast<std::size_t>(b) * heads + h) * d);
    }
}

}  // namespace fleetsim::kernels::ref
