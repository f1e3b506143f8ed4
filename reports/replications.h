// Replications (sim/app/replicate.h) as a readable table and as JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/app/replicate.h"

namespace fleetsim::reports {

/// The readable table: metric, mean ± ci95, min … max.
std::string replications_table(const app::Replications& r);
nlohmann::json replications_json(const app::Replications& r);

}  // namespace fleetsim::reports
