// MoE benchmarks for Mixtral-8x7B (8 experts, top-2) and DeepSeek-V3 (256 routed experts,
// top-8): router top-k, permutation, grouped GEMM (expert gate_up and down) with the uneven
// token counts of a real routing of random logits, and un-permute with weighted combine.
// The grouped GEMM is compared with the own dense GEMM and cuBLASLt at the same total rows.
#include <algorithm>
#include <memory>

#include "kernels/bench/bench_common.h"
#include "kernels/common/shapes.h"

namespace fleetsim::kernels::bench {
namespace {

constexpr float kLogitScale = 4.0f;

struct MoeCase {
  MoeShape s;
  int tokens;
};

// Routing of `tokens` random tokens: ids and weights (router), then the permutation.
struct Routing {
  DeviceBuffer<float> logits, weights;
  DeviceBuffer<int> ids, dst, counts, offsets, cursor;
  DeviceBuffer<bf16_bits> x, x_perm;
  std::uint64_t seed_logits = 0, seed_x = 0;
  Routing(const MoeShape& s, int tokens)
      : logits(static_cast<std::size_t>(tokens) * s.experts),
        weights(static_cast<std::size_t>(tokens) * s.top_k),
        ids(static_cast<std::size_t>(tokens) * s.top_k),
        dst(static_cast<std::size_t>(tokens) * s.top_k),
        counts(static_cast<std::size_t>(s.experts)),
        offsets(static_cast<std::size_t>(s.experts) + 1),
        cursor(static_cast<std::size_t>(s.experts)),
        x(static_cast<std::size_t>(tokens) * s.hidden),
        x_perm(static_cast<std::size_t>(tokens) * s.top_k * s.hidden) {
    seed_logits = fresh_seed();
    seed_x = fresh_seed();
    FK_CHECK(fill_random_f32(logits.get(), logits.size(), seed_logits, kLogitScale, nullptr));
    FK_CHECK(fill_random_bf16(x.get(), x.size(), seed_x, 1.0f, nullptr));
  }
  MoePermuteScratch scratch() const { return {counts.get(), offsets.get(), cursor.get()}; }
};

// Expert weights [experts][n][k], kept while consecutive benchmarks use the same matrix.
struct WeightCache {
  std::string key;
  std::unique_ptr<DeviceBuffer<bf16_bits>> w;
  std::uint64_t seed = 0;
};
WeightCache& weights_cache() {
  static WeightCache c;
  return c;
}
const DeviceBuffer<bf16_bits>& expert_weights(const std::string& key, std::size_t n,
                                              std::uint64_t* seed) {
  WeightCache& c = weights_cache();
  if (c.key != key) {
    c.w.reset();  // free the previous matrix first
    c.w = std::make_unique<DeviceBuffer<bf16_bits>>(n);
    c.seed = fresh_seed();
    FK_CHECK(fill_random_bf16(c.w->get(), n, c.seed, 1.0f, nullptr));
    c.key = key;
  }
  *seed = c.seed;
  return *c.w;
}

Result base_result(const std::string& section, const MoeCase& cs, const std::string& label) {
  Result r;
  r.section = section;
  r.impl = "own";
  r.dtype = "bf16";
  r.model = cs.s.model;
  r.label = label;
  r.tokens = cs.tokens;
  r.experts = cs.s.experts;
  r.top_k = cs.s.top_k;
  return r;
}

void run_router(benchmark::State& st, const MoeCase& cs, const std::string& name) {
  guarded(st, name, [&] {
    Routing rt(cs.s, cs.tokens);
    auto launch = [&] {
      FK_CHECK(moe_router_topk(rt.logits.get(), cs.tokens, cs.s.experts, cs.s.top_k, true,
                               rt.ids.get(), rt.weights.get(), nullptr));
    };
    rt.ids.poison();
    rt.weights.poison();
    launch();
    FK_CHECK(cudaDeviceSynchronize());
    const CheckResult chk = check_router(rt.ids.get(), rt.weights.get(), cs.tokens, cs.s.experts,
                                         cs.s.top_k, true, rt.seed_logits, kLogitScale);
    if (!chk.ok) return validation_failed(st, name, chk);
    Result r = base_result("moe_router", cs, "softmax+top-k");
    r.work = {0, static_cast<double>(cs.tokens) * (cs.s.experts * 4.0 + cs.s.top_k * 8.0)};
    r.check = chk.detail;
    time_and_record(st, r, launch);
  });
}

void run_permute(benchmark::State& st, const MoeCase& cs, const std::string& name) {
  guarded(st, name, [&] {
    Routing rt(cs.s, cs.tokens);
    FK_CHECK(moe_router_topk(rt.logits.get(), cs.tokens, cs.s.experts, cs.s.top_k, true,
                             rt.ids.get(), rt.weights.get(), nullptr));
    auto launch = [&] {
      FK_CHECK(moe_permute(rt.x.get(), rt.ids.get(), cs.tokens, cs.s.top_k, cs.s.hidden,
                           cs.s.experts, rt.scratch(), rt.dst.get(), rt.x_perm.get(), nullptr));
    };
    rt.dst.poison();
    rt.x_perm.poison();
    launch();
    FK_CHECK(cudaDeviceSynchronize());
    const CheckResult chk =
        check_permute(rt.ids.to_host(), cs.tokens, cs.s.top_k, cs.s.experts, cs.s.hidden, rt.seed_x,
                      rt.offsets.get(), rt.dst.get(), rt.x_perm.get());
    if (!chk.ok) return validation_failed(st, name, chk);
    Result r = base_result("moe_permute", cs, "count+scan+scatter");
    const double rows = static_cast<double>(cs.tokens) * cs.s.top_k;
    r.work = {0, rows * cs.s.hidden * 2.0 * 2.0 + rows * 8.0};
    r.check = chk.detail;
    time_and_record(st, r, launch);
  });
}

// impl "own": the portable tiled grouped GEMM (WMMA); "own_wgmma": the Hopper TMA + wgmma one.
void run_grouped(benchmark::State& st, const MoeCase& cs, bool gate_up, bool wgmma,
                 const std::string& name) {
  guarded(st, name, [&] {
    Context& c = ctx();
    const int n = gate_up ? 2 * cs.s.expert_ffn : cs.s.hidden;
    const int k = gate_up ? cs.s.hidden : cs.s.expert_ffn;
    const int E = cs.s.experts;
    // The token counts per expert come from a real routing.
    Routing rt(cs.s, cs.tokens);
    FK_CHECK(moe_router_topk(rt.logits.get(), cs.tokens, E, cs.s.top_k, true, rt.ids.get(),
                             rt.weights.get(), nullptr));
    FK_CHECK(moe_permute(rt.x.get(), rt.ids.get(), cs.tokens, cs.s.top_k, cs.s.hidden, E,
                         rt.scratch(), rt.dst.get(), rt.x_perm.get(), nullptr));
    const std::vector<int> offsets = rt.offsets.to_host();
    const int rows = offsets.back();
    std::uint64_t seed_w = 0;
    const auto& W = expert_weights(cs.s.model + (gate_up ? ":gate_up" : ":down"),
                                   static_cast<std::size_t>(E) * n * k, &seed_w);
    const std::uint64_t seed_x = fresh_seed();
    DeviceBuffer<bf16_bits> X(static_cast<std::size_t>(rows) * k),
        Y(static_cast<std::size_t>(rows) * n);
    DeviceBuffer<int> tile_off(static_cast<std::size_t>(E) + 1);
    FK_CHECK(fill_random_bf16(X.get(), X.size(), seed_x, 1.0f, nullptr));
    auto launch = [&] {
      if (wgmma)
        FK_CHECK(moe_grouped_gemm_wgmma_bf16(X.get(), W.get(), Y.get(), rt.offsets.get(),
                                             tile_off.get(), E, rows, n, k, nullptr));
      else
        FK_CHECK(moe_grouped_gemm_bf16(X.get(), W.get(), Y.get(), rt.offsets.get(), tile_off.get(),
                                       E, rows, n, k, nullptr));
    };
    Y.poison();
    launch();
    FK_CHECK(cudaDeviceSynchronize());
    CheckResult chk = check_grouped_gemm(offsets, n, k, seed_x, seed_w, Y.get(), 12, 64);
    int active = 0;
    if (chk.ok) {
      // Whole output against cuBLASLt, one call per non-empty expert.
      DeviceBuffer<bf16_bits> Yref(Y.size());
      Yref.poison();
      std::string err;
      for (int e = 0; e < E; ++e) {
        const int r0 = offsets[static_cast<std::size_t>(e)],
                  cnt = offsets[static_cast<std::size_t>(e) + 1] - r0;
        if (cnt == 0) continue;
        ++active;
        if (gemm_cublaslt_bf16(c.lt, X.get() + static_cast<std::size_t>(r0) * k,
                               W.get() + static_cast<std::size_t>(e) * n * k,
                               Yref.get() + static_cast<std::size_t>(r0) * n, cnt, n, k, nullptr,
                               &err) != 0)
          throw CudaError("cuBLASLt (per-expert reference): " + err);
      }
      FK_CHECK(cudaDeviceSynchronize());
      const CheckResult full =
          check_device_diff(Y.get(), Yref.get(), Y.size(), "grouped vs per-expert cuBLASLt");
      chk.ok = full.ok;
      chk.detail += "; " + full.detail;
    }
    if (!chk.ok) return validation_failed(st, name, chk);

    // Dense references at the same total rows: the own dense GEMM of the same mainloop (tiled
    // or wgmma) and cuBLASLt on expert 0's weights (one n×k matrix).
    DeviceBuffer<bf16_bits> D(static_cast<std::size_t>(rows) * n);
    std::string err;
    const int ref_reps = c.opt.smoke ? 1 : 5;
    const double dense_own_us = median(c.timer->time_us(
        [&] {
          if (wgmma)
            FK_CHECK(gemm_wgmma_bf16(X.get(), W.get(), D.get(), rows, n, k, nullptr));
          else
            FK_CHECK(gemm_tiled_bf16(X.get(), W.get(), D.get(), rows, n, k, nullptr));
        },
        1, ref_reps));
    const double dense_lt_us = median(c.timer->time_us(
        [&] {
          if (gemm_cublaslt_bf16(c.lt, X.get(), W.get(), D.get(), rows, n, k, nullptr, &err) != 0)
            throw CudaError("cuBLASLt dense reference: " + err);
        },
        1, ref_reps));

    Result r = base_result("moe_grouped_gemm", cs, gate_up ? "expert_gate_up" : "expert_down");
    if (wgmma) r.impl = "own_wgmma";
    r.m = rows;
    r.n = n;
    r.k = k;
    const double flops = 2.0 * rows * n * static_cast<double>(k);
    r.work = {flops, (static_cast<double>(rows) * k + static_cast<double>(active) * n * k +
                      static_cast<double>(rows) * n) *
                         2.0};
    r.ref_tflops = flops / (dense_own_us * 1e-6) / 1e12;
    r.ref2_tflops = flops / (dense_lt_us * 1e-6) / 1e12;
    r.check = chk.detail + "; active experts " + std::to_string(active);
    time_and_record(st, r, launch);
  });
}

void run_unpermute(benchmark::State& st, const MoeCase& cs, const std::string& name) {
  guarded(st, name, [&] {
    Routing rt(cs.s, cs.tokens);
    FK_CHECK(moe_router_topk(rt.logits.get(), cs.tokens, cs.s.experts, cs.s.top_k, true,
                             rt.ids.get(), rt.weights.get(), nullptr));
    FK_CHECK(moe_permute(rt.x.get(), rt.ids.get(), cs.tokens, cs.s.top_k, cs.s.hidden, cs.s.experts,
                         rt.scratch(), rt.dst.get(), rt.x_perm.get(), nullptr));
    // y_perm: random expert outputs [tokens·top_k][hidden].
    const std::size_t rows = static_cast<std::size_t>(cs.tokens) * cs.s.top_k;
    DeviceBuffer<bf16_bits> y(rows * cs.s.hidden),
        out(static_cast<std::size_t>(cs.tokens) * cs.s.hidden);
    FK_CHECK(fill_random_bf16(y.get(), y.size(), fresh_seed(), 1.0f, nullptr));
    auto launch = [&] {
      FK_CHECK(moe_unpermute(y.get(), rt.dst.get(), rt.weights.get(), cs.tokens, cs.s.top_k,
                             cs.s.hidden, out.get(), nullptr));
    };
    out.poison();
    launch();
    FK_CHECK(cudaDeviceSynchronize());
    const CheckResult chk = check_unpermute(rt.dst.to_host(), rt.weights.to_host(), cs.tokens,
                                            cs.s.top_k, cs.s.hidden, y.get(), out.get(), 16);
    if (!chk.ok) return validation_failed(st, name, chk);
    Result r = base_result("moe_unpermute", cs, "weighted combine");
    r.work = {2.0 * static_cast<double>(rows) * cs.s.hidden,
              (static_cast<double>(rows) + cs.tokens) * cs.s.hidden * 2.0 +
                  static_cast<double>(rows) * 8.0};
    r.check = chk.detail;
    time_and_record(st, r, launch);
  });
}

}  // namespace

void release_caches() {
  weights_cache().w.reset();
  weights_cache().key.clear();
}

void register_moe() {
  Context& c = ctx();
  const hw::Catalog cat = hw::Catalog::load(c.opt.catalog_dir);
  std::vector<MoeShape> models;
  for (const char* id : {"mixtral-8x7b", "deepseek-v3"}) models.push_back(model_moe(cat.model(id)));
  std::vector<int> tokens = {1, 16, 128, 1024, 4096, 16384};
  if (c.opt.quick) tokens = {128, 4096};
  if (c.opt.smoke) {
    models = {{"smoke-moe", 8, 2, 64, 64}, {"smoke-moe-256", 256, 8, 64, 32}};
    tokens = {3, 40};
  }
  std::size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  // Smoke: the 256-expert model at 3 tokens only (every expert tile is emulated).
  auto tokens_of = [&](const MoeShape& m) {
    return c.opt.smoke && m.experts > 8 ? std::vector<int>{3} : tokens;
  };
  // Grouped by stage so that each expert weight matrix is generated once for all token counts.
  for (const auto& m : models) {
    for (int t : tokens_of(m)) {
      const MoeCase cs{m, t};
      const std::string nm = "moe_router/own/" + m.model;
      add(nm, reps_for(20),
          [cs, nm](benchmark::State& st) {
            run_router(st, cs, nm + "/tokens:" + std::to_string(cs.tokens));
          })
          ->ArgNames({"tokens"})
          ->Args({t});
    }
    for (int t : tokens_of(m)) {
      const MoeCase cs{m, t};
      const double rows = static_cast<double>(t) * m.top_k;
      const std::string nm = "moe_permute/own/" + m.model;
      add(nm, reps_for(estimate_us({0, rows * m.hidden * 4.0})),
          [cs, nm](benchmark::State& st) {
            run_permute(st, cs, nm + "/tokens:" + std::to_string(cs.tokens));
          })
          ->ArgNames({"tokens"})
          ->Args({t});
    }
    for (bool gate_up : {true, false})
      for (int t : tokens_of(m)) {
        const MoeCase cs{m, t};
        const double rows = static_cast<double>(t) * m.top_k;
        const double n = gate_up ? 2.0 * m.expert_ffn : m.hidden,
                     k = gate_up ? m.hidden : m.expert_ffn;
        const double need = m.experts * n * k * 2 + rows * (k + 3 * n) * 2 + rows * m.hidden * 2;
        if (need > 0.7 * static_cast<double>(free_b)) continue;
        for (bool wg : {false, true}) {
          if (wg && !gemm_wgmma_supported()) continue;
          const std::string nm = std::string("moe_grouped_gemm/") + (wg ? "own_wgmma/" : "own/") +
                                 m.model + (gate_up ? ":gate_up" : ":down");
          add(nm, reps_for(estimate_us({2 * rows * n * k, m.experts * n * k * 2.0}) * 2),
              [cs, gate_up, wg, nm](benchmark::State& st) {
                run_grouped(st, cs, gate_up, wg, nm + "/tokens:" + std::to_string(cs.tokens));
              })
              ->ArgNames({"tokens"})
              ->Args({t});
        }
      }
    for (int t : tokens_of(m)) {
      const MoeCase cs{m, t};
      const double rows = static_cast<double>(t) * m.top_k;
      const std::string nm = "moe_unpermute/own/" + m.model;
      add(nm, reps_for(estimate_us({0, rows * m.hidden * 2.0})),
          [cs, nm](benchmark::State& st) {
            run_unpermute(st, cs, nm + "/tokens:" + std::to_string(cs.tokens));
          })
          ->ArgNames({"tokens"})
          ->Args({t});
    }
  }
}

}  // namespace fleetsim::kernels::bench
