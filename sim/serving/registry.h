// The explicit tables of batching policies and routers. They drive construction,
// `fleetsim list policies|routers`, help text and "did you mean" errors.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/engine.h"
#include "sim/serving/observer.h"
#include "sim/serving/router.h"
#include "sim/serving/serving_config.h"
#include "sim/serving/step_model.h"

namespace fleetsim::serving {

/// A policy's parameter, for `fleetsim list policies` and the scenario reference.
struct ParamInfo {
  std::string key;       ///< serving.<key> in a scenario
  std::string type;      ///< "integer", "bool", "time", ...
  std::string fallback;  ///< default, as written in a scenario
  std::string unit;      ///< "" for dimensionless
  std::string help;
};

/// Builds one replica of a policy from the scenario's serving settings: the engine's part
/// (EngineConfig) and the policy's own fields.
using ReplicaFactory = std::function<std::unique_ptr<Replica>(
    int index, core::Engine& engine, ServingObserver& observer, const StepModel& steps,
    const ServingConfig& cfg)>;

struct PolicyInfo {
  std::string name;
  std::string summary;
  std::string citation;
  std::vector<ParamInfo> params;
  ReplicaFactory make;
};

/// Router settings from the scenario's serving section.
struct RouterParams {
  int64_t prefix_balance_slack = 8;  ///< prefix-aware: outstanding requests above the least loaded
};

struct RouterInfo {
  std::string name;
  std::string summary;
  std::function<std::unique_ptr<Router>(const RngStreams&, const RouterParams&)> make;
  std::vector<ParamInfo> params = {};
};

const std::vector<PolicyInfo>& policies();
const std::vector<RouterInfo>& routers();
std::vector<std::string> policy_names();
std::vector<std::string> router_names();
/// Throw std::out_of_range for an unknown name (scenario validation reports it first).
std::unique_ptr<Router> make_router(const std::string& name, const RngStreams& rng,
                                    const RouterParams& params = {});
const PolicyInfo& policy(const std::string& name);

}  // namespace fleetsim::serving
