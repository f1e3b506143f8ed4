// Scenarios with network: {model: simgrid}: what cannot be built is a located error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "sim/network/table_network.h"
#include "sim/scenario/scenario.h"

using namespace fleetsim;

namespace {
std::string error_of(const std::string& text) {
  ::setenv("FLEETSIM_CACHE_DIR", FLEETSIM_TEST_CACHE_DIR, 0);
  const auto dir =
      std::filesystem::temp_directory_path() / ("fleetsim-sgsc-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = (dir / "sc.yaml").string();
  std::ofstream(file) << text;
  static const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  try {
    scenario::load(file, {}, std::nullopt, catalog);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(SimGridScenario, PoolsThatNeedANetworkTheNodeLacksAreALocatedError) {
  // Two desktop RTX 4090s (one GPU per node, no NIC) cannot exchange KV caches on a fabric.
  const std::string e = error_of(
      "model: llama-3.2-1b\n"
      "hardware: {gpu: rtx-4090, node: desktop-rtx4090}\n"
      "serving: {replicas: 1, disaggregation: {prefill_replicas: 1}}\n"
      "workload: {requests: 4, arrival: {process: poisson, rate: 1/s}, prompt_tokens: 100, "
      "output_tokens: 10}\n"
      "network: {model: simgrid}\n");
  EXPECT_NE(e.find("sc.yaml:5"), std::string::npos) << e;
  EXPECT_NE(e.find("network.model"), std::string::npos) << e;
  EXPECT_NE(e.find("NIC"), std::string::npos) << e;
  EXPECT_NE(e.find("model: analytic"), std::string::npos) << e;
}

TEST(SimGridScenario, TablesFollowTheDeployment) {
  // tp 8 on HGX H100: the table network prices the tp all-reduce exactly as the analytic
  // one does on this uncontended node (14·1.83 µs + 1.75·bytes/450e9).
  EXPECT_EQ(error_of("model: llama-3.1-70b\n"
                     "hardware: {gpu: h100-sxm, node: hgx-h100, tp: 8}\n"
                     "serving: {replicas: 1}\n"
                     "workload: {requests: 4, arrival: {process: poisson, rate: 1/s}, "
                     "prompt_tokens: 100, output_tokens: 10}\n"
                     "network: {model: simgrid}\n"),
            "");
  static const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  const auto dir =
      std::filesystem::temp_directory_path() / ("fleetsim-sgsc-" + std::to_string(::getpid()));
  const auto sc = scenario::load((dir / "sc.yaml").string(), {}, std::nullopt, catalog);
  EXPECT_EQ(sc.network_model, "simgrid");
  EXPECT_NEAR(sc.dep.network->allreduce_s(1e7, {8, 8}), 14 * 1.83e-6 + 1.75 * 1e7 / 450e9, 1e-10);
}

TEST(SimGridScenario, LoadingStartsNoProcessAndWritesNoFile) {
  // The table cache in an empty folder, and a helper that leaves a mark and fails: loading
  // must leave both untouched; the tables are built when a cost is first asked.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fleetsim-pure-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  fs::create_directories(dir / "scenario");
  const fs::path mark = dir / "helper-ran";
  const fs::path helper = dir / "helper.sh";
  std::ofstream(helper) << "#!/bin/sh\ntouch '" << mark.string()
                        << "'\necho no tables here >&2\nexit 1\n";
  fs::permissions(helper, fs::perms::owner_all);
  ::setenv("FLEETSIM_CACHE_DIR", (dir / "cache").c_str(), 1);
  ::setenv("FLEETSIM_SIMGRID_HELPER", helper.c_str(), 1);
  const std::string file = (dir / "scenario" / "sc.yaml").string();
  std::ofstream(file) << "model: llama-3.1-70b\n"
                         "hardware: {gpu: h100-sxm, node: hgx-h100, tp: 8}\n"
                         "serving: {replicas: 1}\n"
                         "workload: {requests: 4, arrival: {process: poisson, rate: 1/s}, "
                         "prompt_tokens: 100, output_tokens: 10}\n"
                         "network: {model: simgrid}\n";
  static const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  const auto sc = scenario::load(file, {}, std::nullopt, catalog);
  EXPECT_EQ(sc.network_model, "simgrid");
  const auto* tables = dynamic_cast<const net::DeferredTableNetwork*>(sc.dep.network.get());
  ASSERT_NE(tables, nullptr);
  EXPECT_FALSE(tables->built());
  EXPECT_TRUE(fs::is_empty(dir / "cache"));
  EXPECT_FALSE(fs::exists(mark));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "scenario"), fs::directory_iterator()), 1);
  // The first cost runs the helper; its failure names the file and network.model.
  try {
    (void)sc.dep.network->allreduce_s(1e7, {8, 8});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sc.yaml:5"), std::string::npos) << what;
    EXPECT_NE(what.find("network.model"), std::string::npos) << what;
    EXPECT_NE(what.find("no tables here"), std::string::npos) << what;
    EXPECT_NE(what.find("model: analytic"), std::string::npos) << what;
  }
  EXPECT_TRUE(fs::exists(mark));
  // The next cost tries again, with the real helper and the tests' cache.
  ::unsetenv("FLEETSIM_SIMGRID_HELPER");
  ::setenv("FLEETSIM_CACHE_DIR", FLEETSIM_TEST_CACHE_DIR, 1);
  EXPECT_NEAR(sc.dep.network->allreduce_s(1e7, {8, 8}), 14 * 1.83e-6 + 1.75 * 1e7 / 450e9, 1e-10);
  EXPECT_TRUE(tables->built());
  fs::remove_all(dir);
}
