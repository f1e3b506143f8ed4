// What `fleetsim plan` prints and writes: the chosen deployment, the runners-up and why each
// lost, why the rest were dropped, and (with --replications) how robust the choice is to
// the spread of random draws (sim/app/plan.h runs those).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/document.h"
#include "sim/app/plan.h"
#include "sim/plan/planner.h"

namespace fleetsim::reports {

/// Why candidate `c` lost to the chosen one (or was dropped), in a few words.
std::string plan_why_lost(const plan::PlanResult& r, const plan::Candidate& c);

/// Configurations on the cost / TTFT p99 Pareto frontier (simulated and feasible; no other
/// feasible configuration is both cheaper and faster), cheapest first.
std::vector<int> plan_pareto(const plan::PlanResult& r);

/// The answer in one paragraph (or why there is none).
std::string plan_answer(const plan::PlanResult& r);
/// Every equally cheap answer (cost within plan.tie_tolerance of the cheapest), smoothest
/// first: latencies, tightest margin and a verdict per perturbation.
Table plan_answers_table(const plan::PlanResult& r);
/// One answer's margin to each SLO target and its re-simulations under the perturbations,
/// as a paragraph: "[label] margins: TPOT p99 47.0 ms of 50.0 ms: 6 % margin; ... With
/// traffic +20 %: still meets (...). With engine overhead +3 ms per iteration: ...".
std::string plan_robust_text(const plan::PlanResult& r, const plan::Candidate& c);
/// The chosen configuration and the next `runners_up`, cheapest first, with why each lost.
Table plan_ranking_table(const plan::PlanResult& r, int runners_up);
/// The configurations that were dropped, by outcome, with the first example of each.
Table plan_lost_table(const plan::PlanResult& r);

/// Axis values that no configuration could use (every configuration with the value is
/// invalid), one line each with the commonest reason and its fix: "gpu = mi300x: all 96
/// configurations invalid: no price for mi300x (...); fix: give plan.usd_per_gpu_hour ...".
/// Empty when every value of every axis has a valid configuration.
std::vector<std::string> plan_dropped_values(const plan::PlanResult& r);

/// The terminal report (dropped axis values first, as DROPPED lines).
std::string plan_report(const plan::PlanResult& r, const std::vector<app::PlanRobustness>& robust,
                        int runners_up = 5);
/// report.md, report.html, pareto.svg and pareto.csv in `dir`; returns the files written.
std::vector<std::string> write_plan_report(const plan::PlanResult& r,
                                           const std::vector<app::PlanRobustness>& robust,
                                           const scenario::Scenario& base, const std::string& dir);
nlohmann::json plan_json(const plan::PlanResult& r, const std::vector<app::PlanRobustness>& robust);
/// plan.csv's rows: one object per configuration in enumeration order, its keys the CSV's
/// columns in order (units in the names): index, label, the axes, status, the analytic
/// estimate, the simulated outcome (null when not simulated), simulations and reason.
nlohmann::ordered_json plan_rows(const plan::PlanResult& r);
/// plan.csv: plan_rows as CSV, one row per configuration (an empty cell for null).
void write_plan_csv(const plan::PlanResult& r, const std::string& path);

}  // namespace fleetsim::reports
