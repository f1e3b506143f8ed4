#include "sim/app/run.h"

#include <utility>

#include "sim/dist/dist.h"
#include "sim/network/table_network.h"
#include "sim/simulation.h"

namespace fleetsim::app {

void prepare_network(const scenario::Scenario& sc) {
  net::build_tables(sc.dep.network.get());
  if (sc.prefill_pool) net::build_tables(sc.prefill_pool->dep.network.get());
  if (sc.small_pool) net::build_tables(sc.small_pool->dep.network.get());
  if (sc.spec) net::build_tables(sc.spec->draft.network.get());
  if (sc.fleet)
    for (const auto& region : sc.fleet->regions)
      for (const auto& pool : region.pools) net::build_tables(pool.pool.dep.network.get());
}

namespace {

RunRecord fleet_record(const scenario::Scenario& sc, fleet::FleetResult res) {
  RunRecord r;
  r.answer = fleet::fleet_answer(sc, res);
  r.fleet = std::move(res);
  return r;
}

}  // namespace

RunRecord run(const scenario::Scenario& sc, const RunOptions& options, int threads) {
  prepare_network(sc);
  if (sc.fleet) {
    fleet::FleetResult res = run_fleet(sc, options, threads);
    if (options.distribute && dist::rank() != 0) return {};  // rank 0 has the result
    return fleet_record(sc, std::move(res));
  }
  RunOptions opts = options;
  metrics::TimeBucketsObserver over_time(sc.replicas_all_pools());
  opts.observers.push_back(&over_time);
  RunRecord r;
  r.pool = run_one_pool(sc, opts);
  over_time.finish(seconds_to_ns(r.pool->summary.sim_duration_s));
  r.over_time = over_time.buckets();
  return r;
}

RunRecord run_one_of_many(const scenario::Scenario& sc) {
  prepare_network(sc);
  if (sc.fleet) return fleet_record(sc, run_fleet(sc, {}, 1));
  RunRecord r;
  r.pool = run_in_own_process(sc);
  return r;
}

}  // namespace fleetsim::app
