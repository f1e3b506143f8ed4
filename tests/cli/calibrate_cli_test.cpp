// Managing calibration tables: list, import with the overlap it creates shown, remove;
// validation cases imported from a serving benchmark's result; tables from Google Benchmark
// or nvbench JSON.
#include "cli_fixture.h"

namespace {

TEST_F(Cli, CalibrationTablesCanBeListedImportedWithTheirOverlapAndRemoved) {
  // A private copy of the shipped tables, so the test changes nothing the others read.
  const fs::path cal = dir_ / "cal";
  fs::create_directories(cal);
  for (const auto& e : fs::directory_iterator(kRoot + "/hw_models/calibration"))
    if (e.path().extension() == ".csv") fs::copy_file(e.path(), cal / e.path().filename());
  const std::string where = " --calibration '" + cal.string() + "'";

  const Result list = run("calibrate list" + where);
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find("h100-sxm-fa3.csv  h100-sxm"), std::string::npos) << list.out;

  // The shipped H100 mamf table (one BF16 and one FP8 GEMM row) under another name
  // overlaps its own original exactly: the same fraction of the roofline, 1.00x.
  fs::copy_file(kRoot + "/hw_models/calibration/h100-sxm-gemm-mamf.csv", dir_ / "mine.csv");
  const Result imp = run("calibrate import '" + (dir_ / "mine.csv").string() + "'" + where);
  ASSERT_EQ(imp.code, 0) << imp.err;
  EXPECT_NE(imp.err.find("warning: overlaps installed gemm bf16 compute-bound rows for h100-sxm"),
            std::string::npos)
      << imp.err;
  EXPECT_NE(imp.err.find("reach 1.00x the installed fraction"), std::string::npos) << imp.err;
  EXPECT_TRUE(fs::exists(cal / "mine.csv"));
  EXPECT_NE(run("calibrate list" + where).out.find("mine.csv"), std::string::npos);

  const Result rm = run("calibrate remove mine.csv" + where);
  ASSERT_EQ(rm.code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(cal / "mine.csv"));
  // Only a table's file name in the folder can be removed.
  EXPECT_EQ(run("calibrate remove mine.csv" + where).code, 1);
  EXPECT_EQ(run("calibrate remove ../cal/h100-sxm-fa3.csv" + where).code, 1);
  EXPECT_TRUE(fs::exists(cal / "h100-sxm-fa3.csv"));
  EXPECT_EQ(run("calibrate remove --help").code, 0);
}

TEST_F(Cli, ImportBenchWritesCasesThatValidateRunsAndKeepsWhatIsThere) {
  // A format fixture with the fields of vLLM's saved result (values for the hand math, not
  // a measurement): 8 requests of 200 + 100 tokens (1,600 / 8 and 800 / 8), 2 in flight.
  std::ofstream(dir_ / "run.json")
      << R"({"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
"request_rate": "inf", "max_concurrency": 2, "completed": 8, "total_input_tokens": 1600,
"total_output_tokens": 800, "total_token_throughput": 3000.0, "mean_ttft_ms": 40.0,
"mean_tpot_ms": 9.0})";
  const std::string args = "calibrate import-bench '" + (dir_ / "run.json").string() +
                           "' --model llama-3.1-8b --gpu h100-sxm --out '" +
                           (dir_ / "cases").string() + "'";
  const Result imp = run(args);
  ASSERT_EQ(imp.code, 0) << imp.err;
  EXPECT_TRUE(fs::exists(dir_ / "cases" / "run-ttft_mean.yaml"));
  EXPECT_TRUE(fs::exists(dir_ / "cases" / "run-tpot_mean.yaml"));
  EXPECT_TRUE(fs::exists(dir_ / "cases" / "run-total_tokens_per_s.yaml"));
  // validate runs them: one row per case, the measured TTFT shown as 40.0 ms.
  const Result val = run("validate '" + (dir_ / "cases").string() + "'");
  ASSERT_EQ(val.code, 0) << val.err;
  EXPECT_NE(val.out.find("run-ttft_mean"), std::string::npos) << val.out;
  EXPECT_NE(val.out.find("40.0 ms"), std::string::npos) << val.out;
  // Nothing is replaced without --force; with it, the files are written again.
  std::ofstream(dir_ / "cases" / "run-ttft_mean.yaml") << "# mine\n";
  expect_error(args, {"already there", "--force"});
  EXPECT_EQ(slurp(dir_ / "cases" / "run-ttft_mean.yaml"), "# mine\n");
  EXPECT_EQ(run(args + " --force").code, 0);
  EXPECT_NE(slurp(dir_ / "cases" / "run-ttft_mean.yaml").find("measured: 0.04"), std::string::npos);
  // The GPU must be named.
  expect_error(
      "calibrate import-bench '" + (dir_ / "run.json").string() + "' --model llama-3.1-8b --out x",
      {"--gpu"});
}

TEST_F(Cli, ImportKernelsWritesACheckedTableThatImportInstalls) {
  // A Google Benchmark result in its JSON reporter's fields (values for the hand math, not a
  // measurement): BM_Gemm/M/N/K, median 1.5 ms for 4096³ (0.0926 of the H100's BF16 peak).
  std::ofstream(dir_ / "gemm.json")
      << R"({"context": {"date": "2026-11-30T10:15:00+00:00"}, "benchmarks": [
{"name": "BM_Gemm/4096/4096/4096/manual_time", "run_name": "BM_Gemm/4096/4096/4096/manual_time",
 "run_type": "iteration", "real_time": 1.5, "cpu_time": 0.01, "time_unit": "ms"}]})";
  const std::string args = "calibrate import-kernels '" + (dir_ / "gemm.json").string() +
                           "' --gpu h100-sxm --op gemm --dtype bf16 --args m,n,k --out '" +
                           (dir_ / "t.csv").string() + "'";
  const Result imp = run(args);
  ASSERT_EQ(imp.code, 0) << imp.err;
  EXPECT_NE(imp.out.find("1 rows from 1 Google Benchmark runs"), std::string::npos) << imp.out;
  EXPECT_NE(slurp(dir_ / "t.csv").find("gemm,bf16,4096,4096,4096,,,,,,,,1500,"), std::string::npos);
  // `calibrate import` installs it (into a private folder).
  const fs::path cal = dir_ / "cal";
  fs::create_directories(cal);
  fs::copy_file(kRoot + "/hw_models/calibration/h100-sxm-gemm-mamf.csv", cal / "mamf.csv");
  const Result inst = run("calibrate import '" + (dir_ / "t.csv").string() + "' --calibration '" +
                          cal.string() + "'");
  ASSERT_EQ(inst.code, 0) << inst.err;
  EXPECT_TRUE(fs::exists(cal / "t.csv"));
  // Nothing is replaced without --force.
  std::ofstream(dir_ / "t.csv") << "# mine\n";
  expect_error(args, {"already there", "--force"});
  EXPECT_EQ(slurp(dir_ / "t.csv"), "# mine\n");
  // A time faster than the roofline (4096³ in 10 us: 13.7 PFLOP/s) is refused by the table
  // check and leaves no file behind.
  std::ofstream(dir_ / "fast.json") << R"({"context": {"date": "2026-11-30"}, "benchmarks": [
{"name": "g", "run_name": "g", "run_type": "iteration", "real_time": 10, "time_unit": "us",
 "m": 4096, "n": 4096, "k": 4096}]})";
  expect_error("calibrate import-kernels '" + (dir_ / "fast.json").string() +
                   "' --gpu h100-sxm --op gemm --dtype bf16 --out '" +
                   (dir_ / "fast.csv").string() + "'",
               {"faster than the datasheet roofline"});
  EXPECT_FALSE(fs::exists(dir_ / "fast.csv"));
  EXPECT_FALSE(fs::exists(dir_ / "fast.csv.tmp"));
  EXPECT_EQ(run("calibrate import-kernels --help").code, 0);
}

}  // namespace
