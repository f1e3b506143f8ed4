// The explicit tables of batching policies and routers. They drive construction,
// `fleetsim list policies|routers`, help text and "did you mean" errors.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/serving/router.h"

namespace fleetsim::serving {

struct PolicyInfo {
  std::string name;
  std::string summary;
  std::string citation;
};

struct RouterInfo {
  std::string name;
  std::string summary;
  std::function<std::unique_ptr<Router>(const RngStreams&)> make;
};

const std::vector<PolicyInfo>& policies();
const std::vector<RouterInfo>& routers();
std::vector<std::string> policy_names();
std::vector<std::string> router_names();
/// Throws std::out_of_range for an unknown name (scenario validation reports it first).
std::unique_ptr<Router> make_router(const std::string& name, const RngStreams& rng);

}  // namespace fleetsim::serving
