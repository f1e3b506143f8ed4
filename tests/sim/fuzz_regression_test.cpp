// Inputs the fuzzers (tests/fuzz) found that escaped as something other than an InputError,
// kept as regressions: each must now be refused with a located InputError.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "sim/dist/dist.h"
#include "sim/plan/planner.h"
#include "sim/scenario/scenario.h"
#include "sim/workload/trace.h"

namespace fs = std::filesystem;
using namespace fleetsim;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p =
      fs::temp_directory_path() / ("fleetsim-fuzzreg-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// The InputError `f` throws; a test failure (and a default error) if it throws none.
InputError input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError("none", "");
}

TEST(FuzzRegression, AzureTimestampBeyondTheNanosecondRangeIsAnInputError) {
  // Year 9999: its seconds since 1970 times 1e9 overflowed int64 (UBSan: signed overflow in
  // parse_timestamp_ns). Now a bad timestamp at line 3, field TIMESTAMP.
  const std::string f = write_temp("azure.csv",
                                   "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                   "2023-11-16 18:15:46.6805900,374,44\n"
                                   "9999-11-16 18:15:50.9951690,396,109\n");
  const InputError e = input_error_of([&] { (void)workload::load_azure_csv(f); });
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "TIMESTAMP");
  EXPECT_NE(e.hint().find("1830 to 2110"), std::string::npos) << e.what();
  fs::remove(f);
}

TEST(FuzzRegression, FleetSectionWithoutRegionsIsAnInputError) {
  // `fleet:` without `regions:` made yaml-cpp throw InvalidNode ("invalid node; first invalid
  // key: regions"), reported as an internal error. Now the missing field is named.
  static const hw::Catalog catalog =
      hw::Catalog::load(std::string(FLEETSIM_SOURCE_DIR) + "/hw_models/catalog");
  const std::string text = [] {
    std::ifstream in(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/default.yaml");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return s.substr(0, s.find("\nfleet:\n") + 8) + "  sample_note: none\n";
  }();
  const std::string f = write_temp("fleet.yaml", text);
  const InputError e = input_error_of([&] { (void)scenario::load(f, {}, std::nullopt, catalog); });
  EXPECT_EQ(e.field(), "fleet.regions") << e.what();
  EXPECT_NE(e.message().find("missing required list of regions"), std::string::npos) << e.what();
  fs::remove(f);
}

TEST(FuzzRegression, MooncakeNumberTooLargeForADoubleIsAnInputError) {
  // "6E758" overflows a double: nlohmann::json throws out_of_range (406) while parsing, which
  // the reader did not catch (it caught only parse_error), so it surfaced as an internal
  // error. Now an invalid-JSON error at line 2.
  const std::string f =
      write_temp("mooncake.jsonl",
                 "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, "
                 "\"hash_ids\": [0]}\n"
                 "{\"timestamp\": 0, \"input_length\": 6E758, \"output_length\": 5, "
                 "\"hash_ids\": [0]}\n");
  const InputError e = input_error_of([&] { (void)workload::load_mooncake_jsonl(f); });
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.message().find("invalid JSON"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("number overflow"), std::string::npos) << e.what();
  fs::remove(f);
}

TEST(FuzzRegression, CheckpointNumberOutOfRangeIsRefusedAtItsLine) {
  // A plan result whose replica count is 2.7e114: get<int>() converted it to int, undefined
  // behaviour (UBSan: outside the range of representable values of type 'int'). Whole
  // numbers are now range-checked, and the checkpoint reader names the line.
  const std::string result =
      "{\"status\":4,\"reason\":\"\",\"spares\":1,\"gpus\":6,\"usd_per_hour\":24.5,"
      "\"best\":2,\"tried\":[[2.7e114,0,0.996,0.4,0.03,2.1,0,1500.0,1000,90000,0.2,0.1,1]],"
      "\"checks\":[[]]}";
  plan::Candidate c;
  EXPECT_THROW(plan::Planner::decode_search(c, result), std::out_of_range);
  const InputError e = input_error_of([&] {
    (void)dist::Checkpoint::parse("id\n3 " + result + "\n", "checkpoint.txt", "id", 64,
                                  [](const std::string& r) {
                                    plan::Candidate x;
                                    plan::Planner::decode_search(x, r);
                                  });
  });
  EXPECT_EQ(e.file(), "checkpoint.txt");
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.message().find("the result of item 3 cannot be read"), std::string::npos) << e.what();
}

}  // namespace
