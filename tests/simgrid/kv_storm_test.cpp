// Live KV transfers on the SimGrid fabric (network: {model: simgrid}) against the analytic
// network on the same disaggregated scenario, with the bandwidth arithmetic by hand.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "hw_models/catalog.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

using namespace fleetsim;

namespace {

struct Times : serving::ServingObserver {
  std::map<uint64_t, SimTime> prefill_done, first_token, arrival;
  void on_prefill_done(const serving::Handoff& h, int) override {
    prefill_done[h.spec.id] = h.prefill_done_ns;
    arrival[h.spec.id] = h.spec.arrival_ns;
  }
  void on_completion(const serving::RequestRecord& r) override {
    first_token[r.spec->id] = r.first_token_ns;
  }
};

// 1 prefill replica (GPU 0 of node 0) and 4 decode replicas (GPUs 8..11, node 1) of
// Llama-3.1-8B on HGX H100; 16 requests of 1,024 prompt tokens arrive within ~16 ms, so
// the prefill replica finishes several at once and their KV caches leave together.
const char* kScenario = R"(
name: kv-storm
model: llama-3.1-8b
hardware: {gpu: h100-sxm, node: hgx-h100, tp: 1}
serving:
  replicas: 4
  router: least-outstanding
  max_batched_tokens: 8192
  disaggregation: {prefill_replicas: 1}
workload:
  requests: 16
  arrival: {process: poisson, rate: 1000/s}
  prompt_tokens: 1024
  output_tokens: 16
)";

Times run(const std::string& model) {
  ::setenv("FLEETSIM_CACHE_DIR", FLEETSIM_TEST_CACHE_DIR, 0);  // tables go to the build tree
  const auto dir =
      std::filesystem::temp_directory_path() / ("fleetsim-kv-storm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "kv-storm.yaml";
  std::ofstream(file) << kScenario;
  static const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  const scenario::Scenario sc =
      scenario::load(file.string(), {"network.model=" + model}, std::nullopt, catalog);
  Times t;
  RunOptions opt;
  opt.observers.push_back(&t);
  opt.check_invariants = true;
  const auto res = run_one_pool(sc, opt);
  EXPECT_EQ(res.summary.requests_completed, 16u);
  return t;
}

}  // namespace

TEST(SimGridLive, KvTransferStormRaisesTtftAsBandwidthArithmeticSays) {
  const Times a = run("analytic");
  const Times s = run("simgrid");
  ASSERT_EQ(a.prefill_done.size(), 16u);
  ASSERT_EQ(s.prefill_done.size(), 16u);
  // KV of one request: 2 (K, V) · 32 layers · 8 KV heads · 128 · 2 bytes = 131,072 B per
  // token; 1,024 tokens = 134,217,728 B, over one 400 Gb/s NIC (50 GB/s, α = 1 µs):
  // alone 1 µs + 2.684 ms. A batch of k requests whose prefill ends at the same instant
  // sends k caches out of GPU 0's one NIC at once: each flow gets 50/k GB/s and all end at
  // 1 µs + k · 2.684 ms, i.e. (k − 1) · 2.684 ms later than the analytic model (which
  // prices every transfer alone).
  const double S = 131072.0 * 1024, bw = 50e9, alpha = 1e-6;
  std::map<SimTime, int> batch;  // prefill end → requests finishing then
  for (const auto& [id, t] : s.prefill_done) ++batch[t];
  int largest = 0;
  double extra_ttft = 0;
  for (const auto& [id, t] : s.prefill_done) {
    // The prefill pool does not see the network: the same batches in both runs.
    EXPECT_EQ(a.prefill_done.at(id), t);
    const int k = batch[t];
    largest = std::max(largest, k);
    const double analytic = ns_to_seconds(a.first_token.at(id) - a.prefill_done.at(id));
    const double live = ns_to_seconds(s.first_token.at(id) - t);
    EXPECT_NEAR(analytic, alpha + S / bw, 2e-9) << "request " << id;
    EXPECT_NEAR(live, alpha + k * S / bw, 2e-9) << "request " << id << " in a batch of " << k;
    extra_ttft += (k - 1) * S / bw;
  }
  EXPECT_GE(largest, 3) << "the scenario should make a storm: several transfers at once";
  std::printf("batches (prefill end -> requests):");
  for (const auto& [t, k] : batch) std::printf(" %.3f ms:%d", ns_to_seconds(t) * 1e3, k);
  std::printf("\nextra TTFT, mean over 16: %.3f ms\n", extra_ttft / 16 * 1e3);
  // TTFT (first token − arrival) rises by the same amount on average.
  double ttft_a = 0, ttft_s = 0;
  for (const auto& [id, arr] : s.arrival) {
    ttft_a += ns_to_seconds(a.first_token.at(id) - arr);
    ttft_s += ns_to_seconds(s.first_token.at(id) - arr);
  }
  EXPECT_NEAR((ttft_s - ttft_a) / 16, extra_ttft / 16, 16 * 2e-9);
  EXPECT_GT(ttft_s - ttft_a, 0.0);
}
