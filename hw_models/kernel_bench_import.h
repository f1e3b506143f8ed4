// Calibration tables from the kernel benchmarks people already run: the JSON that Google
// Benchmark writes (--benchmark_format=json or --benchmark_out=FILE) and the JSON that
// NVIDIA's nvbench writes (--json FILE). Each benchmark run (Google Benchmark) or state
// (nvbench) becomes one row of a calibration table (hw_models/calibration/README.md) for one
// GPU, operator and dtype; `fleetsim calibrate import-kernels` writes the table, and
// `fleetsim calibrate import` checks and installs it.
//
// A row's shape comes from fields named as the table's columns (m, n, k, batch, q_len,
// kv_len, heads, kv_heads, head_dim, causal; case does not matter): Google Benchmark user
// counters, nvbench axes (a "{io}"-style suffix is dropped), or the /-separated arguments
// of a Google Benchmark name ("BM_Gemm/4096/4096/4096") named in order by `args`. Its time:
// Google Benchmark's real_time (a GPU benchmark reports the kernel's time there with
// UseManualTime), the median aggregate where the file has one, else the median of the
// repetitions; nvbench's mean cold GPU time (summary nv/cold/time/gpu/mean). Runs of one
// shape are combined by their median.
#pragma once

#include <string>
#include <vector>

#include "hw_models/catalog.h"

namespace fleetsim::hw {

struct KernelBenchImportOptions {
  std::string gpu;    ///< catalog GPU id (required)
  std::string op;     ///< gemm, attn_prefill or attn_decode (required)
  std::string dtype;  ///< bf16, fp16, fp8 or fp4 (required)
  /// Names for a Google Benchmark name's arguments after the first '/', in order.
  std::vector<std::string> args;
  std::string match;   ///< only benchmarks whose name contains this ("" = all)
  std::string source;  ///< provenance; default: "<file name> (Google Benchmark|nvbench JSON)"
  std::string date;    ///< YYYY-MM-DD; default: Google Benchmark's context date
  std::string driver = "unknown (not given)", cuda = "unknown (not given)";
};

struct KernelBenchImport {
  std::string format;  ///< "Google Benchmark" or "nvbench"
  std::string text;    ///< the calibration table
  int rows = 0;        ///< shapes written
  int runs = 0;        ///< benchmark runs or states read into them
  int skipped = 0;     ///< runs left out: errored, skipped, an aggregate other than the median
};

/// Reads `path` and builds the table. InputError, naming the file and the benchmark, for
/// anything it cannot use: not JSON of either kind, an unknown GPU, op or dtype, a run
/// without one of the op's shape fields (the hint names the counter or --args to add), a
/// time that is not positive, no run left to import.
KernelBenchImport import_kernel_bench(const std::string& path, const KernelBenchImportOptions& opt,
                                      const Catalog& catalog);

}  // namespace fleetsim::hw
