// What `fleetsim plan` prints and writes: the chosen deployment, the runners-up and why each
// lost, why the rest were dropped, and (with --replications) how robust the choice is to
// the spread of random draws.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/replications.h"
#include "sim/plan/planner.h"

namespace fleetsim::reports {

/// Robustness of one simulated configuration at its chosen replica count: the SLO
/// attainment over independent seeds.
struct PlanRobustness {
  int candidate = -1;
  Replications reps;
};

/// "$144/h", "$3.46k/day": money with 3 significant digits.
std::string format_usd(double usd, const char* per);

/// Why candidate `c` lost to the chosen one (or was dropped), in a few words.
std::string plan_why_lost(const plan::PlanResult& r, const plan::Candidate& c);

/// Configurations on the cost / TTFT p99 Pareto frontier (simulated and feasible; no other
/// feasible configuration is both cheaper and faster), cheapest first.
std::vector<int> plan_pareto(const plan::PlanResult& r);

std::string plan_report(const plan::PlanResult& r, const std::vector<PlanRobustness>& robust,
                        int runners_up = 5);
nlohmann::json plan_json(const plan::PlanResult& r, const std::vector<PlanRobustness>& robust);
/// One row per configuration, units in the column names.
void write_plan_csv(const plan::PlanResult& r, const std::string& path);

}  // namespace fleetsim::reports
