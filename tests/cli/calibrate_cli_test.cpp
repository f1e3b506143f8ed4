// Managing calibration tables: list, import with the overlap it creates shown, remove.
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

}  // namespace
