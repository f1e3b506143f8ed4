#include "kernels/ref/moe_ref.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

#include "kernels/ref/gemm_ref.h"

namespace fleetsim::kernels::ref {

void router_topk(const float* logits, int tokens, int experts, int top_k, bool renormalize,
                 int* ids, float* weights, std::vector<double>* probs) {
  if (probs) probs->assign(static_cast<std::size_t>(tokens) * experts, 0.0);
  std::vector<double> p(static_cast<std::size_t>(experts));
  std::vector<int> order(static_cast<std::size_t>(experts));
  for (int t = 0; t < tokens; ++t) {
    const float* l = logits + static_cast<std::size_t>(t) * experts;
    double mx = l[0];
    for (int e = 1; e < experts; ++e) mx = std::max(mx, static_cast<double>(l[e]));
    double sum = 0;
    for (int e = 0; e < experts; ++e) sum += p[static_cast<std::size_t>(e)] = std::exp(l[e] - mx);
    for (auto& x : p) x /= sum;
    if (probs)
      std::copy(p.begin(), p.end(), probs->begin() + static_cast<std::ptrdiff_t>(t) * experts);
    // Select by logit (softmax is monotone): larger first, equal logits lower index first.
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
    double sel = 0;
    for (int s = 0; s < top_k; ++s)
      sel += p[static_cast<std::size_t>(order[static_cast<std::size_t>(s)])];
    for (int s = 0; s < top_k; ++s) {
      const int e = order[static_cast<std::size_t>(s)];
      ids[static_cast<std::size_t>(t) * top_k + s] = e;
      const double w = p[static_cast<std::size_t>(e)] / (renormalize ? sel : 1.0);
      weights[static_cast<std::size_t>(t) * top_k + s] = static_cast<float>(w);
    }
  }
}

Permutation permute_plan(const int* ids, int tokens, int top_k, int experts) {
  Permutation p;
  const int n = tokens * top_k;
  p.counts.assign(static_cast<std::size_t>(experts), 0);
  for (int a = 0; a < n; ++a) ++p.counts[static_cast<std::size_t>(ids[a])];
  p.offsets.assign(static_cast<std::size_t>(experts) + 1, 0);
  for (int e = 0; e < experts; ++e)
    p.offsets[static_cast<std::size_t>(e) + 1] =
        p.offsets[static_cast<std::size_t>(e)] + p.counts[static_cast<std::size_t>(e)];
  std::vector<int> cursor(p.offsets.begin(), p.offsets.end() - 1);
  p.dst_row.resize(static_cast<std::size_t>(n));
  for (int a = 0; a < n; ++a)
    p.dst_row[static_cast<std::size_t>(a)] = cursor[static_cast<std::size_t>(ids[a])]++;
  return p;
}

bool valid_permutation(const int* ids, int tokens, int top_k, int experts, const int* offsets,
                       const int* dst_row, std::string* why) {
  auto fail = [&](const std::string& s) {
    if (why) *why = s;
    return false;
  };
  const int n = tokens * top_k;
  const Permutation ref = permute_plan(ids, tokens, top_k, experts);
  for (int e = 0; e <= experts; ++e)
    if (offsets[e] != ref.offsets[static_cast<std::size_t>(e)])
      return fail("offsets[" + std::to_string(e) + "] = " + std::to_string(offsets[e]) +
                  ", expected " + std::to_string(ref.offsets[static_cast<std::size_t>(e)]));
  std::vector<char> used(static_cast<std::size_t>(n), 0);
  for (int a = 0; a < n; ++a) {
    const int r = dst_row[a], e = ids[a];
    if (r < 0 || r >= n)
      return fail("dst_row[" + std::to_string(a) + "] = " + std::to_string(r) + " out of range");
    if (r < offsets[e] || r >= offsets[e + 1])
      return fail("assignment " + std::to_string(a) + " of expert " + std::to_string(e) +
                  " placed at row " + std::to_string(r) + ", outside the expert's rows");
    if (used[static_cast<std::size_t>(r)]++)
      return fail("row " + std::to_string(r) + " used twice");
  }
  return true;
}

void permute_rows(const float* x, int tokens, int top_k, int hidden, const int* dst_row,
                  float* x_perm) {
  for (int a = 0; a < tokens * top_k; ++a)
    std::copy(x + static_cast<std::size_t>(a / top_k) * hidden,
              x + static_cast<std::size_t>(a / top_k + 1) * hidden,
              x_perm + static_cast<std::size_t>(dst_row[a]) * hidden);
}

void grouped_gemm(const float* x_perm, const float* w, const int* offsets, int experts, int n,
                  int k, double* y_perm) {
  for (int e = 0; e < experts; ++e) {
    const int rows = offsets[e + 1] - offsets[e];
    if (rows <= 0) continue;
    gemm(x_perm + static_cast<std::size_t>(offsets[e]) * k, w + static_cast<std::size_t>(e) * n * k,
         y_perm + static_cast<std::size_t>(offsets[e]) * n, rows, n, k);
  }
}

void unpermute(const double* y_perm, const int* dst_row, const float* weights, int tokens,
               int top_k, int n, double* out) {
  for (int t = 0; t < tokens; ++t) {
    double* o = out + static_cast<std::size_t>(t) * n;
    std::fill(o, o + n, 0.0);
    for (int s = 0; s < top_k; ++s) {
      const std::size_t a = static_cast<std::size_t>(t) * top_k + s;
      const double* y = y_perm + static_cast<std::size_t>(dst_row[a]) * n;
      for (int j = 0; j < n; ++j) o[j] += static_cast<double>(weights[a]) * y[j];
    }
  }
}

void moe_direct(const float* x, const int* ids, const float* weights, const float* w, int tokens,
                int top_k, int n, int k, double* out) {
  for (int t = 0; t < tokens; ++t) {
    double* o = out + static_cast<std::size_t>(t) * n;
    std::fill(o, o + n, 0.0);
    for (int s = 0; s < top_k; ++s) {
      const std::size_t a = static_cast<std::size_t>(t) * top_k + s;
      const float* we = w + static_cast<std::size_t>(ids[a]) * n * k;
      for (int j = 0; j < n; ++j)
        o[j] += static_cast<double>(weights[a]) *
                dot(x + static_cast<std::size_t>(t) * k, we + static_cast<std::size_t>(j) * k, k);
    }
  }
}

}  // namespace fleetsim::kernels::ref
