#include "kernels/harness/checks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "kernels/common/rand.h"
#include "kernels/harness/device.h"
#include "kernels/ref/gemm_ref.h"
#include "kernels/ref/moe_ref.h"

namespace fleetsim::kernels {
namespace {

const Tolerance kTol{};

CheckResult finish(ErrorStats st, const std::string& what) {
  st.finish();
  CheckResult r;
  r.stats = st;
  r.ok = kTol.pass(st);
  r.detail = what + ": " + st.str() +
             (r.ok ? "" : "  FAILED (tolerance rel_l2 <= 1e-2, max/rms <= 6e-2, no NaN)");
  return r;
}

CheckResult fail(const std::string& what) {
  CheckResult r;
  r.ok = false;
  r.detail = what;
  return r;
}

// Full non-finite count of a device bf16 tensor; a failed result when any element is
// NaN/Inf (poison left by an unwritten element included).
bool all_finite(const bf16_bits* d, std::size_t n, std::string* why) {
  DeviceBuffer<unsigned char> scratch(diff_scratch_bytes());
  DeviceDiff diff;
  FK_CHECK(diff_bf16(d, nullptr, n, scratch.get(), &diff, nullptr));
  if (diff.nonfinite_a == 0) return true;
  *why = std::to_string(diff.nonfinite_a) + " of " + std::to_string(n) +
         " output elements are NaN/Inf (unwritten or overflowed)";
  return false;
}

float bf16_value(std::uint64_t seed, std::size_t index, float scale) {
  return rand_bf16_exact(seed, index, scale);
}

}  // namespace

// ---- GEMM -------------------------------------------------------------------------------

float GemmProblem::a(int i, int l) const {
  const std::size_t idx = static_cast<std::size_t>(i) * k + l;
  return fp8 ? fp8_e4m3_to_float(rand_fp8_e4m3_bits(seed_a, idx))
             : bf16_value(seed_a, idx, scale_a);
}

float GemmProblem::w(int j, int l) const {
  const std::size_t idx = static_cast<std::size_t>(j) * k + l;
  return fp8 ? fp8_e4m3_to_float(rand_fp8_e4m3_bits(seed_w, idx))
             : bf16_value(seed_w, idx, scale_w);
}

void fill_gemm_inputs(const GemmProblem& p, void* d_a, void* d_w) {
  const std::size_t na = static_cast<std::size_t>(p.m) * p.k,
                    nw = static_cast<std::size_t>(p.n) * p.k;
  if (p.fp8) {
    FK_CHECK(fill_random_fp8(static_cast<fp8_bits*>(d_a), na, p.seed_a, nullptr));
    FK_CHECK(fill_random_fp8(static_cast<fp8_bits*>(d_w), nw, p.seed_w, nullptr));
  } else {
    FK_CHECK(fill_random_bf16(static_cast<bf16_bits*>(d_a), na, p.seed_a, p.scale_a, nullptr));
    FK_CHECK(fill_random_bf16(static_cast<bf16_bits*>(d_w), nw, p.seed_w, p.scale_w, nullptr));
  }
}

CheckResult check_gemm(const GemmProblem& p, const bf16_bits* d_c, int max_rows, int max_cols) {
  std::string why;
  if (!all_finite(d_c, static_cast<std::size_t>(p.m) * p.n, &why)) return fail("gemm: " + why);
  std::map<int, std::vector<float>> arow, wrow;  // regenerated on demand
  auto A = [&](int i) -> const std::vector<float>& {
    auto it = arow.find(i);
    if (it != arow.end()) return it->second;
    std::vector<float> v(static_cast<std::size_t>(p.k));
    for (int l = 0; l < p.k; ++l) v[static_cast<std::size_t>(l)] = p.a(i, l);
    return arow[i] = std::move(v);
  };
  auto W = [&](int j) -> const std::vector<float>& {
    auto it = wrow.find(j);
    if (it != wrow.end()) return it->second;
    std::vector<float> v(static_cast<std::size_t>(p.k));
    for (int l = 0; l < p.k; ++l) v[static_cast<std::size_t>(l)] = p.w(j, l);
    return wrow[j] = std::move(v);
  };
  // (row, column) pairs: sampled rows on sampled columns, and sampled columns on sampled
  // rows. Whole rows of C are copied back, each once (a strided column copy would be slow).
  const std::uint64_t s = p.seed_a ^ (p.seed_w << 1);
  std::vector<std::pair<int, int>> pairs;
  for (int i : sample_indices(p.m, max_rows, s + 1))
    for (int j : sample_indices(p.n, max_cols, s + 2 + static_cast<std::uint64_t>(i)))
      pairs.emplace_back(i, j);
  for (int j : sample_indices(p.n, max_rows, s + 3))
    for (int i : sample_indices(p.m, max_cols, s + 4 + static_cast<std::uint64_t>(j)))
      pairs.emplace_back(i, j);
  std::map<int, std::vector<bf16_bits>> crow;
  for (const auto& [i, j] : pairs)
    if (!crow.count(i))
      crow[i] =
          copy_to_host(d_c + static_cast<std::size_t>(i) * p.n, static_cast<std::size_t>(p.n));
  ErrorStats st;
  for (const auto& [i, j] : pairs)
    st.add(bf16_to_float(crow[i][static_cast<std::size_t>(j)]),
           ref::dot(A(i).data(), W(j).data(), p.k));
  return finish(st, "gemm m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
                        " k=" + std::to_string(p.k) + (p.fp8 ? " fp8" : " bf16"));
}

std::string gemm_mismatch_report(const GemmProblem& p, const bf16_bits* d_c, double max_macs) {
  const double macs = static_cast<double>(p.m) * p.n * p.k;
  if (macs > max_macs) return "(mismatch report skipped: " + std::to_string(macs) + " MACs)";
  const std::size_t mn = static_cast<std::size_t>(p.m) * p.n;
  const std::vector<bf16_bits> c = copy_to_host(d_c, mn);
  std::vector<float> a(static_cast<std::size_t>(p.m) * p.k), w(static_cast<std::size_t>(p.n) * p.k);
  for (int i = 0; i < p.m; ++i)
    for (int l = 0; l < p.k; ++l) a[static_cast<std::size_t>(i) * p.k + l] = p.a(i, l);
  for (int j = 0; j < p.n; ++j)
    for (int l = 0; l < p.k; ++l) w[static_cast<std::size_t>(j) * p.k + l] = p.w(j, l);
  std::vector<double> ref(mn);
  double sq = 0;
  for (int i = 0; i < p.m; ++i)
    for (int j = 0; j < p.n; ++j) {
      const double v = ref::dot(&a[static_cast<std::size_t>(i) * p.k],
                                &w[static_cast<std::size_t>(j) * p.k], p.k);
      ref[static_cast<std::size_t>(i) * p.n + j] = v;
      sq += v * v;
    }
  const double rms = std::sqrt(sq / static_cast<double>(mn));
  const double tol = 0.06 * (rms > 0 ? rms : 1.0);
  std::size_t bad = 0, nonfinite = 0;
  std::string first;
  const int periods_c[] = {8, 16, 64, 256}, periods_r[] = {8, 16, 64};
  std::vector<std::set<int>> col_res(4), row_res(3);
  std::set<std::pair<int, int>> tiles;
  for (int i = 0; i < p.m; ++i)
    for (int j = 0; j < p.n; ++j) {
      const std::size_t idx = static_cast<std::size_t>(i) * p.n + j;
      const double got = bf16_to_float(c[idx]);
      const bool fin = std::isfinite(got);
      if (fin && std::fabs(got - ref[idx]) <= tol) continue;
      ++bad;
      if (!fin) ++nonfinite;
      if (bad <= 5)
        first += " (" + std::to_string(i) + "," + std::to_string(j) + ") expected " +
                 std::to_string(ref[idx]) + " got " + std::to_string(got) + ";";
      for (int q = 0; q < 4; ++q) col_res[q].insert(j % periods_c[q]);
      for (int q = 0; q < 3; ++q) row_res[q].insert(i % periods_r[q]);
      tiles.insert({i / 128, j / 256});
    }
  if (bad == 0) return "";
  auto list = [](const std::set<int>& s, int period) {
    if (static_cast<int>(s.size()) == period) return std::string("all");
    std::string out;
    for (int v : s) {
      if (!out.empty()) out += ',';
      out += std::to_string(v);
    }
    return out;
  };
  std::string r = "mismatch report: " + std::to_string(bad) + " of " + std::to_string(mn) +
                  " elements wrong (" + std::to_string(nonfinite) + " non-finite; tol " +
                  std::to_string(tol) + " = 0.06 rms); first:" + first;
  for (int q = 0; q < 4; ++q)
    r += " | cols mod " + std::to_string(periods_c[q]) + ": " + list(col_res[q], periods_c[q]);
  for (int q = 0; q < 3; ++q)
    r += " | rows mod " + std::to_string(periods_r[q]) + ": " + list(row_res[q], periods_r[q]);
  const int tiles_total = ((p.m + 127) / 128) * ((p.n + 255) / 256);
  r += " | 128x256 tiles with errors: " + std::to_string(tiles.size()) + " of " +
       std::to_string(tiles_total);
  int shown = 0;
  for (const auto& [ti, tj] : tiles) {
    if (shown++ == 6) {
      r += " ...";
      break;
    }
    r += " (" + std::to_string(ti) + "," + std::to_string(tj) + ")";
  }
  return r;
}

// ---- attention ----------------------------------------------------------------------------

void fill_prefill_inputs(const PrefillProblem& p, bf16_bits* d_q, bf16_bits* d_k, bf16_bits* d_v) {
  const auto& s = p.dims;
  const std::size_t nq = static_cast<std::size_t>(s.batch) * s.q_len * s.heads * s.head_dim;
  const std::size_t nkv = static_cast<std::size_t>(s.batch) * s.kv_len * s.kv_heads * s.head_dim;
  FK_CHECK(fill_random_bf16(d_q, nq, p.seed_q, p.scale_q, nullptr));
  FK_CHECK(fill_random_bf16(d_k, nkv, p.seed_k, 1.0f, nullptr));
  FK_CHECK(fill_random_bf16(d_v, nkv, p.seed_v, 1.0f, nullptr));
}

CheckResult check_prefill(const PrefillProblem& p, const bf16_bits* d_o, int max_bh, int max_rows) {
  const auto& s = p.dims;
  const int d = s.head_dim;
  std::string why;
  const std::size_t no = static_cast<std::size_t>(s.batch) * s.q_len * s.heads * d;
  if (!all_finite(d_o, no, &why)) return fail("attn_prefill: " + why);
  const int group = s.heads / s.kv_heads;
  // (b, h) pairs: corners plus random.
  std::set<std::pair<int, int>> bh = {{0, 0}, {s.batch - 1, s.heads - 1}, {0, s.heads - 1}};
  std::mt19937_64 rng(p.seed_q ^ 0xABCDEFull);
  while (static_cast<int>(bh.size()) < std::min(max_bh, s.batch * s.heads))
    bh.insert({static_cast<int>(rng() % static_cast<std::uint64_t>(s.batch)),
               static_cast<int>(rng() % static_cast<std::uint64_t>(s.heads))});
  ErrorStats st;
  std::vector<float> q(static_cast<std::size_t>(d));
  std::vector<double> ref_row(static_cast<std::size_t>(d));
  for (const auto& [b, h] : bh) {
    const int hk = h / group;
    const auto rows =
        sample_indices(s.q_len, max_rows, p.seed_q + static_cast<std::uint64_t>(b * 7919 + h));
    int keys = 0;
    for (int i : rows) keys = std::max(keys, ref::allowed_keys(s, i));
    // K and V of (b, hk) for the keys any sampled row needs.
    std::vector<float> K(static_cast<std::size_t>(keys) * d), V(K.size());
    for (int j = 0; j < keys; ++j)
      for (int e = 0; e < d; ++e) {
        const std::size_t idx =
            ((static_cast<std::size_t>(b) * s.kv_len + j) * s.kv_heads + hk) * d + e;
        K[static_cast<std::size_t>(j) * d + e] = bf16_value(p.seed_k, idx, 1.0f);
        V[static_cast<std::size_t>(j) * d + e] = bf16_value(p.seed_v, idx, 1.0f);
      }
    for (int i : rows) {
      const std::size_t qoff = ((static_cast<std::size_t>(b) * s.q_len + i) * s.heads + h) * d;
      for (int e = 0; e < d; ++e)
        q[static_cast<std::size_t>(e)] = bf16_value(p.seed_q, qoff + e, p.scale_q);
      ref::attention_row(
          q.data(), d, ref::allowed_keys(s, i),
          [&](int j) { return &K[static_cast<std::size_t>(j) * d]; },
          [&](int j) { return &V[static_cast<std::size_t>(j) * d]; }, s.softmax_scale(),
          ref_row.data());
      const auto out = copy_to_host(d_o + qoff, static_cast<std::size_t>(d));
      for (int e = 0; e < d; ++e)
        st.add(bf16_to_float(out[static_cast<std::size_t>(e)]),
               ref_row[static_cast<std::size_t>(e)]);
    }
  }
  return finish(st, "attn_prefill b=" + std::to_string(s.batch) + " q=" + std::to_string(s.q_len) +
                        " kv=" + std::to_string(s.kv_len) + " h=" + std::to_string(s.heads) + "/" +
                        std::to_string(s.kv_heads) + (s.causal ? " causal" : ""));
}

int DecodeProblem::max_seq_len() const {
  int m = 1;
  for (int l : seq_lens) m = std::max(m, l);
  return m;
}

DecodeProblem DecodeProblem::make(int batch, int heads, int kv_heads, const std::vector<int>& lens,
                                  int page_size, std::uint64_t seed) {
  DecodeProblem p;
  p.batch = batch;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.page_size = page_size;
  p.seq_lens = lens;
  p.max_blocks_per_seq = std::max(1, (p.max_seq_len() + page_size - 1) / page_size);
  p.num_blocks = batch * p.max_blocks_per_seq;
  // Every sequence gets its own pages, scattered over the whole cache.
  std::vector<int> pages(static_cast<std::size_t>(p.num_blocks));
  std::iota(pages.begin(), pages.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(pages.begin(), pages.end(), rng);
  p.block_table = pages;
  p.seed_q = mix64(seed + 1);
  p.seed_k = mix64(seed + 2);
  p.seed_v = mix64(seed + 3);
  return p;
}

void fill_decode_inputs(const DecodeProblem& p, bf16_bits* d_q, bf16_bits* d_kc, bf16_bits* d_vc) {
  const std::size_t nq = static_cast<std::size_t>(p.batch) * p.heads * p.head_dim;
  const std::size_t nc =
      static_cast<std::size_t>(p.num_blocks) * p.kv_heads * p.page_size * p.head_dim;
  FK_CHECK(fill_random_bf16(d_q, nq, p.seed_q, p.scale_q, nullptr));
  FK_CHECK(fill_random_bf16(d_kc, nc, p.seed_k, 1.0f, nullptr));
  FK_CHECK(fill_random_bf16(d_vc, nc, p.seed_v, 1.0f, nullptr));
}

CheckResult check_decode(const DecodeProblem& p, const bf16_bits* d_o, int max_seqs) {
  const int d = p.head_dim, group = p.heads / p.kv_heads;
  std::string why;
  if (!all_finite(d_o, static_cast<std::size_t>(p.batch) * p.heads * d, &why))
    return fail("attn_decode: " + why);
  ErrorStats st;
  std::vector<float> q(static_cast<std::size_t>(d));
  std::vector<double> ref_row(static_cast<std::size_t>(d));
  for (int b : sample_indices(p.batch, max_seqs, p.seed_q)) {
    const int len = p.seq_lens[static_cast<std::size_t>(b)];
    const auto out = copy_to_host(d_o + static_cast<std::size_t>(b) * p.heads * d,
                                  static_cast<std::size_t>(p.heads) * d);
    for (int hk = 0; hk < p.kv_heads; ++hk) {
      // Gather this sequence's K and V rows of KV head hk through the block table.
      std::vector<float> K(static_cast<std::size_t>(len) * d), V(K.size());
      for (int t = 0; t < len; ++t) {
        const int block =
            p.block_table[static_cast<std::size_t>(b) * p.max_blocks_per_seq + t / p.page_size];
        const std::size_t base =
            ((static_cast<std::size_t>(block) * p.kv_heads + hk) * p.page_size + t % p.page_size) *
            d;
        for (int e = 0; e < d; ++e) {
          K[static_cast<std::size_t>(t) * d + e] = bf16_value(p.seed_k, base + e, 1.0f);
          V[static_cast<std::size_t>(t) * d + e] = bf16_value(p.seed_v, base + e, 1.0f);
        }
      }
      for (int h = hk * group; h < (hk + 1) * group; ++h) {
        const std::size_t qoff = (static_cast<std::size_t>(b) * p.heads + h) * d;
        for (int e = 0; e < d; ++e)
          q[static_cast<std::size_t>(e)] = bf16_value(p.seed_q, qoff + e, p.scale_q);
        ref::attention_row(
            q.data(), d, len, [&](int j) { return &K[static_cast<std::size_t>(j) * d]; },
            [&](int j) { return &V[static_cast<std::size_t>(j) * d]; },
            1.0 / std::sqrt(static_cast<double>(d)), ref_row.data());
        for (int e = 0; e < d; ++e)
          st.add(bf16_to_float(out[static_cast<std::size_t>(h) * d + e]),
                 ref_row[static_cast<std::size_t>(e)]);
      }
    }
  }
  return finish(st, "attn_decode batch=" + std::to_string(p.batch) +
                        " max_len=" + std::to_string(p.max_seq_len()) +
                        " h=" + std::to_string(p.heads) + "/" + std::to_string(p.kv_heads));
}

// ---- MoE ------------------------------------------------------------------------------------

CheckResult check_router(const int* d_ids, const float* d_weights, int tokens, int experts,
                         int top_k, bool renormalize, std::uint64_t seed_logits,
                         float logit_scale) {
  std::vector<float> logits(static_cast<std::size_t>(tokens) * experts);
  for (std::size_t i = 0; i < logits.size(); ++i)
    logits[i] = rand_bf16_exact(seed_logits, i, logit_scale);
  std::vector<int> ids(static_cast<std::size_t>(tokens) * top_k);
  std::vector<float> w(ids.size());
  ref::router_topk(logits.data(), tokens, experts, top_k, renormalize, ids.data(), w.data());
  const auto gi = copy_to_host(d_ids, ids.size());
  const auto gw = copy_to_host(d_weights, w.size());
  double max_w = 0;
  for (std::size_t a = 0; a < ids.size(); ++a) {
    if (gi[a] != ids[a])
      return fail("router: token " + std::to_string(a / static_cast<std::size_t>(top_k)) +
                  " slot " + std::to_string(a % static_cast<std::size_t>(top_k)) +
                  " picked expert " + std::to_string(gi[a]) + ", reference " +
                  std::to_string(ids[a]));
    if (!std::isfinite(gw[a])) return fail("router: non-finite weight");
    max_w = std::max(max_w, static_cast<double>(std::fabs(gw[a] - w[a])));
  }
  CheckResult r;
  r.ok = max_w <= 1e-5;
  r.detail = "router tokens=" + std::to_string(tokens) + " experts=" + std::to_string(experts) +
             " top_k=" + std::to_string(top_k) + ": ids exact, max |weight error| " +
             std::to_string(max_w) + (r.ok ? "" : "  FAILED (> 1e-5)");
  return r;
}

CheckResult check_permute(const std::vector<int>& host_ids, int tokens, int top_k, int experts,
                          int hidden, std::uint64_t seed_x, const int* d_offsets,
                          const int* d_dst_row, const bf16_bits* d_x_perm) {
  const auto offsets = copy_to_host(d_offsets, static_cast<std::size_t>(experts) + 1);
  const auto dst = copy_to_host(d_dst_row, static_cast<std::size_t>(tokens) * top_k);
  std::string why;
  if (!ref::valid_permutation(host_ids.data(), tokens, top_k, experts, offsets.data(), dst.data(),
                              &why))
    return fail("permute: " + why);
  const int n = tokens * top_k;
  if (!all_finite(d_x_perm, static_cast<std::size_t>(n) * hidden, &why))
    return fail("permute: x_perm: " + why);
  for (int a : sample_indices(n, 64, seed_x)) {
    const auto row =
        copy_to_host(d_x_perm + static_cast<std::size_t>(dst[static_cast<std::size_t>(a)]) * hidden,
                     static_cast<std::size_t>(hidden));
    const std::size_t base = static_cast<std::size_t>(a / top_k) * hidden;
    for (int e = 0; e < hidden; ++e)
      if (bf16_to_float(row[static_cast<std::size_t>(e)]) !=
          rand_bf16_exact(seed_x, base + e, 1.0f))
        return fail("permute: x_perm row of assignment " + std::to_string(a) +
                    " differs from token " + std::to_string(a / top_k) + " at column " +
                    std::to_string(e));
  }
  CheckResult r;
  r.ok = true;
  r.detail = "permute tokens=" + std::to_string(tokens) + " top_k=" + std::to_string(top_k) +
             " experts=" + std::to_string(experts) +
             ": offsets and dst_row valid, sampled rows exact";
  return r;
}

CheckResult check_grouped_gemm(const std::vector<int>& offsets, int n, int k, std::uint64_t seed_x,
                               std::uint64_t seed_w, const bf16_bits* d_y, int max_rows,
                               int max_cols) {
  const int experts = static_cast<int>(offsets.size()) - 1;
  const int rows = offsets.back();
  std::string why;
  if (!all_finite(d_y, static_cast<std::size_t>(rows) * n, &why))
    return fail("grouped_gemm: " + why);
  // Rows: the first and last row of the first and last non-empty experts, plus samples.
  std::set<int> rs;
  for (int r : sample_indices(rows, max_rows, seed_x)) rs.insert(r);
  for (int e = 0; e < experts; ++e)
    if (offsets[static_cast<std::size_t>(e) + 1] > offsets[static_cast<std::size_t>(e)]) {
      rs.insert(offsets[static_cast<std::size_t>(e)]);
      rs.insert(offsets[static_cast<std::size_t>(e) + 1] - 1);
      break;
    }
  ErrorStats st;
  std::vector<float> x(static_cast<std::size_t>(k)), w(static_cast<std::size_t>(k));
  for (int r : rs) {
    const int e =
        static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), r) - offsets.begin()) - 1;
    for (int l = 0; l < k; ++l)
      x[static_cast<std::size_t>(l)] =
          rand_bf16_exact(seed_x, static_cast<std::size_t>(r) * k + l, 1.0f);
    const auto out =
        copy_to_host(d_y + static_cast<std::size_t>(r) * n, static_cast<std::size_t>(n));
    for (int j : sample_indices(n, max_cols, seed_w + static_cast<std::uint64_t>(r))) {
      const std::size_t wbase = (static_cast<std::size_t>(e) * n + j) * k;
      for (int l = 0; l < k; ++l)
        w[static_cast<std::size_t>(l)] = rand_bf16_exact(seed_w, wbase + l, 1.0f);
      st.add(bf16_to_float(out[static_cast<std::size_t>(j)]), ref::dot(x.data(), w.data(), k));
    }
  }
  return finish(st, "grouped_gemm rows=" + std::to_string(rows) +
                        " experts=" + std::to_string(experts) + " n=" + std::to_string(n) +
                        " k=" + std::to_string(k));
}

CheckResult check_unpermute(const std::vector<int>& dst_row, const std::vector<float>& weights,
                            int tokens, int top_k, int hidden, const bf16_bits* d_y_perm,
                            const bf16_bits* d_out, int max_tokens) {
  std::string why;
  if (!all_finite(d_out, static_cast<std::size_t>(tokens) * hidden, &why))
    return fail("unpermute: " + why);
  ErrorStats st;
  for (int t : sample_indices(tokens, max_tokens, static_cast<std::uint64_t>(tokens) * 31u + 7u)) {
    std::vector<double> ref_row(static_cast<std::size_t>(hidden), 0.0);
    for (int s = 0; s < top_k; ++s) {
      const std::size_t a = static_cast<std::size_t>(t) * top_k + s;
      const auto y = copy_to_host(d_y_perm + static_cast<std::size_t>(dst_row[a]) * hidden,
                                  static_cast<std::size_t>(hidden));
      for (int e = 0; e < hidden; ++e)
        ref_row[static_cast<std::size_t>(e)] +=
            static_cast<double>(weights[a]) * bf16_to_float(y[static_cast<std::size_t>(e)]);
    }
    const auto out = copy_to_host(d_out + static_cast<std::size_t>(t) * hidden,
                                  static_cast<std::size_t>(hidden));
    for (int e = 0; e < hidden; ++e)
      st.add(bf16_to_float(out[static_cast<std::size_t>(e)]), ref_row[static_cast<std::size_t>(e)]);
  }
  return finish(st, "unpermute tokens=" + std::to_string(tokens) +
                        " top_k=" + std::to_string(top_k) + " hidden=" + std::to_string(hidden));
}

CheckResult check_device_diff(const bf16_bits* a, const bf16_bits* b, std::size_t n,
                              const std::string& what) {
  DeviceBuffer<unsigned char> scratch(diff_scratch_bytes());
  DeviceDiff diff;
  FK_CHECK(diff_bf16(a, b, n, scratch.get(), &diff, nullptr));
  CheckResult r;
  const double ref_rms = n ? std::sqrt(diff.sq_ref / static_cast<double>(n)) : 0;
  const double max_over_rms = ref_rms > 0 ? diff.max_abs / ref_rms : diff.max_abs;
  // Both tensors are rounded to bf16, so they may differ by one bf16 ulp (2^-7 relative) at
  // the largest values (~6 rms over 1e9 Gaussian-like elements): up to ~0.05 rms. Hence
  // 0.1 here instead of the 0.06 used against the exact CPU reference.
  r.ok = diff.nonfinite_a == 0 && diff.nonfinite_b == 0 && diff.rel_l2() <= kTol.rel_l2 &&
         max_over_rms <= 0.1;
  r.detail = what + " (full tensor, " + std::to_string(n) +
             " elements): rel_l2=" + std::to_string(diff.rel_l2()) +
             " max/rms=" + std::to_string(max_over_rms) +
             " nonfinite=" + std::to_string(diff.nonfinite_a) + "/" +
             std::to_string(diff.nonfinite_b) + (r.ok ? "" : "  FAILED");
  return r;
}

}  // namespace fleetsim::kernels
