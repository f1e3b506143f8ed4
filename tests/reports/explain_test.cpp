// Tests for reports/explain: the representative prefill iteration of a scenario with
// attention data parallelism puts its lone chunk on one rank, as the simulation does.
#include "reports/explain.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/sim/scenario_text.h"

namespace fleetsim::reports {
namespace explain_test {  // named: the tests build as one unit with other files

TEST(Explain, ALonePromptSitsOnOneAttentionDataParallelRank) {
  // Llama-2-7B (32 heads of 128) on 4 attention-DP ranks, 1,000-token prompts. The
  // representative prefill is one 1,000-token chunk: 1,000 · 1,001 / 2 = 500,500 causal
  // pairs at 4 · 32 · 128 = 16,384 FLOPs each = 8.20 GFLOP on the rank that holds it
  // (spread evenly it would be a quarter, 2.05G).
  const scenario::Scenario sc = test::load_text(R"(
model: llama-2-7b
hardware: {gpu: a100-80gb-sxm, tp: 1, dp_attention: 4}
serving: {engine: ideal}
workload: {arrival: {rate: 1/s}, requests: 10, prompt_tokens: 1000, output_tokens: 10}
)",
                                                "s.yaml");
  const Representative r = representative_iterations(sc);
  EXPECT_EQ(r.prefill.prefill_tokens, 1000);
  EXPECT_EQ(r.prefill.largest_chunk_tokens, 1000);
  const std::string text = explain(sc);
  const size_t at = text.find("attention: prefill attention");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("8.20G"), std::string::npos) << line;
}

TEST(Explain, ALoadedRunAlsoShowsItsMeanDecodeBatch) {
  // Llama-2-7B on one A100, 1,000 in / 10 out: the representative decode is 32 sequences at
  // 1,000 + 10/2 = 1,005 context tokens. A run whose mean decode batch was 99.6 adds a
  // decode of round(99.6) = 100 sequences at the same context: 100 · 1,005 = 100,500
  // context tokens, 100/32 times the representative decode's attention (linear in the
  // context). Without a simulated batch, or with one below 32, only the two tables show.
  const scenario::Scenario sc = test::load_text(R"(
model: llama-2-7b
hardware: {gpu: a100-80gb-sxm, tp: 1}
serving: {engine: ideal}
workload: {arrival: {rate: 1/s}, requests: 10, prompt_tokens: 1000, output_tokens: 10}
)",
                                                "s.yaml");
  const std::string title = "decode at the simulation's mean decode batch";
  EXPECT_EQ(explain(sc).find(title), std::string::npos);
  EXPECT_EQ(explain(sc, 20.0).find(title), std::string::npos);
  const std::string text = explain(sc, 99.6);
  const size_t at = text.find(title);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_NE(text.find("100 sequences at 1005 context tokens each", at), std::string::npos) << text;
  const Representative r = representative_iterations(sc);
  hw::BatchShape d = r.decode;
  d.decode_seqs = 100;
  d.logits_tokens = 100;
  d.decode_ctx_tokens = 100 * 1005;
  const double a32 = hw::estimate_step(sc.dep, r.decode).attention_s;
  EXPECT_NEAR(hw::estimate_step(sc.dep, d).attention_s, a32 * 100.0 / 32.0, 1e-9 * a32);
}

}  // namespace explain_test
}  // namespace fleetsim::reports
