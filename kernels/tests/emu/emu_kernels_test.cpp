// The kernels' own source (kernels/cuda/*.cu), run on the CPU by the host emulator
// (kernels/emu/emu.h), against the CPU references: indexing, tiling, masking, the
// online-softmax and split-K arithmetic, the cp.async pipelines (copies land only at their
// wait), the mma.sync fragment layouts of the PTX ISA and the launch configurations are
// all exercised without a GPU. Outputs are poisoned (0xFF = NaN) before each launch.
// What this cannot show: that the GPU executes the inline PTX as documented, real races in
// asynchronous copies, alignment faults of the hardware, and speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/common/numeric.h"
#include "kernels/common/rand.h"
#include "kernels/cuda/kernels.h"
#include "kernels/emu/emu.h"
// The device helpers (ldmatrix) in their emulated form, for the layout probe below.
#define FK_EMULATE 1
#include "kernels/cuda/device_util.cuh"
#include "kernels/ref/attention_ref.h"
#include "kernels/ref/gemm_ref.h"
#include "kernels/ref/moe_ref.h"

namespace fleetsim::kernels {
namespace {

// 128-byte aligned host memory standing in for device memory, poisoned (0xFF) on
// creation, followed by a guard band that must stay untouched (out-of-bounds writes).
template <class T>
class Buf {
 public:
  static constexpr std::size_t kGuard = 64 * 1024;
  explicit Buf(std::size_t n) : n_(n) {
    bytes_ = (n * sizeof(T) + 127) / 128 * 128;
    p_.reset(static_cast<T*>(std::aligned_alloc(128, bytes_ + kGuard)));
    std::memset(static_cast<void*>(p_.get()), 0xFF, bytes_);
    std::memset(reinterpret_cast<unsigned char*>(p_.get()) + bytes_, 0xA5, kGuard);
  }
  T* get() const { return p_.get(); }
  T& operator[](std::size_t i) const { return p_.get()[i]; }
  std::size_t size() const { return n_; }
  void poison() const { std::memset(static_cast<void*>(p_.get()), 0xFF, n_ * sizeof(T)); }
  bool guard_intact() const {
    const unsigned char* g = reinterpret_cast<const unsigned char*>(p_.get()) + bytes_;
    return std::all_of(g, g + kGuard, [](unsigned char c) { return c == 0xA5; });
  }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> p_;
  std::size_t n_, bytes_ = 0;
};

// bf16 buffer of rand_bf16_exact(seed, i, scale), and its float values.
Buf<bf16_bits> random_bf16(std::size_t n, std::uint64_t seed, float scale,
                           std::vector<float>* values) {
  Buf<bf16_bits> b(n);
  if (values) values->resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = rand_bf16_exact(seed, i, scale);
    b[i] = float_to_bf16(v);
    if (values) (*values)[i] = v;
  }
  return b;
}

ErrorStats compare_bf16(const Buf<bf16_bits>& out, const std::vector<double>& ref) {
  EXPECT_TRUE(out.guard_intact()) << "a kernel wrote past the end of its output";
  ErrorStats st;
  for (std::size_t i = 0; i < ref.size(); ++i) st.add(bf16_to_float(out[i]), ref[i]);
  st.finish();
  return st;
}

const Tolerance kTol{};

// Every kernel test runs twice: copies landing as late as allowed (at their wait) with the
// blocks in launch order, and as early as possible (at issue) with the blocks reversed; both
// with one slow warp per block.
class EmulatedKernels : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    emu::config().eager_copies = GetParam();
    emu::config().reverse_blocks = GetParam();
    emu::config().slow_warp_us = 20;
  }
  void TearDown() override { emu::config() = emu::Config{}; }
};
INSTANTIATE_TEST_SUITE_P(CopyTiming, EmulatedKernels, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "eager" : "deferred";
                         });

// ---- the emulator's mma.sync against the PTX ISA's fragment tables ---------------------------

void mma_probe_kernel(const float* A, const float* B, float* D) {
  // One warp: fragments loaded exactly as the PTX ISA's formulas say.
  const int lane = static_cast<int>(threadIdx.x), g = lane >> 2, t = lane & 3;
  auto pack = [](float lo, float hi) {
    return static_cast<std::uint32_t>(float_to_bf16(lo)) |
           (static_cast<std::uint32_t>(float_to_bf16(hi)) << 16);
  };
  std::uint32_t a[4];
  for (int r = 0; r < 4; ++r) {  // ai for i = 2r, 2r+1
    const int i = 2 * r;
    const int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
    const int col = t * 2 + (i >= 4 ? 8 : 0);
    a[r] = pack(A[row * 16 + col], A[row * 16 + col + 1]);
  }
  const std::uint32_t b0 = pack(B[(t * 2) * 8 + g], B[(t * 2 + 1) * 8 + g]);
  const std::uint32_t b1 = pack(B[(t * 2 + 8) * 8 + g], B[(t * 2 + 9) * 8 + g]);
  float d[4] = {0, 0, 0, 0};
  emu::mma_16816(d, a, b0, b1);
  for (int i = 0; i < 4; ++i) D[(g + (i >= 2 ? 8 : 0)) * 8 + t * 2 + (i & 1)] = d[i];
}

TEST(Emulator, MmaFollowsThePtxFragmentLayout) {
  std::vector<float> A(256), B(128), D(128, std::nanf(""));
  for (int i = 0; i < 256; ++i) A[i] = rand_bf16_exact(1, i, 1.0f);
  for (int i = 0; i < 128; ++i) B[i] = rand_bf16_exact(2, i, 1.0f);
  emu::make_launch(mma_probe_kernel, dim3(1), dim3(32), 0)(A.data(), B.data(), D.data());
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      double ref = 0;
      for (int k = 0; k < 16; ++k) ref += static_cast<double>(A[r * 16 + k]) * B[k * 8 + c];
      EXPECT_NEAR(D[r * 8 + c], ref, 1e-4) << r << "," << c;
    }
}

// ---- ldmatrix (the decode kernel's fragment loads) against the PTX ISA's description ------

void ldmatrix_probe_kernel(const bf16_bits* X, int ld, std::uint32_t* plain, std::uint32_t* trans) {
  // One warp; X holds four 8×8 matrices side by side: matrix j = rows 0-7, columns 8j...
  const int lane = static_cast<int>(threadIdx.x);
  const auto* row = reinterpret_cast<const __nv_bfloat16*>(X) + (lane % 8) * ld + (lane / 8) * 8;
  std::uint32_t r[4];
  dev::ldmatrix_x4(r, row);
  for (int j = 0; j < 4; ++j) plain[j * 32 + lane] = r[j];
  dev::ldmatrix_x4_trans(r, row);
  for (int j = 0; j < 4; ++j) trans[j * 32 + lane] = r[j];
}

TEST(Emulator, LdmatrixFollowsThePtxLayout) {
  const int ld = 40;
  Buf<bf16_bits> X(8 * ld);
  for (int i = 0; i < 8 * ld; ++i) X[i] = static_cast<bf16_bits>(i + 1);
  Buf<std::uint32_t> plain(128), trans(128);
  emu::make_launch(ldmatrix_probe_kernel, dim3(1), dim3(32), 0)(X.get(), ld, plain.get(),
                                                                trans.get());
  auto at = [&](int j, int r, int c) { return static_cast<std::uint32_t>(X[r * ld + 8 * j + c]); };
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      // PTX ISA, ldmatrix: thread l holds row l/4, elements 2(l%4), 2(l%4)+1 of matrix j;
      // with .trans the matrix is transposed on the way.
      const int r = l / 4, c = 2 * (l % 4);
      EXPECT_EQ(plain[j * 32 + l], at(j, r, c) | (at(j, r, c + 1) << 16)) << j << "," << l;
      EXPECT_EQ(trans[j * 32 + l], at(j, c, r) | (at(j, c + 1, r) << 16)) << j << "," << l;
    }
}

void oversized_smem_kernel(int* out) { out[0] = 1; }

TEST(Emulator, RejectsBadLaunchConfigurations) {
  Buf<int> out(1);
  emu::last_error();
  emu::make_launch(oversized_smem_kernel, dim3(1), dim3(32), 64 * 1024)(out.get());  // no attribute
  EXPECT_EQ(emu::last_error(), cudaErrorInvalidConfiguration);
  emu::make_launch(oversized_smem_kernel, dim3(1), dim3(2048), 0)(out.get());
  EXPECT_EQ(emu::last_error(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(emu::set_smem_attr(oversized_smem_kernel, 64 * 1024), cudaSuccess);
  emu::make_launch(oversized_smem_kernel, dim3(1), dim3(32), 64 * 1024)(out.get());
  EXPECT_EQ(emu::last_error(), cudaSuccess);
  EXPECT_EQ(out[0], 1);
}

// ---- GEMM -------------------------------------------------------------------------------------

struct Shape3 {
  int m, n, k;
};

TEST_P(EmulatedKernels, TiledGemm) {
  for (const Shape3 s :
       {Shape3{1, 8, 8}, Shape3{7, 24, 40}, Shape3{130, 136, 72}, Shape3{257, 200, 136}}) {
    std::vector<float> a, w;
    auto A = random_bf16(static_cast<std::size_t>(s.m) * s.k, 11, 1.0f, &a);
    auto W = random_bf16(static_cast<std::size_t>(s.n) * s.k, 12, 1.0f, &w);
    Buf<bf16_bits> C(static_cast<std::size_t>(s.m) * s.n);
    ASSERT_EQ(gemm_tiled_bf16(A.get(), W.get(), C.get(), s.m, s.n, s.k, nullptr), cudaSuccess);
    std::vector<double> ref(C.size());
    ref::gemm(a.data(), w.data(), ref.data(), s.m, s.n, s.k);
    const ErrorStats st = compare_bf16(C, ref);
    EXPECT_TRUE(kTol.pass(st)) << "m=" << s.m << " n=" << s.n << " k=" << s.k << ": " << st.str();
  }
}

TEST_P(EmulatedKernels, LaunchersRejectBadArguments) {
  Buf<bf16_bits> x(64);
  EXPECT_EQ(gemm_tiled_bf16(x.get(), x.get(), x.get(), 2, 2, 12, nullptr),
            cudaErrorInvalidValue);  // k % 8
  EXPECT_EQ(gemm_tiled_bf16(x.get() + 1, x.get(), x.get(), 2, 2, 8, nullptr),
            cudaErrorInvalidValue);  // alignment
  PrefillArgs p;
  p.q = p.k = p.v = x.get();
  p.o = x.get();
  p.q_len = 5;
  p.kv_len = 4;  // q_len > kv_len
  EXPECT_EQ(attn_prefill_bf16(p, nullptr), cudaErrorInvalidValue);
  p.q_len = 4;
  p.head_dim = 64;
  EXPECT_EQ(attn_prefill_bf16(p, nullptr), cudaErrorInvalidValue);
  DecodeArgs d;
  d.heads = 6;
  d.kv_heads = 2;  // group 3: no kernel for it
  d.max_blocks_per_seq = 1;
  d.max_seq_len = 16;
  d.q = d.k_cache = d.v_cache = x.get();
  d.o = x.get();
  int table = 0, len = 1;
  d.block_table = &table;
  d.seq_lens = &len;
  Buf<float> ws(1024);
  d.workspace = ws.get();
  EXPECT_EQ(attn_decode_bf16(d, nullptr), cudaErrorInvalidValue);
}

// ---- attention ---------------------------------------------------------------------------------

void run_prefill(int batch, int q_len, int kv_len, int heads, int kv_heads, bool causal) {
  ref::AttnDims s;
  s.batch = batch;
  s.q_len = q_len;
  s.kv_len = kv_len;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = 128;
  s.causal = causal;
  std::vector<float> q, k, v;
  auto Q = random_bf16(static_cast<std::size_t>(batch) * q_len * heads * 128, 21, 2.0f, &q);
  auto K = random_bf16(static_cast<std::size_t>(batch) * kv_len * kv_heads * 128, 22, 1.0f, &k);
  auto V = random_bf16(static_cast<std::size_t>(batch) * kv_len * kv_heads * 128, 23, 1.0f, &v);
  Buf<bf16_bits> O(Q.size());
  PrefillArgs a;
  a.q = Q.get();
  a.k = K.get();
  a.v = V.get();
  a.o = O.get();
  a.batch = batch;
  a.q_len = q_len;
  a.kv_len = kv_len;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.causal = causal;
  ASSERT_EQ(attn_prefill_bf16(a, nullptr), cudaSuccess);
  std::vector<double> ref(O.size());
  ref::prefill(q.data(), k.data(), v.data(), ref.data(), s);
  const ErrorStats st = compare_bf16(O, ref);
  EXPECT_TRUE(kTol.pass(st)) << "b=" << batch << " q=" << q_len << " kv=" << kv_len
                             << " h=" << heads << "/" << kv_heads << (causal ? " causal" : "")
                             << ": " << st.str();
}

TEST_P(EmulatedKernels, PrefillAttention) {
  run_prefill(1, 70, 70, 2, 1, true);     // causal, MQA, q tail inside the second tile
  run_prefill(1, 33, 130, 2, 1, true);    // a chunk after a cached prefix
  run_prefill(1, 65, 200, 1, 1, false);   // not causal, key tail
  run_prefill(2, 1, 1, 2, 2, true);       // one token
  run_prefill(1, 30, 94, 2, 1, true);     // last row in the lower half of a fragment (row g+8)
  run_prefill(1, 150, 333, 2, 1, true);   // 6 key tiles through the 3-stage ring
  run_prefill(1, 129, 129, 1, 1, false);  // not causal, full tiles then a one-key tail
}

TEST_P(EmulatedKernels, PrefillAttentionOtherBlockShapes) {
  // 8 warps; 2 stages for three blocks per SM; 128 rows on 4 warps (32 rows per warp).
  for (const char* shape : {"128", "64x3", "128x4"}) {
    SCOPED_TRACE(shape);
    setenv("FLEETSIM_PREFILL_ROWS", shape, 1);
    run_prefill(1, 150, 333, 2, 1, true);  // a partial last block, 6 key tiles
    run_prefill(1, 30, 94, 2, 1, true);    // warps entirely past q_len
    run_prefill(1, 65, 200, 1, 1, false);  // not causal, key tail
    run_prefill(2, 1, 1, 2, 2, true);      // one token
  }
  unsetenv("FLEETSIM_PREFILL_ROWS");
}

TEST_P(EmulatedKernels, PrefillAttention128x4) {
  // 32 rows per warp: warps that skip the block's last key tiles (their rows' future), the
  // second m16 tile of a warp partly past q_len, chunks after a prefix, GQA groups 1, 4, 8.
  setenv("FLEETSIM_PREFILL_ROWS", "128x4", 1);
  run_prefill(1, 200, 200, 8, 1, true);  // group 8, two blocks, q_len % 128 = 72
  run_prefill(1, 140, 301, 4, 1, true);  // group 4, chunk after a 161-token prefix
  run_prefill(2, 100, 100, 1, 1, true);  // group 1, row 99 in tile 1 of warp 3 (lower half)
  run_prefill(1, 129, 129, 2, 2, true);  // one row in the second block
  run_prefill(1, 47, 250, 4, 1, false);  // not causal, key tail, warps past q_len
  unsetenv("FLEETSIM_PREFILL_ROWS");
}

void run_decode(int heads, int kv_heads, const std::vector<int>& lens, int page, int splits,
                int sm_count) {
  const int batch = static_cast<int>(lens.size());
  const int max_len = std::max(1, *std::max_element(lens.begin(), lens.end()));
  const int max_blocks = (max_len + page - 1) / page;
  const int num_blocks = batch * max_blocks;
  std::vector<int> table(static_cast<std::size_t>(num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(7));
  std::vector<float> q, kc, vc;
  auto Q = random_bf16(static_cast<std::size_t>(batch) * heads * 128, 31, 2.0f, &q);
  auto KC =
      random_bf16(static_cast<std::size_t>(num_blocks) * kv_heads * page * 128, 32, 1.0f, &kc);
  auto VC = random_bf16(KC.size(), 33, 1.0f, &vc);
  Buf<bf16_bits> O(Q.size());
  DecodeArgs a;
  a.q = Q.get();
  a.k_cache = KC.get();
  a.v_cache = VC.get();
  a.block_table = table.data();
  a.seq_lens = lens.data();
  a.o = O.get();
  a.batch = batch;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.page_size = page;
  a.max_blocks_per_seq = max_blocks;
  a.max_seq_len = max_len;
  a.num_splits = splits;
  a.sm_count = sm_count;
  Buf<float> ws(attn_decode_workspace_bytes(a) / sizeof(float));
  a.workspace = ws.get();
  ASSERT_EQ(attn_decode_bf16(a, nullptr), cudaSuccess);
  ref::PagedKv kv{kc.data(), vc.data(), table.data(), max_blocks, page, kv_heads, 128};
  std::vector<double> ref(O.size());
  ref::decode_paged(q.data(), kv, lens.data(), batch, heads, 1.0 / std::sqrt(128.0), ref.data());
  const ErrorStats st = compare_bf16(O, ref);
  EXPECT_TRUE(kTol.pass(st)) << "heads " << heads << "/" << kv_heads << " splits "
                             << attn_decode_splits(a) << ": " << st.str();
}

TEST_P(EmulatedKernels, PagedDecodeAttention) {
  run_decode(8, 2, {1, 63, 65, 300}, 16, 0, 4);   // group 4, automatic split
  run_decode(8, 2, {1, 63, 65, 300}, 16, 3, 4);   // forced 3 splits: some chunks empty
  run_decode(16, 1, {130}, 16, 1, 4);             // group 16, one split
  run_decode(2, 2, {70, 5}, 32, 2, 4);            // group 1, page 32
  run_decode(16, 2, {17, 1, 250, 33}, 16, 0, 4);  // group 8: idle warps, sub-tile tails
  run_decode(4, 2, {129, 47}, 5, 2, 4);           // group 2, pages that split sub-tiles
  run_decode(16, 1, {700}, 16, 1, 4);             // group 16, 11 sub-tiles per warp's ring
  run_decode(3, 3, {20, 64}, 1, 0, 4);            // group 1, one-token pages
}

// ---- MoE -------------------------------------------------------------------------------------------

TEST_P(EmulatedKernels, Router) {
  for (auto [experts, top_k] : {std::pair{8, 2}, std::pair{256, 8}, std::pair{60, 6}})
    for (bool renorm : {false, true}) {
      const int tokens = 9;
      Buf<float> logits(static_cast<std::size_t>(tokens) * experts);
      for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = rand_bf16_exact(41, i, 4.0f);
      Buf<int> ids(static_cast<std::size_t>(tokens) * top_k);
      Buf<float> w(ids.size());
      ASSERT_EQ(moe_router_topk(logits.get(), tokens, experts, top_k, renorm, ids.get(), w.get(),
                                nullptr),
                cudaSuccess);
      std::vector<int> rid(ids.size());
      std::vector<float> rw(ids.size());
      ref::router_topk(logits.get(), tokens, experts, top_k, renorm, rid.data(), rw.data());
      for (std::size_t i = 0; i < rid.size(); ++i) {
        ASSERT_EQ(ids[i], rid[i]) << "experts " << experts << " entry " << i;
        EXPECT_NEAR(w[i], rw[i], 1e-6);
      }
    }
}

TEST_P(EmulatedKernels, MoePipelineEqualsTheDirectSum) {
  const int tokens = 45, experts = 6, top_k = 2, hidden = 64, n = 72;
  Buf<float> logits(static_cast<std::size_t>(tokens) * experts);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = rand_bf16_exact(51, i, 4.0f);
  Buf<int> ids(static_cast<std::size_t>(tokens) * top_k), dst(ids.size());
  Buf<float> w(ids.size());
  Buf<int> counts(experts), offsets(experts + 1), cursor(experts), tile_off(experts + 1);
  std::vector<float> x, wt;
  auto X = random_bf16(static_cast<std::size_t>(tokens) * hidden, 52, 1.0f, &x);
  auto WT = random_bf16(static_cast<std::size_t>(experts) * n * hidden, 53, 1.0f, &wt);
  Buf<bf16_bits> XP(static_cast<std::size_t>(tokens) * top_k * hidden),
      YP(static_cast<std::size_t>(tokens) * top_k * n), OUT(static_cast<std::size_t>(tokens) * n);
  ASSERT_EQ(
      moe_router_topk(logits.get(), tokens, experts, top_k, true, ids.get(), w.get(), nullptr),
      cudaSuccess);
  ASSERT_EQ(moe_permute(X.get(), ids.get(), tokens, top_k, hidden, experts,
                        {counts.get(), offsets.get(), cursor.get()}, dst.get(), XP.get(), nullptr),
            cudaSuccess);
  std::string why;
  ASSERT_TRUE(
      ref::valid_permutation(ids.get(), tokens, top_k, experts, offsets.get(), dst.get(), &why))
      << why;
  for (int a = 0; a < tokens * top_k; ++a)
    for (int e = 0; e < hidden; ++e)
      ASSERT_EQ(XP[static_cast<std::size_t>(dst[a]) * hidden + e],
                X[static_cast<std::size_t>(a / top_k) * hidden + e]);
  ASSERT_EQ(moe_grouped_gemm_bf16(XP.get(), WT.get(), YP.get(), offsets.get(), tile_off.get(),
                                  experts, tokens * top_k, n, hidden, nullptr),
            cudaSuccess);
  ASSERT_EQ(moe_unpermute(YP.get(), dst.get(), w.get(), tokens, top_k, n, OUT.get(), nullptr),
            cudaSuccess);
  std::vector<double> direct(OUT.size());
  ref::moe_direct(x.data(), ids.get(), w.get(), wt.data(), tokens, top_k, n, hidden, direct.data());
  const ErrorStats st = compare_bf16(OUT, direct);
  EXPECT_TRUE(kTol.pass(st)) << st.str();
}

// Rows wider than one warp's 256-element slice: hidden 520 is 65 chunks of 8, so three
// slices (blockIdx.y), the last with one chunk; 5 tokens leave 3 of the block's 8 warps idle;
// a slot whose row is -1 (dropped) adds nothing. Against the direct weighted sum.
TEST_P(EmulatedKernels, UnpermuteSpreadsWideRowsOverSlices) {
  const int tokens = 5, top_k = 3, hidden = 520, rows = tokens * top_k;
  std::vector<float> y;
  auto Y = random_bf16(static_cast<std::size_t>(rows) * hidden, 61, 1.0f, &y);
  Buf<int> dst(static_cast<std::size_t>(rows));
  Buf<float> w(static_cast<std::size_t>(rows));
  for (int a = 0; a < rows; ++a) {
    dst[static_cast<std::size_t>(a)] = (a * 7) % rows;  // a permutation of the rows
    w[static_cast<std::size_t>(a)] = 0.25f * static_cast<float>(1 + a % 3);
  }
  dst[4] = -1;
  Buf<bf16_bits> OUT(static_cast<std::size_t>(tokens) * hidden);
  ASSERT_EQ(moe_unpermute(Y.get(), dst.get(), w.get(), tokens, top_k, hidden, OUT.get(), nullptr),
            cudaSuccess);
  std::vector<double> direct(OUT.size(), 0.0);
  for (int t = 0; t < tokens; ++t)
    for (int s = 0; s < top_k; ++s) {
      const int r = dst[static_cast<std::size_t>(t * top_k + s)];
      if (r < 0) continue;
      for (int e = 0; e < hidden; ++e)
        direct[static_cast<std::size_t>(t) * hidden + e] +=
            static_cast<double>(w[static_cast<std::size_t>(t * top_k + s)]) *
            y[static_cast<std::size_t>(r) * hidden + e];
    }
  const ErrorStats st = compare_bf16(OUT, direct);
  EXPECT_TRUE(kTol.pass(st)) << st.str();
}

TEST_P(EmulatedKernels, GroupedGemmWithUnevenAndEmptyExperts) {
  const int experts = 9, n = 72, k = 72;
  const std::vector<int> cnt = {0, 1, 127, 128, 129, 0, 300, 5, 0};
  Buf<int> offsets(experts + 1), tile_off(experts + 1);
  offsets[0] = 0;
  for (int e = 0; e < experts; ++e) offsets[e + 1] = offsets[e] + cnt[static_cast<std::size_t>(e)];
  const int rows = offsets[experts];
  std::vector<float> x, w;
  auto X = random_bf16(static_cast<std::size_t>(rows) * k, 61, 1.0f, &x);
  auto W = random_bf16(static_cast<std::size_t>(experts) * n * k, 62, 1.0f, &w);
  Buf<bf16_bits> Y(static_cast<std::size_t>(rows) * n);
  ASSERT_EQ(moe_grouped_gemm_bf16(X.get(), W.get(), Y.get(), offsets.get(), tile_off.get(), experts,
                                  rows, n, k, nullptr),
            cudaSuccess);
  std::vector<double> ref(Y.size());
  ref::grouped_gemm(x.data(), w.data(), offsets.get(), experts, n, k, ref.data());
  const ErrorStats st = compare_bf16(Y, ref);
  EXPECT_TRUE(kTol.pass(st)) << st.str();
}

}  // namespace
}  // namespace fleetsim::kernels
