// A single-pool scenario as a fleet of one: one region whose users sit at its datacenter,
// the scenario's pools (the prefill pool of a disaggregated deployment, the small model of
// a cascade, then the main pool) in that order, so that replicas are numbered as the
// scenario lists them, and its router inside the region.
#pragma once

#include "sim/fleet/spec.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::fleet {

/// The fleet of one that runs `sc` (which has no fleet: section): `classes` request
/// classes (at least one entry in class_model), all served by the scenario's model. No
/// autoscaling, no failures, no WAN.
FleetSpec one_pool_fleet(const scenario::Scenario& sc, size_t classes);

/// The scenario's main pool (its own hardware, serving.replicas and serving settings) as a
/// pool of a fleet.
scenario::Pool main_pool(const scenario::Scenario& sc);

}  // namespace fleetsim::fleet
