// The `fleet:` section of a scenario, resolved: regions with their users, pools of replicas
// (GPU type and parallelism per pool), WAN latencies, racks, autoscaling and failures.
// Schema in scenarios/README.md#fleet; read by sim/scenario/fleet_section.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/yaml_reader.h"
#include "sim/fleet/population.h"
#include "sim/scenario/pool.h"

namespace fleetsim::fleet {

struct FleetPool {
  std::string name;     ///< "<region>/<pool name>"
  scenario::Pool pool;  ///< pool.replicas: replicas at full scale, spares excluded
  int spares = 0;       ///< N+k: replicas added for failure headroom
  int min_replicas = 0, max_replicas = 0;  ///< autoscaling bounds (full scale)
  int servers_per_replica = 1;  ///< servers one replica spans (ceil(gpus / gpus per server))
  /// Servers that hold `replicas` replicas: replicas smaller than a server share servers
  /// (eight 1-GPU replicas in one 8-GPU box); larger ones span whole servers.
  double servers_for(double replicas) const {
    const int gpus = pool.par.gpus();
    if (gpus < gpus_per_server) return std::ceil(replicas * gpus / gpus_per_server - 1e-9);
    return std::ceil(replicas * servers_per_replica - 1e-9);
  }
  int gpus_per_server = 8;
  double server_power_w = 0;  ///< IT power of one server at full load
  int servers_per_rack = 1;   ///< servers in one rack: the node's figure, capped by rack power
  double rack_power_w = 0;
  double usd_per_gpu_hour = 0;  ///< cloud price (catalog or scenario); 0 = unknown
  double server_usd = 0;        ///< owned: purchase price of one server (scenario); 0 = unknown
  double gpu_idle_w = 0;        ///< GPU draw with no work (catalog idle_power, else 20 % of TDP)
  bool gpu_idle_assumed = false;
  double load_time_s = 0;  ///< provisioning delay: startup + weights over storage
  /// One replica's share of the GPU, server and link failure rates: its GPUs', and
  /// 1/replicas_per_server of each server's it sits on (a server failure takes down every
  /// replica on it, so the server's rate is split among them).
  double failure_rate_per_s = 0;
  double gpu_fail_share = 0, node_fail_share = 0;  ///< the rest are link failures
  /// Replicas one server holds: floor(gpus per server / GPUs per replica) for replicas
  /// smaller than a server, else 1 (the replica spans servers_per_replica servers).
  int replicas_per_server = 1;
  /// Which side of its region's split of its model's calls the pool takes
  /// (FleetSpec::split): -1 all of them; by prompt length (prompts: short, medium, long)
  /// 0, 1, 2 in that order (long is 1 with two sides); by class (classes: [...]) 0 the
  /// classes no pool of its region names, then the class lists in order of first mention.
  /// A region that splits a model's calls gives every pool that takes them a side, and
  /// every side that gets calls a pool (checked when loaded).
  int side = -1;
};

struct FleetRegion {
  RegionTraffic traffic;
  double user_rtt_s = 0;  ///< round trip between the region's users and its datacenter
  std::vector<FleetPool> pools;
};

struct Autoscaling {
  enum class Mode { kOff, kReactive, kScheduled } mode = Mode::kOff;
  enum class Metric { kUtilization, kQueue, kSlo } metric = Metric::kUtilization;
  double target =
      0.7;  ///< utilization (outstanding / batch slots), queued per replica, or SLO attainment
  double interval_s = 60;
  double cooldown_s = 600;
  double startup_s = 60;             ///< container and engine start before weights load
  double storage_bytes_per_s = 2e9;  ///< bytes/s one server reads weights at
};

struct Failures {
  bool enabled = false;
  double gpu_mtbf_s = 0, node_mtbf_s = 0, link_mtbf_s = 0;  ///< 0 = that kind never fails
  double gpu_mttr_s = 0, node_mttr_s = 0, link_mttr_s = 0;
  /// A rack (top-of-rack switch, PDU) takes down every server in it; per rack of a pool.
  double rack_mtbf_s = 0, rack_mttr_s = 0;
  /// A whole region goes down (power, network partition): per region.
  double region_mtbf_s = 0, region_mttr_s = 0;
  double retry_delay_s = 1;  ///< until the client notices and retries elsewhere
  /// A scheduled outage of one region (fleet.failures.region_outage), for "what if".
  struct Outage {
    int region = -1;
    double at_s = 0, duration_s = 0;
  };
  std::vector<Outage> outages;
};

/// The classes of failure, as reported (FleetResult::failure_classes); 0 is "none".
enum class FailureClass : uint8_t { kNone = 0, kGpu, kNode, kLink, kRack, kRegion };
inline constexpr int kFailureClasses = 6;
inline const char* failure_class_name(int c) {
  static const char* const names[kFailureClasses] = {"none", "gpu",  "node",
                                                     "link", "rack", "region"};
  return names[c];
}

/// What the fleet costs (`cost:`; the cost model, the part the fleet report uses).
struct CostModel {
  enum class Basis { kCloud, kOwned } basis = Basis::kCloud;
  double reserved_discount = 0;        ///< cloud: share off the on-demand price
  double depreciation_years = 4;       ///< owned: straight-line
  double network_usd_per_server = 0;   ///< owned: the server's share of the fabric
  double rack_usd = 0;                 ///< owned: per rack (PDUs, cooling share)
  double electricity_usd_per_kwh = 0;  ///< owned: facility energy price
  double margin = 0.3;                 ///< break-even price per token at this gross margin
};

struct FleetSpec {
  std::vector<FleetRegion> regions;
  std::vector<std::vector<double>> wan_rtt_s;  ///< region × region round trips
  /// A region is saturated for a model when its outstanding requests reach this share of
  /// its batch slots (active replicas × max_num_seqs); requests then spill to the nearest
  /// region that is not.
  double spill_load = 1.0;
  /// fleet.routing.across_regions: "spill" (the above), or a registry router's rule over
  /// the regions that have replicas of the call's model (sim/fleet/geo_routing.h).
  std::string region_router = "spill";
  /// Inside a region: a router of the registry (serving.router) over the active replicas
  /// serving the call's model, or "" for power of two choices by outstanding calls per
  /// batch slot (the default; it weighs pools of different batch sizes).
  std::string router;
  /// How pools split their region's calls of a model (FleetPool::side): by prompt length
  /// (fleet.routing.long_prompt_tokens, and medium_prompt_tokens for three sides) or by
  /// the users' session class (the pools' classes:); one way for the whole fleet.
  enum class Split : uint8_t { kNone, kLength, kClass } split = Split::kNone;
  /// kLength: a call whose prompt (system prompt and conversation included) has at least
  /// long_prompt_tokens goes to the long side; with medium_prompt_tokens > 0, at least that
  /// many (and fewer than long_prompt_tokens) to the medium side; the rest to the short side.
  int64_t long_prompt_tokens = 0;
  int64_t medium_prompt_tokens = 0;
  std::vector<std::string> side_names;  ///< by side: short, (medium,) long; or class lists
  /// kClass: by session class, the side of the pools that name it (0: named by none).
  std::vector<int> class_side;
  /// The side of a call (prompt tokens, session class) in a region that splits its model.
  int side_of(int64_t prompt_tokens, int cls) const {
    if (split == Split::kClass) return class_side[static_cast<size_t>(cls)];
    if (medium_prompt_tokens > 0)
      return (prompt_tokens >= medium_prompt_tokens ? 1 : 0) +
             (prompt_tokens >= long_prompt_tokens ? 1 : 0);
    return prompt_tokens >= long_prompt_tokens ? 1 : 0;
  }
  double pue = 1.2;
  double floor_m2_per_rack = 2.5;
  double report_interval_s = 3600;
  Autoscaling autoscaling;
  Failures failures;
  CostModel cost;
  std::optional<yaml::Map> users;   ///< kept to build a Population per seed
  std::vector<std::string> models;  ///< catalog ids served: pools and classes index these
  std::vector<int> class_model;     ///< per session class: index into models
  /// serving.cascade (FrugalGPT): calls for models[0] go first to the region's pools of
  /// models[cascade_model]; a share `escalation` (chosen per call id) is then answered
  /// again by models[0], and the user waits for both. -1: no cascade.
  int cascade_model = -1;
  double escalation = 0;
  /// Models simulated together (a cascade couples its two); each group runs apart.
  std::vector<std::vector<int>> partitions() const;
};

}  // namespace fleetsim::fleet
