// What `fleetsim plan` tells a user about cost and about configurations it dropped.
#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace {

using nlohmann::json;

// The report wraps its paragraphs: compare with runs of spaces and newlines as one space.
std::string unwrapped(const std::string& text) {
  std::string o;
  for (char ch : text) {
    const bool space = ch == ' ' || ch == '\n';
    if (space && !o.empty() && o.back() == ' ') continue;
    o += space ? ' ' : ch;
  }
  return o;
}

TEST_F(Cli, PlanGivesDollarsPerMillionTokensAndWhyConfigurationsAreInvalid) {
  // MI300X has no price in the catalog, so its 8 configurations (tp 4, 8 × 2 weights × 2 KV)
  // are invalid for that reason, which the search paragraph names with their count.
  const Result r =
      run("plan scenarios/plan-llama70b-chat.yaml --set workload.duration=5min "
          "--set plan.gpu=[h100-sxm,mi300x] --set plan.tp=[4,8] --set plan.pp=[1] "
          "--set plan.policy=[sarathi] --set plan.max_num_seqs=[256] --set plan.simulate=2 --out " +
          (dir_ / "p").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = unwrapped(r.out);
  EXPECT_NE(out.find("8 invalid (8 no price for mi300x"), std::string::npos) << out;
  EXPECT_NE(r.out.find("$/M out tok"), std::string::npos) << r.out;
  const json j = json::parse(slurp(dir_ / "p" / "plan.json"));
  const json& c = j["chosen"];
  ASSERT_TRUE(c.is_object());
  // $ per million output tokens = $/h ÷ (3600 · output tokens/s) · 1e6; the chosen
  // configuration's output rate is in the answer paragraph, so check the figure's range:
  // an H100 fleet serving a 70B model costs dollars, not cents or thousands, per million.
  const double usd = c["usd_per_mtok_output"].get<double>();
  EXPECT_GT(usd, 0.1);
  EXPECT_LT(usd, 100);
  EXPECT_NE(out.find("per million output tokens at the peak hour"), std::string::npos) << out;
}

}  // namespace
