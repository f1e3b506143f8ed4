// End-to-end tests of what fleetsim does with hostile or mistaken inputs and with output
// trouble: every case ends in a located error with a documented exit code, never in a
// crash, a hang, a silently wrong answer or a half-written file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cli_fixture.h"

namespace fs = std::filesystem;

namespace {

// A quick variant of the chat scenario: 200 requests instead of 6000.
const std::string kQuick = "scenarios/chat-service.yaml --set workload.requests=200 -q";

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Names of the files in `dir` (not recursive).
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

// ---- internal errors reachable from input -------------------------------------------

TEST_F(Cli, NonUtf8TextIsALocatedInputError) {
  // Latin-1 "é" (byte 0xE9) in the description on line 15: it used to reach the JSON writer
  // and end as "internal error" with a 0-byte summary.json.
  const std::string f = variant("latin1", "description: \"Llama", "description: \"Caf\xE9 Llama");
  const Result r = run("check " + f);
  EXPECT_EQ(r.code, 1) << r.err;  // 1: an input error, not 3 (internal)
  // file:line, the offending byte and its column (1-based: `description: "Caf` is 17 bytes).
  for (const char* k :
       {"latin1.yaml:15:", "not valid UTF-8", "byte 0xE9 at column 18", "save the file as UTF-8"})
    EXPECT_TRUE(contains(r.err, k)) << k << "\n" << r.err;
}

TEST_F(Cli, SimulatedTimeThatCannotBeRepresentedIsRefused) {
  // 1e-300 requests/s puts arrivals 1e300 s apart: far beyond the ±9.2e9 s (292 years) an
  // int64 count of ns holds. Refused where the rate is read, with the limit.
  expect_error("check scenarios/chat-service.yaml --set workload.arrival.rate=1e-300/s",
               {"workload.arrival.rate", "9.2e+09 s", "at least 1.1e-10/s"});
  // Found only while running: a trace replayed 1e300 times slower (its 11th record is at
  // 3000 ms, so at 3e300 s). Each arrival time is converted with a check, so this is an
  // input error naming the limit, not the old "internal error: event scheduled in the past:
  // t=-9223372036854775808 ns".
  const Result r = run("run scenarios/mooncake-replay.yaml -q --out " + (dir_ / "o").string() +
                       " --set workload.trace.time_scale=1e300 --set workload.requests=20");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "simulated time would reach 3e+300 s")) << r.err;
  EXPECT_TRUE(contains(r.err, "9.2e+09 s")) << r.err;
  EXPECT_FALSE(contains(r.err, "internal error")) << r.err;
}

TEST_F(Cli, DamagedCheckpointNamesItsFileAndLine) {
  // A sweep's checkpoint with the right header (the search identity, built as
  // dist::search_identity does: command, scenario path, hash of its text, the arguments
  // without --resume/-q) and a damaged result on line 2.
  const std::string scenario = "scenarios/chat-service.yaml";
  const fs::path out = dir_ / "sweep";
  fs::create_directories(out);
  const std::vector<std::string> args = {
      scenario, "--vary",    "serving.replicas=1,2", "--set", "workload.requests=50",
      "--out",  out.string()};
  std::string identity = "sweep " + scenario + " scenario-hash " +
                         std::to_string(std::hash<std::string>{}(slurp(kRoot + "/" + scenario)));
  std::string cmd = "sweep";
  for (const auto& a : args) {
    identity += " " + a;
    cmd += " " + a;
  }
  const fs::path ck = out / "checkpoint.txt";
  std::ofstream(ck) << identity << "\n0 {\"ttft_p99_s\": oops}\n";
  const Result r = run(cmd + " --resume -q");
  // 1 (input error) naming checkpoint.txt:2, not a raw JSON exception (exit 3) without
  // file or line.
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, ck.string() + ":2:")) << r.err;
  EXPECT_TRUE(contains(r.err, "the result of item 0 cannot be read")) << r.err;
  // A result that is valid JSON but not a sweep result (a metric missing) is refused too.
  std::ofstream(ck) << identity << "\n1 {\"ttft_p99_s\": 1}\n";
  const Result r2 = run(cmd + " --resume -q");
  EXPECT_EQ(r2.code, 1) << r2.err;
  EXPECT_TRUE(contains(r2.err, ck.string() + ":2:")) << r2.err;
  // An index beyond the search's 2 items (2 replica counts x 1 seed).
  std::ofstream(ck) << identity << "\n7 {}\n";
  const Result r3 = run(cmd + " --resume -q");
  EXPECT_EQ(r3.code, 1) << r3.err;
  EXPECT_TRUE(contains(r3.err, "names item 7, but the search has 2 items")) << r3.err;
}

TEST_F(Cli, OnlyRegularFilesOfBoundedSizeAreRead) {
  // /dev/zero never ends: reading it used to exhaust memory (std::bad_alloc, exit 3).
  expect_error("check /dev/zero", {"/dev/zero", "not a regular file"});
  // A folder where a file is expected.
  expect_error("check scenarios", {"scenarios", "it is a folder"});
  // A scenario file over the 64 MiB cap (sparse: no disk used) is refused before reading.
  const fs::path big = dir_ / "big.yaml";
  std::ofstream(big) << "name: big\n";
  fs::resize_file(big, (64u << 20) + 1);
  expect_error("check " + big.string(), {"big.yaml", "larger than the limit of 64 MiB"});
}

// ---- inputs silently misread ----------------------------------------------------------

TEST_F(Cli, MisreadInputsAreErrors) {
  // A calibration folder that does not exist used to run uncalibrated without a word.
  expect_error("check scenarios/chat-service.yaml --calibration " + (dir_ / "nope").string(),
               {"nope", "calibration folder not found", "--calibration none"});
  // A folder without tables is no calibration either.
  fs::create_directories(dir_ / "empty");
  expect_error("check scenarios/chat-service.yaml --calibration " + (dir_ / "empty").string(),
               {"holds no calibration tables"});
  // A catalog folder with none of gpus/, models/, ... (like /etc) loaded as an empty catalog.
  std::ofstream(dir_ / "empty" / "notes.txt") << "not a catalog\n";
  expect_error("check scenarios/chat-service.yaml --catalog " + (dir_ / "empty").string(),
               {"not a catalog folder", "gpus/"});
  // The same sweep axis twice: the second used to shadow the first.
  expect_error(
      "sweep scenarios/chat-service.yaml --vary serving.replicas=1,2 "
      "--vary serving.replicas=4",
      {"names the axis 'serving.replicas' twice"});
  // An empty list in the plan space used to drop the axis.
  expect_error("plan scenarios/plan-llama70b-chat.yaml --set plan.tp=[]",
               {"--set plan.tp", "'tp' is an empty list"});
  // `list gpus models` listed the GPUs and ignored "models": a usage error (exit 2).
  const Result r = run("list gpus models");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "'models' is extra")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // nothing half-listed
}

// ---- outputs written where they should not be, or lost ----------------------------------

TEST_F(Cli, ScenarioNameCannotLeaveTheOutputFolder) {
  // name: ../../escaped would write out/../../escaped/, outside out/ (two levels above the
  // source root here). Refused before anything is written.
  const std::string f = variant("climb", "name: chat-service", "name: ../../escaped");
  const Result r = run("run " + f + " -q --set workload.requests=20");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "'name'")) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot name its output folder")) << r.err;
  EXPECT_FALSE(fs::exists(fs::path(kRoot) / ".." / ".." / "escaped"));
  // With --out, the name is not used as a path and the run goes ahead.
  EXPECT_EQ(run("run " + f + " -q --set workload.requests=20 --out " + (dir_ / "o").string()).code,
            0);
}

TEST_F(Cli, InputFilesAreNeverOutputTargets) {
  const fs::path scenario = dir_ / "s.yaml";
  fs::copy_file(kRoot + "/scenarios/chat-service.yaml", scenario);
  const std::string before = slurp(scenario);
  const std::string out = " --out " + (dir_ / "o").string();
  // --requests-csv pointed at the scenario used to replace it with a CSV.
  expect_error("run " + scenario.string() + " -q --set workload.requests=20 --requests-csv " +
                   scenario.string() + out,
               {"would replace an input file"});
  // The same through another spelling of the path (../ and a folder in between).
  expect_error("run " + scenario.string() + " -q --set workload.requests=20 --trace " +
                   (dir_ / "o" / ".." / "s.yaml").string() + out,
               {"would replace an input file"});
  EXPECT_EQ(slurp(scenario), before);  // untouched, byte for byte
}

TEST_F(Cli, ReplacingEarlierResultsIsAnnounced) {
  const std::string out = (dir_ / "o").string();
  const Result first = run("run " + kQuick + " --out " + out);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_FALSE(contains(first.err, "replacing")) << first.err;  // a new folder: nothing to say
  const Result second = run("run " + kQuick + " --out " + out);
  ASSERT_EQ(second.code, 0) << second.err;
  // The policy: results are replaced, and stderr says so with the way to keep them.
  EXPECT_TRUE(contains(second.err,
                       "note: replacing the results in " + out + " (use a new --out to keep them)"))
      << second.err;
}

TEST_F(Cli, TwoRunsCannotWriteOneFolder) {
  // This test holds the folder's lock, as a running fleetsim would (its pid in the file).
  const fs::path out = dir_ / "o";
  fs::create_directories(out);
  const int fd = ::open((out / ".fleetsim.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const std::string pid = std::to_string(::getpid());
  ASSERT_EQ(::write(fd, pid.data(), pid.size()), static_cast<ssize_t>(pid.size()));
  expect_error("run " + kQuick + " --out " + out.string(),
               {"another fleetsim run (pid " + pid + ") is writing to " + out.string()});
  EXPECT_FALSE(fs::exists(out / "summary.json"));  // the second run wrote nothing
  ::close(fd);                                     // released: a run may now use the folder
  EXPECT_EQ(run("run " + kQuick + " --out " + out.string()).code, 0);
}

TEST_F(Cli, WriteErrorsAreErrors) {
  // /dev/full fails every write with ENOSPC: the run used to exit 0 with nothing written.
  const std::string out = " --out " + (dir_ / "o").string();
  expect_error("run " + kQuick + " --requests-csv /dev/full" + out,
               {"/dev/full", "No space left on device"});
  expect_error("run " + kQuick + " --trace /dev/full" + out,
               {"/dev/full", "No space left on device"});
}

TEST_F(Cli, InterruptedRunLeavesNothingHalfWritten) {
  const fs::path out = dir_ / "o";
  // SIGTERM after the 100th of 200 requests, mid-way through the per-request CSV.
  const Result r = run("run " + kQuick + " --out " + out.string() + " --requests-csv " +
                           (out / "requests.csv").string(),
                       "FLEETSIM_TEST_SIGNAL_AFTER_REQUESTS=100");
  EXPECT_EQ(r.code, 143) << r.err;  // 128 + SIGTERM (15)
  EXPECT_TRUE(contains(r.err, "interrupted by SIGTERM while running")) << r.err;
  EXPECT_TRUE(contains(r.err, "1 file being written was removed")) << r.err;
  // Only the lock file is left: no requests.csv cut mid-line, no summary.json, no temporary.
  EXPECT_EQ(names_in(out), std::vector<std::string>{".fleetsim.lock"});
  // SIGINT (Ctrl-C): 128 + 2.
  const Result i = run("run " + kQuick + " --out " + out.string(),
                       "FLEETSIM_TEST_SIGNAL_AFTER_REQUESTS=100:INT");
  EXPECT_EQ(i.code, 130) << i.err;
  EXPECT_TRUE(contains(i.err, "interrupted by SIGINT")) << i.err;
}

// ---- unbounded work -------------------------------------------------------------------

TEST_F(Cli, MultiplicativeInputsAreCapped) {
  // 1000 x 1000 sweep points x 1 seed = 1e6 simulations > the 100,000 limit: refused before
  // any point is checked.
  std::string a, b;
  // Appends, not `"," + std::to_string(v)`: GCC 12 reports a false -Wrestrict on that.
  for (int v = 1; v <= 1000; ++v) {
    if (v > 1) {
      a += ',';
      b += ',';
    }
    a += std::to_string(v);
    b += std::to_string(v * 10);
  }
  expect_error("sweep scenarios/chat-service.yaml --vary serving.replicas=" + a +
                   " --vary workload.requests=" + b,
               {"1000 × 1000 × 1 seed = 1e+06 simulations", "limit of 100000"});
  // The plan file's space is 4 x 4 x 2 x 2 x 2 x 2 x 4 = 1,024; with 400 batch limits
  // instead of 4 it is 102,400 > 100,000.
  std::string seqs = "[";
  for (int v = 1; v <= 400; ++v) {
    if (v > 1) seqs += ',';
    seqs += std::to_string(v);
  }
  seqs += "]";
  expect_error("plan scenarios/plan-llama70b-chat.yaml --set plan.max_num_seqs=" + seqs,
               {"= 1.024e+05 configurations", "limit of 100000"});
}

// ---- calibration tables ---------------------------------------------------------------

TEST_F(Cli, CalibrationTableRowsAndDatesAreChecked) {
  const std::string dest = " --calibration " + (dir_ / "calib").string();
  auto table = [&](const std::string& date, const std::string& rows) {
    const std::string path = (dir_ / "t.csv").string();
    std::ofstream(path) << "# fleetsim-calibration: 1\n# gpu: h100-sxm\n# source: s\n"
                           "# driver: d\n# cuda: c\n# date: "
                        << date
                        << "\n"
                           "op,dtype,m,n,k,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,"
                           "time_us,citation\n"
                        << rows;
    return path;
  };
  const std::string row = "gemm,bf16,4096,4096,4096,,,,,,,,250,fig 1\n";
  // The same shape twice with the same time (line 9 repeats line 8): a duplicate.
  std::string t = table("2025-03-27", row + row);
  expect_error("calibrate import " + t + dest, {t + ":9:", "repeats the shape of line 8"});
  // fp16 counts as bf16, so this repeats line 8 with another time: conflicting.
  t = table("2025-03-27", row + "gemm,fp16,4096,4096,4096,,,,,,,,260,fig 2\n");
  expect_error("calibrate import " + t + dest, {t + ":9:", "conflicting measurements"});
  // A date that is not a day: month 13 (line 6 holds the date).
  t = table("2025-13-01", row);
  expect_error("calibrate import " + t + dest, {t + ":6:", "'date'", "not a date"});
  // Nothing was installed by any of them.
  EXPECT_FALSE(fs::exists(dir_ / "calib" / "t.csv"));
}

// ---- plans without an answer, exit codes --------------------------------------------------

TEST_F(Cli, PlanWithoutAValidConfigurationExits4WithItsReasons) {
  // Llama-3.1-70B on RTX 4090s (24 GB) at tp=1: 1 x 1 x 2 x 2 x 2 x 2 x 4 = 64 configurations, none
  // valid (32 do not fit in memory, 32 need two GPUs per replica on a one-GPU desktop).
  const Result r =
      run("plan scenarios/plan-llama70b-chat.yaml -q --set plan.gpu=[rtx-4090] "
          "--set plan.tp=[1] --out " +
          (dir_ / "p").string());
  EXPECT_EQ(r.code, 4) << r.err;  // 4: no configuration meets the SLO (was 3, silently)
  EXPECT_TRUE(contains(r.err, "error: no configuration meets the SLO (64 configurations")) << r.err;
  EXPECT_TRUE(contains(r.err, "32 x invalid [memory fit]")) << r.err;
  EXPECT_TRUE(contains(r.err, "32 x invalid: 2 GPUs per replica")) << r.err;
}

TEST_F(Cli, ExitCodesAreDocumentedAndUsed) {
  const Result help = run("--help");
  EXPECT_EQ(help.code, 0);
  for (const char* k : {"exit codes: 0 done; 1 input error", "2 usage", "3 internal error",
                        "4 plan: no configuration meets the", "130 / 143 interrupted"})
    EXPECT_TRUE(contains(help.out, k)) << k << "\n" << help.out;
  EXPECT_EQ(run("--version").code, 0);             // 0: done
  EXPECT_EQ(run("check nothere.yaml").code, 1);    // 1: input error
  EXPECT_EQ(run("frobnicate").code, 2);            // 2: usage (unknown command)
  EXPECT_EQ(run("run --no-such-option").code, 2);  // 2: usage (unknown option)
  // 3 (internal error) has no input that reaches it: that is what the fuzzers check.
  // 4 and 130/143: PlanWithoutAValidConfigurationExits4WithItsReasons and
  // InterruptedRunLeavesNothingHalfWritten.
}

}  // namespace
