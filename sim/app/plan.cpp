#include "sim/app/plan.h"

#include <algorithm>
#include <string>
#include <utility>

namespace fleetsim::app {

std::vector<PlanRobustness> plan_robustness(const plan::Planner& planner, const plan::PlanResult& r,
                                            int replications, int threads) {
  std::vector<PlanRobustness> out;
  if (replications < 2 || r.chosen < 0) return out;
  for (std::size_t k = 0; k < std::min<std::size_t>(3, r.ranking.size()); ++k) {
    const plan::Candidate& c = r.candidates[static_cast<std::size_t>(r.ranking[k])];
    PlanRobustness rb;
    rb.candidate = c.index;
    rb.reps = replicate(replications, planner.base().seed, threads, [&](uint64_t s) {
      const plan::Outcome o = planner.evaluate(c, c.best->replicas, s);
      return std::vector<std::pair<std::string, double>>{{"slo_attainment", o.attainment},
                                                         {"ttft_p99_s", o.ttft_p99_s},
                                                         {"tpot_p99_s", o.tpot_p99_s},
                                                         {"slo_met", o.met ? 1.0 : 0.0}};
    });
    out.push_back(std::move(rb));
  }
  return out;
}

}  // namespace fleetsim::app
