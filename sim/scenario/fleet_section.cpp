// The `users:` and `fleet:` sections (schema in scenarios/README.md#fleet).
#include <algorithm>
#include <cmath>
#include <set>

#include "hw_models/error.h"
#include "hw_models/units.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/schema.h"

namespace fleetsim::scenario {

namespace {

// One failure kind: {mtbf: 80000h, mttr: 24h}; absent = never fails.
void read_failure_kind(yaml::Map& f, const char* key, double* mtbf, double* mttr) {
  if (auto k = f.map_opt(schema::key_in(f, key))) {
    *mtbf = k->quantity(schema::key_in(*k, "mtbf"));
    *mttr = k->quantity(schema::key_in(*k, "mttr"));
    k->finish();
  }
}

// A field of a region or of a pool (list items: "fleet.regions[].pools[].replicas").
const yaml::Key& region_key(const char* name) {
  return schema::key(std::string("fleet.regions[].") + name);
}
const yaml::Key& pool_key(const char* name) {
  return schema::key(std::string("fleet.regions[].pools[].") + name);
}

// Splitting a model's calls among its pools, by prompt length (fleet.routing's
// long_prompt_tokens and medium_prompt_tokens, the pools' prompts:) or by the users' session
// class (the pools' classes:). Resolves FleetPool::side and FleetSpec's split, side_names and
// class_side, and checks that a region which splits a model's calls sends each to a side
// that has a pool: every pool taking that model's new calls (role both or prefill) has a
// side, and every side that gets calls has a pool. `prompts` and `classes` are the pools'
// keys as written, by region.
void resolve_split(yaml::Map& fl, const std::vector<std::vector<yaml::Map>>& pool_maps,
                   const std::vector<std::vector<std::string>>& prompts,
                   const std::vector<std::vector<std::vector<std::string>>>& classes,
                   const fleet::Population& pop, fleet::FleetSpec& spec) {
  bool by_length = false, by_class = false;
  for (size_t r = 0; r < prompts.size(); ++r)
    for (size_t j = 0; j < prompts[r].size(); ++j) {
      by_length = by_length || prompts[r][j] != "all";
      by_class = by_class || !classes[r][j].empty();
    }
  auto routing_fail = [&](const char* key, const std::string& what, const std::string& hint) {
    yaml::Map rt = fl.map(schema::key("fleet.routing"));
    rt.fail(key, what, hint);
  };
  if (by_length && by_class)
    fl.fail("regions", "pools split calls both by prompt length (prompts:) and by class (classes:)",
            "split the fleet's calls one way: remove prompts: or classes: from its pools");
  if (spec.medium_prompt_tokens > 0 && spec.long_prompt_tokens <= 0)
    routing_fail("medium_prompt_tokens", "a medium side needs a long side above it",
                 "add long_prompt_tokens (above " + std::to_string(spec.medium_prompt_tokens) +
                     ") to fleet.routing");
  if (spec.medium_prompt_tokens > 0 && spec.medium_prompt_tokens >= spec.long_prompt_tokens)
    routing_fail(
        "medium_prompt_tokens",
        "medium_prompt_tokens (" + std::to_string(spec.medium_prompt_tokens) +
            ") must be below long_prompt_tokens (" + std::to_string(spec.long_prompt_tokens) + ")",
        "the medium side takes prompts from medium_prompt_tokens up to long_prompt_tokens");
  if (spec.long_prompt_tokens > 0 && !by_length)
    routing_fail("long_prompt_tokens", "no pool takes short or long prompts, so nothing is split",
                 "give two pools of a region prompts: short and prompts: long, or remove this key");
  using Role = serving::EngineConfig::Role;
  if (by_length) {
    spec.split = fleet::FleetSpec::Split::kLength;
    const bool medium = spec.medium_prompt_tokens > 0;
    spec.side_names = medium ? std::vector<std::string>{"short", "medium", "long"}
                             : std::vector<std::string>{"short", "long"};
    for (size_t r = 0; r < spec.regions.size(); ++r)
      for (size_t j = 0; j < spec.regions[r].pools.size(); ++j) {
        const std::string& p = prompts[r][j];
        auto& pool = spec.regions[r].pools[j];
        if (p == "all") continue;
        auto where = [&](const std::string& what, const std::string& hint) {
          pool_maps[r][j].fail("prompts", "pool " + pool.name + " (prompts: " + p + ") " + what,
                               hint);
        };
        if (spec.long_prompt_tokens <= 0)
          where("needs a length to split at, and fleet.routing.long_prompt_tokens is not set",
                "add routing: {long_prompt_tokens: 4096} to fleet:");
        if (p == "medium" && !medium)
          where("needs a medium side, and fleet.routing.medium_prompt_tokens is not set",
                "add medium_prompt_tokens (below long_prompt_tokens) to fleet.routing");
        pool.side = p == "short" ? 0 : p == "medium" ? 1 : medium ? 2 : 1;
      }
  } else if (by_class) {
    spec.split = fleet::FleetSpec::Split::kClass;
    spec.side_names = {"other classes"};
    spec.class_side.assign(pop.classes().size(), 0);
    std::vector<std::vector<std::string>> lists;  // by side - 1
    // A class's index in users.classes (their number when there is none of that name).
    auto class_index = [&](const std::string& name) {
      const auto& cs = pop.classes();
      return static_cast<size_t>(
          std::find_if(cs.begin(), cs.end(), [&](const auto& c) { return c.info.name == name; }) -
          cs.begin());
    };
    for (size_t r = 0; r < spec.regions.size(); ++r)
      for (size_t j = 0; j < spec.regions[r].pools.size(); ++j) {
        std::vector<std::string> list = classes[r][j];
        auto& pool = spec.regions[r].pools[j];
        if (list.empty()) continue;
        auto where = [&](const std::string& what, const std::string& hint) {
          pool_maps[r][j].fail("classes", "pool " + pool.name + " " + what, hint);
        };
        if (pool.pool.vllm.role == Role::kDecode)
          where("is a decode pool: it takes its calls from the prefill pools, not by class",
                "give the prefill pool the classes, and remove them from this one");
        if (spec.cascade_model >= 0)
          where("splits calls by class in a cascade, which is not modelled",
                "remove serving.cascade or the pools' classes:");
        std::string known;
        for (const auto& c : pop.classes()) known += (known.empty() ? "" : ", ") + c.info.name;
        for (const auto& name : list) {
          const size_t c = class_index(name);
          if (c == pop.classes().size())
            where("names class '" + name + "', which users.classes does not have",
                  known.empty() ? "give users: a classes: list" : "the classes are: " + known);
          const std::string& model = spec.models[static_cast<size_t>(spec.class_model[c])];
          if (model != pool.pool.model.id)
            where("names class '" + name + "', whose calls are for " + model + ", not " +
                      pool.pool.model.id,
                  "give the class to a pool of " + model);
        }
        std::sort(list.begin(), list.end());
        if (std::adjacent_find(list.begin(), list.end()) != list.end())
          where("names a class twice", "name each class once");
        auto known_list = std::find(lists.begin(), lists.end(), list);
        if (known_list == lists.end()) {
          for (const auto& name : list)
            for (size_t k = 0; k < lists.size(); ++k)
              if (std::find(lists[k].begin(), lists[k].end(), name) != lists[k].end())
                where("names class '" + name + "', which another pool takes with other classes",
                      "pools that share a class take the same list of classes");
          lists.push_back(list);
          known_list = lists.end() - 1;
          std::string side;
          for (const auto& name : list) side += (side.empty() ? "" : "+") + name;
          spec.side_names.push_back(side);
        }
        pool.side = static_cast<int>(known_list - lists.begin()) + 1;
        for (const auto& name : list) spec.class_side[class_index(name)] = pool.side;
      }
    // In a region that splits a model by class, the pools that name no class take the rest.
    for (size_t r = 0; r < spec.regions.size(); ++r) {
      auto& pools = spec.regions[r].pools;
      for (auto& a : pools)
        if (a.side > 0)
          for (auto& b : pools)
            if (b.side < 0 && b.pool.model.id == a.pool.model.id &&
                b.pool.vllm.role != Role::kDecode)
              b.side = 0;
    }
  } else {
    return;
  }
  // Every side that gets calls has a pool in each region that splits the model. By class, a
  // class whose list has no pool in the region goes to the region's other-classes pools.
  for (size_t r = 0; r < spec.regions.size(); ++r) {
    const auto& pools = spec.regions[r].pools;
    for (size_t j = 0; j < pools.size(); ++j) {
      const auto& a = pools[j];
      if (a.side < 0) continue;
      std::vector<char> has(spec.side_names.size(), 0);
      for (size_t k = 0; k < pools.size(); ++k) {
        const auto& b = pools[k];
        if (b.pool.model.id != a.pool.model.id || b.pool.vllm.role == Role::kDecode) continue;
        if (b.side < 0)
          pool_maps[r][j].fail("prompts",
                               "pool " + a.name + " (prompts: " + spec.side_names[a.side] +
                                   ") splits " + a.pool.model.id +
                                   "'s calls by prompt length, but pool " + b.name +
                                   " takes them all",
                               "give " + b.name + " prompts: short or long");
        has[static_cast<size_t>(b.side)] = 1;
      }
      if (spec.split == fleet::FleetSpec::Split::kLength) {
        for (size_t s = 0; s < has.size(); ++s)
          if (!has[s])
            pool_maps[r][j].fail("prompts",
                                 "pool " + a.name + " (prompts: " + spec.side_names[a.side] +
                                     ") has no partner: no pool of " + a.pool.model.id +
                                     " in the region takes " + spec.side_names[s] + " prompts",
                                 "add a pool with prompts: " + spec.side_names[s]);
      } else if (!has[0]) {
        std::string rest;
        for (size_t c = 0; c < spec.class_side.size(); ++c) {
          const int s = spec.class_side[c];
          if (spec.models[static_cast<size_t>(spec.class_model[c])] == a.pool.model.id &&
              (s == 0 || !has[static_cast<size_t>(s)]))
            rest += (rest.empty() ? "" : ", ") + pop.classes()[c].info.name;
        }
        if (!rest.empty())
          pool_maps[r][j].fail("classes",
                               "pool " + a.name + " takes some of " + a.pool.model.id +
                                   "'s classes, but no pool of the region takes the others (" +
                                   rest + ")",
                               "add a pool of " + a.pool.model.id +
                                   " without classes: (it takes the rest), or name them");
      }
    }
  }
}

}  // namespace

void load_fleet(yaml::Map& root, Scenario& sc, const hw::Catalog& catalog,
                const std::shared_ptr<const hw::CalibrationSet>& calibration) {
  fleet::FleetSpec spec;
  yaml::Map fl = root.map(schema::key("fleet"));
  // Models served: the scenario's, then any a pool or class names.
  spec.models.push_back(sc.model.id);
  auto model_index = [&](const std::string& id) {
    auto it = std::find(spec.models.begin(), spec.models.end(), id);
    if (it != spec.models.end()) return static_cast<int>(it - spec.models.begin());
    spec.models.push_back(id);
    return static_cast<int>(spec.models.size() - 1);
  };

  // Read below, element by element. A missing key must be caught here: yaml-cpp's node for
  // it is invalid and throws on any question.
  if (!fl.has(schema::key("fleet.regions")))
    fl.fail("regions", "missing required list of regions",
            "e.g. regions: [{name: us-east, utc_offset: -5, users: 0.4, pools: [...]}]");
  const YAML::Node list = fl.node()["regions"];
  if (!list.IsSequence() || list.size() == 0 || list.size() > 255)
    fl.fail("regions", "expected a list of 1 to 255 regions",
            "e.g. regions: [{name: us-east, utc_offset: -5, users: 0.4, pools: [...]}]");
  auto src = std::make_shared<yaml::Source>(yaml::Source{fl.file(), {}});
  std::vector<yaml::Map> region_maps;
  std::vector<std::vector<yaml::Map>> pool_maps;       // by region: its pools', for later checks
  std::vector<std::vector<std::string>> pool_prompts;  // ... their prompts:
  std::vector<std::vector<std::vector<std::string>>> pool_classes;  // ... their classes:
  for (size_t i = 0; i < list.size(); ++i) {
    region_maps.emplace_back(list[i], src, fl.path() + ".regions[" + std::to_string(i) + "]");
    yaml::Map& rm = region_maps.back();
    pool_maps.emplace_back();
    pool_prompts.emplace_back();
    pool_classes.emplace_back();
    fleet::FleetRegion reg;
    reg.traffic.name = rm.str(region_key("name"));
    for (const auto& other : spec.regions)
      if (other.traffic.name == reg.traffic.name)
        rm.fail("name", "duplicate region name '" + reg.traffic.name + "'");
    // Time zones run from UTC−12 to UTC+14 (with half and quarter hours, e.g. '5.5h').
    const double offset_s = rm.quantity(region_key("utc_offset"));
    reg.traffic.utc_offset_h = offset_s / 3600.0;
    reg.traffic.user_share = rm.number(region_key("users"));
    fleet::read_curves(rm, reg.traffic);
    reg.user_rtt_s = rm.quantity_or(region_key("user_rtt"));
    const YAML::Node pools = rm.has(region_key("pools")) ? rm.node()["pools"] : YAML::Node();
    if (!pools.IsSequence())
      rm.fail("pools", "expected a list of pools",
              "e.g. pools: [{name: h200, replicas: 100, hardware: {gpu: h200-sxm, tp: 8}}] "
              "(an empty list [] for a region with users but no datacenter)");
    for (size_t j = 0; j < pools.size(); ++j) {
      yaml::Map pm(pools[j], src, rm.path() + ".pools[" + std::to_string(j) + "]");
      fleet::FleetPool fp;
      fp.name = reg.traffic.name + "/" + pm.str_or(pool_key("name"), "pool" + std::to_string(j));
      hw::ModelSpec model = sc.model;
      if (pm.has(pool_key("model"))) {
        try {
          model = catalog.model(pm.str(pool_key("model")));
        } catch (const InputError& e) {
          throw pm.locate("model", e);
        }
      }
      model_index(model.id);
      // Speculative decoding: the pool's own speculative: section, else the scenario's
      // serving.speculative for pools of the scenario's model.
      std::optional<DraftSettings> draft;
      if (auto sp = pm.map_opt(pool_key("speculative"))) {
        const yaml::Key& tp_key = schema::key("hardware.tp");
        const int tp = pm.has("hardware") && pm.map("hardware").has(tp_key)
                           ? static_cast<int>(pm.map("hardware").integer(tp_key))
                           : sc.par.tp;
        draft = read_speculative(*sp, model, tp, sc.vllm.block_tokens, catalog);
      } else if (sc.spec && model.id == sc.model.id) {
        draft = DraftSettings{*sc.spec->draft.model, sc.draft_model == "mtp", sc.spec->k,
                              sc.vllm.spec_acceptance, sc.vllm.spec_acceptance_spread};
      }
      fp.pool = load_pool(root, pm, "hardware", model, sc, catalog, calibration, fp.name.c_str(),
                          draft ? &*draft : nullptr);
      fp.pool.replicas = static_cast<int>(pm.integer(pool_key("replicas")));
      // Prefill/decode disaggregation (DistServe, Splitwise): a prefill pool takes the
      // region's new calls of its model and hands each over, with its KV cache, to a decode
      // pool of the same region and model.
      const std::string role = pm.choice_or(pool_key("role"));
      if (role != "both") {
        if (!sc.vllm_family())
          pm.fail("role", "disaggregation needs the vllm policy", "set serving.policy: vllm");
        if (sc.vllm.prefix_caching)
          pm.fail("role", "prefix caching with disaggregation is not modelled yet",
                  "set serving.prefix_caching: false, or role: both");
        fp.pool.vllm.role = role == "prefill" ? serving::EngineConfig::Role::kPrefill
                                              : serving::EngineConfig::Role::kDecode;
      }
      const std::string prompts = pm.choice_or(pool_key("prompts"));
      if (prompts != "all" && fp.pool.vllm.role == serving::EngineConfig::Role::kDecode)
        pm.fail("prompts", "a decode pool takes its calls from the prefill pools, not by length",
                "give the prefill pool prompts: " + prompts + ", and this one prompts: all");
      pool_prompts.back().push_back(prompts);
      pool_classes.back().push_back(pm.str_list_or(pool_key("classes"), {}));
      fp.spares = static_cast<int>(pm.integer_or(pool_key("spares")));
      fp.min_replicas = static_cast<int>(pm.integer_or(pool_key("min_replicas")));
      fp.max_replicas =
          static_cast<int>(pm.integer_or(pool_key("max_replicas"), fp.pool.replicas + fp.spares));
      if (fp.max_replicas < fp.min_replicas)
        pm.fail("max_replicas", "max_replicas (" + std::to_string(fp.max_replicas) +
                                    ") is below min_replicas (" + std::to_string(fp.min_replicas) +
                                    ")");
      const int gpus = fp.pool.par.gpus();
      fp.gpus_per_server = fp.pool.node ? fp.pool.node->gpus_per_node : gpus;
      fp.servers_per_replica = (gpus + fp.gpus_per_server - 1) / fp.gpus_per_server;
      fp.server_power_w = fp.pool.node && fp.pool.node->node_power_w > 0
                              ? fp.pool.node->node_power_w
                              : fp.pool.gpu.tdp_w * fp.gpus_per_server;
      fp.usd_per_gpu_hour =
          pm.number_or(pool_key("usd_per_gpu_hour"), fp.pool.gpu.cloud_usd_per_gpu_hour);
      fp.server_usd = pm.number_or(pool_key("server_usd"));
      // Idle draw: the catalog's figure, else an ASSUMED 20 % of TDP (reported as assumed).
      fp.gpu_idle_assumed = fp.pool.gpu.idle_power_w <= 0;
      fp.gpu_idle_w = fp.gpu_idle_assumed ? 0.2 * fp.pool.gpu.tdp_w : fp.pool.gpu.idle_power_w;
      pm.finish();
      reg.pools.push_back(std::move(fp));
      pool_maps.back().push_back(pm);
    }
    // A prefill pool needs a decode pool of its model in its region, and the other way
    // round; the KV cache moves between them in one format.
    for (const auto& a : reg.pools) {
      if (a.pool.vllm.role == serving::EngineConfig::Role::kBoth) continue;
      const bool prefill = a.pool.vllm.role == serving::EngineConfig::Role::kPrefill;
      bool partner = false;
      for (const auto& b : reg.pools) {
        if (b.pool.model.id != a.pool.model.id || b.pool.vllm.role == a.pool.vllm.role ||
            b.pool.vllm.role == serving::EngineConfig::Role::kBoth)
          continue;
        partner = true;
        if (b.pool.dep.prec.kv_bytes != a.pool.dep.prec.kv_bytes)
          rm.fail("pools",
                  "the prefill and decode pools of " + a.pool.model.id +
                      " keep KV in different formats",
                  "give them the same precision.kv");
      }
      if (!partner)
        rm.fail("pools",
                std::string("the ") + (prefill ? "prefill" : "decode") + " pool " + a.name +
                    " has no " + (prefill ? "decode" : "prefill") + " pool of " + a.pool.model.id +
                    " in its region",
                std::string("add a pool with role: ") + (prefill ? "decode" : "prefill") +
                    " and model: " + a.pool.model.id);
    }
    spec.regions.push_back(std::move(reg));
  }
  // WAN round trips: each region lists the others, {eu-west: 80ms}; symmetric.
  const size_t n = spec.regions.size();
  spec.wan_rtt_s.assign(n, std::vector<double>(n, -1.0));
  for (size_t i = 0; i < n; ++i) {
    spec.wan_rtt_s[i][i] = 0;
    if (auto w = region_maps[i].map_opt(region_key("wan_rtt"))) {
      for (size_t j = 0; j < n; ++j) {
        if (j == i) continue;
        const std::string& other = spec.regions[j].traffic.name;
        if (!w->has(other)) continue;
        const double t = w->quantity(other, units::Dim::kTime);
        if (spec.wan_rtt_s[i][j] >= 0 && std::fabs(spec.wan_rtt_s[i][j] - t) > 1e-12)
          w->fail(other,
                  "the round trip to " + other + " differs from the one " + other + " gives back",
                  "give each pair once, or the same value both ways");
        spec.wan_rtt_s[i][j] = spec.wan_rtt_s[j][i] = t;
      }
      w->finish();
    }
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (spec.wan_rtt_s[i][j] < 0)
        region_maps[i].fail(
            "wan_rtt",
            "no round-trip time between " + spec.regions[i].traffic.name + " and " +
                spec.regions[j].traffic.name,
            "add wan_rtt: {" + spec.regions[j].traffic.name + ": 80ms} to one of the two regions");
  for (auto& rm : region_maps) rm.finish();

  if (auto rt = fl.map_opt(schema::key("fleet.routing"))) {
    spec.spill_load = rt->number_or(schema::key("fleet.routing.spill_load"));
    spec.region_router =
        rt->choice_or(schema::key("fleet.routing.across_regions"), spec.region_router);
    spec.long_prompt_tokens = rt->integer_or(schema::key("fleet.routing.long_prompt_tokens"), 0);
    spec.medium_prompt_tokens =
        rt->integer_or(schema::key("fleet.routing.medium_prompt_tokens"), 0);
    rt->finish();
  }
  if (auto rk = fl.map_opt(schema::key("fleet.datacenter"))) {
    spec.pue = rk->number_or(schema::key("fleet.datacenter.pue"));
    spec.floor_m2_per_rack = rk->number_or(schema::key("fleet.datacenter.floor_m2_per_rack"));
    const double cap = rk->quantity_or(schema::key("fleet.datacenter.rack_power"), 0.0);
    rk->finish();
    for (auto& reg : spec.regions)
      for (auto& p : reg.pools) p.rack_power_w = cap;
  }
  for (auto& reg : spec.regions)
    for (auto& p : reg.pools) {
      // Servers per rack: the node's layout, capped by the rack's power limit.
      const int by_layout =
          p.pool.node && p.pool.node->nodes_per_rack > 0 ? p.pool.node->nodes_per_rack : 4;
      const double limit =
          p.rack_power_w > 0
              ? p.rack_power_w
              : (p.pool.node && p.pool.node->rack_power_w > 0 ? p.pool.node->rack_power_w : 0);
      p.rack_power_w = limit;
      int by_power = by_layout;
      if (limit > 0)
        by_power = std::max(1, static_cast<int>(std::floor(limit / p.server_power_w + 1e-9)));
      p.servers_per_rack = std::min(by_layout, by_power);
    }
  if (auto as = fl.map_opt(schema::key("fleet.autoscaling"))) {
    auto& a = spec.autoscaling;
    auto key = [](const char* name) -> const yaml::Key& {
      return schema::key(std::string("fleet.autoscaling.") + name);
    };
    const std::string mode = as->choice_or(key("mode"));
    a.mode = mode == "off"        ? fleet::Autoscaling::Mode::kOff
             : mode == "reactive" ? fleet::Autoscaling::Mode::kReactive
                                  : fleet::Autoscaling::Mode::kScheduled;
    const std::string metric = as->choice_or(key("metric"));
    a.metric = metric == "queue" ? fleet::Autoscaling::Metric::kQueue
               : metric == "slo" ? fleet::Autoscaling::Metric::kSlo
                                 : fleet::Autoscaling::Metric::kUtilization;
    const double fallback = metric == "queue" ? 4.0 : metric == "slo" ? 0.99 : 0.7;
    a.target = as->number_or(key("target"), fallback);
    if (a.metric == fleet::Autoscaling::Metric::kSlo && a.target > 1)
      as->fail("target", "an SLO-attainment target is a share of calls, at most 1",
               "e.g. target: 0.99");
    a.interval_s = as->quantity_or(key("interval"));
    a.cooldown_s = as->quantity_or(key("cooldown"));
    a.startup_s = as->quantity_or(key("startup"));
    a.storage_bytes_per_s = as->quantity_or(key("storage_bandwidth"));
    as->finish();
  }
  for (auto& reg : spec.regions)
    for (auto& p : reg.pools) {
      // Provisioning delay: start-up, then every server of the replica reads its share of
      // the weights from storage in parallel.
      const double weights =
          (p.pool.memory.weight_bytes + p.pool.memory.host_weight_bytes) * p.pool.par.gpus();
      p.load_time_s = spec.autoscaling.startup_s +
                      weights / p.servers_per_replica / spec.autoscaling.storage_bytes_per_s;
    }
  if (auto fm = fl.map_opt(schema::key("fleet.failures"))) {
    auto& f = spec.failures;
    f.enabled = true;
    read_failure_kind(*fm, "gpu", &f.gpu_mtbf_s, &f.gpu_mttr_s);
    read_failure_kind(*fm, "node", &f.node_mtbf_s, &f.node_mttr_s);
    read_failure_kind(*fm, "link", &f.link_mtbf_s, &f.link_mttr_s);
    read_failure_kind(*fm, "rack", &f.rack_mtbf_s, &f.rack_mttr_s);
    read_failure_kind(*fm, "region", &f.region_mtbf_s, &f.region_mttr_s);
    if (auto om = fm->map_opt(schema::key("fleet.failures.region_outage"))) {
      fleet::Failures::Outage o;
      const std::string name = om->str(schema::key("fleet.failures.region_outage.region"));
      std::string names;
      for (size_t r = 0; r < spec.regions.size(); ++r) {
        if (spec.regions[r].traffic.name == name) o.region = static_cast<int>(r);
        names += (r == 0 ? "" : ", ") + spec.regions[r].traffic.name;
      }
      if (o.region < 0) om->fail("region", "no region named '" + name + "'", "one of: " + names);
      o.at_s = om->quantity(schema::key("fleet.failures.region_outage.at"));
      o.duration_s = om->quantity(schema::key("fleet.failures.region_outage.duration"));
      om->finish();
      f.outages.push_back(o);
    }
    f.retry_delay_s = fm->quantity_or(schema::key("fleet.failures.retry_delay"));
    fm->finish();
    if (f.gpu_mtbf_s == 0 && f.node_mtbf_s == 0 && f.link_mtbf_s == 0 && f.rack_mtbf_s == 0 &&
        f.region_mtbf_s == 0 && f.outages.empty())
      fl.fail("failures", "no failure kind given",
              "e.g. failures: {gpu: {mtbf: 80000h, mttr: 48h}, node: {mtbf: 60000h, mttr: 4h}}");
    for (auto& reg : spec.regions)
      for (auto& p : reg.pools) {
        // A replica fails when any of its GPUs, servers or server links (one NIC per GPU)
        // fails: the rates add. A server's failure takes down every replica on it, so each
        // of its replicas_per_server replicas carries 1/replicas_per_server of its rate
        // (the server's rate when it is full; see Simulation::fail).
        const int gpus = p.pool.par.gpus();
        p.replicas_per_server = gpus < p.gpus_per_server ? p.gpus_per_server / gpus : 1;
        const double share = 1.0 / p.replicas_per_server;
        const double g = f.gpu_mtbf_s > 0 ? gpus / f.gpu_mtbf_s : 0;
        const double s = f.node_mtbf_s > 0 ? p.servers_per_replica / f.node_mtbf_s * share : 0;
        const double l = f.link_mtbf_s > 0 ? p.servers_per_replica / f.link_mtbf_s * share : 0;
        p.failure_rate_per_s = g + s + l;
        p.gpu_fail_share = p.failure_rate_per_s > 0 ? g / p.failure_rate_per_s : 0;
        p.node_fail_share = p.failure_rate_per_s > 0 ? s / p.failure_rate_per_s : 0;
      }
  }
  spec.report_interval_s = fl.quantity_or(schema::key("fleet.report_interval"));
  fl.finish();

  if (auto cm = root.map_opt(schema::key("cost"))) {
    auto& c = spec.cost;
    auto key = [](const char* name) -> const yaml::Key& {
      return schema::key(std::string("cost.") + name);
    };
    c.basis = cm->choice_or(key("basis")) == "owned" ? fleet::CostModel::Basis::kOwned
                                                     : fleet::CostModel::Basis::kCloud;
    c.reserved_discount = cm->number_or(key("reserved_discount"));
    c.depreciation_years = cm->number_or(key("depreciation_years"));
    c.network_usd_per_server = cm->number_or(key("network_usd_per_server"));
    c.rack_usd = cm->number_or(key("rack_usd"));
    c.electricity_usd_per_kwh = cm->number_or(key("electricity_usd_per_kwh"), 0.0);
    c.margin = cm->number_or(key("margin"));
    if (c.basis == fleet::CostModel::Basis::kOwned) {
      if (!cm->has("electricity_usd_per_kwh"))
        cm->fail("electricity_usd_per_kwh", "owned hardware needs an electricity price",
                 "e.g. electricity_usd_per_kwh: 0.08");
      for (size_t i = 0; i < spec.regions.size(); ++i)
        for (const auto& p : spec.regions[i].pools)
          if (p.pool.replicas + p.spares > 0 && p.server_usd <= 0)
            region_maps[i].fail(
                "pools", "pool " + p.name + " has no server_usd, which cost basis 'owned' needs",
                "add server_usd: <price of one server> to the pool, or use cost: {basis: cloud}");
    }
    cm->finish();
  }

  // Users → traffic, validated now and rebuilt per run.
  spec.users = root.map(schema::key("users"));
  std::vector<fleet::RegionTraffic> traffic;
  for (const auto& r : spec.regions) traffic.push_back(r.traffic);
  {
    yaml::Map copy = *spec.users;
    fleet::Population pop(copy, traffic, RngStreams(sc.seed), sc.base_dir);
    copy.finish();
    for (size_t c = 0; c < pop.classes().size(); ++c) {
      const std::string& id = pop.classes()[c].model.empty() ? sc.model.id : pop.classes()[c].model;
      try {
        (void)catalog.model(id);
      } catch (const InputError& e) {
        yaml::Map u = root.map("users");
        throw u.locate("classes", e);
      }
      spec.class_model.push_back(model_index(id));
    }
    sc.workload_description = pop.describe();
    resolve_split(fl, pool_maps, pool_prompts, pool_classes, pop, spec);
  }
  if (!sc.cascade_small_model.empty()) {
    yaml::Map cs = root.map("serving").map("cascade");
    try {
      (void)catalog.model(sc.cascade_small_model);
    } catch (const InputError& e) {
      throw cs.locate("small_model", e);
    }
    if (sc.cascade_small_model == sc.model.id)
      cs.fail("small_model", "the small model is the scenario's model",
              "name a smaller model that pools of the fleet serve");
    spec.cascade_model = model_index(sc.cascade_small_model);
    spec.escalation = sc.escalation;
    bool served = false;
    for (const auto& r : spec.regions)
      for (const auto& p : r.pools) served = served || p.pool.model.id == sc.cascade_small_model;
    if (!served)
      cs.fail("small_model", "no pool of the fleet serves " + sc.cascade_small_model,
              "add pools with model: " + sc.cascade_small_model + " to the regions");
  }
  // Every model a class asks for must be served somewhere.
  for (size_t m = 0; m < spec.models.size(); ++m) {
    bool served = false;
    for (const auto& r : spec.regions)
      for (const auto& p : r.pools) served = served || p.pool.model.id == spec.models[m];
    if (!served)
      fl.fail("regions", "no pool serves " + spec.models[m] + ", which a user class asks for",
              "add a pool with model: " + spec.models[m]);
  }
  sc.fleet = std::move(spec);
}

}  // namespace fleetsim::scenario
