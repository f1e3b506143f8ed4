// Shared state of the kernel benchmarks: the device, its catalog peaks, the timer and the
// cuBLASLt handle, and the measured results that end up in the calibration CSVs.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/catalog.h"
#include "kernels/common/roofline.h"
#include "kernels/cuda/kernels.h"
#include "kernels/harness/checks.h"
#include "kernels/harness/device.h"

namespace fleetsim::kernels::bench {

struct Options {
  std::string out_dir = "kernel-results";
  std::string gpu_id;       ///< catalog id override
  std::string driver;       ///< NVIDIA driver version (run_calibration.sh passes nvidia-smi's)
  std::string source_sha;   ///< git sha for the provenance
  std::string catalog_dir;  ///< default: hw_models::Catalog::default_dir()
  std::string sections = "gemm,attention,moe";
  bool quick = false;  ///< fewer shapes and runs
  bool smoke = false;  ///< tiny synthetic shapes, 3 runs: tests the harness itself (the
                       ///< emulated build runs it in CI)
  bool has_section(const std::string& s) const;
};

/// One measured kernel at one shape.
struct Result {
  std::string
      section;  ///< gemm | attn_prefill | attn_decode | moe_router | moe_permute | moe_grouped_gemm | moe_unpermute
  std::string impl;   ///< cublaslt_bf16 | cublaslt_fp8 | own_bf16 | own
  std::string dtype;  ///< bf16 | fp8
  std::string model;  ///< catalog model id (or "square")
  std::string label;  ///< projection / shape label
  long m = -1, n = -1, k = -1;
  long batch = -1, q_len = -1, kv_len = -1, heads = -1, kv_heads = -1, head_dim = -1;
  int causal = -1;
  long tokens = -1, experts = -1, top_k = -1;
  int reps = 0;
  double median_us = 0, min_us = 0, max_us = 0;
  Work work;
  double tflops = 0, gbps = 0;
  double frac_flops = 0, frac_bw = 0, frac_roofline = 0;  ///< of the catalog peaks (0: unknown GPU)
  std::string check;                                      ///< validation summary
  double ref_tflops = 0;   ///< MoE: own dense GEMM at the same total tokens; own GEMM: cuBLASLt
  double ref2_tflops = 0;  ///< MoE: cuBLASLt dense at the same total tokens
  std::string note;
};

struct Context {
  Options opt;
  DeviceInfo dev;
  std::optional<hw::GpuSpec> gpu;  ///< catalog spec of the detected GPU
  std::unique_ptr<Timer> timer;
  CublasLt* lt = nullptr;
  std::vector<Result> results;
  std::vector<std::string> failures;
  double bf16_peak() const;  ///< catalog dense BF16 FLOP/s (a default when unknown)
  double fp8_peak() const;
  double bw_peak() const;
};

Context& ctx();

/// Runs a benchmark body, turning exceptions and failed checks into SkipWithError plus a
/// recorded failure (so the run ends with a non-zero exit code).
void guarded(benchmark::State& st, const std::string& name, const std::function<void()>& body);

/// Records a failed validation and skips the benchmark.
void validation_failed(benchmark::State& st, const std::string& name, const CheckResult& r);

/// The timing loop: `warmup` untimed runs, then one event-timed run per benchmark
/// iteration (L2 flushed first). Fills r.reps, median/min/max and the derived rates, sets
/// the counters and stores r in the context.
void time_and_record(benchmark::State& st, Result r, const std::function<void()>& launch,
                     int warmup = 2);

/// Iterations for a kernel expected to take `est_us`: about 150 ms of timed runs, 5..30
/// (3 in quick mode).
int reps_for(double est_us);
/// A rough time estimate at 60 % of the catalog peaks (used only to size the repetitions).
double estimate_us(const Work& w, bool fp8 = false);

/// Registers a manual-time benchmark with fixed iterations.
benchmark::internal::Benchmark* add(const std::string& name, int iterations,
                                    std::function<void(benchmark::State&)> fn);

void register_gemm();
void register_attention();
void register_moe();
/// Frees device memory the benchmarks keep between runs (MoE expert weights).
void release_caches();

/// Writes results.csv, the calibration CSVs, moe.csv and summary.md; returns the summary
/// table text.
std::string write_outputs();

}  // namespace fleetsim::kernels::bench
