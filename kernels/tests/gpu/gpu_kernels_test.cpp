// Device tests: every kernel against its CPU reference at small and awkward shapes (rows
// and columns that do not fill a tile, k tails, short and long sequences, empty experts),
// completely compared, outputs poisoned first. Without a CUDA GPU every test is skipped
// with the reason. Registered with CTest only with -DFLEETSIM_GPU_TESTS=ON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>

#include "kernels/common/rand.h"
#include "kernels/cuda/kernels.h"
#include "kernels/harness/checks.h"
#include "kernels/harness/device.h"
#include "kernels/ref/moe_ref.h"

namespace fleetsim::kernels {
namespace {

const DeviceInfo& device() {
  static const DeviceInfo d = detect_device();
  return d;
}

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!device().present)
      GTEST_SKIP() << "no CUDA GPU (" << device().reason << "): device test skipped";
  }
};

constexpr int kAll = 1 << 20;  // sample limits that make a check complete at these sizes

struct Shape3 {
  int m, n, k;
};

// A GEMM of shape s: fresh random inputs on the device, the output poisoned (NaN).
struct GemmCase {
  explicit GemmCase(const Shape3& s)
      : a(static_cast<std::size_t>(s.m) * s.k),
        w(static_cast<std::size_t>(s.n) * s.k),
        c(static_cast<std::size_t>(s.m) * s.n) {
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    p.seed_a = fresh_seed();
    p.seed_w = fresh_seed();
    fill_gemm_inputs(p, a.get(), w.get());
    c.poison();
  }
  GemmProblem p;
  DeviceBuffer<bf16_bits> a, w, c;
};

TEST_F(Gpu, TiledGemmMatchesTheCpuReference) {
  for (const Shape3 s : {Shape3{1, 8, 8}, Shape3{7, 24, 40}, Shape3{129, 136, 264},
                         Shape3{300, 520, 1032}, Shape3{128, 128, 32}}) {
    GemmCase g(s);
    ASSERT_EQ(gemm_tiled_bf16(g.a.get(), g.w.get(), g.c.get(), s.m, s.n, s.k, nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const CheckResult r = check_gemm(g.p, g.c.get(), kAll, kAll);
    EXPECT_TRUE(r.ok) << r.detail;
  }
  EXPECT_EQ(gemm_tiled_bf16(nullptr, nullptr, nullptr, 4, 4, 12, nullptr),
            cudaErrorInvalidValue);  // k % 8
}

// The Hopper-only GEMM (TMA + wgmma, sm_90a). Shapes: m = 1 and m = 77 (one partial row
// tile), n a multiple of 8 but not of 256 (partial column tiles), k not a multiple of 64 (a
// zero-filled k tail), k of 1 to 65 k-tiles (the 4-stage ring wrapping many times), several
// row and column tiles (the grouped raster), and exact multiples of the 128×256×64 tile.
TEST_F(Gpu, WgmmaGemmMatchesTheCpuReference) {
  if (!gemm_wgmma_supported())
    GTEST_SKIP() << "gemm_wgmma_bf16 needs a compute capability 9.0 GPU (H100/H200) and "
                    "its sm_90a build; skipped";
  for (const Shape3 s :
       {Shape3{1, 8, 8}, Shape3{1, 256, 64}, Shape3{77, 136, 72}, Shape3{128, 256, 64},
        Shape3{16, 520, 1032}, Shape3{129, 264, 200}, Shape3{256, 512, 256}, Shape3{383, 776, 1000},
        Shape3{300, 1032, 2120}, Shape3{1100, 2056, 136}}) {
    for (const bool overlap : {true, false}) {
      SCOPED_TRACE(overlap ? "overlapped mainloop (default)" : "serial mainloop");
      GemmCase g(s);
      const GemmProblem& p = g.p;
      const DeviceBuffer<bf16_bits>& c = g.c;
      const cudaError_t launched =
          gemm_wgmma_bf16(g.a.get(), g.w.get(), g.c.get(), s.m, s.n, s.k, nullptr, overlap);
      ASSERT_EQ(launched, cudaSuccess)
          << cudaGetErrorName(launched) << " at m=" << s.m << " n=" << s.n << " k=" << s.k;
      // A kernel that waits on an mbarrier for seconds traps (a hang: a TMA that never
      // completed, a wrong transaction count or parity): cudaErrorLaunchFailure here.
      const cudaError_t synced = cudaDeviceSynchronize();
      ASSERT_EQ(synced, cudaSuccess)
          << cudaGetErrorName(synced) << " at m=" << s.m << " n=" << s.n << " k=" << s.k;
      const CheckResult r = check_gemm(p, c.get(), kAll, kAll);
      EXPECT_TRUE(r.ok) << r.detail << "\n" << gemm_mismatch_report(p, c.get());
    }
  }
  // Repeated launches into the same output agree exactly (no race between the stages).
  {
    GemmCase g(Shape3{512, 1024, 2048});
    const GemmProblem& p = g.p;
    const DeviceBuffer<bf16_bits>&a = g.a, &w = g.w, &c1 = g.c;
    DeviceBuffer<bf16_bits> c2(static_cast<std::size_t>(p.m) * p.n);
    ASSERT_EQ(gemm_wgmma_bf16(a.get(), w.get(), c1.get(), p.m, p.n, p.k, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<bf16_bits> first = copy_to_host(c1.get(), c1.size());
    for (int rep = 0; rep < 5; ++rep) {
      c2.poison();
      ASSERT_EQ(gemm_wgmma_bf16(a.get(), w.get(), c2.get(), p.m, p.n, p.k, nullptr), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(copy_to_host(c2.get(), c2.size()), first) << "run " << rep + 2 << " differs";
    }
    const CheckResult r = check_gemm(p, c1.get(), 64, 256);
    EXPECT_TRUE(r.ok) << r.detail << "\n" << gemm_mismatch_report(p, c1.get());
  }
  EXPECT_EQ(gemm_wgmma_bf16(nullptr, nullptr, nullptr, 4, 8, 12, nullptr),
            cudaErrorInvalidValue);  // k % 8
  EXPECT_EQ(gemm_wgmma_bf16(nullptr, nullptr, nullptr, 4, 12, 16, nullptr),
            cudaErrorInvalidValue);  // n % 8
}

// Where the wgmma GEMM cannot run (other GPUs, the emulator) it says so instead of failing.
TEST(WgmmaGemmSupport, ReportsNotSupportedWhereItCannotRun) {
  if (gemm_wgmma_supported())
    GTEST_SKIP() << "supported here: WgmmaGemmMatchesTheCpuReference runs";
  EXPECT_EQ(gemm_wgmma_bf16(reinterpret_cast<const bf16_bits*>(256),
                            reinterpret_cast<const bf16_bits*>(256),
                            reinterpret_cast<bf16_bits*>(256), 4, 8, 16, nullptr),
            cudaErrorNotSupported);
}

TEST_F(Gpu, CublasLtBf16AndFp8MatchTheCpuReference) {
  std::string err;
  CublasLt* lt = cublaslt_create(&err);
  ASSERT_NE(lt, nullptr) << err;
  for (const Shape3 s : {Shape3{1, 16, 16}, Shape3{33, 48, 64}, Shape3{200, 272, 1040}}) {
    for (bool fp8 : {false, true}) {
      GemmProblem p;
      p.m = s.m;
      p.n = s.n;
      p.k = s.k;
      p.fp8 = fp8;
      p.seed_a = fresh_seed();
      p.seed_w = fresh_seed();
      const std::size_t el = fp8 ? 1 : 2;
      DeviceBuffer<unsigned char> a(static_cast<std::size_t>(s.m) * s.k * el),
          w(static_cast<std::size_t>(s.n) * s.k * el);
      DeviceBuffer<bf16_bits> c(static_cast<std::size_t>(s.m) * s.n);
      fill_gemm_inputs(p, a.get(), w.get());
      c.poison();
      const int rc = fp8 ? gemm_cublaslt_fp8(lt, a.get(), w.get(), c.get(), s.m, s.n, s.k, nullptr,
                                             nullptr, nullptr, &err)
                         : gemm_cublaslt_bf16(lt, reinterpret_cast<const bf16_bits*>(a.get()),
                                              reinterpret_cast<const bf16_bits*>(w.get()), c.get(),
                                              s.m, s.n, s.k, nullptr, &err);
      if (rc != 0 && fp8) {
        std::cout << "[  NOTE    ] cuBLASLt FP8 unavailable for m=" << s.m << ": " << err << "\n";
        continue;  // pre-Hopper GPUs have no FP8 GEMM
      }
      ASSERT_EQ(rc, 0) << err;
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const CheckResult r = check_gemm(p, c.get(), kAll, kAll);
      EXPECT_TRUE(r.ok) << r.detail;
    }
  }
  cublaslt_destroy(lt);
}

void run_prefill(const ref::AttnDims& dims) {
  PrefillProblem p;
  p.dims = dims;
  p.seed_q = fresh_seed();
  p.seed_k = fresh_seed();
  p.seed_v = fresh_seed();
  const std::size_t nq = static_cast<std::size_t>(dims.batch) * dims.q_len * dims.heads * 128;
  const std::size_t nkv = static_cast<std::size_t>(dims.batch) * dims.kv_len * dims.kv_heads * 128;
  DeviceBuffer<bf16_bits> q(nq), k(nkv), v(nkv), o(nq);
  fill_prefill_inputs(p, q.get(), k.get(), v.get());
  o.poison();
  PrefillArgs a;
  a.q = q.get();
  a.k = k.get();
  a.v = v.get();
  a.o = o.get();
  a.batch = dims.batch;
  a.q_len = dims.q_len;
  a.kv_len = dims.kv_len;
  a.heads = dims.heads;
  a.kv_heads = dims.kv_heads;
  a.causal = dims.causal;
  ASSERT_EQ(attn_prefill_bf16(a, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const CheckResult r = check_prefill(p, o.get(), kAll, kAll);
  EXPECT_TRUE(r.ok) << r.detail;
}

TEST_F(Gpu, PrefillAttentionMatchesTheCpuReference) {
  // Every block shape: 4 warps (the default), 4 warps with three blocks per SM, 8 warps,
  // 4 warps of 32 rows.
  for (const char* rows : {"64", "64x3", "128", "128x4"}) {
    SCOPED_TRACE(std::string("FLEETSIM_PREFILL_ROWS=") + rows);
    setenv("FLEETSIM_PREFILL_ROWS", rows, 1);
    ref::AttnDims d;
    d.head_dim = 128;
    // Causal, GQA, a q_len that ends inside a tile.
    d.batch = 2, d.q_len = d.kv_len = 70, d.heads = 4, d.kv_heads = 2, d.causal = true;
    run_prefill(d);
    // Causal chunk after a cached prefix (q_len < kv_len), MQA.
    d.batch = 1, d.q_len = 33, d.kv_len = 130, d.heads = 2, d.kv_heads = 1;
    run_prefill(d);
    // Not causal, several key tiles with a tail.
    d.batch = 1, d.q_len = 65, d.kv_len = 200, d.heads = 2, d.kv_heads = 2, d.causal = false;
    run_prefill(d);
    // One token.
    d.batch = 3, d.q_len = d.kv_len = 1, d.heads = 8, d.kv_heads = 8, d.causal = true;
    run_prefill(d);
    // The last query row in the lower half (row g+8) of a warp's fragment, after a prefix.
    d.batch = 2, d.q_len = 27, d.kv_len = 90, d.heads = 4, d.kv_heads = 1;
    run_prefill(d);
    // Exactly two tiles of 64.
    d.batch = 1, d.q_len = d.kv_len = 128, d.heads = 8, d.kv_heads = 1;
    run_prefill(d);
    // Eight key tiles: the ring wraps around twice.
    d.batch = 1, d.q_len = 200, d.kv_len = 460, d.heads = 2, d.kv_heads = 1;
    run_prefill(d);
    // GQA group 8, q_len past one 128-row block, causal; then group 4 in a chunk.
    d.batch = 1, d.q_len = d.kv_len = 200, d.heads = 8, d.kv_heads = 1;
    run_prefill(d);
    d.batch = 1, d.q_len = 150, d.kv_len = 333, d.heads = 4, d.kv_heads = 1;
    run_prefill(d);
  }
  unsetenv("FLEETSIM_PREFILL_ROWS");
}

void run_decode(int heads, int kv_heads, const std::vector<int>& lens, int page, int splits) {
  DecodeProblem p =
      DecodeProblem::make(static_cast<int>(lens.size()), heads, kv_heads, lens, page, fresh_seed());
  const std::size_t nq = static_cast<std::size_t>(p.batch) * heads * 128;
  const std::size_t nc = static_cast<std::size_t>(p.num_blocks) * kv_heads * page * 128;
  DeviceBuffer<bf16_bits> q(nq), kc(nc), vc(nc), o(nq);
  DeviceBuffer<int> table(p.block_table.size()), seq(p.seq_lens.size());
  table.from_host(p.block_table);
  seq.from_host(p.seq_lens);
  fill_decode_inputs(p, q.get(), kc.get(), vc.get());
  o.poison();
  DecodeArgs a;
  a.q = q.get();
  a.k_cache = kc.get();
  a.v_cache = vc.get();
  a.block_table = table.get();
  a.seq_lens = seq.get();
  a.o = o.get();
  a.batch = p.batch;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.page_size = page;
  a.max_blocks_per_seq = p.max_blocks_per_seq;
  a.max_seq_len = p.max_seq_len();
  a.num_splits = splits;
  a.sm_count = device().sm_count;
  DeviceBuffer<float> ws(attn_decode_workspace_bytes(a) / sizeof(float));
  ws.poison();
  a.workspace = ws.get();
  ASSERT_EQ(attn_decode_bf16(a, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const CheckResult r = check_decode(p, o.get(), kAll);
  EXPECT_TRUE(r.ok) << r.detail << " (splits " << attn_decode_splits(a) << ")";
}

TEST_F(Gpu, PagedDecodeAttentionMatchesTheCpuReference) {
  const std::vector<int> lens = {1, 63, 64, 65, 300, 1000};
  for (int group : {1, 2, 4, 8, 16})
    for (int splits : {0, 1, 3, 7}) run_decode(group * 2, 2, lens, 16, splits);
  run_decode(32, 8, {4096, 17, 2500}, 16, 0);  // Llama-3.1-8B heads, long context, auto split
  run_decode(8, 8, {129, 5}, 32, 2);           // another page size
}

TEST_F(Gpu, RouterMatchesTheCpuReference) {
  for (auto [experts, top_k] :
       {std::pair{8, 2}, std::pair{256, 8}, std::pair{60, 6}, std::pair{5, 5}})
    for (bool renorm : {false, true}) {
      const int tokens = 37;
      const std::uint64_t seed = fresh_seed();
      DeviceBuffer<float> logits(static_cast<std::size_t>(tokens) * experts),
          w(static_cast<std::size_t>(tokens) * top_k);
      DeviceBuffer<int> ids(static_cast<std::size_t>(tokens) * top_k);
      ASSERT_EQ(fill_random_f32(logits.get(), logits.size(), seed, 4.0f, nullptr), cudaSuccess);
      ids.poison();
      w.poison();
      ASSERT_EQ(moe_router_topk(logits.get(), tokens, experts, top_k, renorm, ids.get(), w.get(),
                                nullptr),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const CheckResult r =
          check_router(ids.get(), w.get(), tokens, experts, top_k, renorm, seed, 4.0f);
      EXPECT_TRUE(r.ok) << r.detail;
    }
}

// The whole MoE layer on the device (router -> permute -> grouped GEMM -> un-permute)
// against the CPU's direct Σ_slot w·x·W_eᵀ, plus each stage's own check.
TEST_F(Gpu, MoePipelineMatchesTheCpuReference) {
  const int tokens = 45, experts = 6, top_k = 2, hidden = 64, n = 72;
  const std::uint64_t seed_l = fresh_seed(), seed_x = fresh_seed(), seed_w = fresh_seed();
  DeviceBuffer<float> logits(static_cast<std::size_t>(tokens) * experts),
      w(static_cast<std::size_t>(tokens) * top_k);
  DeviceBuffer<int> ids(static_cast<std::size_t>(tokens) * top_k), dst(ids.size());
  DeviceBuffer<int> counts(experts), offsets(experts + 1), cursor(experts), tile_off(experts + 1);
  DeviceBuffer<bf16_bits> x(static_cast<std::size_t>(tokens) * hidden),
      xp(static_cast<std::size_t>(tokens) * top_k * hidden),
      wt(static_cast<std::size_t>(experts) * n * hidden),
      yp(static_cast<std::size_t>(tokens) * top_k * n), out(static_cast<std::size_t>(tokens) * n);
  ASSERT_EQ(fill_random_f32(logits.get(), logits.size(), seed_l, 4.0f, nullptr), cudaSuccess);
  ASSERT_EQ(fill_random_bf16(x.get(), x.size(), seed_x, 1.0f, nullptr), cudaSuccess);
  ASSERT_EQ(fill_random_bf16(wt.get(), wt.size(), seed_w, 1.0f, nullptr), cudaSuccess);
  for (const auto* b : {&xp, &yp, &out}) b->poison();
  dst.poison();
  ASSERT_EQ(
      moe_router_topk(logits.get(), tokens, experts, top_k, true, ids.get(), w.get(), nullptr),
      cudaSuccess);
  ASSERT_EQ(moe_permute(x.get(), ids.get(), tokens, top_k, hidden, experts,
                        {counts.get(), offsets.get(), cursor.get()}, dst.get(), xp.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(moe_grouped_gemm_bf16(xp.get(), wt.get(), yp.get(), offsets.get(), tile_off.get(),
                                  experts, tokens * top_k, n, hidden, nullptr),
            cudaSuccess);
  ASSERT_EQ(moe_unpermute(yp.get(), dst.get(), w.get(), tokens, top_k, n, out.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const auto h_ids = ids.to_host();
  const auto h_w = w.to_host();
  const auto h_dst = dst.to_host();
  CheckResult r = check_router(ids.get(), w.get(), tokens, experts, top_k, true, seed_l, 4.0f);
  EXPECT_TRUE(r.ok) << r.detail;
  r = check_permute(h_ids, tokens, top_k, experts, hidden, seed_x, offsets.get(), dst.get(),
                    xp.get());
  EXPECT_TRUE(r.ok) << r.detail;
  r = check_unpermute(h_dst, h_w, tokens, top_k, n, yp.get(), out.get(), kAll);
  EXPECT_TRUE(r.ok) << r.detail;

  // End to end against the direct formula.
  std::vector<float> hx(x.size()), hwt(wt.size());
  for (std::size_t i = 0; i < hx.size(); ++i) hx[i] = rand_bf16_exact(seed_x, i, 1.0f);
  for (std::size_t i = 0; i < hwt.size(); ++i) hwt[i] = rand_bf16_exact(seed_w, i, 1.0f);
  std::vector<double> direct(out.size());
  ref::moe_direct(hx.data(), h_ids.data(), h_w.data(), hwt.data(), tokens, top_k, n, hidden,
                  direct.data());
  const auto h_out = out.to_host();
  ErrorStats st;
  for (std::size_t i = 0; i < direct.size(); ++i) st.add(bf16_to_float(h_out[i]), direct[i]);
  st.finish();
  // Two bf16 roundings (y_perm, out) on the way: still well inside the bf16 tolerance.
  EXPECT_TRUE(Tolerance{}.pass(st)) << st.str();
}

TEST_F(Gpu, GroupedGemmHandlesUnevenAndEmptyExperts) {
  const int experts = 9, n = 136, k = 72;
  const std::vector<int> counts = {0, 1, 127, 128, 129, 0, 300, 5, 0};
  std::vector<int> offsets(experts + 1, 0);
  for (int e = 0; e < experts; ++e) offsets[e + 1] = offsets[e] + counts[e];
  const int rows = offsets.back();
  const std::uint64_t seed_x = fresh_seed(), seed_w = fresh_seed();
  DeviceBuffer<bf16_bits> xp(static_cast<std::size_t>(rows) * k),
      wt(static_cast<std::size_t>(experts) * n * k), yp(static_cast<std::size_t>(rows) * n);
  DeviceBuffer<int> off(offsets.size()), tile_off(offsets.size());
  off.from_host(offsets);
  ASSERT_EQ(fill_random_bf16(xp.get(), xp.size(), seed_x, 1.0f, nullptr), cudaSuccess);
  ASSERT_EQ(fill_random_bf16(wt.get(), wt.size(), seed_w, 1.0f, nullptr), cudaSuccess);
  yp.poison();
  ASSERT_EQ(moe_grouped_gemm_bf16(xp.get(), wt.get(), yp.get(), off.get(), tile_off.get(), experts,
                                  rows, n, k, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const CheckResult r = check_grouped_gemm(offsets, n, k, seed_x, seed_w, yp.get(), kAll, kAll);
  EXPECT_TRUE(r.ok) << r.detail;
}

// The Hopper grouped GEMM (TMA + wgmma, sm_90a) on uneven and empty experts. n = 520 is two
// full 256-column tiles and a partial one whose TMA box reaches into the next expert's
// weights (and past the last expert's: zero-filled); k = 200 ends in a partial 64-wide
// k-tile; expert 6's 300 rows are two full 128-row tiles and a partial one that loads the
// next expert's rows. Every output element is compared with the CPU reference, and the
// output is poisoned first, so a row or column left unwritten or written past its expert
// shows as NaN or a mismatch.
TEST_F(Gpu, WgmmaGroupedGemmHandlesUnevenAndEmptyExperts) {
  if (!gemm_wgmma_supported())
    GTEST_SKIP() << "moe_grouped_gemm_wgmma_bf16 needs a compute capability 9.0 GPU (H100/H200) "
                    "and the sm_90a build";
  struct Shape {
    std::vector<int> counts;
    int n, k;
  };
  const std::vector<Shape> shapes = {
      {{0, 1, 127, 128, 129, 0, 300, 5, 0}, 520, 200},
      {{3, 0, 0, 64}, 136, 72},
      {{256, 1, 130}, 512, 64},
  };
  for (const Shape& sh : shapes) {
    const int experts = static_cast<int>(sh.counts.size());
    std::vector<int> offsets(experts + 1, 0);
    for (int e = 0; e < experts; ++e) offsets[e + 1] = offsets[e] + sh.counts[e];
    const int rows = offsets.back();
    const std::uint64_t seed_x = fresh_seed(), seed_w = fresh_seed();
    DeviceBuffer<bf16_bits> xp(static_cast<std::size_t>(rows) * sh.k),
        wt(static_cast<std::size_t>(experts) * sh.n * sh.k),
        yp(static_cast<std::size_t>(rows) * sh.n);
    DeviceBuffer<int> off(offsets.size()), tile_off(offsets.size());
    off.from_host(offsets);
    ASSERT_EQ(fill_random_bf16(xp.get(), xp.size(), seed_x, 1.0f, nullptr), cudaSuccess);
    ASSERT_EQ(fill_random_bf16(wt.get(), wt.size(), seed_w, 1.0f, nullptr), cudaSuccess);
    yp.poison();
    ASSERT_EQ(moe_grouped_gemm_wgmma_bf16(xp.get(), wt.get(), yp.get(), off.get(), tile_off.get(),
                                          experts, rows, sh.n, sh.k, nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const CheckResult r =
        check_grouped_gemm(offsets, sh.n, sh.k, seed_x, seed_w, yp.get(), kAll, kAll);
    EXPECT_TRUE(r.ok) << "experts " << experts << " n " << sh.n << " k " << sh.k << ": "
                      << r.detail;
  }
}

// Where it cannot run, the grouped wgmma GEMM says so; bad arguments are refused first.
TEST(WgmmaGroupedGemmSupport, RefusesBadArgumentsAndReportsNotSupported) {
  int dummy = 0;
  // n % 8 != 0 is refused before anything touches the device.
  EXPECT_EQ(moe_grouped_gemm_wgmma_bf16(nullptr, nullptr, nullptr, &dummy, &dummy, 4, 16, 12, 64,
                                        nullptr),
            cudaErrorInvalidValue);
  if (gemm_wgmma_supported()) GTEST_SKIP() << "supported here: the grouped wgmma test runs";
  EXPECT_EQ(moe_grouped_gemm_wgmma_bf16(
                reinterpret_cast<const bf16_bits*>(256), reinterpret_cast<const bf16_bits*>(256),
                reinterpret_cast<bf16_bits*>(256), &dummy, &dummy, 4, 16, 64, 64, nullptr),
            cudaErrorNotSupported);
}

TEST_F(Gpu, DeviceFillsEqualTheHostGenerators) {
  const std::uint64_t seed = fresh_seed();
  DeviceBuffer<bf16_bits> b(4099);
  DeviceBuffer<fp8_bits> f(4099);
  ASSERT_EQ(fill_random_bf16(b.get(), b.size(), seed, 2.0f, nullptr), cudaSuccess);
  ASSERT_EQ(fill_random_fp8(f.get(), f.size(), seed, nullptr), cudaSuccess);
  const auto hb = b.to_host();
  const auto hf = f.to_host();
  for (std::size_t i = 0; i < hb.size(); ++i) {
    ASSERT_EQ(bf16_to_float(hb[i]), rand_bf16_exact(seed, i, 2.0f)) << i;
    ASSERT_EQ(hf[i], rand_fp8_e4m3_bits(seed, i)) << i;
  }
}

}  // namespace
}  // namespace fleetsim::kernels
