// `fleetsim plan`'s runs beyond the search itself (sim/plan/planner.h): how robust the
// choice is to the spread of random draws.
#pragma once

#include <vector>

#include "sim/app/replicate.h"
#include "sim/plan/planner.h"

namespace fleetsim::app {

/// Robustness of one simulated configuration at its chosen replica count: the SLO
/// attainment, TTFT and TPOT p99, and whether the whole SLO was met (slo_met: 1 or 0) over
/// independent seeds.
struct PlanRobustness {
  int candidate = -1;
  Replications reps;
};

/// Re-simulates the chosen configuration and the next two at their replica counts with
/// `replications` seeds (the scenario's and the next ones) on `threads` threads; empty when
/// replications is below 2 or nothing was chosen.
std::vector<PlanRobustness> plan_robustness(const plan::Planner& planner, const plan::PlanResult& r,
                                            int replications, int threads);

}  // namespace fleetsim::app
