// GEMM benchmarks: cuBLASLt BF16, cuBLASLt FP8, the own tiled BF16 kernel and (on compute
// capability 9.0 only) the own Hopper wgmma BF16 kernel over the
// projection and MLP shapes of Llama-3.1-8B/70B, Mixtral-8x7B and DeepSeek-V3 at token
// counts 1..16384, plus square 4096/8192/16384 (the 8192³ target).
#include <cublasLt.h>

#include <algorithm>

#include "kernels/bench/bench_common.h"
#include "kernels/common/shapes.h"

namespace fleetsim::kernels::bench {
namespace {

struct Case {
  std::string impl;  // cublaslt_bf16 | cublaslt_fp8 | own_bf16 | own_wgmma_bf16
  std::string model, label;
  int m, n, k;
};

std::string short_label(const std::string& proj) {
  const auto p = proj.find(' ');
  return p == std::string::npos ? proj : proj.substr(0, p);
}

void run_case(benchmark::State& st, const Case& cs, const std::string& name) {
  guarded(st, name, [&] {
    Context& c = ctx();
    const bool fp8 = cs.impl == "cublaslt_fp8";
    const bool wgmma = cs.impl == "own_wgmma_bf16";
    const bool own = cs.impl == "own_bf16" || wgmma;
    GemmProblem p;
    p.m = cs.m;
    p.n = cs.n;
    p.k = cs.k;
    p.fp8 = fp8;
    p.seed_a = fresh_seed();
    p.seed_w = fresh_seed();
    const std::size_t el = fp8 ? 1 : 2;
    const std::size_t mk = static_cast<std::size_t>(cs.m) * cs.k,
                      nk = static_cast<std::size_t>(cs.n) * cs.k,
                      mn = static_cast<std::size_t>(cs.m) * cs.n;
    DeviceBuffer<unsigned char> A(mk * el), W(nk * el);
    DeviceBuffer<bf16_bits> C(mn);
    fill_gemm_inputs(p, A.get(), W.get());
    const auto* a16 = reinterpret_cast<const bf16_bits*>(A.get());
    const auto* w16 = reinterpret_cast<const bf16_bits*>(W.get());
    std::string err;
    auto lt_call = [&](bf16_bits* out) {
      return fp8 ? gemm_cublaslt_fp8(c.lt, A.get(), W.get(), out, cs.m, cs.n, cs.k, nullptr,
                                     nullptr, nullptr, &err)
                 : gemm_cublaslt_bf16(c.lt, a16, w16, out, cs.m, cs.n, cs.k, nullptr, &err);
    };
    std::function<void()> launch;
    if (wgmma) {
      launch = [&] { FK_CHECK(gemm_wgmma_bf16(a16, w16, C.get(), cs.m, cs.n, cs.k, nullptr)); };
    } else if (own) {
      launch = [&] { FK_CHECK(gemm_tiled_bf16(a16, w16, C.get(), cs.m, cs.n, cs.k, nullptr)); };
    } else {
      launch = [&] {
        if (lt_call(C.get()) != 0) throw CudaError("cuBLASLt: " + err);
      };
    }
    // Validate: poisoned output, one run, sampled CPU reference.
    C.poison();
    if (!own) {
      const int rc = lt_call(C.get());
      if (rc == static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED)) {
        st.SkipWithError(("not supported by cuBLASLt on this GPU: " + err).c_str());
        return;
      }
      if (rc != 0) throw CudaError("cuBLASLt: " + err);
    } else {
      launch();
    }
    FK_CHECK(cudaDeviceSynchronize());
    CheckResult chk = check_gemm(p, C.get(), 4, 64);
    if (chk.ok && own) {
      // The whole output against cuBLASLt (an independent implementation).
      DeviceBuffer<bf16_bits> C2(mn);
      C2.poison();
      if (lt_call(C2.get()) != 0) throw CudaError("cuBLASLt (reference for own GEMM): " + err);
      FK_CHECK(cudaDeviceSynchronize());
      const CheckResult full = check_device_diff(C.get(), C2.get(), mn, "own vs cuBLASLt");
      chk.ok = full.ok;
      chk.detail += "; " + full.detail;
    }
    if (!chk.ok && wgmma) chk.detail += "; " + gemm_mismatch_report(p, C.get(), 2e9);
    if (!chk.ok) return validation_failed(st, name, chk);
    Result r;
    r.section = "gemm";
    r.impl = cs.impl;
    r.dtype = fp8 ? "fp8" : "bf16";
    r.model = cs.model;
    r.label = cs.label;
    r.m = cs.m;
    r.n = cs.n;
    r.k = cs.k;
    r.work = gemm_work(cs.m, cs.n, cs.k, static_cast<double>(el));
    r.check = chk.detail;
    time_and_record(st, r, launch);
  });
}

}  // namespace

void register_gemm() {
  Context& c = ctx();
  const hw::Catalog cat = hw::Catalog::load(c.opt.catalog_dir);
  std::vector<GemmShape> all;
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"})
    for (const auto& s : model_gemm_shapes(cat.model(id))) all.push_back(s);
  std::vector<GemmShape> shapes = unique_gemm_shapes(all);
  std::vector<int> tokens = gemm_token_counts();
  std::vector<int> squares = {4096, 8192, 16384};
  if (c.opt.quick) {
    tokens = {1, 256, 4096};
    shapes.resize(std::min<std::size_t>(shapes.size(), 3));
    squares = {8192};
  }
  if (c.opt.smoke) {
    tokens = {1, 130};
    shapes = {{"smoke", "proj", 136, 72}};
    squares = {128};
  }
  // The Hopper GEMM only where it can run (compute capability 9.0, sm_90a build).
  std::vector<std::string> impls = {"cublaslt_bf16", "cublaslt_fp8", "own_bf16"};
  if (gemm_wgmma_supported()) impls.push_back("own_wgmma_bf16");
  std::vector<Case> cases;
  for (int sq : squares)
    for (const auto& impl : impls)
      cases.push_back({impl, "square", std::to_string(sq) + "^3", sq, sq, sq});
  for (const auto& s : shapes)
    for (int m : tokens)
      for (const auto& impl : impls) cases.push_back({impl, s.model, s.proj, m, s.n, s.k});

  std::size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  for (const auto& cs : cases) {
    const bool fp8 = cs.impl == "cublaslt_fp8";
    const double el = fp8 ? 1 : 2;
    const double need = (static_cast<double>(cs.m) * cs.k + static_cast<double>(cs.n) * cs.k) * el +
                        2.0 * static_cast<double>(cs.m) * cs.n * 2;
    if (need > 0.7 * static_cast<double>(free_b)) continue;
    const Work w = gemm_work(cs.m, cs.n, cs.k, el);
    const std::string name = "gemm/" + cs.impl + "/" + cs.model + ":" + short_label(cs.label);
    add(name, reps_for(estimate_us(w, fp8)),
        [cs, name](benchmark::State& st) {
          run_case(st, cs,
                   name + "/m:" + std::to_string(cs.m) + "/n:" + std::to_string(cs.n) +
                       "/k:" + std::to_string(cs.k));
        })
        ->ArgNames({"m", "n", "k"})
        ->Args({cs.m, cs.n, cs.k});
  }
}

}  // namespace fleetsim::kernels::bench
