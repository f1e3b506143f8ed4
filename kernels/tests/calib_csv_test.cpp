// The calibration CSV the harness writes is read back by the simulator's own loader
// (hw_models/calibration.cpp), and the achieved fractions agree with ours.
#include "kernels/common/calib_csv.h"

#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>

#include "hw_models/calibration.h"
#include "hw_models/error.h"
#include "kernels/common/roofline.h"

namespace fleetsim::kernels {
namespace {

const hw::Catalog& catalog() {
  static const hw::Catalog c =
      hw::Catalog::load(std::string(FLEETSIM_SOURCE_DIR) + "/hw_models/catalog");
  return c;
}

std::string temp_file(const std::string& name, const std::string& text) {
  char tmpl[] = "/tmp/fleetsim_kernels_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  EXPECT_NE(dir, nullptr);
  const std::string path = std::string(dir) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

CalibProvenance provenance() {
  return {"h100-sxm",  "fleetsim kernels abc1234", "550.54.15", "CUDA runtime 13.0", "2026-01-02",
          "test table"};
}

std::vector<CalibRow> rows() {
  CalibRow g;
  g.op = "gemm";
  g.dtype = "bf16";
  g.m = 8192;
  g.n = 8192;
  g.k = 8192;
  g.time_us = 2000;
  g.citation = "cublaslt_bf16, llama \"test\", m=8192";  // comma and quotes: quoted
  CalibRow p;
  p.op = "attn_prefill";
  p.dtype = "bf16";
  p.batch = 1;
  p.q_len = p.kv_len = 8192;
  p.heads = 32;
  p.kv_heads = 8;
  p.head_dim = 128;
  p.causal = 1;
  p.time_us = 3000;
  p.citation = "attn_prefill";
  CalibRow d;
  d.op = "attn_decode";
  d.dtype = "bf16";
  d.batch = 64;
  d.kv_len = 4096;
  d.heads = 32;
  d.kv_heads = 8;
  d.head_dim = 128;
  d.time_us = 400;
  d.citation = "attn_decode";
  CalibRow f = g;
  f.dtype = "fp8";
  f.time_us = 1200;
  f.citation = "cublaslt_fp8";
  return {g, p, d, f};
}

TEST(CalibCsv, FormatHasTheHeaderAndEmptyFieldsWhereNotApplicable) {
  const std::string s = format_calibration_csv(provenance(), rows());
  EXPECT_EQ(s.rfind("# fleetsim-calibration: 1\n# gpu: h100-sxm\n", 0), 0u);
  EXPECT_NE(s.find("# source: fleetsim kernels abc1234\n"), std::string::npos);
  EXPECT_NE(s.find(std::string(calibration_columns()) + "\n"), std::string::npos);
  EXPECT_NE(s.find("gemm,bf16,8192,8192,8192,,,,,,,,2000.000,\"cublaslt_bf16, llama \"\"test\"\", "
                   "m=8192\"\n"),
            std::string::npos);
  EXPECT_NE(s.find("attn_prefill,bf16,,,,1,8192,8192,32,8,128,1,3000.000,attn_prefill\n"),
            std::string::npos);
  EXPECT_NE(s.find("attn_decode,bf16,,,,64,,4096,32,8,128,,400.000,attn_decode\n"),
            std::string::npos);
}

TEST(CalibCsv, TheSimulatorLoaderReadsItAndAgreesOnTheFractions) {
  const std::string path = temp_file("t.csv", format_calibration_csv(provenance(), rows()));
  const hw::CalibrationTable t = hw::load_calibration(path, catalog());
  EXPECT_EQ(t.gpu, "h100-sxm");
  EXPECT_EQ(t.source, "fleetsim kernels abc1234");
  EXPECT_EQ(t.driver, "550.54.15");
  EXPECT_EQ(t.date, "2026-01-02");
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0].citation, "cublaslt_bf16, llama \"test\", m=8192");
  const hw::GpuSpec& gpu = catalog().gpu("h100-sxm");
  const Peaks bf16{gpu.bf16_flops_per_s, gpu.memory_bw_bytes_per_s};
  const Peaks fp8{gpu.fp8_flops_per_s, gpu.memory_bw_bytes_per_s};
  EXPECT_NEAR(t.rows[0].fraction, roofline_fraction(gemm_work(8192, 8192, 8192, 2), bf16, 2000e-6),
              1e-12);
  EXPECT_NEAR(t.rows[1].fraction,
              roofline_fraction(prefill_work(1, 8192, 8192, 32, 8, 128, true, 2), bf16, 3000e-6),
              1e-12);
  EXPECT_NEAR(t.rows[2].fraction,
              roofline_fraction(decode_work(64, 4096, 32, 8, 128, 2), bf16, 400e-6), 1e-12);
  EXPECT_NEAR(t.rows[3].fraction, roofline_fraction(gemm_work(8192, 8192, 8192, 1), fp8, 1200e-6),
              1e-12);
  EXPECT_FALSE(t.rows[2].compute_bound);  // decode streams the KV cache
  EXPECT_TRUE(t.rows[0].compute_bound);
}

TEST(CalibCsv, ARowFasterThanTheRooflineIsRejectedByTheLoader) {
  auto r = rows();
  r[0].time_us = 100;  // 8192^3 in 100 us would be 11 PFLOP/s
  EXPECT_GT(roofline_fraction(gemm_work(8192, 8192, 8192, 2),
                              {catalog().gpu("h100-sxm").bf16_flops_per_s,
                               catalog().gpu("h100-sxm").memory_bw_bytes_per_s},
                              100e-6),
            1.0);
  const std::string path = temp_file("fast.csv", format_calibration_csv(provenance(), r));
  EXPECT_THROW(hw::load_calibration(path, catalog()), InputError);
}

TEST(CalibCsv, CsvFieldQuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
}

TEST(Roofline, Formulas) {
  const Work g = gemm_work(2, 3, 4, 2);
  EXPECT_EQ(g.flops, 48);
  EXPECT_EQ(g.bytes, (8 + 12 + 6) * 2);
  const Work p = prefill_work(1, 10, 10, 2, 1, 4, true, 2);
  EXPECT_EQ(p.flops, 4.0 * 2 * 4 * 10 * 10 / 2);
  EXPECT_EQ(p.bytes, (2.0 * 10 * 2 + 2.0 * 10 * 1) * 4 * 2);
  const Work d = decode_work(3, 100, 8, 2, 128, 2);
  EXPECT_EQ(d.flops, 4.0 * 3 * 8 * 128 * 100);
  EXPECT_EQ(d.bytes, 3.0 * 2 * 100 * 2 * 128 * 2);
  EXPECT_NEAR(roofline_fraction({1e12, 1}, {1e15, 1e12}, 2e-3), 0.5, 1e-12);
  EXPECT_NEAR(roofline_fraction({1, 1e9}, {1e15, 1e12}, 2e-3), 0.5, 1e-12);
  EXPECT_EQ(roofline_fraction({1, 1}, {1e15, 1e12}, 0), 0);
}

}  // namespace
}  // namespace fleetsim::kernels
