// hw::Fabric: validation, the exact text form that keys the SimGrid table cache.
#include <gtest/gtest.h>

#include "hw_models/network.h"

using fleetsim::hw::AnalyticNetwork;
using fleetsim::hw::Fabric;

TEST(Fabric, SerializeRoundTripsExactlyAndHashesTheContent) {
  Fabric f;
  f.gpus = 72 * 2;
  f.gpus_per_node = 4;
  f.domain_gpus = 72;
  f.nics_per_node = 4;
  f.scaleup = {1.0 / 3 * 1e-6, 900e9};
  f.nic = {1e-6, 50e9};
  f.nodes_per_leaf = 16;
  f.oversubscription = 1.5;
  const Fabric g = Fabric::parse(f.serialize());
  EXPECT_EQ(g.serialize(), f.serialize());
  EXPECT_EQ(g.scaleup.latency_s, f.scaleup.latency_s);  // hex floats: bit-exact
  EXPECT_EQ(g.hash(), f.hash());
  Fabric h = f;
  h.oversubscription = 2.0;
  EXPECT_NE(h.hash(), f.hash());
  EXPECT_THROW(Fabric::parse("gpus=8\nwarp=9\n"), std::invalid_argument);
  Fabric w = f;
  w.regions = 2;
  w.wan = {30e-3, 12.5e9};
  EXPECT_EQ(Fabric::parse(w.serialize()).serialize(), w.serialize());
  EXPECT_NE(w.hash(), f.hash());
}

TEST(Fabric, ValidateNamesTheInconsistentField) {
  Fabric f;
  f.scaleup = {2e-6, 450e9};
  f.nic = {1e-6, 50e9};
  EXPECT_NO_THROW(f.validate());
  auto message = [](const Fabric& x) {
    try {
      x.validate();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Fabric a = f;
  a.domain_gpus = 12;  // not whole nodes of 8
  EXPECT_NE(message(a).find("domain_gpus"), std::string::npos);
  Fabric b = f;
  b.oversubscription = 0.5;
  EXPECT_NE(message(b).find("oversubscription"), std::string::npos);
  Fabric c = f;
  c.gpus = 16;
  c.nics_per_node = 0;  // two domains and no way between them
  EXPECT_NE(message(c).find("NIC"), std::string::npos);
  Fabric d = f;
  d.gpus = 12;
  EXPECT_NE(message(d).find("whole nodes"), std::string::npos);
  Fabric r = f;
  r.gpus = 24;  // 3 nodes
  r.regions = 2;
  r.wan = {30e-3, 12.5e9};
  EXPECT_NE(message(r).find("regions"), std::string::npos);
  r.gpus = 32;
  r.wan = {};
  EXPECT_NE(message(r).find("WAN"), std::string::npos);
}

TEST(Fabric, AnalyticViewUsesThePerGpuShareOfTheNics) {
  // 4 NICs of 50 GB/s for 8 GPUs: 25 GB/s per GPU when all send; p2p across domains at
  // 1 µs + 1e8 / 25e9 = 4.001 ms.
  Fabric f;
  f.gpus = 16;
  f.nics_per_node = 4;
  f.scaleup = {2e-6, 450e9};
  f.nic = {1e-6, 50e9};
  EXPECT_DOUBLE_EQ(f.scaleout_bw_per_gpu(), 25e9);
  EXPECT_NEAR(AnalyticNetwork(f).p2p_s(1e8, true), 1e-6 + 1e8 / 25e9, 1e-15);
}
