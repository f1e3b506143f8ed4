// What `fleetsim plan` writes and prints for a fleet scenario (the search itself:
// sim/app/fleet_plan.h): the answer with its error band and traffic perturbation, every
// configuration ranked by $ a day, fleet_plan.json and report.md / report.html.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/document.h"
#include "sim/app/fleet_plan.h"

namespace fleetsim::reports {

/// Every configuration, cheapest $ a day first; those that missed or were invalid last.
Table fleet_plan_table(const app::FleetPlanResult& r);
/// The answer in one paragraph (or why there is none).
std::string fleet_plan_answer(const app::FleetPlanResult& r);
/// Options every configuration of which was invalid: "option 'X': all N configurations
/// invalid: reason".
std::vector<std::string> fleet_plan_dropped(const app::FleetPlanResult& r);
/// The terminal report.
std::string fleet_plan_text(const app::FleetPlanResult& r);
/// {"fleet_plan": {"scenario", ..., "chosen": index or null, "configurations": [...]}}.
nlohmann::ordered_json fleet_plan_json(const app::FleetPlanResult& r);
/// report.md and report.html in `dir`; returns the files written.
std::vector<std::string> write_fleet_plan_report(const app::FleetPlanResult& r,
                                                 const std::string& dir);

}  // namespace fleetsim::reports
