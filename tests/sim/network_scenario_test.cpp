// The scenario's network section: defaults, oversubscription, and located errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "sim/network/simgrid_network.h"
#include "sim/scenario/scenario.h"

using namespace fleetsim;

namespace {

const hw::Catalog& catalog() {
  static const hw::Catalog c = hw::Catalog::load(hw::Catalog::default_dir());
  return c;
}

std::string write(const std::string& network_lines) {
  const auto dir = std::filesystem::temp_directory_path() / ("fleetsim-net-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "net.yaml";
  std::ofstream(file) << "model: llama-3.1-8b\n"
                         "hardware: {gpu: h100-sxm, tp: 2}\n"
                         "serving: {replicas: 1}\n"
                         "workload: {requests: 10, arrival: {process: poisson, rate: 1/s}, "
                         "prompt_tokens: 100, output_tokens: 10}\n"
                      << network_lines;
  return file.string();
}

std::string error_of(const std::string& file, std::vector<std::string> sets = {}) {
  try {
    scenario::load(file, sets, std::nullopt, catalog());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(NetworkScenario, AnalyticByDefaultWithTheNodesFabric) {
  const auto sc = scenario::load(write(""), {}, std::nullopt, catalog());
  EXPECT_EQ(sc.network_model, "analytic");
  // HGX H100: 8 GPUs per node and per NVLink domain, 8 NDR NICs (50 GB/s, 1 µs).
  EXPECT_EQ(sc.fabric.gpus_per_node, 8);
  EXPECT_EQ(sc.fabric.domain_gpus, 8);
  EXPECT_EQ(sc.fabric.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(sc.fabric.nic.bw_bytes_per_s, 50e9);
  EXPECT_DOUBLE_EQ(sc.fabric.oversubscription, 1.0);
  ASSERT_NE(dynamic_cast<const hw::AnalyticNetwork*>(sc.dep.network.get()), nullptr);
}

TEST(NetworkScenario, OversubscriptionAsNumberOrRatioSlowsTheAllToAll) {
  const auto sc = scenario::load(write("network: {oversubscription: \"3:1\", nodes_per_leaf: 16}\n"), {},
                                 std::nullopt, catalog());
  EXPECT_DOUBLE_EQ(sc.fabric.oversubscription, 3.0);
  EXPECT_EQ(sc.fabric.nodes_per_leaf, 16);
  // 16 GPUs in 2 domains, 8 MB per GPU: outside 8·1 µs + 3·4e6/50e9 = 248 µs.
  EXPECT_NEAR(sc.dep.network->alltoall_s(8e6, {16, 8}), 8e-6 + 3 * 4e6 / 50e9, 1e-12);
  const auto sc2 = scenario::load(write("network: {oversubscription: 2}\n"), {}, std::nullopt, catalog());
  EXPECT_DOUBLE_EQ(sc2.fabric.oversubscription, 2.0);
}

TEST(NetworkScenario, BadInputNamesFileLineFieldAndHint) {
  const std::string f = write("network:\n  model: simgird\n");
  const std::string e = error_of(f);
  EXPECT_NE(e.find(f + ":6"), std::string::npos) << e;
  EXPECT_NE(e.find("network.model"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'simgrid'"), std::string::npos) << e;

  const std::string f2 = write("network:\n  model: analytic\n  oversubscription: 0.5\n");
  const std::string e2 = error_of(f2);
  EXPECT_NE(e2.find(f2 + ":7"), std::string::npos) << e2;
  EXPECT_NE(e2.find("network.oversubscription"), std::string::npos) << e2;
  EXPECT_NE(e2.find("non-blocking"), std::string::npos) << e2;
  EXPECT_NE(error_of(write("network: {oversubscription: \"2:0\"}\n")).find("expected a ratio"),
            std::string::npos);
  EXPECT_NE(error_of(write(""), {"network.nodes_per_leaf=0"}).find("network.nodes_per_leaf"),
            std::string::npos);
  // A misspelt key in the section is an unknown field with a suggestion.
  EXPECT_NE(error_of(write("network: {oversubscribtion: 2}\n")).find("did you mean"), std::string::npos);
  if (!net::simgrid_available()) {
    const std::string e3 = error_of(write("network: {model: simgrid}\n"));
    EXPECT_NE(e3.find("built without SimGrid"), std::string::npos) << e3;
    EXPECT_NE(e3.find("libsimgrid-dev"), std::string::npos) << e3;
  }
}
