// The live expert-parallel all-to-all (network.live_alltoall) and the WAN between regions
// (network.regions, network.wan), with the bandwidth arithmetic by hand.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "sim/metrics/summary_codec.h"
#include "sim/network/live_transfers.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"
#include "tests/simgrid/fabrics.h"

using namespace fleetsim;

namespace {

std::string write_scenario(const std::string& name, const std::string& text) {
  ::setenv("FLEETSIM_CACHE_DIR", FLEETSIM_TEST_CACHE_DIR, 0);  // tables go to the build tree
  const auto dir =
      std::filesystem::temp_directory_path() / ("fleetsim-a2a-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / (name + ".yaml");
  std::ofstream(file) << text;
  return file.string();
}

const hw::Catalog& catalog() {
  static const hw::Catalog c = hw::Catalog::load(hw::Catalog::default_dir());
  return c;
}

scenario::Scenario load(const std::string& file, std::vector<std::string> overrides = {}) {
  return scenario::load(file, overrides, std::nullopt, catalog());
}

std::string error_of(const std::string& text) {
  const std::string file = write_scenario("bad", text);
  try {
    load(file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The cross-domain flows of an EP group on GPUs [first, first + 16) of 8-GPU domains, as
// the simulation starts them: one per (s, t) in different domains, rail-aligned (sent from
// the GPU of s's domain with t's local index): 16 · 8 = 128 flows; with `rail0_only` the
// 16 of rail 0.
std::vector<std::pair<int, int>> cross_pairs(int first, bool rail0_only = false) {
  std::vector<std::pair<int, int>> p;
  for (int s = first; s < first + 16; ++s)
    for (int t = first; t < first + 16; ++t) {
      const int src = s / 8 * 8 + t % 8;
      if (s / 8 != t / 8 && (!rail0_only || src % 8 == 0)) p.emplace_back(src, t);
    }
  return p;
}

// An all-to-all on nodes 0-1 (tag 1) and a whole-node KV group from node 0 to node 2
// (tag 2), both at t = 0; returns the groups' exact ends.
std::pair<double, double> a2a_and_kv(net::LiveTransfers& live, bool rail0_only) {
  live.start_flows(1, cross_pairs(0, rail0_only), 1e8, 0);
  live.start_group(2, 0, 16, 8, 1e9, 0);
  std::pair<double, double> end{-1, -1};
  for (int guard = 0; live.groups_in_flight() > 0 && guard < 1000; ++guard)
    live.advance(live.next_wake(), [&](uint64_t tag, SimTime) {
      (tag == 1 ? end.first : end.second) = live.last_end_s();
    });
  return end;
}

// DeepSeek-V3 FP8 at EP 16 (attention DP 16) on two HGX H100 nodes per replica.
const char* kEpScenario = R"(
name: ep16
seed: 3
model: deepseek-v3
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1, dp_attention: 16, expert_parallel: true}
precision: {weights: fp8, activations: fp8, kv: bf16}
serving:
  replicas: 2
  router: least-outstanding
  max_num_seqs: 256
  max_batched_tokens: 8192
workload:
  requests: 300
  arrival: {process: poisson, rate: 20/s}
  prompt_tokens: {dist: lognormal, median: 1500, sigma: 0.8, max: 6000}
  output_tokens: {dist: lognormal, median: 100, sigma: 0.8, max: 500}
network: {model: simgrid}
)";

}  // namespace

TEST(LiveAllToAll, SharedNicDelaysTheGroupByTheArithmetic) {
  // 4 HGX-H100-like nodes: NIC 50 GB/s with α 1 µs per GPU, one leaf (uplinks never bind).
  const hw::Fabric fab = test_fabrics::hgx_h100_like(4);
  net::LiveTransfers live(fab, false);
  const auto pairs = cross_pairs(0);  // nodes 0 and 1
  ASSERT_EQ(pairs.size(), 128u);
  const double X = 1e8;
  // Alone: every NIC of the two nodes sends 8 flows (to its rail's GPU on the other node)
  // and receives 8, so each flow gets 50/8 GB/s: 1 µs + 8 · 1e8 / 50e9 = 16.001 ms.
  EXPECT_NEAR(live.time_alone_s(pairs, X), 1e-6 + 8 * X / 50e9, 1e-12);
  // With one more flow out of GPU 0's NIC (to node 2, same rail, same latency), that NIC
  // carries 9: GPU 0's 8 all-to-all flows get 50/9 GB/s and end at 1 µs + 9 · X / 50e9
  // = 18.001 ms, 2 ms late (X / 50e9). The other GPUs' flows are held by their own NICs
  // at 50/8 GB/s and end at 16.001 ms.
  live.start_flows(1, pairs, X, 0);
  live.start_group(2, 0, 16, 1, 1e9, 0);
  double a2a_end = -1;
  for (int guard = 0; live.groups_in_flight() > 0 && guard < 1000; ++guard)
    live.advance(live.next_wake(), [&](uint64_t tag, SimTime started) {
      EXPECT_EQ(started, 0);
      if (tag == 1) a2a_end = live.last_end_s();
    });
  EXPECT_NEAR(a2a_end, 1e-6 + 9 * X / 50e9, 1e-12);
}

TEST(LiveAllToAll, RailZeroAloneGivesTheTimesOfAllRails) {
  // Rail-aligned all-to-alls and whole-node KV groups load every rail alike: the ends of a
  // run of all 128 + 8 flows equal those of rail 0's 16 + 1. By hand: GPU k's NIC on node
  // 0 carries 8 all-to-all flows of 1e8 B and the KV flow of 1e9 B: 9 flows at 50/9 GB/s
  // until the all-to-all ends at 1 µs + 9 · 1e8 / 50e9 = 18.001 ms (node 1's NICs send
  // theirs at 50/8 and are done at 16.001 ms); the KV flow then has 1e9 − 1e8 left at
  // 50 GB/s: 18.001 + 18 = 36.001 ms.
  const hw::Fabric fab = test_fabrics::hgx_h100_like(4);
  std::pair<double, double> all, rail0;
  {
    net::LiveTransfers live(fab, false);
    all = a2a_and_kv(live, false);
  }
  {
    net::LiveTransfers live(fab, true);
    rail0 = a2a_and_kv(live, true);
  }
  EXPECT_NEAR(all.first, 1e-6 + 9 * 1e8 / 50e9, 1e-12);
  EXPECT_NEAR(all.second, 1e-6 + 9 * 1e8 / 50e9 + (1e9 - 1e8) / 50e9, 1e-12);
  EXPECT_NEAR(rail0.first, all.first, 1e-12);
  EXPECT_NEAR(rail0.second, all.second, 1e-12);
}

TEST(LiveAllToAll, AloneItEndsEveryIterationWhereTheTablesDo) {
  // Without other traffic every iteration's flows take exactly their time alone, so the
  // live run equals the table run request by request (the live one runs one iteration per
  // event, which fast_forward's tests show changes nothing).
  const std::string file = write_scenario("ep16", kEpScenario);
  const scenario::Scenario live_sc = load(file);
  const scenario::Scenario table_sc = load(file, {"network.live_alltoall=false"});
  ASSERT_TRUE(live_sc.live_alltoall);
  ASSERT_FALSE(table_sc.live_alltoall);
  const RunResult t = run_one_pool(table_sc);
  const RunResult l = run_one_pool(live_sc);
  const metrics::Summary &a = t.summary, &b = l.summary;
  ASSERT_EQ(b.requests_completed, 300u);
  EXPECT_EQ(a.requests_completed, b.requests_completed);
  EXPECT_EQ(a.iterations, b.iterations);
  for (auto [x, y] : {std::pair{a.ttft, b.ttft}, {a.tpot, b.tpot}, {a.e2e, b.e2e}}) {
    EXPECT_DOUBLE_EQ(x.mean_s, y.mean_s);
    EXPECT_DOUBLE_EQ(x.p99_s, y.p99_s);
    EXPECT_DOUBLE_EQ(x.max_s, y.max_s);
  }
  EXPECT_DOUBLE_EQ(a.sim_duration_s, b.sim_duration_s);
  // Every iteration computes at least one token, so each ran its all-to-all live, and none
  // was delayed. The replicas sit on different nodes, and an all-to-all keeps inside its
  // replica's two nodes.
  EXPECT_EQ(b.alltoall_iterations, b.iterations);
  EXPECT_EQ(b.alltoall_delayed, 0u);
  EXPECT_EQ(a.alltoall_iterations, 0u);
  // Bytes: per token and MoE layer each GPU dispatches top-8 copies of a 7,168-wide FP8
  // activation and gets them combined (2 calls), 8/16 of them to the other node:
  // tokens · 58 MoE layers · 2 · 8 · 7,168 B · 8/16.
  const double per_token = 58 * 2 * 8 * 7168.0 * 8 / 16;
  const double tokens = static_cast<double>(b.input_tokens - b.prefix_hit_tokens) +
                        static_cast<double>(b.output_tokens) -
                        static_cast<double>(b.requests_completed);
  // Prompt tokens computed once each and every output token but the first decoded once;
  // a preemption (none expected here) would recompute.
  ASSERT_EQ(b.preemptions, 0u);
  EXPECT_NEAR(b.alltoall_bytes, tokens * per_token, 1e-6 * tokens * per_token);
}

TEST(LiveAllToAll, KvTransfersAndAllToAllsSlowEachOther) {
  // Disaggregated: the decode replicas' NICs carry both their all-to-all and the incoming
  // KV caches. Live all-to-all: KV transfers take longer on average than with the
  // all-to-all priced from the tables, and some iterations are delayed.
  std::string text = kEpScenario;
  text.replace(text.find("  max_batched_tokens: 8192\n"), 26,
               "  max_batched_tokens: 8192\n  disaggregation: {prefill_replicas: 2}\n");
  const std::string file = write_scenario("ep16-dg", text);
  const RunResult t = run_one_pool(load(file, {"network.live_alltoall=false"}));
  const RunResult l = run_one_pool(load(file));
  EXPECT_EQ(l.summary.requests_completed, 300u);
  EXPECT_EQ(l.summary.kv_transfers, 300u);
  EXPECT_GT(l.summary.kv_transfer_mean_s, t.summary.kv_transfer_mean_s);
  EXPECT_GT(l.summary.alltoall_delayed, 0u);
  EXPECT_GT(l.summary.alltoall_delay_max_s, 0.0);
}

TEST(OwnProcess, SimGridRunsOnDifferentFabricsSideBySide) {
  // One process holds one SimGrid engine for one fabric: 1 and 2 replicas need fabrics of
  // 16 and 32 GPUs. In helper processes both run at once on two threads and give what the
  // process itself gives (every field of the summary, compared as encoded).
  const std::string file = write_scenario("ep16", kEpScenario);
  const scenario::Scenario one = load(file, {"serving.replicas=1"});
  const scenario::Scenario two = load(file);
  ASSERT_TRUE(needs_own_engine(one));
  ASSERT_NE(one.fabric.gpus, two.fabric.gpus);
  RunResult a, b;
  std::thread t([&] { a = run_in_own_process(one); });
  b = run_in_own_process(two);
  t.join();
  EXPECT_EQ(a.summary.requests_completed, 300u);
  EXPECT_EQ(b.summary.requests_completed, 300u);
  EXPECT_GT(a.summary.ttft.p99_s, b.summary.ttft.p99_s);  // the same load on half the GPUs
  const RunResult here = run_one_pool(two);
  EXPECT_EQ(metrics::encode_summary(here.summary), metrics::encode_summary(b.summary));
  EXPECT_EQ(here.events, b.events);
  // And after this process has used its engine, a helper still starts from nothing.
  const RunResult again = run_in_own_process(one);
  EXPECT_EQ(metrics::encode_summary(again.summary), metrics::encode_summary(a.summary));
}

namespace {
// One Llama-3.1-8B request of 1,024 prompt tokens prefilled in region 0 and decoded in
// region 1. KV: 2 · 32 layers · 8 KV heads · 128 · 2 B = 131,072 B per token, 134,217,728 B.
std::string wan_scenario(int tp, const std::string& wan_bw) {
  return "name: wan\nmodel: llama-3.1-8b\n"
         "hardware: {gpu: h100-sxm, node: hgx-h100, tp: " +
         std::to_string(tp) +
         "}\n"
         "serving: {replicas: 1, disaggregation: {prefill_replicas: 1}}\n"
         "workload: {requests: 1, arrival: {process: poisson, rate: 1/s}, prompt_tokens: 1024, "
         "output_tokens: 4}\n"
         "network: {regions: 2, wan: {bandwidth: " +
         wan_bw + ", latency: 10ms}}\n";
}
double kv_seconds(const std::string& text, const std::string& model) {
  const scenario::Scenario sc = load(write_scenario("wan", text), {"network.model=" + model});
  const RunResult r = run_one_pool(sc);
  EXPECT_EQ(r.summary.kv_transfers, 1u);
  return r.summary.kv_transfer_mean_s;
}
}  // namespace

TEST(Wan, KvTransferBetweenRegionsByHand) {
  const double S = 131072.0 * 1024, alpha = 1e-6 + 10e-3;  // NIC α + one-way WAN latency
  // One GPU, WAN 100 Gb/s (12.5 GB/s) below the 50 GB/s NIC: α + S / 12.5e9 = 20.738 ms.
  const std::string one = wan_scenario(1, "100Gbps");
  EXPECT_NEAR(kv_seconds(one, "analytic"), alpha + S / 12.5e9, 1e-9);
  // SimGrid clocks the wake-up to the next nanosecond.
  EXPECT_NEAR(kv_seconds(one, "simgrid"), alpha + S / 12.5e9, 2e-9);
}

TEST(Wan, ParallelFlowsShareTheWanLink) {
  const double S = 131072.0 * 1024, alpha = 1e-6 + 10e-3;
  // tp 8: 8 flows of S/8 from 8 NICs share one 800 Gb/s (100 GB/s) WAN link: 12.5 GB/s
  // each (below the NIC's 50): α + (S/8) / 12.5e9 = 11.343 ms, not the 10.337 ms of 8
  // flows at NIC speed.
  const std::string eight = wan_scenario(8, "800Gbps");
  EXPECT_NEAR(kv_seconds(eight, "analytic"), alpha + S / 8 / 12.5e9, 1e-9);
  EXPECT_NEAR(kv_seconds(eight, "simgrid"), alpha + S / 8 / 12.5e9, 2e-9);
}

TEST(Wan, OneFlowIsHeldByItsNic) {
  // tp 1 over the same 100 GB/s WAN link: the flow's own 50 GB/s NIC binds: α + S / 50e9.
  const double S = 131072.0 * 1024, alpha = 1e-6 + 10e-3;
  const std::string one = wan_scenario(1, "800Gbps");
  EXPECT_NEAR(kv_seconds(one, "analytic"), alpha + S / 50e9, 1e-9);
  EXPECT_NEAR(kv_seconds(one, "simgrid"), alpha + S / 50e9, 2e-9);
}

TEST(LiveAllToAllScenario, WhatCannotRunIsALocatedError) {
  const std::string workload =
      "workload: {requests: 4, arrival: {process: poisson, rate: 1/s}, prompt_tokens: 100, "
      "output_tokens: 10}\n";
  // live_alltoall needs the SimGrid fabric.
  std::string e = error_of(
      "model: deepseek-v3\nhardware: {gpu: h100-sxm, node: hgx-h100, tp: 1, dp_attention: 16, "
      "expert_parallel: true}\n"
      "precision: {weights: fp8, activations: fp8, kv: bf16}\nserving: {replicas: 1}\n" +
      workload + "network: {model: analytic, live_alltoall: true}\n");
  EXPECT_NE(e.find("bad.yaml:6"), std::string::npos) << e;
  EXPECT_NE(e.find("network.live_alltoall"), std::string::npos) << e;
  EXPECT_NE(e.find("model: simgrid"), std::string::npos) << e;
  // Llama-3.1-8B on HGX H100 at `tp`, with `serving` and `network` sections.
  auto llama8b = [&](int tp, const std::string& serving, const std::string& network) {
    return error_of(
        "model: llama-3.1-8b\nhardware: {gpu: h100-sxm, node: hgx-h100, tp: " + std::to_string(tp) +
        "}\nserving: " + serving + "\n" + workload + "network: " + network + "\n");
  };
  // A dense model on one node has no all-to-all that leaves the domain.
  e = llama8b(8, "{replicas: 1}", "{model: simgrid, live_alltoall: true}");
  EXPECT_NE(e.find("network.live_alltoall"), std::string::npos) << e;
  EXPECT_NE(e.find("nothing to run live"), std::string::npos) << e;
  // Regions need two pools and a WAN link; a WAN link needs regions.
  e = llama8b(1, "{replicas: 1}", "{regions: 2, wan: {bandwidth: 100Gbps, latency: 5ms}}");
  EXPECT_NE(e.find("network.regions"), std::string::npos) << e;
  EXPECT_NE(e.find("disaggregation"), std::string::npos) << e;
  e = llama8b(1, "{replicas: 1, disaggregation: {prefill_replicas: 1}}", "{regions: 2}");
  EXPECT_NE(e.find("network.regions"), std::string::npos) << e;
  EXPECT_NE(e.find("wan:"), std::string::npos) << e;
  e = llama8b(1, "{replicas: 1}", "{wan: {bandwidth: 100Gbps, latency: 5ms}}");
  EXPECT_NE(e.find("network.wan"), std::string::npos) << e;
  EXPECT_NE(e.find("regions: 2"), std::string::npos) << e;
}
