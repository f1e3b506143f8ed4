#include "sim/fleet/one_pool.h"

#include <algorithm>

namespace fleetsim::fleet {

scenario::Pool main_pool(const scenario::Scenario& sc) {
  scenario::Pool p;
  p.replicas = sc.replicas;
  p.model = sc.model;
  p.gpu = sc.gpu;
  p.node = sc.node;
  p.par = sc.par;
  p.dep = sc.dep;
  p.memory = sc.memory;
  p.vllm = sc.vllm;
  p.efficiency_source = sc.efficiency_source;
  p.spec = sc.spec;
  p.lora_rank = sc.lora_rank;
  p.prefix_host_blocks = sc.prefix_host_blocks;
  return p;
}

namespace {

FleetPool as_fleet_pool(const std::string& name, scenario::Pool pool) {
  FleetPool fp;
  fp.name = "local/" + name;
  fp.min_replicas = fp.max_replicas = pool.replicas;
  fp.pool = std::move(pool);
  return fp;
}

}  // namespace

FleetSpec one_pool_fleet(const scenario::Scenario& sc, size_t classes) {
  FleetSpec f;
  FleetRegion region;
  region.traffic.name = "local";
  if (sc.prefill_pool) region.pools.push_back(as_fleet_pool("prefill", *sc.prefill_pool));
  if (sc.small_pool) region.pools.push_back(as_fleet_pool("small", *sc.small_pool));
  region.pools.push_back(as_fleet_pool("main", main_pool(sc)));
  f.regions.push_back(std::move(region));
  f.wan_rtt_s = {{0.0}};
  f.router = sc.router;
  f.models.push_back(sc.model.id);
  if (sc.small_pool) {
    f.models.push_back(sc.small_pool->model.id);
    f.cascade_model = 1;
    f.escalation = sc.escalation;
  }
  f.class_model.assign(std::max<size_t>(1, classes), 0);
  return f;
}

}  // namespace fleetsim::fleet
