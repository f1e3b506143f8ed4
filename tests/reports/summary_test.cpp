// Tests for reports/summary: how an SLO check reads, and the capacity lines of run
// --capacity, checked by hand.
#include "reports/summary.h"

#include <gtest/gtest.h>

namespace fleetsim::reports {
namespace summary_test {  // named: the tests build as one unit with other files

metrics::SloCheck check(double value_s, double bound_s) {
  metrics::SloCheck c;
  c.target.metric = workload::SloMetric::kTtft;
  c.target.quantile = 0.99;
  c.target.bound_s = bound_s;
  c.value_s = value_s;
  c.met = value_s <= bound_s;
  return c;
}

TEST(SloCheckText, MarginMissAndRatio) {
  // 877 ms of 1 s: 1 − 0.877 = 12.3 % margin, printed whole from 10 %.
  EXPECT_NE(slo_check_text(check(0.877, 1.0)).find("12 % margin"), std::string::npos);
  // 1.27 s of 1 s: missed by 27 %.
  EXPECT_NE(slo_check_text(check(1.27, 1.0)).find("missed by 27 %"), std::string::npos);
  // 6.02 min = 361.2 s of 1 s: from ten times the bound, the ratio: 361x.
  const std::string far = slo_check_text(check(361.2, 1.0));
  EXPECT_NE(far.find("361x the bound"), std::string::npos) << far;
  EXPECT_EQ(far.find("missed by"), std::string::npos) << far;
}

TEST(CapacityText, HeadroomOrNone) {
  app::Capacity c;
  c.target = 0.99;
  c.scale_met = 2.43;
  c.scale_missed = 2.46;
  c.throughput_at_capacity_per_s = 44.4;
  c.probes = {{1, true, "", 19.5}, {2.46, false, "95.8 % of requests within the SLO", 44.4}};
  const std::string t = capacity_text(c);
  EXPECT_NE(t.find("up to 2.43x this traffic (44.4 req/s completed"), std::string::npos) << t;
  EXPECT_NE(t.find("at 2.46x it misses: 95.8 %"), std::string::npos) << t;
  EXPECT_NE(t.find("headroom now: +143.0 % more traffic"), std::string::npos) << t;  // 2.43 − 1
  // Capacity at 0.805x: the traffic as written is 1/0.805 = 1.24x what meets the SLO.
  c.scale_met = 0.805;
  c.scale_missed = 0.814;
  EXPECT_NE(capacity_text(c).find("none: the traffic as written is 1.24x"), std::string::npos);
  const nlohmann::json j = capacity_json(c);
  EXPECT_NEAR(j["headroom"].get<double>(), -0.195, 1e-12);
  EXPECT_EQ(j["probes"].size(), 2u);
}

}  // namespace summary_test
}  // namespace fleetsim::reports
