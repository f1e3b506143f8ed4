#include "kernels/bench/bench_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "hw_models/calibration.h"
#include "hw_models/error.h"
#include "kernels/common/calib_csv.h"

namespace fleetsim::kernels::bench {

bool Options::has_section(const std::string& s) const {
  return ("," + sections + ",").find("," + s + ",") != std::string::npos;
}

Context& ctx() {
  static Context c;
  return c;
}

double Context::bf16_peak() const {
  return gpu && gpu->bf16_flops_per_s > 0 ? gpu->bf16_flops_per_s : 989.4e12;
}
double Context::fp8_peak() const {
  return gpu && gpu->fp8_flops_per_s > 0 ? gpu->fp8_flops_per_s : 2 * bf16_peak();
}
double Context::bw_peak() const {
  return gpu && gpu->memory_bw_bytes_per_s > 0 ? gpu->memory_bw_bytes_per_s : 3.35e12;
}

void guarded(benchmark::State& st, const std::string& name, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    ctx().failures.push_back(name + ": " + e.what());
    st.SkipWithError(e.what());
    cudaGetLastError();
  }
}

void validation_failed(benchmark::State& st, const std::string& name, const CheckResult& r) {
  ctx().failures.push_back(name + ": validation failed: " + r.detail);
  st.SkipWithError(("validation failed: " + r.detail).c_str());
}

double estimate_us(const Work& w, bool fp8) {
  const Context& c = ctx();
  const double peak = fp8 ? c.fp8_peak() : c.bf16_peak();
  return 1e6 * std::max(w.flops / (0.6 * peak), w.bytes / (0.6 * c.bw_peak())) + 5.0;
}

int reps_for(double est_us) {
  if (ctx().opt.quick || ctx().opt.smoke) return 3;
  const double r = 150e3 / std::max(est_us, 1.0);
  return static_cast<int>(std::clamp(r, 5.0, 30.0));
}

benchmark::internal::Benchmark* add(const std::string& name, int iterations,
                                    std::function<void(benchmark::State&)> fn) {
  return benchmark::RegisterBenchmark(name.c_str(), [fn](benchmark::State& st) { fn(st); })
      ->UseManualTime()
      ->Iterations(iterations)
      ->Unit(benchmark::kMicrosecond);
}

void time_and_record(benchmark::State& st, Result r, const std::function<void()>& launch,
                     int warmup) {
  Context& c = ctx();
  if (c.opt.smoke) warmup = 1;
  for (int i = 0; i < warmup; ++i) launch();
  FK_CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (auto _ : st) {
    c.timer->flush_l2();
    FK_CHECK(gpu_spin(50.0, nullptr));
    cudaEvent_t a, b;
    FK_CHECK(cudaEventCreate(&a));
    FK_CHECK(cudaEventCreate(&b));
    FK_CHECK(cudaEventRecord(a, nullptr));
    launch();
    FK_CHECK(cudaEventRecord(b, nullptr));
    FK_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    FK_CHECK(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    const double us = static_cast<double>(ms) * 1e3;
    st.SetIterationTime(us * 1e-6);
    t.push_back(us);
  }
  FK_CHECK(cudaGetLastError());
  if (t.empty()) return;
  r.reps = static_cast<int>(t.size());
  r.median_us = median(t);
  r.min_us = *std::min_element(t.begin(), t.end());
  r.max_us = *std::max_element(t.begin(), t.end());
  const double s = r.median_us * 1e-6;
  r.tflops = r.work.flops / s / 1e12;
  r.gbps = r.work.bytes / s / 1e9;
  if (c.gpu) {
    const double peak = r.dtype == "fp8" ? c.fp8_peak() : c.bf16_peak();
    r.frac_flops = r.work.flops / s / peak;
    r.frac_bw = r.work.bytes / s / c.bw_peak();
    r.frac_roofline = roofline_fraction(r.work, {peak, c.bw_peak()}, s);
  }
  st.counters["median_us"] = r.median_us;
  st.counters["TFLOPs"] = r.tflops;
  st.counters["GBps"] = r.gbps;
  if (c.gpu) {
    st.counters["frac_peak_flops"] = r.frac_flops;
    st.counters["frac_peak_bw"] = r.frac_bw;
  }
  if (r.ref_tflops > 0) st.counters["ref_TFLOPs"] = r.ref_tflops;
  c.results.push_back(std::move(r));
}

// ---- outputs ------------------------------------------------------------------------------

namespace {

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string fmt(double v, int prec = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

std::string opt_num(long v) { return v < 0 ? std::string() : std::to_string(v); }

CalibRow to_calib(const Result& r, const std::string& sha) {
  CalibRow c;
  c.op = r.section;
  c.dtype = r.dtype;
  c.m = r.m;
  c.n = r.n;
  c.k = r.k;
  c.batch = r.batch;
  c.q_len = r.q_len;
  c.kv_len = r.kv_len;
  c.heads = r.heads;
  c.kv_heads = r.kv_heads;
  c.head_dim = r.head_dim;
  c.causal = r.causal;
  c.time_us = r.median_us;
  c.citation = "fleetsim kernels " + sha + " " + r.impl + " " + r.model + " " + r.label +
               ": median of " + std::to_string(r.reps) + " runs (min " + fmt(r.min_us) +
               " us), L2 flushed, validated";
  return c;
}

}  // namespace

std::string write_outputs() {
  Context& c = ctx();
  namespace fs = std::filesystem;
  fs::create_directories(c.opt.out_dir);
  const std::string sha = c.opt.source_sha.empty() ? "unknown-sha" : c.opt.source_sha;
  // The own GEMM's reference rate: cuBLASLt BF16 at the same shape.
  for (auto& r : c.results)
    if (r.section == "gemm" && (r.impl == "own_bf16" || r.impl == "own_wgmma_bf16"))
      for (const auto& q : c.results)
        if (q.section == "gemm" && q.impl == "cublaslt_bf16" && q.m == r.m && q.n == r.n &&
            q.k == r.k)
          r.ref_tflops = q.tflops;

  // results.csv: everything, with all metrics.
  {
    std::ofstream f(c.opt.out_dir + "/results.csv");
    f << "section,impl,dtype,model,label,m,n,k,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,"
         "tokens,experts,top_k,reps,median_us,min_us,max_us,flops,bytes,tflops,gbps,frac_peak_"
         "flops,"
         "frac_peak_bw,frac_roofline,ref_tflops,ref2_tflops,check\n";
    for (const auto& r : c.results)
      f << r.section << ',' << r.impl << ',' << r.dtype << ',' << r.model << ','
        << csv_field(r.label) << ',' << opt_num(r.m) << ',' << opt_num(r.n) << ',' << opt_num(r.k)
        << ',' << opt_num(r.batch) << ',' << opt_num(r.q_len) << ',' << opt_num(r.kv_len) << ','
        << opt_num(r.heads) << ',' << opt_num(r.kv_heads) << ',' << opt_num(r.head_dim) << ','
        << (r.causal < 0 ? "" : std::to_string(r.causal)) << ',' << opt_num(r.tokens) << ','
        << opt_num(r.experts) << ',' << opt_num(r.top_k) << ',' << r.reps << ',' << fmt(r.median_us)
        << ',' << fmt(r.min_us) << ',' << fmt(r.max_us) << ',' << r.work.flops << ','
        << r.work.bytes << ',' << fmt(r.tflops, 2) << ',' << fmt(r.gbps, 1) << ','
        << fmt(r.frac_flops, 4) << ',' << fmt(r.frac_bw, 4) << ',' << fmt(r.frac_roofline, 4) << ','
        << fmt(r.ref_tflops, 2) << ',' << fmt(r.ref2_tflops, 2) << ',' << csv_field(r.check)
        << "\n";
  }

  std::ostringstream summary;
  summary << "# fleetsim kernels on " << c.dev.name << " ("
          << (c.gpu ? c.gpu->id : "not in the catalog") << "), " << c.dev.sm_count
          << " SMs, CUDA runtime " << cuda_version_string(c.dev.runtime_version) << ", driver "
          << (c.opt.driver.empty() ? "unknown" : c.opt.driver) << ", " << today_utc() << ", " << sha
          << "\n\n";

  // Calibration tables: GEMM through cuBLASLt (what engines get from the library), the
  // own GEMM separately (import one GEMM table, not both), and the own attention kernels.
  if (c.gpu) {
    CalibProvenance prov;
    prov.gpu = c.gpu->id;
    prov.source = "fleetsim kernels " + sha;
    prov.driver =
        c.opt.driver.empty() ? "unknown (nvidia-smi not available to the harness)" : c.opt.driver;
    prov.cuda = "CUDA runtime " + cuda_version_string(c.dev.runtime_version) + ", driver API " +
                cuda_version_string(c.dev.driver_version) + ", cuBLASLt " +
                cublaslt_version_string() + ", nvcc " + std::string(FLEETSIM_NVCC_VERSION) +
                " (sm_" + std::string(FLEETSIM_CUDA_ARCHS) + ")";
    prov.date = today_utc();
    const std::string common = "Measured by kernels/run_calibration.sh on " + c.dev.name + " (" +
                               std::to_string(c.dev.sm_count) + " SMs, compute capability " +
                               std::to_string(c.dev.cc_major) + "." +
                               std::to_string(c.dev.cc_minor) +
                               "); clocks as found (not locked). Each time is the median of "
                               "event-timed runs after warm-up, each run "
                               "preceded by an L2 flush (memset of 2x the L2 size) and a spin "
                               "kernel that hides launch latency; every "
                               "shape validated against the CPU reference (sampled rows/columns, "
                               "fresh random inputs, outputs poisoned) "
                               "before timing.";
    struct Table {
      std::string file, notes;
      std::function<bool(const Result&)> pick;
    };
    const std::vector<Table> tables = {
        {c.gpu->id + "-kernels-gemm-cublaslt.csv",
         "cuBLASLt " + cublaslt_version_string() +
             " BF16 and FP8 (e4m3 in, bf16 out, per-tensor scale 1, default accumulation) GEMMs, C "
             "= A*W^T, "
             "TN layout, first heuristic algorithm, 32 MiB workspace. " +
             common,
         [](const Result& r) { return r.section == "gemm" && r.impl.rfind("cublaslt", 0) == 0; }},
        {c.gpu->id + "-kernels-gemm-own.csv",
         "The project's own WMMA BF16 GEMM (kernels/cuda/gemm_tiled.cu, 128x128x32 tiles, 4-stage "
         "cp.async), "
         "not a library: import either this or the cuBLASLt table for GEMMs, not both. " +
             common,
         [](const Result& r) { return r.section == "gemm" && r.impl == "own_bf16"; }},
        {c.gpu->id + "-kernels-gemm-own-wgmma.csv",
         "The project's own Hopper BF16 GEMM (kernels/cuda/gemm_wgmma.cu, sm_90a: TMA with "
         "128-byte swizzle into a 4-stage mbarrier ring, wgmma m64n256k16, 128x256x64 tiles, 1 "
         "producer + 2 consumer warpgroups), not a library: import one GEMM table only. " +
             common,
         [](const Result& r) { return r.section == "gemm" && r.impl == "own_wgmma_bf16"; }},
        {c.gpu->id + "-kernels-attention.csv",
         "The project's own attention kernels (kernels/cuda/attn_prefill.cu: "
         "FlashAttention-2-style mma.sync, "
         "no wgmma/TMA; kernels/cuda/attn_decode.cu: paged KV cache, 16-token pages, split-K), "
         "BF16, head dim "
         "128; slower than FlashAttention-3/FlashInfer on Hopper, so a conservative calibration. " +
             common,
         [](const Result& r) { return r.section == "attn_prefill" || r.section == "attn_decode"; }},
    };
    hw::Catalog catalog = hw::Catalog::load(c.opt.catalog_dir);
    for (const auto& t : tables) {
      std::vector<CalibRow> rows;
      int dropped = 0;
      for (const auto& r : c.results) {
        if (!t.pick(r)) continue;
        if (r.frac_roofline > 1.0) {  // faster than the datasheet roofline: not a valid row
          ++dropped;
          continue;
        }
        rows.push_back(to_calib(r, sha));
      }
      if (rows.empty()) continue;
      CalibProvenance p = prov;
      p.notes = t.notes;
      const std::string path = c.opt.out_dir + "/" + t.file;
      write_calibration_csv(path, p, rows);
      summary << "- " << t.file << ": " << rows.size() << " rows";
      if (dropped) summary << " (" << dropped << " rows above the datasheet roofline dropped)";
      try {
        const auto loaded = hw::load_calibration(path, catalog);
        summary << ", read back by the simulator's loader: " << loaded.rows.size() << " rows OK\n";
      } catch (const InputError& e) {
        summary << ", REJECTED by the simulator's loader: " << e.what() << "\n";
        c.failures.push_back(t.file + " rejected by hw_models::load_calibration: " + e.what());
      }
    }
  } else {
    summary << "- no calibration CSV: the GPU '" << c.dev.name
            << "' has no catalog id (pass --gpu-id=ID to name one)\n";
  }

  // MoE results: not a calibration operator; a plain table (only when the MoE section ran).
  if (std::any_of(c.results.begin(), c.results.end(),
                  [](const Result& r) { return r.section.rfind("moe_", 0) == 0; })) {
    std::ofstream f(c.opt.out_dir + "/moe.csv");
    f << "stage,model,tokens,experts,top_k,n,k,median_us,tflops,gbps,dense_own_tflops,dense_"
         "cublaslt_tflops,check\n";
    for (const auto& r : c.results)
      if (r.section.rfind("moe_", 0) == 0)
        f << r.section << ',' << r.model << ',' << r.tokens << ',' << r.experts << ',' << r.top_k
          << ',' << opt_num(r.n) << ',' << opt_num(r.k) << ',' << fmt(r.median_us) << ','
          << fmt(r.tflops, 2) << ',' << fmt(r.gbps, 1) << ',' << fmt(r.ref_tflops, 2) << ','
          << fmt(r.ref2_tflops, 2) << ',' << csv_field(r.check) << "\n";
  }

  // The kernels' performance targets.
  auto find = [&](const std::function<bool(const Result&)>& f) -> const Result* {
    for (const auto& r : c.results)
      if (f(r)) return &r;
    return nullptr;
  };
  summary << "\n| target | goal | measured |\n|---|---|---|\n";
  const Result* lt8k = find([](const Result& r) {
    return r.section == "gemm" && r.impl == "cublaslt_bf16" && r.m == 8192 && r.n == 8192 &&
           r.k == 8192;
  });
  const Result* own8k = find([](const Result& r) {
    return r.section == "gemm" && r.impl == "own_bf16" && r.m == 8192 && r.n == 8192 && r.k == 8192;
  });
  const Result* wg8k = find([](const Result& r) {
    return r.section == "gemm" && r.impl == "own_wgmma_bf16" && r.m == 8192 && r.n == 8192 &&
           r.k == 8192;
  });
  const Result* fp88k = find([](const Result& r) {
    return r.section == "gemm" && r.impl == "cublaslt_fp8" && r.m == 8192 && r.n == 8192 &&
           r.k == 8192;
  });
  summary << "| cuBLASLt BF16 at 8192^3 | >= 600 TFLOP/s | "
          << (lt8k ? fmt(lt8k->tflops, 1) + " TFLOP/s" : "n/a") << " |\n";
  if (fp88k)
    summary << "| (cuBLASLt FP8 at 8192^3) | - | " << fmt(fp88k->tflops, 1) << " TFLOP/s |\n";
  {
    // Own GEMM vs cuBLASLt at large shapes (m >= 4096): median ratio over the shapes.
    std::vector<double> ratios;
    for (const auto& r : c.results)
      if (r.section == "gemm" && r.impl == "own_bf16" && r.m >= 4096 && r.ref_tflops > 0)
        ratios.push_back(r.tflops / r.ref_tflops);
    summary << "| own GEMM / cuBLASLt, large shapes | >= 60 % | "
            << (own8k && lt8k ? fmt(100 * own8k->tflops / lt8k->tflops, 1) + " % at 8192^3; " : "")
            << (ratios.empty() ? "n/a"
                               : fmt(100 * median(ratios), 1) + " % median over " +
                                     std::to_string(ratios.size()) + " shapes with m >= 4096")
            << " |\n";
  }
  {
    // The same for the Hopper wgmma GEMM (only where it ran: compute capability 9.0).
    std::vector<double> ratios;
    for (const auto& r : c.results)
      if (r.section == "gemm" && r.impl == "own_wgmma_bf16" && r.m >= 4096 && r.ref_tflops > 0)
        ratios.push_back(r.tflops / r.ref_tflops);
    if (wg8k || !ratios.empty())
      summary << "| own wgmma GEMM / cuBLASLt, large shapes | >= 60 % | "
              << (wg8k && lt8k ? fmt(100 * wg8k->tflops / lt8k->tflops, 1) + " % at 8192^3 (" +
                                     fmt(wg8k->tflops, 1) + " TFLOP/s); "
                               : "")
              << (ratios.empty() ? "n/a"
                                 : fmt(100 * median(ratios), 1) + " % median over " +
                                       std::to_string(ratios.size()) + " shapes with m >= 4096")
              << " |\n";
  }
  {
    std::string s;
    for (const auto& r : c.results)
      if (r.section == "attn_prefill" && r.q_len == 8192 && r.kv_len == 8192)
        s += (s.empty() ? "" : "; ") + fmt(r.tflops, 1) + " TFLOP/s (" + r.model + ", " +
             std::to_string(r.heads) + "/" + std::to_string(r.kv_heads) + " heads)";
    summary << "| prefill attention at 8k context | >= 300 TFLOP/s | " << (s.empty() ? "n/a" : s)
            << " |\n";
  }
  {
    std::vector<double> f;
    for (const auto& r : c.results)
      if (r.section == "attn_decode" && r.batch >= 32 && r.kv_len >= 4096) f.push_back(r.frac_bw);
    std::string s = "n/a";
    if (!f.empty())
      s = "median " + fmt(100 * median(f), 1) + " %, min " +
          fmt(100 * *std::min_element(f.begin(), f.end()), 1) + " % of " +
          fmt(c.bw_peak() / 1e12, 2) + " TB/s over " + std::to_string(f.size()) + " shapes";
    summary << "| decode attention, batch >= 32, context >= 4k | >= 70 % of HBM bandwidth | " << s
            << " |\n";
  }
  // Against the own dense GEMM of the same mainloop and against cuBLASLt's dense rate; one
  // line per grouped-GEMM implementation (issue 8: >= 50 % of the dense rate; issue 16: the
  // wgmma one >= 70 % of cuBLASLt's).
  for (const std::string impl : {"own", "own_wgmma"}) {
    std::vector<double> f, f_lt;
    for (const auto& r : c.results)
      if (r.section == "moe_grouped_gemm" && r.impl == impl && r.ref_tflops > 0 &&
          r.tokens >= 1024) {
        f.push_back(r.tflops / r.ref_tflops);
        if (r.ref2_tflops > 0) f_lt.push_back(r.tflops / r.ref2_tflops);
      }
    if (impl == "own_wgmma" && f.empty()) continue;
    summary << "| MoE grouped GEMM (" << impl
            << ") / dense GEMM at the same total tokens (tokens >= 1024) | "
            << (impl == "own" ? ">= 50 %" : ">= 70 % of cuBLASLt") << " | "
            << (f.empty() ? "n/a"
                          : "median " + fmt(100 * median(f), 1) + " % of the own dense GEMM over " +
                                std::to_string(f.size()) + " shapes" +
                                (f_lt.empty() ? ""
                                              : "; " + fmt(100 * median(f_lt), 1) +
                                                    " % of cuBLASLt's dense rate"))
            << " |\n";
  }

  // A compact per-section table.
  summary << "\n| section | impl | shape | median us | TFLOP/s | GB/s | of roofline "
             "|\n|---|---|---|---|---|---|---|\n";
  for (const auto& r : c.results) {
    std::string shape;
    if (r.section == "gemm")
      shape = r.model + " " + r.label + " m=" + std::to_string(r.m) + " n=" + std::to_string(r.n) +
              " k=" + std::to_string(r.k);
    else if (r.section == "attn_prefill")
      shape = r.model + " b=" + std::to_string(r.batch) + " q=" + std::to_string(r.q_len) +
              " kv=" + std::to_string(r.kv_len);
    else if (r.section == "attn_decode")
      shape = r.model + " b=" + std::to_string(r.batch) + " kv=" + std::to_string(r.kv_len);
    else
      shape = r.model + " " + r.label + " tokens=" + std::to_string(r.tokens);
    summary << "| " << r.section << " | " << r.impl << " | " << shape << " | "
            << fmt(r.median_us, 1) << " | " << fmt(r.tflops, 1) << " | " << fmt(r.gbps, 0) << " | "
            << (c.gpu ? fmt(100 * r.frac_roofline, 1) + " %" : "-") << " |\n";
  }
  if (!c.failures.empty()) {
    summary << "\n## FAILURES (" << c.failures.size() << ")\n";
    for (const auto& f : c.failures) summary << "- " << f << "\n";
  }
  std::ofstream(c.opt.out_dir + "/summary.md") << summary.str();
  return summary.str();
}

}  // namespace fleetsim::kernels::bench
