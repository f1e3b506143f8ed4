// The table-backed NetworkModel: built by the helper process, cached, interpolated, and
// never written over a file that is not its own.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/network/table_network.h"

using namespace fleetsim;

namespace {
hw::Fabric dgx2() {
  hw::Fabric f;
  f.gpus = 16;
  f.scaleup = {2e-6, 450e9};
  f.nic = {1e-6, 50e9};
  return f;
}
}  // namespace

TEST(TableNetwork, BuildsOnceCachesAndInterpolatesBetweenGridSizes) {
  const auto dir =
      std::filesystem::path(FLEETSIM_TEST_CACHE_DIR) / ("tables-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("FLEETSIM_CACHE_DIR", dir.c_str(), 1);
  const auto a = net::TableNetwork::load_or_build(dgx2(), {{8, 8}, {16, 8}});
  EXPECT_TRUE(a->built_now());
  const auto b = net::TableNetwork::load_or_build(dgx2(), {{8, 8}, {16, 8}});
  EXPECT_FALSE(b->built_now());
  EXPECT_EQ(a->cache_file(), b->cache_file());
  // 3e6 bytes lies between the 2 MiB and 4 MiB rows; every time is affine in bytes there,
  // so the interpolation gives the α-β value: ring over 8, 14·2 µs + 1.75·3e6/450e9.
  EXPECT_NEAR(b->allreduce_s(3e6, {8, 8}), 14 * 2e-6 + 1.75 * 3e6 / 450e9, 1e-9);
  // Beyond the largest row (64 GiB) the last segment extends: p2p across nodes of 1e11 B.
  EXPECT_NEAR(b->p2p_s(1e11, true), 1e-6 + 1e11 / 50e9, 1e-6);
  // A group the deployment does not use has no table: a clear error, not a guess.
  EXPECT_THROW(b->allreduce_s(1e6, {4, 4}), std::logic_error);

  // A file at the cache path that is not this fabric's table is never overwritten.
  std::ofstream(a->cache_file()) << "my notes\n";
  try {
    net::TableNetwork::load_or_build(dgx2(), {{8, 8}, {16, 8}});
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not overwriting"), std::string::npos) << e.what();
  }
  std::ifstream in(a->cache_file());
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "my notes\n");
  std::filesystem::remove_all(dir);
}
