// Tests for hw_models/kernel_bench_import: calibration tables from Google Benchmark and
// nvbench JSON. The fixtures are written as the two tools write them (Google Benchmark's
// JSONReporter: name, run_name, run_type, aggregate_name, real_time, time_unit, user
// counters as fields; nvbench's json_printer: benchmarks[].states[] with axis_values and
// summaries), with times chosen by hand; every expected row is worked out in a comment.
#include "hw_models/kernel_bench_import.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "hw_models/calibration.h"
#include "hw_models/error.h"
#include "hw_test_util.h"

namespace fleetsim::hw {
namespace {

std::string write(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "fleetsim_kernel_bench_import_test";
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

std::string error_of(const std::string& path, const KernelBenchImportOptions& opt) {
  try {
    (void)import_kernel_bench(path, opt, test_util::catalog());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

KernelBenchImportOptions gemm_on_h100() {
  KernelBenchImportOptions o;
  o.gpu = "h100-sxm";
  o.op = "gemm";
  o.dtype = "bf16";
  return o;
}

// Two GEMM shapes with 3 repetitions and their aggregates: one shape in the name's
// arguments, one in counters (which win over the name).
const char* kGoogleAggregates = R"({
  "context": {"date": "2026-11-30T10:15:00+00:00", "host_name": "h", "executable": "./gemm_bench",
              "num_cpus": 16, "library_build_type": "release"},
  "benchmarks": [
    {"name": "BM_Gemm/4096/4096/4096/manual_time", "family_index": 0, "run_name": "BM_Gemm/4096/4096/4096/manual_time",
     "run_type": "iteration", "repetitions": 3, "repetition_index": 0, "iterations": 100,
     "real_time": 1.40, "cpu_time": 0.01, "time_unit": "ms"},
    {"name": "BM_Gemm/4096/4096/4096/manual_time_mean", "run_name": "BM_Gemm/4096/4096/4096/manual_time",
     "run_type": "aggregate", "aggregate_name": "mean", "real_time": 1.45, "time_unit": "ms"},
    {"name": "BM_Gemm/4096/4096/4096/manual_time_median", "run_name": "BM_Gemm/4096/4096/4096/manual_time",
     "run_type": "aggregate", "aggregate_name": "median", "real_time": 1.5, "time_unit": "ms"},
    {"name": "BM_Gemm/4096/4096/4096/manual_time_stddev", "run_name": "BM_Gemm/4096/4096/4096/manual_time",
     "run_type": "aggregate", "aggregate_name": "stddev", "real_time": 0.05, "time_unit": "ms"},
    {"name": "BM_Gemm/1/2/3/manual_time_median", "run_name": "BM_Gemm/1/2/3/manual_time",
     "run_type": "aggregate", "aggregate_name": "median", "real_time": 50000, "time_unit": "ns",
     "M": 16, "N": 8192, "K": 8192}
  ]
})";

TEST(KernelBenchImport, GoogleBenchmarkMediansWithArgumentsOrCounters) {
  const std::string path = write("gbench.json", kGoogleAggregates);
  KernelBenchImportOptions o = gemm_on_h100();
  o.args = {"m", "n", "k"};
  const KernelBenchImport t = import_kernel_bench(path, o, test_util::catalog());
  EXPECT_EQ(t.format, "Google Benchmark");
  // The two median aggregates; the iteration run, the mean and the stddev left out.
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.runs, 2);
  EXPECT_EQ(t.skipped, 3);
  // 1.5 ms = 1500 us; the second: counters M, N, K = 16, 8192, 8192 win over the name's
  // 1/2/3, 50,000 ns = 50 us (it streams (16·8192·2 + 8192²)·2 B = 134.7 MB: 40.2 us at
  // the H100's 3.35 TB/s, 0.80 of it). The date is the context's day.
  EXPECT_NE(t.text.find("\ngemm,bf16,4096,4096,4096,,,,,,,,1500,\"gbench.json: "
                        "BM_Gemm/4096/4096/4096/manual_time\"\n"),
            std::string::npos)
      << t.text;
  EXPECT_NE(t.text.find("\ngemm,bf16,16,8192,8192,,,,,,,,50,"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("# date: 2026-11-30\n"), std::string::npos) << t.text;
  // The table loads as `calibrate import` loads it: 2·4096³ = 1.374e11 FLOPs in 1.5 ms is
  // 91.6 TFLOP/s, 0.0926 of the H100's 989 TFLOP/s BF16 peak.
  const std::string table = write("gbench.csv", t.text);
  const CalibrationTable ct = load_calibration(table, test_util::catalog());
  ASSERT_EQ(ct.rows.size(), 2u);
  test_util::expect_rel(ct.rows[0].time_s, 1.5e-3);
  test_util::expect_rel(ct.rows[0].flops, 2.0 * 4096 * 4096 * 4096);
  EXPECT_NEAR(ct.rows[0].fraction, 2.0 * 4096 * 4096 * 4096 / 989e12 / 1.5e-3, 1e-3);
  EXPECT_NEAR(ct.rows[1].fraction, (16.0 * 8192 * 2 + 8192.0 * 8192) * 2 / 3.35e12 / 50e-6, 1e-2);
}

TEST(KernelBenchImport, GoogleBenchmarkRepetitionsWithoutAggregatesTakeTheirMedian) {
  // --benchmark_report_aggregates_only not given and no aggregates: the three repetitions
  // of one shape (30, 10, 20 us) give their median, 20 us.
  const std::string path = write("reps.json", R"({"context": {"date": "2026-11-30"},
    "benchmarks": [
      {"name": "gemm", "run_name": "gemm", "run_type": "iteration", "real_time": 30, "time_unit": "us", "m": 128, "n": 4096, "k": 4096},
      {"name": "gemm", "run_name": "gemm", "run_type": "iteration", "real_time": 10, "time_unit": "us", "m": 128, "n": 4096, "k": 4096},
      {"name": "gemm", "run_name": "gemm", "run_type": "iteration", "real_time": 20, "time_unit": "us", "m": 128, "n": 4096, "k": 4096},
      {"name": "gemm", "run_name": "gemm", "run_type": "iteration", "error_occurred": true, "error_message": "OOM", "real_time": 0, "time_unit": "us"}
    ]})");
  const KernelBenchImport t = import_kernel_bench(path, gemm_on_h100(), test_util::catalog());
  EXPECT_EQ(t.rows, 1);
  EXPECT_EQ(t.runs, 3);
  EXPECT_EQ(t.skipped, 1);  // the errored run
  EXPECT_NE(t.text.find("\ngemm,bf16,128,4096,4096,,,,,,,,20,\"reps.json: gemm (median of 3)\""),
            std::string::npos)
      << t.text;
}

// nvbench's current JSON: summaries a list of {tag, data}, values as strings, seconds.
const char* kNvbench = R"({
  "devices": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
  "benchmarks": [{
    "index": 0, "name": "decode_attention",
    "axes": [],
    "states": [
      {"index": 0, "description": " Device=0 Batch=64 KvLen=4096 Heads=32 KvHeads=8 HeadDim=128",
       "axis_values": [{"name": "Batch", "type": "int64", "value": "64"},
                       {"name": "KvLen", "type": "int64", "value": "4096"},
                       {"name": "kv_len", "type": "int64", "value": "4096"},
                       {"name": "Heads", "type": "int64", "value": "32"},
                       {"name": "KV_Heads", "type": "int64", "value": "8"},
                       {"name": "Head_Dim{io}", "type": "int64", "value": "128"}],
       "summaries": [
         {"tag": "nv/cold/time/gpu/min", "data": [{"name": "value", "type": "float64", "value": "0.00009"}]},
         {"tag": "nv/cold/time/gpu/mean", "data": [{"name": "value", "type": "float64", "value": "0.0001"}]}],
       "is_skipped": false},
      {"index": 1, "description": " Device=0 too big", "axis_values": [], "summaries": [],
       "is_skipped": true, "skip_reason": "out of memory"}
    ]}]
})";

TEST(KernelBenchImport, NvbenchStatesTakeTheirAxesAndMeanColdGpuTime) {
  const std::string path = write("nvbench.json", kNvbench);
  KernelBenchImportOptions o;
  o.gpu = "h100-sxm";
  o.op = "attn_decode";
  o.dtype = "bf16";
  o.date = "2026-12-01";  // nvbench's JSON has no date
  const KernelBenchImport t = import_kernel_bench(path, o, test_util::catalog());
  EXPECT_EQ(t.format, "nvbench");
  EXPECT_EQ(t.rows, 1);
  EXPECT_EQ(t.skipped, 1);
  // Axes Batch, kv_len, Heads, KV_Heads, Head_Dim{io} (case and {io} dropped; KvLen is not a
  // column), 0.0001 s = 100 us.
  EXPECT_NE(t.text.find("\nattn_decode,bf16,,,,64,,4096,32,8,128,,100,"), std::string::npos)
      << t.text;
  // Decode attention reads 64 · 2 · 4096 · 8 · 128 · 2 B = 1.07e9 bytes: at 3.35 TB/s that is
  // 320 us at peak, so 100 us would beat the roofline, which the table check refuses.
  const std::string table = write("nvbench.csv", t.text);
  EXPECT_THROW((void)load_calibration(table, test_util::catalog()), InputError);
}

TEST(KernelBenchImport, NvbenchOfOlderVersionsToo) {
  // nvbench's 2021 JSON: summaries an object keyed by tag, each with a values list.
  const std::string path = write("nvbench_old.json", R"({"benchmarks": [{"name": "gemm",
    "states": [{"description": "M=256 N=8192 K=8192", "axis_values": [
        {"name": "M", "type": "int64", "value": 256}, {"name": "N", "type": "int64", "value": 8192},
        {"name": "K", "type": "int64", "value": 8192}],
      "summaries": {"nv/cold/time/gpu/mean": {"values": [{"name": "value", "type": "float64", "value": 0.00025}]}}}]}]})");
  KernelBenchImportOptions o = gemm_on_h100();
  o.date = "2021-10-01";
  const KernelBenchImport t = import_kernel_bench(path, o, test_util::catalog());
  EXPECT_NE(t.text.find("\ngemm,bf16,256,8192,8192,,,,,,,,250,"), std::string::npos) << t.text;
}

TEST(KernelBenchImport, ErrorsNameTheBenchmarkAndTheFix) {
  const std::string gb = write("gbench2.json", kGoogleAggregates);
  // Without --args the name's arguments are not a shape: the first median has no m.
  std::string e = error_of(gb, gemm_on_h100());
  EXPECT_NE(e.find("benchmark 'BM_Gemm/4096/4096/4096/manual_time' has no m for a gemm row"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--args m,n,k"), std::string::npos) << e;
  EXPECT_NE(e.find("gbench2.json"), std::string::npos) << e;
  KernelBenchImportOptions o = gemm_on_h100();
  o.gpu = "h100-sxn";
  EXPECT_NE(error_of(gb, o).find("h100-sxm"), std::string::npos);  // the closest id
  o = gemm_on_h100();
  o.op = "gemv";
  EXPECT_NE(error_of(gb, o).find("unknown --op 'gemv'"), std::string::npos);
  o = gemm_on_h100();
  o.match = "nothing";
  EXPECT_NE(error_of(gb, o).find("no benchmark run to import whose name contains 'nothing'"),
            std::string::npos);
  EXPECT_NE(error_of(write("bad.json", "{\"benchmarks\": [1, "), gemm_on_h100()).find("not JSON"),
            std::string::npos);
  EXPECT_NE(error_of(write("other.json", "{\"results\": []}"), gemm_on_h100())
                .find("neither Google Benchmark nor nvbench"),
            std::string::npos);
  // nvbench carries no date: --date is asked for.
  o = gemm_on_h100();
  o.op = "attn_decode";
  EXPECT_NE(error_of(write("nv2.json", kNvbench), o).find("--date YYYY-MM-DD"), std::string::npos);
}

}  // namespace
}  // namespace fleetsim::hw
