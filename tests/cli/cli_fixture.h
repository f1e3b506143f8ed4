// The fixture of the CLI tests: runs the real fleetsim binary ($FLEETSIM_BIN, set by CTest)
// from the source root, each test in its own temporary folder.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

// A named namespace, not an anonymous one: the CLI test files fall into several unity
// batches (8 files each), and gtest refuses one suite name (Cli) with two fixture classes;
// one class in a named namespace is the same type in every translation unit.
namespace fleetsim_cli {

inline const std::string kRoot = FLEETSIM_SOURCE_DIR;

struct Result {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("FLEETSIM_BIN");
    if (!bin) GTEST_SKIP() << "FLEETSIM_BIN is not set (run through ctest)";
    bin_ = bin;
    // A parameterised test is named "Test/Param": one folder, not a folder inside another.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / ("fleetsim-cli-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // `env`: assignments put before the command ("FLEETSIM_GNUPLOT=/x").
  Result run(const std::string& args, const std::string& env = "") {
    const std::string cmd = "cd '" + kRoot + "' && " + env + " '" + bin_ + "' " + args + " >'" +
                            (dir_ / "stdout").string() + "' 2>'" + (dir_ / "stderr").string() + "'";
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(dir_ / "stdout");
    r.err = slurp(dir_ / "stderr");
    return r;
  }

  // The default scenario with one line replaced, written to the temp folder.
  std::string variant(const std::string& name, const std::string& from, const std::string& to) {
    std::string text = slurp(kRoot + "/scenarios/chat-service.yaml");
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    const fs::path p = dir_ / (name + ".yaml");
    std::ofstream(p) << text;
    return p.string();
  }

  // A bad-input run: exit code 1, one line on stderr that contains every `needle`.
  void expect_error(const std::string& args, std::initializer_list<std::string> needles) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    for (const auto& n : needles)
      EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
  }

  std::string bin_;
  fs::path dir_;
};

}  // namespace fleetsim_cli

using namespace fleetsim_cli;  // NOLINT: the test files' shorthand
